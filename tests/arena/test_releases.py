"""Weekly data releases: when a cohort completes, a frozen, numbered release of its
data — the exports, a schema description, checksums, a suggested citation — is published and
never changes afterwards; when its data changes later, the next release (`cohort-N-r2`, …) says
what changed.

"When a cohort completes" means once nothing the lineup is ranked by can change: a cohort
completes when its LLM agents' positions have settled, but a bet sold out of before that is
scored only when its market resolves, and the release waits for it. Baseline and outside
agents never hold the release back: their positions still open are in it as open, listed as
such, and their settlement later is the next release.

Releases are written under a RELEASES_ROOT of the test's own (tmp_path). The cohorts come from
tests/page_world.py (decisions with attempts, bets open and scored, a rejection, a sell,
snapshots; the baselines of the lineup among its agents), completed by hand: the LLM agents'
positions settled and their bets scored, and the baselines' positions settled before the last
snapshot unless a test is about what a release leaves open. The tests that publish one such
cohort share it (`cohort`, built once for the module: tests/worlds.py).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import stat
import subprocess
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from celery.result import AsyncResult
from django.db import IntegrityError
from django.db.models import F, Max

from agents.models import BenchmarkModel
from arena import clock
from arena.models import (
    Agent,
    Cohort,
    DataRelease,
    Decision,
    PortfolioSnapshot,
    Position,
    SystemEvent,
    Trade,
)
from arena.selectors.exports import DATASETS
from arena.services import releases as release_services
from arena.services.cohorts import cohort_start
from arena.services.exports import PARQUET_AVAILABLE
from arena.services.marking import snapshots_take
from arena.services.release_texts import release_changes
from arena.services.releases import release_publish, releases_publish, releases_publish_due
from arena.services.settlement import market_settle
from markets.models import Market
from markets.resolution import Verdict
from tests.page_world import World, build_world, panel_resolved
from tests.worlds import ModuleWorld, module_world

PUBLISHED_AT = datetime(2031, 3, 2, 1, 0, tzinfo=UTC)
CORRECTED_AT = datetime(2031, 3, 9, 1, 0, tzinfo=UTC)


@pytest.fixture
def root(settings: Any, tmp_path: Path) -> Path:
    settings.RELEASES_ROOT = tmp_path / "releases"
    return Path(settings.RELEASES_ROOT)


def completed(
    world: World, *, at: datetime = PUBLISHED_AT, baselines_settled: bool = True
) -> Cohort:
    """Complete the world's cohort as the engine would (after its last snapshot, its LLM
    agents' positions settled and their bets scored); `baselines_settled`: its baselines'
    open positions settled too, before its last snapshot, so no tick marks any of its
    agents."""
    cohort = world.cohort
    last_snapshot = PortfolioSnapshot.objects.filter(agent__cohort=cohort).aggregate(
        last=Max("snapshot_timestamp")
    )["last"]
    Cohort.objects.filter(pk=cohort.pk).update(
        status=Cohort.Status.COMPLETED, completed_at=max(at - timedelta(hours=1), last_snapshot)
    )
    settling = Position.objects.filter(agent__cohort=cohort, status=Position.Status.OPEN)
    if not baselines_settled:
        settling = settling.filter(agent__model__kind=BenchmarkModel.Kind.LLM)
    ids = list(settling.values_list("pk", flat=True))
    Trade.objects.filter(position__in=ids, kind=Trade.Kind.BUY).update(
        brier_score=0.0004, side_won=False, scored_at=cohort.started_at
    )
    Position.objects.filter(pk__in=ids).update(
        status=Position.Status.SETTLED,
        settlement_value=Decimal("0.00"),
        realized_pnl=-F("cost_basis"),
        closed_at=cohort.started_at,
    )
    panel_resolved(cohort)
    return Cohort.objects.get(pk=cohort.pk)


@module_world()
def completed_world() -> int:
    """A page world (scale 1) whose cohort is completed and final: built once for the module
    (tests/worlds.py), for the tests that publish one such cohort."""
    return completed(build_world(scale=1)).pk


@pytest.fixture
def cohort(db: None, completed_world: ModuleWorld[int]) -> Cohort:
    """The completed, final cohort of the module's world (not tests/arena/conftest.py's)."""
    return Cohort.objects.get(pk=completed_world.value)


def baseline_positions(cohort: Cohort) -> Any:
    return Position.objects.filter(
        agent__cohort=cohort, agent__model__kind=BenchmarkModel.Kind.BASELINE
    )


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def folders(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.is_dir())


def tree(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def csv_rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


# ------------------------------------------------------------------------ the first release


@pytest.mark.django_db
def test_a_completed_cohort_is_published_as_r1_with_every_dataset(root: Path) -> None:
    cohort = completed(build_world(scale=2))

    outcome = release_publish(cohort_number=cohort.number, now=PUBLISHED_AT)

    assert outcome.status == "published"
    release = DataRelease.objects.get()
    assert outcome.release == release
    assert (release.cohort, release.version, release.name) == (
        cohort,
        1,
        f"cohort-{cohort.number}-r1",
    )
    assert release.published_at == PUBLISHED_AT
    assert release.methodology_version == cohort.methodology_version
    assert release.changes == ""
    formats = ("csv", "jsonl", "parquet") if PARQUET_AVAILABLE else ("csv", "jsonl")
    data_files = {f"{name}.{fmt}" for name in DATASETS for fmt in formats}
    documents = {
        "manifest.json",
        "schema.json",
        "README.md",
        "CITATION.cff",
        "release.json",
        "SHA256SUMS",
    }
    folder = root / release.name
    assert {p.name for p in folder.iterdir()} == data_files | documents
    assert {f["name"] for f in release.files} == data_files | documents
    assert release.manifest == json.loads((folder / "manifest.json").read_text())
    assert release.manifest["bounds"]["cohort"] == cohort.number
    assert release.total_bytes == sum(p.stat().st_size for p in folder.iterdir())
    # nothing else is left in the root: no partial folder (only the cohort's lock file)
    assert folders(root) == [release.name]
    assert json.loads((folder / "release.json").read_text()) == {
        "name": release.name,
        "cohort": cohort.number,
        "week_start": cohort.week_start.isoformat(),
        "version": 1,
        "published_at": PUBLISHED_AT.isoformat(),
        "methodology_version": cohort.methodology_version,
        "changes": "",
        "open_at_release": {"positions": [], "bets": []},
    }
    assert release.open_at_release == {"positions": [], "bets": []}
    assert release.label == "r1"
    assert release.manifest["bounds"]["still_held"] == "exclude"
    event = SystemEvent.objects.get(kind=SystemEvent.Kind.RELEASE_PUBLISHED)
    assert event.cohort_id == cohort.pk
    assert release.name in event.message


@pytest.mark.django_db
def test_the_release_holds_only_its_cohorts_rows_and_every_one_of_them(root: Path) -> None:
    other = build_world(scale=1)  # another cohort, never in this release
    world = build_world(scale=2)
    cohort = completed(world)
    completed(other)

    release = release_publish(cohort_number=cohort.number, now=PUBLISHED_AT).release
    assert release is not None

    folder = root / release.name
    bets = csv_rows(folder / "bets.csv")
    executed_buys = Trade.objects.filter(
        agent__cohort=cohort, kind=Trade.Kind.BUY, status=Trade.Status.EXECUTED
    )
    assert sorted(int(b["trade_id"]) for b in bets) == sorted(
        executed_buys.values_list("pk", flat=True)
    )
    assert {b["cohort"] for b in bets} == {str(cohort.number)}
    snapshots = [json.loads(line) for line in (folder / "snapshots.jsonl").read_text().splitlines()]
    assert len(snapshots) == PortfolioSnapshot.objects.filter(agent__cohort=cohort).count()
    rows = {f["name"]: f["rows"] for f in release.files if f.get("dataset")}
    assert rows["bets.csv"] == rows["bets.jsonl"] == len(bets)
    assert rows["decisions.csv"] == Decision.objects.filter(cohort=cohort).count()


@pytest.mark.django_db
def test_every_files_sha256_matches_the_manifest_the_row_and_sha256sums(
    root: Path, cohort: Cohort
) -> None:
    release = release_publish(cohort_number=cohort.number, now=PUBLISHED_AT).release
    assert release is not None
    folder = root / release.name

    for entry in release.manifest["files"]:
        assert sha256(folder / entry["name"]) == entry["sha256"], entry["name"]
        assert (folder / entry["name"]).stat().st_size == entry["bytes"]
    for entry in release.files:
        assert sha256(folder / entry["name"]) == entry["sha256"], entry["name"]
    sums = (folder / "SHA256SUMS").read_text()
    listed = {name: digest for digest, name in (line.split("  ", 1) for line in sums.splitlines())}
    assert set(listed) == {f["name"] for f in release.files} - {"SHA256SUMS"}
    assert all(listed[name] == sha256(folder / name) for name in listed)
    assert release.sha256 == sha256(folder / "SHA256SUMS")
    # the check a downloader runs
    check = subprocess.run(
        ["sha256sum", "--check", "--strict", "SHA256SUMS"],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.django_db
def test_the_schema_readme_and_citation_describe_the_release(root: Path, cohort: Cohort) -> None:
    release = release_publish(cohort_number=cohort.number, now=PUBLISHED_AT).release
    assert release is not None
    folder = root / release.name

    schema = json.loads((folder / "schema.json").read_text())
    assert set(schema["datasets"]) == set(DATASETS)
    for name, dataset in DATASETS.items():
        described = schema["datasets"][name]
        assert described["description"] == dataset.description
        assert [(c["name"], c["type"], c["description"]) for c in described["columns"]] == [
            (c.name, c.type, c.description) for c in dataset.columns
        ]
    readme = (folder / "README.md").read_text()
    assert release.name in readme
    for dataset in DATASETS.values():
        assert f"### {dataset.name}" in readme
        for column in dataset.columns:
            assert f"| `{column.name}` | {column.type} |" in readme
    citation = (folder / "CITATION.cff").read_text()
    assert f'version: "{release.name}"' in citation
    assert f'date-released: "{PUBLISHED_AT:%Y-%m-%d}"' in citation
    assert "type: dataset" in citation
    assert f"Published {PUBLISHED_AT:%Y-%m-%d}" in readme  # the suggested citation, as text


@pytest.mark.django_db
def test_published_files_are_read_only(root: Path, cohort: Cohort) -> None:
    release = release_publish(cohort_number=cohort.number, now=PUBLISHED_AT).release
    assert release is not None
    for path in (root / release.name).iterdir():
        assert not path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH), path


@pytest.mark.django_db
def test_an_active_cohort_gets_no_release(root: Path) -> None:
    world = build_world(scale=1)

    outcome = release_publish(cohort_number=world.cohort.number, now=PUBLISHED_AT)

    assert outcome.status == "not completed"
    assert not DataRelease.objects.exists()
    assert not root.exists() or folders(root) == []


# ------------------------------------------------------------------------------ finality


def long_dated_bet(agent: Agent, *, sold_out: bool = False) -> Trade:
    """A $50 bet of `agent` on YES at 0.4 (implied confidence 0.02) in a market of its own
    that resolves long after the cohort completes: its position still open, or sold out of
    (closed, nothing held) with the bet not scored yet."""
    cohort = agent.cohort
    market = Market.objects.create(
        polymarket_id=f"late-{agent.pk}-{int(sold_out)}",
        question="Resolves long after the cohort?",
        outcomes=["Yes", "No"],
        outcome_prices=["0.4", "0.6"],
        price=Decimal("0.4"),
        volume=Decimal("1000"),
        close_date=cohort.started_at + timedelta(days=400),
    )
    position = Position.objects.create(
        agent=agent,
        market=market,
        side="YES",
        outcome_index=0,
        status=Position.Status.CLOSED if sold_out else Position.Status.OPEN,
        shares=Decimal("0") if sold_out else Decimal("125"),
        cost_basis=Decimal("0.00") if sold_out else Decimal("50.00"),
        realized_pnl=Decimal("-10.00") if sold_out else Decimal("0.00"),
        last_price=Decimal("0.32") if sold_out else Decimal("0.4"),
        opened_at=cohort.started_at + timedelta(minutes=5),
        closed_at=cohort.started_at + timedelta(minutes=15) if sold_out else None,
    )
    decision = Decision.objects.filter(agent=agent).first() or Decision.objects.create(
        agent=agent,
        cohort=cohort,
        week_start=cohort.week_start,
        status=Decision.Status.DONE,
        action=Decision.Action.BET,
        responder=Decision.Responder.OUTSIDE,
    )
    return Trade.objects.create(
        decision=decision,
        agent=agent,
        order_index=90 + int(sold_out),
        kind=Trade.Kind.BUY,
        status=Trade.Status.EXECUTED,
        market=market,
        position=position,
        side="YES",
        requested_amount=Decimal("50.00"),
        price=Decimal("0.4"),
        shares=Decimal("125"),
        amount=Decimal("50.00"),
        cash_before=Decimal("10000.00"),
        cash_after=Decimal("9950.00"),
        implied_confidence=0.02,
        created_at=cohort.started_at + timedelta(minutes=5),
    )


def agent_of(cohort: Cohort, kind: str) -> Agent:
    agent = Agent.objects.filter(cohort=cohort, model__kind=kind).order_by("pk").first()
    assert agent is not None
    return agent


def outside_agent(cohort: Cohort) -> Agent:
    """An outside team's agent in the cohort (none of the lineup's models)."""
    model = BenchmarkModel.objects.create(
        internal_id=f"outside-team-{cohort.number}",
        display_name="An outside team",
        kind=BenchmarkModel.Kind.OUTSIDE,
        owner="A team",
        display_order=950,
    )
    return Agent.objects.create(cohort=cohort, model=model, cash=Decimal("9950.00"))


def resolve(market: Market, *, at: datetime, winner: str | None = "Yes") -> None:
    """Settle the market as the hourly check would at `at`: `winner`, or cancelled."""
    verdict = (
        Verdict(state="resolved", winning_outcome=winner, winning_index=0, reason="t")
        if winner
        else Verdict(state="cancelled", winning_outcome=None, winning_index=None, reason="t")
    )
    with clock.simulated(at):
        assert market_settle(polymarket_id=market.polymarket_id, verdict=verdict)


def after_last_snapshot(cohort: Cohort, *, days: int = 3) -> datetime:
    """A time `days` after both PUBLISHED_AT and the cohort's last snapshot (each world of a
    run is built a week after the last)."""
    last: datetime = PortfolioSnapshot.objects.filter(agent__cohort=cohort).aggregate(
        last=Max("snapshot_timestamp")
    )["last"]
    return max(PUBLISHED_AT, last) + timedelta(days=days)


@pytest.mark.django_db
@pytest.mark.parametrize(("winner", "status"), [("Yes", "won"), (None, "cancelled")])
def test_a_bet_sold_out_of_holds_the_release_back_until_it_is_scored_or_cancelled(
    root: Path, cohort: Cohort, winner: str | None, status: str
) -> None:
    """An LLM agent sold its position out before the cohort completed; the bet is scored
    when its market resolves. Until then the cohort's figures may still move, so nothing is
    published; then r1 holds the bet scored (or cancelled, when the market was refunded)."""
    n = cohort.number
    bet = long_dated_bet(agent_of(cohort, BenchmarkModel.Kind.LLM), sold_out=True)
    assert bet.market is not None

    waiting = releases_publish_due(now=PUBLISHED_AT)
    refused = releases_publish(cohort_numbers=[n], now=PUBLISHED_AT)

    assert (waiting.done, waiting.failed) == ([], [])
    assert refused.done == []
    assert refused.failed == [
        f"cohort {n} is not final: 1 of its LLM agents' bets are not scored yet (markets "
        f"{bet.market.polymarket_id}); its release waits until each is scored or its market "
        "cancelled"
    ]
    assert not DataRelease.objects.exists()
    assert not root.exists() or folders(root) == []

    resolved_at = after_last_snapshot(cohort)
    resolve(bet.market, at=resolved_at, winner=winner)
    report = releases_publish_due(now=resolved_at + timedelta(minutes=1))

    assert (report.done, report.failed) == ([f"cohort {n}: published cohort-{n}-r1"], [])
    release = DataRelease.objects.get()
    bets = {row["trade_id"]: row for row in csv_rows(root / release.name / "bets.csv")}
    assert bets[str(bet.pk)]["status"] == status
    assert bets[str(bet.pk)]["brier"] == ("0.9604" if winner else "")
    assert release.open_at_release == {"positions": [], "bets": []}
    again = releases_publish_due(now=resolved_at + timedelta(hours=1))
    assert (again.done, again.failed) == ([], [])


@pytest.mark.django_db
def test_an_outside_agents_long_dated_bet_does_not_hold_back_the_lineups_release(
    root: Path, cohort: Cohort
) -> None:
    """An outside agent's $50 bet resolves in a year. The release is published at once, the
    bet in it as open and listed as open at release time; the ticks that keep marking the
    outside agent add nothing the release holds, so nothing more is published."""
    n = cohort.number
    agent = outside_agent(cohort)
    bet = long_dated_bet(agent)
    assert bet.market is not None

    report = releases_publish_due(now=PUBLISHED_AT)

    assert (report.done, report.failed) == ([f"cohort {n}: published cohort-{n}-r1"], [])
    release = DataRelease.objects.get()
    market_id = bet.market.polymarket_id
    assert release.open_at_release == {
        "positions": [
            {
                "position_id": bet.position_id,
                "model": agent.model.internal_id,
                "model_kind": "outside",
                "market_id": market_id,
                "side": "YES",
            }
        ],
        "bets": [
            {
                "trade_id": bet.pk,
                "model": agent.model.internal_id,
                "model_kind": "outside",
                "market_id": market_id,
                "side": "YES",
                "sold_out": False,
            }
        ],
    }
    folder = root / release.name
    bets = {row["trade_id"]: row for row in csv_rows(folder / "bets.csv")}
    assert (bets[str(bet.pk)]["status"], bets[str(bet.pk)]["brier"]) == ("open", "")
    positions = {row["position_id"]: row for row in csv_rows(folder / "positions.csv")}
    assert positions[str(bet.position_id)]["status"] == "open"
    readme = (folder / "README.md").read_text()
    assert "## Open at release time" in readme
    assert f"| {bet.position_id} | {agent.model.internal_id} | outside | {market_id} |" in readme
    assert json.loads((folder / "release.json").read_text())["open_at_release"] == (
        release.open_at_release
    )

    # A week of ticks later the outside agent is still marked: not a row of it is released.
    later = after_last_snapshot(cohort, days=7)
    tick = snapshots_take(now=later, refresh=False)
    assert tick.written == 1
    assert PortfolioSnapshot.objects.filter(agent=agent).count() == 1
    again = releases_publish_due(now=later + timedelta(minutes=5))
    assert (again.done, again.failed) == ([], [])
    by_hand = release_publish(cohort_number=n, now=later + timedelta(minutes=5))
    assert (by_hand.status, by_hand.release) == ("unchanged", release)
    assert DataRelease.objects.count() == 1


@pytest.mark.django_db
def test_a_baseline_position_settling_after_the_release_is_the_next_release_r2(
    root: Path, cohort: Cohort
) -> None:
    """r1 holds a baseline's long-dated position as open. It settles; once the next tick
    has ended the baseline's curve at its settled value, r2 is published, naming the
    position settled and the bet scored. r1 stays byte for byte as it was, row and files."""
    n = cohort.number
    baseline = agent_of(cohort, BenchmarkModel.Kind.BASELINE)
    bet = long_dated_bet(baseline)
    assert bet.market is not None
    assert bet.position_id is not None
    assert releases_publish_due(now=PUBLISHED_AT).done == [f"cohort {n}: published cohort-{n}-r1"]
    r1 = DataRelease.objects.get()
    assert [p["position_id"] for p in r1.open_at_release["positions"]] == [bet.position_id]
    published, row = tree(root / r1.name), DataRelease.objects.values().get(pk=r1.pk)
    snapshots = int(next(f["rows"] for f in r1.files if f["name"] == "snapshots.csv"))

    settled_at = after_last_snapshot(cohort)
    resolve(bet.market, at=settled_at)
    # settled, but the baseline's curve does not end at its settled value yet
    waiting = releases_publish_due(now=settled_at)
    assert (waiting.done, waiting.failed) == ([], [])
    by_hand = release_publish(cohort_number=n, now=settled_at)
    assert by_hand.status == "not final"
    assert "final snapshot" in by_hand.reason
    assert snapshots_take(now=settled_at + timedelta(minutes=10), refresh=False).written == 1

    report = releases_publish_due(now=settled_at + timedelta(minutes=20))

    assert (report.done, report.failed) == ([f"cohort {n}: published cohort-{n}-r2"], [])
    r2 = DataRelease.objects.get(version=2)
    model, market_id = baseline.model.internal_id, bet.market.polymarket_id
    assert r2.changes.splitlines() == [
        f"Supersedes cohort-{n}-r1.",
        f"Position {bet.position_id} ({model}, baseline; market {market_id}, YES) settled: "
        "paid $125.00, realized P/L $75.00.",
        f"Bet {bet.pk} ({model}; market {market_id}, YES) scored: won, Brier 0.9604.",
        f"bets: {len(csv_rows(root / r1.name / 'bets.csv'))} rows, content changed.",
        f"positions: {len(csv_rows(root / r1.name / 'positions.csv'))} rows, content changed.",
        f"snapshots: {snapshots} → {snapshots + 1} rows.",
        f"trades: {len(csv_rows(root / r1.name / 'trades.csv'))} rows, content changed.",
    ]
    assert r2.open_at_release == {"positions": [], "bets": []}
    assert (
        f"- Bet {bet.pk} ({model}; market {market_id}, YES) scored: won"
        in (root / r2.name / "README.md").read_text()
    )
    assert tree(root / r1.name) == published
    assert DataRelease.objects.values().get(pk=r1.pk) == row
    # and nothing more is due
    again = releases_publish_due(now=settled_at + timedelta(hours=1))
    assert (again.done, again.failed) == ([], [])
    assert DataRelease.objects.count() == 2


@pytest.mark.django_db
def test_a_cohort_still_active_or_not_final_is_refused_and_nothing_written(root: Path) -> None:
    active = build_world(scale=1).cohort
    unscored = completed(build_world(scale=1))
    bet = long_dated_bet(agent_of(unscored, BenchmarkModel.Kind.LLM), sold_out=True)
    assert bet.market is not None

    report = releases_publish(cohort_numbers=[active.number, unscored.number])

    assert report.done == []
    assert report.failed == [
        f"cohort {active.number}: not completed, nothing published",
        f"cohort {unscored.number} is not final: 1 of its LLM agents' bets are not scored "
        f"yet (markets {bet.market.polymarket_id}); its release waits until each is scored "
        "or its market cancelled",
    ]
    assert not DataRelease.objects.exists()
    assert not root.exists() or folders(root) == []
    assert not SystemEvent.objects.filter(kind=SystemEvent.Kind.RELEASE_FAILED).exists()


@pytest.mark.django_db
def test_a_v1_published_before_its_sold_out_bet_was_scored_gets_r2_once_it_is(
    root: Path, cohort: Cohort, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the rule before this one did: `cohort-N-v1` published while an LLM agent's bet it
    had sold out of was not scored, and no digest kept on the cohort. It stays readable
    under its name; once the bet is scored the due run publishes `cohort-N-r2`."""
    n = cohort.number
    llm = agent_of(cohort, BenchmarkModel.Kind.LLM)
    bet = long_dated_bet(llm, sold_out=True)
    assert bet.market is not None
    monkeypatch.setattr(release_services, "cohort_not_final_reason", lambda cohort: "")
    monkeypatch.setattr(
        release_services, "release_name", lambda *, cohort_number, version: f"cohort-{n}-v1"
    )
    v1 = release_publish(cohort_number=n, now=PUBLISHED_AT).release
    monkeypatch.undo()
    assert v1 is not None
    assert v1.name == f"cohort-{n}-v1"
    DataRelease.objects.filter(pk=v1.pk).update(open_at_release={})
    Cohort.objects.filter(pk=cohort.pk).update(release_state="")
    published = tree(root / v1.name)
    assert releases_publish_due(now=PUBLISHED_AT).done == []  # not scored yet

    resolved_at = after_last_snapshot(cohort)
    resolve(bet.market, at=resolved_at)
    report = releases_publish_due(now=resolved_at)

    assert (report.done, report.failed) == ([f"cohort {n}: published cohort-{n}-r2"], [])
    r2 = DataRelease.objects.get(version=2)
    lines = r2.changes.splitlines()
    assert lines[:2] == [
        f"Supersedes cohort-{n}-v1.",
        f"Bet {bet.pk} ({llm.model.internal_id}; market {bet.market.polymarket_id}, YES) "
        "scored: won, Brier 0.9604.",
    ]
    assert tree(root / v1.name) == published
    assert folders(root) == sorted([v1.name, r2.name])


# ------------------------------------------------------------------ repeats and corrections


@pytest.mark.django_db
def test_publishing_again_unchanged_data_does_nothing(root: Path, cohort: Cohort) -> None:
    first = release_publish(cohort_number=cohort.number, now=PUBLISHED_AT).release
    assert first is not None
    stamps = {p.name: p.stat().st_mtime_ns for p in (root / first.name).iterdir()}

    again = release_publish(cohort_number=cohort.number, now=CORRECTED_AT)

    assert again.status == "unchanged"
    assert again.release == first
    assert DataRelease.objects.count() == 1
    assert folders(root) == [first.name]
    assert {p.name: p.stat().st_mtime_ns for p in (root / first.name).iterdir()} == stamps
    assert SystemEvent.objects.filter(kind=SystemEvent.Kind.RELEASE_PUBLISHED).count() == 1


@pytest.mark.django_db
def test_the_due_run_repeated_exports_nothing_while_nothing_changed(
    root: Path, cohort: Cohort, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once a cohort is released, a due run reads only a digest of what may still change in
    it: nothing changed, nothing is exported, nothing published. A release from before the
    digest was kept (none on the cohort) is compared once, in full, and then left alone."""
    n = cohort.number
    assert releases_publish_due(now=PUBLISHED_AT).done == [f"cohort {n}: published cohort-{n}-r1"]
    real_write = release_services.write_export  # type: ignore[attr-defined]
    exported: list[int] = []

    def counted(folder: Path, *, cohort: int, **kw: Any) -> dict[str, Any]:
        exported.append(cohort)
        return real_write(folder, cohort=cohort, **kw)

    monkeypatch.setattr(release_services, "write_export", counted)
    for hours in (1, 2):
        again = releases_publish_due(now=PUBLISHED_AT + timedelta(hours=hours))
        assert (again.done, again.failed) == ([], [])
    assert exported == []

    Cohort.objects.filter(pk=cohort.pk).update(release_state="")
    compared = releases_publish_due(now=CORRECTED_AT)
    after = releases_publish_due(now=CORRECTED_AT + timedelta(hours=1))

    assert compared.done == [f"cohort {n}: unchanged since cohort-{n}-r1, nothing published"]
    assert (after.done, after.failed) == ([], [])
    assert exported == [n]
    assert DataRelease.objects.count() == 1


@pytest.mark.django_db
def test_a_market_settled_again_is_r2_saying_what_changed_and_r1_stays(root: Path) -> None:
    world = build_world(scale=2)
    cohort = completed(world)
    assert releases_publish_due(now=PUBLISHED_AT).failed == []
    v1 = DataRelease.objects.get()
    v1_sums = (root / v1.name / "SHA256SUMS").read_bytes()
    v1_bets = {f["name"]: f["rows"] for f in v1.files if f.get("dataset") == "bets"}
    snapshots_before = PortfolioSnapshot.objects.filter(agent__cohort=cohort).count()
    # The market is settled again the other way: a lost bet is now won; and one more
    # snapshot is found.
    lost = Trade.objects.filter(
        agent=world.agent, kind=Trade.Kind.BUY, status="executed", side_won=False
    ).first()
    assert lost is not None
    assert lost.market is not None
    Trade.objects.filter(pk=lost.pk).update(
        brier_score=0.9604, side_won=True, scored_at=CORRECTED_AT
    )
    PortfolioSnapshot.objects.create(
        agent=world.agent,
        snapshot_timestamp=CORRECTED_AT - timedelta(days=6),
        cash=Decimal("9000"),
        positions_value=Decimal("0"),
        total_value=Decimal("9000"),
        total_pnl=Decimal("-1000"),
        total_pnl_percent=Decimal("-10"),
    )

    report = releases_publish_due(now=CORRECTED_AT)

    assert report.done == [f"cohort {cohort.number}: published cohort-{cohort.number}-r2"]
    v2 = DataRelease.objects.get(version=2)
    assert (v2.version, v2.name, v2.label) == (2, f"cohort-{cohort.number}-r2", "r2")
    lines = v2.changes.splitlines()
    assert lines[:2] == [
        f"Supersedes {v1.name}.",
        f"Bet {lost.pk} ({world.model.internal_id}; market {lost.market.polymarket_id}, YES) "
        "scored again: lost (Brier 0.0004) → won (Brier 0.9604).",
    ]
    assert f"snapshots: {snapshots_before} → {snapshots_before + 1} rows." in lines
    assert f"bets: {v1_bets['bets.csv']} rows, content changed." in lines
    assert not any(line.startswith("decisions:") for line in lines)  # unchanged: not listed
    assert not any(line.startswith("Format") for line in lines)  # the same formats
    assert v2.changes.splitlines()[1] in (root / v2.name / "README.md").read_text()
    # version 1 is untouched, and both are listed
    assert (root / v1.name / "SHA256SUMS").read_bytes() == v1_sums
    assert DataRelease.objects.get(pk=v1.pk).sha256 == v1.sha256
    assert folders(root) == sorted([v1.name, v2.name])
    # and the correction, published again, is unchanged
    assert release_publish(cohort_number=cohort.number).status == "unchanged"
    assert DataRelease.objects.count() == 2


@pytest.mark.django_db
@pytest.mark.skipif(not PARQUET_AVAILABLE, reason="needs pyarrow to write Parquet")
def test_a_format_more_or_less_with_the_same_csv_is_no_new_release(
    root: Path, cohort: Cohort, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parquet's bytes depend on the pyarrow that wrote them, and a worker without pyarrow
    writes none: only the CSV files decide whether the data changed."""
    v1 = release_publish(cohort_number=cohort.number, now=PUBLISHED_AT).release
    assert v1 is not None
    assert any(f.get("format") == "parquet" for f in v1.files)
    monkeypatch.setattr(release_services, "release_formats", lambda: ("csv", "jsonl"))

    assert release_publish(cohort_number=cohort.number, now=CORRECTED_AT).status == "unchanged"
    # Parquet written by another pyarrow: other bytes, the same rows
    v1_files = [{**f, "sha256": "0" * 64} if f.get("format") == "parquet" else f for f in v1.files]
    DataRelease.objects.filter(pk=v1.pk).update(files=v1_files)
    monkeypatch.undo()
    assert release_publish(cohort_number=cohort.number, now=CORRECTED_AT).status == "unchanged"
    assert DataRelease.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.skipif(not PARQUET_AVAILABLE, reason="needs pyarrow to write Parquet")
def test_a_correction_says_a_format_removed_as_such_not_as_changed_rows(
    root: Path, cohort: Cohort, monkeypatch: pytest.MonkeyPatch
) -> None:
    v1 = release_publish(cohort_number=cohort.number, now=PUBLISHED_AT).release
    assert v1 is not None
    Trade.objects.filter(agent__cohort=cohort, kind=Trade.Kind.BUY).update(brier_score=0.25)
    monkeypatch.setattr(release_services, "release_formats", lambda: ("csv", "jsonl"))

    v2 = release_publish(cohort_number=cohort.number, now=CORRECTED_AT).release

    assert v2 is not None
    lines = v2.changes.splitlines()
    listed = [line.split(":", 1)[0] for line in lines if line.split(":", 1)[0] in DATASETS]
    csv_before = {f["dataset"]: f["sha256"] for f in v1.files if f.get("format") == "csv"}
    csv_after = {f["dataset"]: f["sha256"] for f in v2.files if f.get("format") == "csv"}
    assert listed == sorted(d for d in DATASETS if csv_before[d] != csv_after[d])
    assert "bets" in listed
    assert not any("parquet" in line for line in lines if not line.startswith("Format"))
    removed = [line for line in lines if line.startswith("Format parquet removed")]
    assert len(removed) == 1
    assert all(f"{name}.parquet" in removed[0] for name in DATASETS)
    assert not any(f.get("format") == "parquet" for f in v2.files)


@pytest.mark.django_db
def test_the_second_and_third_weeks_cohorts_get_theirs_and_the_first_stays_byte_identical(
    root: Path,
) -> None:
    first, second, third = (build_world(scale=1) for _ in range(3))
    completed(first)
    assert releases_publish_due(now=PUBLISHED_AT).failed == []
    v1 = f"cohort-{first.cohort.number}-r1"
    published = tree(root / v1)
    row = DataRelease.objects.values().get(name=v1)

    completed(second, at=PUBLISHED_AT + timedelta(weeks=1))
    report = releases_publish_due(now=PUBLISHED_AT + timedelta(weeks=1))
    assert report.done == [
        f"cohort {second.cohort.number}: published cohort-{second.cohort.number}-r1"
    ]
    completed(third, at=PUBLISHED_AT + timedelta(weeks=2))
    report = releases_publish_due(now=PUBLISHED_AT + timedelta(weeks=2))
    assert report.done == [
        f"cohort {third.cohort.number}: published cohort-{third.cohort.number}-r1"
    ]

    assert tree(root / v1) == published
    assert DataRelease.objects.values().get(name=v1) == row
    assert DataRelease.objects.count() == 3


@pytest.mark.django_db
def test_each_weeks_completed_cohort_gets_its_own_release(root: Path) -> None:
    worlds = [build_world(scale=1) for _ in range(3)]
    for week, world in enumerate(worlds):
        completed(world, at=PUBLISHED_AT + timedelta(weeks=week))

    report = releases_publish_due(now=PUBLISHED_AT)

    assert report.failed == []
    numbers = [w.cohort.number for w in worlds]
    assert sorted(DataRelease.objects.values_list("cohort__number", "version", "name")) == [
        (n, 1, f"cohort-{n}-r1") for n in numbers
    ]
    for number in numbers:
        bets = csv_rows(root / f"cohort-{number}-r1" / "bets.csv")
        assert bets
        assert {b["cohort"] for b in bets} == {str(number)}
    # nothing is due any more
    assert releases_publish_due().done == []
    assert DataRelease.objects.count() == 3


# ------------------------------------------------------------------------------- failures


@pytest.mark.django_db
def test_a_crash_while_writing_leaves_no_row_no_folder_and_the_next_publish_succeeds(
    root: Path, cohort: Cohort, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_write = release_services.write_export  # type: ignore[attr-defined]

    def crashing_write(folder: Path, **kw: Any) -> dict[str, Any]:
        real_write(folder, **kw)  # every file written …
        raise OSError("disk full")  # … then the crash

    monkeypatch.setattr(release_services, "write_export", crashing_write)
    with pytest.raises(OSError, match="disk full"):
        release_publish(cohort_number=cohort.number, now=PUBLISHED_AT)

    assert not DataRelease.objects.exists()
    assert folders(root) == []
    failure = SystemEvent.objects.get(kind=SystemEvent.Kind.RELEASE_FAILED)
    assert failure.level == SystemEvent.Level.ERROR
    assert failure.cohort_id == cohort.pk
    assert "disk full" in failure.message

    monkeypatch.setattr(release_services, "write_export", real_write)
    outcome = release_publish(cohort_number=cohort.number, now=PUBLISHED_AT)

    assert outcome.status == "published"
    assert outcome.release is not None
    assert outcome.release.version == 1
    assert folders(root) == [outcome.release.name]


@pytest.mark.django_db
def test_a_partial_folder_is_removed_and_an_unverifiable_orphan_is_moved_aside(
    root: Path,
    cohort: Cohort,
) -> None:
    """A process killed mid-write leaves its partial folder, which the next publish removes. A
    release folder with no row that does not verify (here one with a name from before the r
    names, `cohort-N-v1`) is never deleted — it may have been downloaded and cited — but moved
    aside and recorded, and its number is never given again."""
    n = cohort.number
    root.mkdir(parents=True)
    (root / f".partial-cohort-{n}-0123456789ab").mkdir()
    (root / f".partial-cohort-{n}-0123456789ab" / "bets.csv").write_text("trade_id\n1\n")
    (root / f"cohort-{n}-v1").mkdir()
    (root / f"cohort-{n}-v1" / "bets.csv").write_text("half a file")
    (root / f"cohort-{n}0-v1").mkdir()  # cohort 10n's: not this cohort's

    outcome = release_publish(cohort_number=n, now=PUBLISHED_AT)

    assert outcome.status == "published"
    release = DataRelease.objects.get()
    assert release.name == f"cohort-{n}-r2"  # number 1 is a name already seen on the disk
    aside = [name for name in folders(root) if name.startswith(f".quarantine-cohort-{n}-v1-")]
    assert len(aside) == 1
    assert (root / aside[0] / "bets.csv").read_text() == "half a file"
    assert folders(root) == sorted([*aside, f"cohort-{n}-r2", f"cohort-{n}0-v1"])
    warning = SystemEvent.objects.get(kind=SystemEvent.Kind.RELEASE_FAILED)
    assert warning.level == SystemEvent.Level.WARNING
    assert aside[0] in warning.message
    assert sha256(root / release.name / "bets.csv") == next(
        f["sha256"] for f in release.files if f["name"] == "bets.csv"
    )


@pytest.mark.django_db
def test_a_release_whose_row_failed_to_commit_is_adopted_by_the_next_publish(
    root: Path, cohort: Cohort, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_create = DataRelease.objects.create

    def refused(**kw: Any) -> DataRelease:
        raise IntegrityError("duplicate key value violates unique constraint")

    monkeypatch.setattr(DataRelease.objects, "create", refused)
    with pytest.raises(IntegrityError):
        release_publish(cohort_number=cohort.number, now=PUBLISHED_AT)

    name = f"cohort-{cohort.number}-r1"
    assert folders(root) == [name]  # whole, and kept
    assert not DataRelease.objects.exists()
    assert SystemEvent.objects.filter(kind=SystemEvent.Kind.RELEASE_FAILED).exists()
    written = tree(root / name)

    monkeypatch.setattr(DataRelease.objects, "create", real_create)
    outcome = release_publish(cohort_number=cohort.number, now=CORRECTED_AT)

    assert outcome.status == "unchanged"  # adopted, and the data has not changed since
    release = DataRelease.objects.get()
    assert outcome.release == release
    assert (release.name, release.version, release.published_at) == (name, 1, PUBLISHED_AT)
    assert release.sha256 == sha256(root / name / "SHA256SUMS")
    assert {f["name"] for f in release.files} == set(written)
    assert release.manifest == json.loads(written["manifest.json"])
    assert tree(root / name) == written
    assert folders(root) == [name]


@pytest.mark.django_db
def test_after_a_database_restore_a_verified_folder_is_adopted_and_a_tampered_one_set_aside(
    root: Path,
) -> None:
    """The database is restored from before two releases were published: the folder whose
    SHA256SUMS verifies gets its row back as it was; the one altered since is moved aside, and
    the cohort's next release is numbered past it."""
    world = build_world(scale=1)
    cohort = completed(world)
    v1 = release_publish(cohort_number=cohort.number, now=PUBLISHED_AT).release
    assert v1 is not None
    Trade.objects.filter(agent__cohort=cohort, brier_score__isnull=True).update(brier_score=0.25)
    v2 = release_publish(cohort_number=cohort.number, now=CORRECTED_AT).release
    assert v2 is not None
    assert v2.version == 2
    v1_row = DataRelease.objects.values().get(pk=v1.pk)
    v1_files = tree(root / v1.name)
    (root / v2.name).chmod(0o755)
    (root / v2.name / "bets.csv").chmod(0o644)
    (root / v2.name / "bets.csv").write_text("trade_id\n")  # altered after publication
    DataRelease.objects.all().delete()  # the restore

    outcome = release_publish(cohort_number=cohort.number, now=CORRECTED_AT + timedelta(days=1))

    adopted = DataRelease.objects.get(version=1)
    assert {
        k: v for k, v in DataRelease.objects.values().get(pk=adopted.pk).items() if k != "id"
    } == {k: v for k, v in v1_row.items() if k != "id"}
    assert tree(root / v1.name) == v1_files
    assert not (root / v2.name).exists()
    assert [n for n in folders(root) if n.startswith(f".quarantine-{v2.name}-")]
    # the data is r2's, so it differs from r1: a new release, never r2's number again
    assert outcome.status == "published"
    assert outcome.release is not None
    assert outcome.release.name == f"cohort-{cohort.number}-r3"
    assert outcome.release.changes.splitlines()[0] == f"Supersedes {v1.name}."


@pytest.mark.django_db
def test_a_whole_folder_of_another_databases_cohort_of_that_number_is_set_aside_not_adopted(
    root: Path,
) -> None:
    """A fresh database given an old deployment's releases: its cohort of the same number
    began another week, so the folder on the disk, whole as it is, is not this cohort's
    release. It is moved aside and the cohort's first release numbered past it."""
    cohort = completed(build_world(scale=1))
    theirs = release_publish(cohort_number=cohort.number, now=PUBLISHED_AT).release
    assert theirs is not None
    DataRelease.objects.all().delete()
    Cohort.objects.filter(pk=cohort.pk).update(week_start=cohort.week_start + timedelta(weeks=52))

    outcome = release_publish(cohort_number=cohort.number, now=CORRECTED_AT)

    assert not DataRelease.objects.filter(name=theirs.name).exists()
    assert not (root / theirs.name).exists()
    assert [n for n in folders(root) if n.startswith(f".quarantine-{theirs.name}-")]
    assert outcome.status == "published"
    assert outcome.release is not None
    assert outcome.release.name == f"cohort-{cohort.number}-r2"
    assert outcome.release.changes == ""  # nothing of this cohort's was published before


@pytest.mark.django_db
def test_a_publish_finds_another_publish_of_the_cohort_busy(root: Path, cohort: Cohort) -> None:
    root.mkdir(parents=True)

    with release_services._cohort_lock(root, cohort.number) as held:
        assert held
        outcome = release_publish(cohort_number=cohort.number, now=PUBLISHED_AT)

    assert outcome.status == "busy"
    assert not DataRelease.objects.exists()
    assert release_publish(cohort_number=cohort.number).status == "published"


@pytest.mark.django_db
def test_one_cohorts_failure_does_not_stop_the_others(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken, fine = (completed(build_world(scale=1)) for _ in range(2))
    real_write = release_services.write_export  # type: ignore[attr-defined]

    def write(folder: Path, *, cohort: int, **kw: Any) -> dict[str, Any]:
        if cohort == broken.number:
            raise RuntimeError("the export broke")
        return real_write(folder, cohort=cohort, **kw)

    monkeypatch.setattr(release_services, "write_export", write)
    report = releases_publish_due(now=PUBLISHED_AT)

    assert [line for line in report.failed if f"cohort {broken.number}" in line]
    assert "the export broke" in report.failed[0]
    assert report.done == [f"cohort {fine.number}: published cohort-{fine.number}-r1"]
    assert list(DataRelease.objects.values_list("cohort", flat=True)) == [fine.pk]


@pytest.mark.django_db
def test_a_soft_time_limit_stops_the_loop_rather_than_being_reported_and_skipped(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = (completed(build_world(scale=1)) for _ in range(2))
    calls: list[int] = []

    def out_of_time(folder: Path, *, cohort: int, **kw: Any) -> dict[str, Any]:
        calls.append(cohort)
        raise SoftTimeLimitExceeded()

    monkeypatch.setattr(release_services, "write_export", out_of_time)
    with pytest.raises(SoftTimeLimitExceeded):
        releases_publish_due(now=PUBLISHED_AT)

    assert calls == [first.number]  # the second was not started with no time left
    assert not DataRelease.objects.exists()


@pytest.mark.django_db
def test_a_failed_publish_is_tried_again_an_hour_after_the_failure_not_at_every_check(
    root: Path, cohort: Cohort, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_write = release_services.write_export  # type: ignore[attr-defined]

    def broken(folder: Path, **kw: Any) -> dict[str, Any]:
        raise OSError("disk full")

    monkeypatch.setattr(release_services, "write_export", broken)
    with clock.simulated(PUBLISHED_AT):
        failed = releases_publish_due(now=PUBLISHED_AT)
    assert len(failed.failed) == 1
    monkeypatch.setattr(release_services, "write_export", real_write)

    half_an_hour = releases_publish_due(now=PUBLISHED_AT + timedelta(minutes=30))
    assert (half_an_hour.done, half_an_hour.failed) == ([], [])
    assert not DataRelease.objects.exists()

    an_hour = releases_publish_due(now=PUBLISHED_AT + timedelta(hours=1, minutes=1))
    assert an_hour.done == [f"cohort {cohort.number}: published cohort-{cohort.number}-r1"]


# ------------------------------------------------------------- completion through the task


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.celery_worker
def test_the_resolution_check_task_publishes_the_cohort_it_completes(
    root: Path, settings: Any, celery_worker_on_redis: Any
) -> None:
    """The hourly check completes the cohort (every agent decided, nothing held), and once
    that committed the release task runs on its own and publishes version 1."""
    from arena.tasks import check_resolutions

    settings.MARKET_SOURCE = "demo"
    settings.OPENROUTER_API_KEY = ""
    week = date(2031, 6, 1)  # a Sunday
    cohort, _ = cohort_start(week_start=week, now=datetime(2031, 6, 1, tzinfo=UTC))
    for agent in cohort.agents.all():
        Decision.objects.create(
            agent=agent,
            cohort=cohort,
            week_start=week,
            status=Decision.Status.DONE,
            action=Decision.Action.HOLD,
            responder=Decision.Responder.OFFLINE,
        )

    summary = check_resolutions.delay().get(timeout=60)

    assert "1 cohorts completed" in summary
    queued = summary.rsplit("data releases: task ", 1)[1]
    assert AsyncResult(queued).get(timeout=120) == (
        f"cohort {cohort.number}: published cohort-{cohort.number}-r1"
    )
    release = DataRelease.objects.get()
    assert release.cohort_id == cohort.pk
    assert Cohort.objects.get(pk=cohort.pk).status == Cohort.Status.COMPLETED
    decisions = csv_rows(root / release.name / "decisions.csv")
    assert len(decisions) == cohort.agents.count()
    # the next check finds nothing due
    again = check_resolutions.delay().get(timeout=60)
    assert AsyncResult(again.rsplit("data releases: task ", 1)[1]).get(timeout=60) == (
        "no release is due"
    )
    assert DataRelease.objects.count() == 1
    assert folders(root) == [release.name]


# ------------------------------------------------------------------------------ columns added


def _bets_file(folder: Path, header: list[str], rows: list[list[str]]) -> dict[str, Any]:
    folder.mkdir(exist_ok=True)
    path = folder / "bets.csv"
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return {"name": "bets.csv", "dataset": "bets", "format": "csv", "rows": len(rows),
            "sha256": digest, "bytes": path.stat().st_size}  # fmt: skip


OLD_BETS = ["trade_id", "model", "market_id", "side", "status", "brier"]
NEW_BETS = ["trade_id", "model", "model_kind", "market_id", "side", "first_outcome", "status",
            "brier"]  # fmt: skip


@pytest.mark.parametrize("scored_since", [False, True])
def test_a_column_added_since_the_last_release_is_named_and_no_row_reads_as_changed(
    tmp_path: Path, scored_since: bool
) -> None:
    """A release written after the bets gained columns says so, and names only the bets that
    changed in the columns both releases have, not every bet."""
    old = _bets_file(
        tmp_path / "cohort-3-r1",
        OLD_BETS,
        [["1", "gpt-5.1", "m1", "YES", "won", "0.04"], ["2", "gpt-5.1", "m2", "NO", "open", ""]],
    )
    second = ["open", ""] if not scored_since else ["won", "0.09"]
    new = _bets_file(
        tmp_path / "new",
        NEW_BETS,
        [
            ["1", "gpt-5.1", "llm", "m1", "YES", "Yes", "won", "0.04"],
            ["2", "gpt-5.1", "llm", "m2", "NO", "Yes", *second],
        ],
    )
    previous = DataRelease(name="cohort-3-r1", files=[old])
    changes = release_changes(
        previous=previous,
        data_files=[new],
        previous_folder=tmp_path / "cohort-3-r1",
        folder=tmp_path / "new",
    ).splitlines()
    added = "columns added: model_kind, first_outcome"
    if scored_since:
        assert changes == [
            "Supersedes cohort-3-r1.",
            "Bet 2 (gpt-5.1; market m2, NO) scored: won, Brier 0.09.",
            f"bets: 2 rows, content changed; {added}.",
        ]
    else:
        assert changes == [
            "Supersedes cohort-3-r1.",
            f"bets: 2 rows, the same in the columns both have; {added}.",
        ]
