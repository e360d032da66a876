"""Hourly and daily snapshot rollups: the tick keeps them, a rebuild recomputes
them, and the charts read them for long ranges with the same points as the snapshots give.

The data is generated: weeks of 10-minute snapshots with missed ticks, odd seconds, a long
gap, an agent that stops and one that starts late (all in UTC, which has no DST).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.models import BenchmarkModel
from arena.models import Agent, AgentSnapshotRollup, Cohort, PortfolioSnapshot
from arena.selectors import curves
from arena.selectors.curves import MAX_POINTS, RANGES, value_series
from arena.services.marking import portfolio_snapshots_write, snapshots_take
from arena.services.rollup import rollup_rebuild
from tests.arena.factories import AgentFactory, CohortFactory

pytestmark = pytest.mark.django_db

TEN_MINUTES = timedelta(minutes=10)
SUNDAY = datetime(2030, 1, 6, tzinfo=UTC)  # the factories' first cohort week
ROLLUP = AgentSnapshotRollup._meta.db_table
FIELDS = (
    "agent_id",
    "resolution",
    "bucket_start",
    "first_at",
    "last_at",
    "total_value",
    "total_pnl",
    "total_pnl_percent",
    "min_total_value",
    "max_total_value",
    "snapshots",
)


def lineup(count: int) -> list[Agent]:
    cohort: Cohort = CohortFactory.create()
    return [
        AgentFactory.create(cohort=cohort, model=model)
        for model in BenchmarkModel.objects.order_by("kind", "display_order")[:count]
    ]


def snapshots(agent: Agent, times: Sequence[datetime], rng: random.Random) -> None:
    """Store a snapshot of `agent` at each time, its value wandering by up to $5 a time."""
    value = Decimal("10000.00")
    rows = []
    for ts in times:
        value += Decimal(rng.randrange(-500, 501)) / 100
        rows.append(
            PortfolioSnapshot(
                agent=agent,
                snapshot_timestamp=ts,
                cash=Decimal("5000.00"),
                positions_value=value - 5000,
                total_value=value,
                total_pnl=value - 10000,
                total_pnl_percent=((value - 10000) / 100).quantize(Decimal("0.0001")),
            )
        )
    PortfolioSnapshot.objects.bulk_create(rows, batch_size=2000)


def ticks(
    start: datetime, days: float, rng: random.Random, *, missed: float = 0.15
) -> list[datetime]:
    """10-minute slots from `start`, a share of them missed, a few written off the slot (a
    cohort's final snapshot is stamped when it completes)."""
    times = []
    for n in range(int(days * 144)):
        if rng.random() < missed:
            continue
        at = start + TEN_MINUTES * n
        if rng.random() < 0.05:
            at += timedelta(seconds=rng.randrange(1, 599))
        times.append(at)
    return times


def generated_agents() -> list[Agent]:
    """Six weeks for one agent (with a five-day gap), three weeks for one that starts a week
    late and stops, a few days for one that starts in the last week."""
    rng = random.Random(12)
    agents = lineup(3)
    steady = ticks(SUNDAY, 42, rng)
    steady = [t for t in steady if not SUNDAY + timedelta(days=17) <= t < SUNDAY + timedelta(22)]
    snapshots(agents[0], steady, rng)
    snapshots(agents[1], ticks(SUNDAY + timedelta(days=7, hours=5), 21, rng), rng)
    snapshots(agents[2], ticks(SUNDAY + timedelta(days=38, hours=13), 3.5, rng), rng)
    return agents


def reads_rollup_buckets(captured: CaptureQueriesContext) -> list[bool]:
    """Which queries read the rollup's buckets (every chart reads the rollup's span with the
    series' ends)."""
    return [ROLLUP in q["sql"] and "bucket_start" in q["sql"] for q in captured.captured_queries]


def read_snapshots_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(curves, "_rollup_resolution", lambda bucket, span: None)


def rollup_rows() -> list[tuple[Any, ...]]:
    return list(AgentSnapshotRollup.objects.order_by("pk").values_list(*FIELDS).order_by(*FIELDS))


# --- the charts ---------------------------------------------------------------------------------


def test_every_range_draws_the_same_points_from_the_rollup_as_from_the_snapshots(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    agents = generated_agents()
    rollup_rebuild()
    with CaptureQueriesContext(connection) as queries:
        rolled = {key: value_series(agents=agents, range_key=key) for key in RANGES}
    reads_rollup = reads_rollup_buckets(queries)
    read_snapshots_only(monkeypatch)
    with CaptureQueriesContext(connection) as queries:
        raw = {key: value_series(agents=agents, range_key=key) for key in RANGES}

    assert not any(reads_rollup_buckets(queries))
    assert reads_rollup.count(True) == 4  # 1W, 1M, 3M and ALL: more than 1,000 slots each
    for key in RANGES:
        assert rolled[key] == raw[key], key
        for series in rolled[key]:
            # drawn with both its ends in the window, or not drawn in it at all
            assert len(series.points) != 1
            assert len(series.points) <= MAX_POINTS
    latest = {
        a.pk: PortfolioSnapshot.objects.filter(agent=a).latest("snapshot_timestamp") for a in agents
    }
    for series, agent in zip(rolled["ALL"], agents, strict=True):
        assert series.points[-1] == (
            latest[agent.pk].snapshot_timestamp,
            latest[agent.pk].total_value,
        )


def test_a_range_reads_at_most_a_thousand_rollup_rows_per_series() -> None:
    """A year of hourly buckets is 8,760 rows; the month reads its 720 hours, the year at ALL
    its 365 days."""
    (agent,) = lineup(1)
    rng = random.Random(5)
    snapshots(agent, ticks(SUNDAY, 366, rng, missed=0.9), rng)
    rollup_rebuild()
    end = PortfolioSnapshot.objects.filter(agent=agent).latest("snapshot_timestamp")
    for key in ("1W", "1M", "3M", "ALL"):
        window = RANGES[key]
        resolution = "day" if window.bucket % timedelta(days=1) == timedelta(0) else "hour"
        rows = AgentSnapshotRollup.objects.filter(agent=agent, resolution=resolution)
        if window.span is not None:
            rows = rows.filter(last_at__gte=end.snapshot_timestamp - window.span)
        assert rows.count() <= 1000, key
        with CaptureQueriesContext(connection) as queries:
            (series,) = value_series(agents=[agent], range_key=key)
        assert any(reads_rollup_buckets(queries)), key
        assert series.points[-1][0] == end.snapshot_timestamp


def test_a_series_whose_rollup_misses_its_latest_snapshots_is_read_from_the_snapshots(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A snapshot written without its rollup (here by hand): the chart still ends at it."""
    agents = generated_agents()
    rollup_rebuild()
    late = PortfolioSnapshot.objects.filter(agent=agents[0]).latest("snapshot_timestamp")
    late.pk = None
    late.snapshot_timestamp += timedelta(hours=2)
    late.total_value += 123
    late.save()

    rolled = value_series(agents=agents, range_key="ALL")
    read_snapshots_only(monkeypatch)
    assert rolled == value_series(agents=agents, range_key="ALL")
    assert rolled[0].points[-1] == (late.snapshot_timestamp, late.total_value)


# --- keeping the rollup -------------------------------------------------------------------------


def test_the_tick_keeps_the_rollup_a_rebuild_would_compute() -> None:
    """26 hours of ticks (one missed, one repeated) across a day boundary, cash moving, and a
    final snapshot off the slot: the tick's incremental rollup is the rebuild's."""
    agents = lineup(2)
    rng = random.Random(4)
    start = SUNDAY + timedelta(hours=22)
    for n in range(26 * 6):
        if n == 40:
            continue  # a missed tick
        Agent.objects.filter(pk=agents[n % 2].pk).update(
            cash=Decimal("10000.00") + Decimal(rng.randrange(-90000, 90000)) / 100
        )
        report = snapshots_take(now=start + TEN_MINUTES * n + timedelta(minutes=3), refresh=False)
        assert report.written == 2
        if n == 50:  # the same slot again: nothing written, nothing merged twice
            assert snapshots_take(now=start + TEN_MINUTES * n, refresh=False).skipped
    portfolio_snapshots_write(
        agents=Agent.objects.filter(pk__in=[a.pk for a in agents]),
        at=start + TEN_MINUTES * 200 + timedelta(seconds=17),
    )
    kept = rollup_rows()

    rollup_rebuild()

    assert rollup_rows() == kept
    for resolution in ("hour", "day"):
        counted = sum(
            AgentSnapshotRollup.objects.filter(resolution=resolution).values_list(
                "snapshots", flat=True
            )
        )
        assert counted == PortfolioSnapshot.objects.count() == 2 * (26 * 6 - 1 + 1)
    assert AgentSnapshotRollup.objects.filter(resolution="day").count() == 2 * 3  # Sun–Tue


def test_the_rebuild_command_recomputes_the_agents_asked() -> None:
    agents = generated_agents()
    rollup_rebuild()
    everything = rollup_rows()
    AgentSnapshotRollup.objects.all().delete()

    call_command("rebuild_snapshot_rollup", "--agent", str(agents[1].pk), verbosity=0)

    assert {row[0] for row in rollup_rows()} == {agents[1].pk}
    assert rollup_rows() == [row for row in everything if row[0] == agents[1].pk]
    call_command("rebuild_snapshot_rollup", verbosity=0)
    assert rollup_rows() == everything
