"""The Sunday boundary with the clock frozen (002 "Cohorts"): from Saturday 23:59:59
to Sunday 00:10:00 UTC, the scheduled services — cohort start at 00:00, the decision run at
00:05, the 10-minute snapshot — produce exactly one cohort, one decision per agent, then one
snapshot per agent; repeating any step changes nothing."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from agents.models import BenchmarkModel
from arena.models import (
    Agent,
    Cohort,
    Decision,
    DecisionAttempt,
    DecisionRun,
    PortfolioSnapshot,
    SnapshotTick,
    Trade,
)
from arena.services.cohorts import cohort_start
from arena.services.decisions.run import decisions_run_all
from arena.services.marking import snapshots_take
from arena.weeks import cohort_week_start
from markets.sources import RecordedSource
from tests.arena.books import assert_books_balance

SUNDAY = date(2026, 3, 8)
SATURDAY_LAST_SECOND = datetime(2026, 3, 7, 23, 59, 59, tzinfo=UTC)
MIDNIGHT = datetime(2026, 3, 8, 0, 0, tzinfo=UTC)
DECISIONS_AT = datetime(2026, 3, 8, 0, 5, tzinfo=UTC)
SNAPSHOT_AT = datetime(2026, 3, 8, 0, 10, tzinfo=UTC)


def counts() -> dict[str, int]:
    return {
        "cohorts": Cohort.objects.count(),
        "agents": Agent.objects.count(),
        "runs": DecisionRun.objects.count(),
        "decisions": Decision.objects.count(),
        "attempts": DecisionAttempt.objects.count(),
        "trades": Trade.objects.count(),
        "snapshots": PortfolioSnapshot.objects.count(),
    }


def test_saturday_to_sunday_one_cohort_one_decision_per_agent_then_snapshots(
    db: None, time_machine: Any
) -> None:
    lineup = BenchmarkModel.objects.filter(active=True).count()
    source = RecordedSource()

    # Saturday 23:59:59: nothing has started; a tick or a run finds nobody to serve
    time_machine.move_to(SATURDAY_LAST_SECOND, tick=False)
    assert cohort_week_start() == date(2026, 3, 1)
    assert decisions_run_all(source=source).run_id is None
    assert snapshots_take(source=source).written == 0
    assert counts()["cohorts"] == 0

    # Sunday 00:00:00: the cohort of the new week starts
    time_machine.move_to(MIDNIGHT, tick=False)
    cohort, created = cohort_start()
    assert created
    assert cohort.week_start == SUNDAY
    assert cohort.started_at == MIDNIGHT
    assert cohort.agents.count() == lineup
    assert cohort.agents.filter(cash=10000).count() == lineup
    assert cohort_start() == (cohort, False)  # a second delivery of the task
    time_machine.move_to(MIDNIGHT.replace(second=30), tick=False)
    assert cohort_start() == (cohort, False)
    assert counts()["cohorts"] == 1

    # Sunday 00:05: one run, one decision per agent, all for the new week
    time_machine.move_to(DECISIONS_AT, tick=False)
    report = decisions_run_all(source=source)
    assert report.run_id is not None
    run = DecisionRun.objects.get(pk=report.run_id)
    assert run.week_start == SUNDAY
    assert run.started_at == DECISIONS_AT
    assert len(report.outcomes) == lineup
    decisions = Decision.objects.filter(cohort=cohort)
    assert decisions.count() == lineup
    assert set(decisions.values_list("week_start", flat=True)) == {SUNDAY}
    assert sorted(decisions.values_list("agent_id", flat=True)) == sorted(
        cohort.agents.values_list("pk", flat=True)
    )
    assert not decisions.filter(status__in=["pending", "running"]).exists()
    after_decisions = counts()
    assert decisions_run_all(source=source).run_id is None  # a second delivery
    time_machine.move_to(DECISIONS_AT.replace(minute=7), tick=False)
    assert decisions_run_all(source=source).run_id is None
    assert counts() == after_decisions

    # Sunday 00:10: the first tick snapshots every agent once
    time_machine.move_to(SNAPSHOT_AT, tick=False)
    tick = snapshots_take()  # the task's call: source from settings (the demo recordings)
    assert tick.written == lineup
    assert not tick.refresh_error
    snapshots = PortfolioSnapshot.objects.filter(agent__cohort=cohort)
    assert snapshots.count() == lineup
    assert set(snapshots.values_list("snapshot_timestamp", flat=True)) == {SNAPSHOT_AT}
    for snap in snapshots:
        assert snap.total_value == snap.cash + snap.positions_value
    after_tick = counts()
    assert snapshots_take().skipped
    time_machine.move_to(SNAPSHOT_AT.replace(minute=19, second=59), tick=False)
    assert snapshots_take().skipped
    assert counts() == after_tick
    assert SnapshotTick.objects.filter(slot=SNAPSHOT_AT).count() == 1
    assert after_tick["cohorts"] == 1
    assert after_tick["decisions"] == lineup
    assert after_tick["snapshots"] == lineup


@pytest.mark.slow(reason="three whole weekly runs of the lineup, on either side of the hour")
def test_a_run_one_second_after_the_hour_and_a_late_first_run_keep_one_decision_a_week(
    db: None, time_machine: Any
) -> None:
    # The schedule drill: the cohort starts at 00:00:00, the 00:05 run is delivered at 00:05:01,
    # then again at 00:40 (a late duplicate); and in the next week, the first run of the week
    # only starts at 00:40. Each week still has exactly one cohort and one decision per agent.
    lineup = BenchmarkModel.objects.filter(active=True).count()
    source = RecordedSource()
    time_machine.move_to(MIDNIGHT, tick=False)
    cohort, _ = cohort_start()
    time_machine.move_to(DECISIONS_AT.replace(second=1), tick=False)
    first = decisions_run_all(source=source)
    assert first.run_id is not None
    assert len(first.outcomes) == lineup
    time_machine.move_to(DECISIONS_AT.replace(minute=40), tick=False)
    assert decisions_run_all(source=source).run_id is None
    assert Decision.objects.filter(cohort=cohort).count() == lineup
    assert_books_balance()

    next_midnight = MIDNIGHT + timedelta(weeks=1)
    time_machine.move_to(next_midnight, tick=False)
    second, created = cohort_start()
    assert created
    assert second.week_start == SUNDAY + timedelta(weeks=1)
    time_machine.move_to(next_midnight.replace(minute=40), tick=False)  # the run starts late
    late = decisions_run_all(source=source)
    assert late.run_id is not None
    run = DecisionRun.objects.get(pk=late.run_id)
    assert run.week_start == SUNDAY + timedelta(weeks=1)
    # Both active cohorts' agents decide once for the new week: the late run is the week's run.
    assert len(late.outcomes) == 2 * lineup
    week = Decision.objects.filter(week_start=SUNDAY + timedelta(weeks=1))
    assert week.count() == 2 * lineup
    assert week.values("agent").distinct().count() == 2 * lineup
    time_machine.move_to(next_midnight.replace(minute=55), tick=False)
    assert decisions_run_all(source=source).run_id is None
    assert Cohort.objects.count() == 2
    assert_books_balance()
