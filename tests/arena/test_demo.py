"""The embedded demo: two simulated weeks of the real engine over the
recorded markets produce cohorts with value curves over time, resolved markets with Brier
scores, a cancelled market refunded and a completed cohort — all rows written by the engine
(decisions with their attempts, trades, settlements, ticks), none inserted by hand.

The demo runs once for the module inside a transaction rolled back at the end. `until` is
fixed so the simulated world is the same whatever day the suite runs.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction
from django.db.models import Count, Q, Sum
from django.test.utils import override_settings

from agents.models import BenchmarkModel
from arena.demo import DEMO_OUTSIDE_TEAM, DemoReport, demo_releases_discard, demo_run
from arena.models import (
    STARTING_BALANCE,
    Agent,
    Cohort,
    Decision,
    PortfolioSnapshot,
    Position,
    SnapshotTick,
    Trade,
)
from arena.services.releases import LOCK_PREFIX, PARTIAL_PREFIX, QUARANTINE_PREFIX
from markets.demo import RECORDED_OUTCOMES
from markets.models import Market
from markets.sources import RECORDINGS
from tests.arena.conftest import snapshot_cache_clear

ROOT = Path(__file__).resolve().parents[2]
UNTIL = datetime(2026, 9, 16, 12, 0, tzinfo=UTC)  # a Wednesday
WEEKS = 2


@pytest.fixture(scope="module")
def demo(django_db_setup: None, django_db_blocker: Any) -> Iterator[DemoReport]:
    snapshot_cache_clear()
    with (
        django_db_blocker.unblock(),
        override_settings(OPENROUTER_API_KEY="", MARKET_SOURCE="demo"),
    ):
        outer = transaction.atomic()
        outer.__enter__()
        try:
            yield demo_run(weeks=WEEKS, tick=timedelta(hours=12), until=UNTIL)
        finally:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)
            snapshot_cache_clear()


@pytest.fixture
def report(demo: DemoReport, db: None) -> DemoReport:
    return demo


def test_one_cohort_a_week_each_deciding_through_the_engine(report: DemoReport) -> None:
    assert report.cohorts == WEEKS
    cohorts = list(Cohort.objects.order_by("week_start"))
    assert len(cohorts) == WEEKS
    assert [c.week_start.weekday() for c in cohorts] == [6] * WEEKS
    assert [c.number for c in cohorts] == list(range(1, WEEKS + 1))
    for cohort in cohorts:
        decisions = Decision.objects.filter(cohort=cohort)
        assert decisions.filter(week_start=cohort.week_start).count() == cohort.agents.count()
        # every decision of the engine was claimed in a run; prompted ones kept their attempts
        assert not decisions.filter(run__isnull=True).exists()
        prompted = decisions.exclude(status=Decision.Status.SKIPPED)
        assert not prompted.annotate(n=Count("attempts")).filter(n=0).exists()
        assert not prompted.filter(system_prompt="").exists()


def test_the_demo_outside_team_takes_part_through_the_outside_path(report: DemoReport) -> None:
    """Outside agents in the demo: an outside team (labelled, on its own board) gets an agent in
    every cohort and answers each week through the outside agents' submission service, ten
    minutes into the window; no week of it goes without a submission."""
    team = BenchmarkModel.objects.get(internal_id=DEMO_OUTSIDE_TEAM)
    assert team.is_outside
    assert team.on_outside_board
    for cohort in Cohort.objects.all():
        agent = Agent.objects.get(cohort=cohort, model=team)
        for decision in Decision.objects.filter(agent=agent):
            assert decision.responder == Decision.Responder.OUTSIDE
            assert not decision.no_submission
            attempts = list(decision.attempts.order_by("number"))
            assert attempts, decision
            assert decision.run is not None
            assert attempts[0].started_at - decision.run.started_at < timedelta(minutes=15)
    assert Trade.objects.filter(agent__model=team, status="executed").exists()


def test_every_cohort_has_a_value_curve_over_time(report: DemoReport) -> None:
    assert report.ticks > 2 * WEEKS
    for cohort in Cohort.objects.all():
        for agent in cohort.agents.all():
            times = list(
                PortfolioSnapshot.objects.filter(agent=agent).values_list(
                    "snapshot_timestamp", flat=True
                )
            )
            assert len(times) >= 2, f"{agent} has no curve"
            assert all(t.minute % 10 == 0 and t.second == 0 for t in times)
    slots = set(PortfolioSnapshot.objects.values_list("snapshot_timestamp", flat=True))
    assert slots <= set(SnapshotTick.objects.values_list("slot", flat=True))
    first = Cohort.objects.order_by("week_start").first()
    assert first is not None
    span = PortfolioSnapshot.objects.filter(agent__cohort=first).values_list(
        "snapshot_timestamp", flat=True
    )
    assert max(span) - min(span) >= timedelta(days=3)
    # values move: the curve is not flat
    assert PortfolioSnapshot.objects.values("total_value").distinct().count() > 10
    for cash, positions, total, pnl in PortfolioSnapshot.objects.values_list(
        "cash", "positions_value", "total_value", "total_pnl"
    ):
        assert total == cash + positions
        assert pnl == total - STARTING_BALANCE


def test_markets_resolved_and_every_bet_in_them_has_its_brier_score(report: DemoReport) -> None:
    resolved = Market.objects.filter(resolution=Market.Resolution.RESOLVED)
    held = resolved.filter(positions__isnull=False).distinct()
    assert report.resolved >= 1
    assert held.exists()
    bets = Trade.objects.filter(
        kind=Trade.Kind.BUY, status=Trade.Status.EXECUTED, market__in=resolved
    ).select_related("market", "position")
    assert bets.exists()
    for bet in bets:
        assert bet.market is not None
        assert bet.position is not None
        assert bet.implied_confidence is not None
        outcomes = [str(o) for o in bet.market.outcomes]
        won = bet.position.outcome_index == outcomes.index(bet.market.winning_outcome)
        assert bet.side_won is won
        assert bet.brier_score == pytest.approx((bet.implied_confidence - won) ** 2)
    for position in Position.objects.filter(market__in=resolved).exclude(status="closed"):
        assert position.status == Position.Status.SETTLED
        outcomes = [str(o) for o in position.market.outcomes]
        won = position.outcome_index == outcomes.index(position.market.winning_outcome)
        expected = position.shares.quantize(Decimal("0.01"), rounding="ROUND_DOWN")
        assert position.settlement_value == (expected if won else Decimal("0.00"))
    # no bet outside a resolved market is scored
    assert not Trade.objects.filter(brier_score__isnull=False).exclude(market__in=resolved).exists()


def test_a_cancelled_market_was_refunded(report: DemoReport) -> None:
    cancelled = Market.objects.filter(resolution=Market.Resolution.CANCELLED)
    refunded = Position.objects.filter(market__in=cancelled, status=Position.Status.CANCELLED)
    counts = {
        "report.cancelled": report.cancelled,
        "cancelled markets": cancelled.count(),
        "refunded positions": refunded.count(),
    }
    assert report.cancelled >= 1, counts
    assert refunded.exists(), counts
    for position in refunded:
        assert position.settlement_value == position.cost_basis
    assert not Position.objects.filter(market__in=cancelled, status="open").exists()
    assert not Trade.objects.filter(market__in=cancelled, brier_score__isnull=False).exists()
    assert all(m.resolution_note for m in cancelled)


def test_a_cohort_completed_and_its_result_is_fixed(report: DemoReport) -> None:
    completed = Cohort.objects.filter(status=Cohort.Status.COMPLETED)
    assert report.completed >= 1
    assert completed.exists(), dict(Cohort.objects.values_list("number", "status"))
    for cohort in completed:
        assert cohort.completed_at is not None
        agents = Agent.objects.filter(cohort=cohort)
        assert not Position.objects.filter(agent__in=agents, status="open").exists()
        # no snapshot and no decision after it completed
        assert not PortfolioSnapshot.objects.filter(
            agent__in=agents, snapshot_timestamp__gt=cohort.completed_at
        ).exists()
        assert not Decision.objects.filter(
            cohort=cohort, week_start__gt=cohort.completed_at.date()
        ).exists()
        # after the last settlement, cash alone is $10,000 + realized P/L
        for agent in agents.annotate(realized=Sum("positions__realized_pnl", default=Decimal(0))):
            assert agent.cash == STARTING_BALANCE + agent.realized
    # the last cohort is still running when the demo stops
    assert Cohort.objects.filter(status=Cohort.Status.ACTIVE).exists()


def test_the_ledger_is_the_engines_own(report: DemoReport) -> None:
    """Every position was opened by an executed bet of a decision, and each agent's cash
    reconciles with its trades and settlements to the cent."""
    assert (
        not Position.objects.annotate(
            bets=Count("trades", filter=Q(trades__kind="BUY", trades__status="executed"))
        )
        .filter(bets=0)
        .exists()
    )
    for agent in Agent.objects.all():
        trades = Trade.objects.filter(agent=agent, status=Trade.Status.EXECUTED)
        spent = trades.filter(kind="BUY").aggregate(s=Sum("amount", default=Decimal(0)))["s"]
        received = trades.filter(kind="SELL").aggregate(s=Sum("amount", default=Decimal(0)))["s"]
        paid = Position.objects.filter(agent=agent).aggregate(
            s=Sum("settlement_value", default=Decimal(0))
        )["s"]
        assert agent.cash == STARTING_BALANCE - spent + received + paid, agent


def test_a_resolution_the_demo_drew_says_simulated_in_its_own_note(report: DemoReport) -> None:
    # Markets the recordings show resolved resolve as recorded; every other one the demo
    # resolves by a draw of its own, and the note says so wherever it is shown.
    resolved = Market.objects.exclude(resolution=Market.Resolution.OPEN)
    simulated = [m for m in resolved if "simulated by the demo" in m.resolution_note]
    assert simulated, "the demo drew no resolution"
    for market in simulated:
        assert market.resolution_note.endswith(
            "(simulated by the demo: the market did not resolve so on Polymarket)"
        )
    recorded = {
        str(json.loads((RECORDINGS / name).read_text())["id"]) for name in RECORDED_OUTCOMES
    }
    for market in resolved.filter(polymarket_id__in=recorded):
        assert "simulated" not in market.resolution_note


def test_a_demo_reset_removes_the_previous_demos_release_entries_and_nothing_else(
    tmp_path: Path,
) -> None:
    # `demo_fill --reset` empties the database the demo's releases were published from. A
    # release folder left behind verifies against its own checksums, so the next demo would
    # adopt it as its cohort's first release, holding the old demo's rows.
    folders = [
        "cohort-1-r1",
        "cohort-1-r2",
        "cohort-3-v1",  # named before the `r` names
        f"{QUARANTINE_PREFIX}cohort-2-r1-20260916T120000",
        f"{PARTIAL_PREFIX}cohort-4-k2j3x9",
    ]
    for name in folders:
        (tmp_path / name).mkdir()
        (tmp_path / name / "SHA256SUMS").write_text("")
    (tmp_path / f"{LOCK_PREFIX}cohort-1").write_bytes(b"")
    others = ["README.md", "cohort-1", "cohort-x-r1", "cohort-1-r1.zip"]
    for name in others:
        (tmp_path / name).write_text("not a release")

    assert demo_releases_discard(tmp_path) == len(folders) + 1

    assert sorted(entry.name for entry in tmp_path.iterdir()) == sorted(others)
    assert demo_releases_discard(tmp_path / "absent") == 0


@pytest.mark.drill  # manage.py processes, on a database file of their own
def test_a_demo_reset_keeps_the_lineup_and_baselines_the_migrations_seeded(tmp_path: Path) -> None:
    # `make demo` rebuilds a migrated database. Emptying its tables would take the rows the
    # migrations seeded with them (the lineup, its baselines, the staff groups), and the
    # rebuilt demo would run its outside team alone.
    database = tmp_path / "demo.sqlite3"
    environ = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{database}",
        "RELEASES_ROOT": str(tmp_path / "releases"),
        "MARKET_SOURCE": "demo",
        "OPENROUTER_API_KEY": "",
    }
    for args in (["migrate", "-v0"], ["demo_fill", "--reset", "--weeks", "1"]):
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=environ,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr

    with sqlite3.connect(database) as db:
        seated = dict(
            db.execute(
                "SELECT m.kind, COUNT(*) FROM arena_agent a"
                " JOIN agents_benchmarkmodel m ON m.id = a.model_id GROUP BY m.kind"
            ).fetchall()
        )
        groups = db.execute("SELECT COUNT(*) FROM auth_group").fetchone()[0]
    assert seated == {"llm": 7, "baseline": 2, "outside": 1}
    assert groups >= 2  # the staff groups
