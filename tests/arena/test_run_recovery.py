"""A run whose process died while opening it or sending its agents' tasks is served within
minutes, not after RUN_GRACE (3 hours): every cohort decides on the week's one snapshot
before the outside agents' window closes (002 "Decision run"; docs/engine.md).

The steps are the tasks' own, in this process: `run_open` (arena.run_decisions, and with
`retry=True` arena.retry_decisions, every 5 minutes in Sunday's first hour), a chain of
`decision_run` per cohort, `run_queued` once every chain was sent. A worker killed between
those steps leaves exactly the state each test starts from."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from arena.models import Cohort, Decision, DecisionRun, SystemEvent
from arena.services.cohorts import cohort_start
from arena.services.decisions.run import (
    decision_run,
    decisions_run_all,
    run_open,
    run_queued,
)
from arena.services.frozen import run_prepare
from arena.weeks import outside_window
from markets.sources import RecordedSource
from tests.arena.conftest import COHORT_AT, RUN_AT, WEEK

pytestmark = pytest.mark.django_db

SECOND_WEEK = WEEK + timedelta(weeks=1)
SUNDAY = datetime(SECOND_WEEK.year, SECOND_WEEK.month, SECOND_WEEK.day, tzinfo=UTC)
RUN = SUNDAY + timedelta(minutes=5)  # the scheduled run of the second week


@pytest.fixture(autouse=True)
def _small_universe(settings: Any) -> None:
    settings.MARKET_UNIVERSE_SIZE = 40  # prompts stay small; the rules do not change


@pytest.fixture
def cohorts(db: None) -> tuple[Cohort, Cohort]:
    """Two cohorts deciding in the second week: the first week's, which decided once, and
    the second week's, started at its Sunday midnight."""
    first, _ = cohort_start(week_start=WEEK, now=COHORT_AT)
    assert decisions_run_all(now=RUN_AT, source=RecordedSource()).run_id is not None
    second, _ = cohort_start(week_start=SECOND_WEEK, now=SUNDAY)
    return first, second


def lineup(cohort: Cohort) -> set[int]:
    return set(cohort.agents.values_list("pk", flat=True))


def serve(run: DecisionRun, agent_ids: list[int] | set[int], now: datetime) -> None:
    for agent_id in sorted(agent_ids):
        decision_run(agent_id=agent_id, run_id=run.pk, now=now)


def retry(now: datetime) -> tuple[DecisionRun | None, list[int]]:
    return run_open(now=now, retry=True, source=RecordedSource())


def test_a_run_whose_sending_of_tasks_died_is_queued_again_on_its_own_snapshot(
    cohorts: tuple[Cohort, Cohort],
) -> None:
    first, second = cohorts
    run, due = run_open(now=RUN, source=RecordedSource())
    assert run is not None
    assert set(due) == lineup(first) | lineup(second)
    # The first cohort's chain went out and ran; the worker died before sending the second's.
    serve(run, lineup(first), RUN + timedelta(minutes=1))

    # Within QUEUE_GRACE the run may still be sending: the retry leaves it alone.
    assert retry(RUN + timedelta(minutes=2)) == (None, [])
    # The Sunday retry 5 minutes on queues the rest again, on the same run and snapshot.
    again, owed = retry(RUN + timedelta(minutes=5))
    assert again is not None
    assert again.pk == run.pk
    assert set(owed) == lineup(second)
    serve(again, owed, RUN + timedelta(minutes=6))
    run_queued(run_id=again.pk)

    week = Decision.objects.filter(week_start=SECOND_WEEK)
    assert week.count() == len(lineup(first) | lineup(second))
    assert set(week.values_list("run_id", flat=True)) == {run.pk}  # one snapshot for the week
    assert (
        not week.exclude(status__in=Decision.DECIDED)
        .exclude(status=Decision.Status.AWAITING)
        .exists()
    )
    assert DecisionRun.objects.filter(week_start=SECOND_WEEK).count() == 1
    event = SystemEvent.objects.get(run=run, data__queued_again=True)
    assert "queued again" in event.message
    assert RUN + timedelta(minutes=6) < outside_window(SECOND_WEEK)[1]
    # Queued now: the next retry finds nobody owing a decision.
    assert retry(RUN + timedelta(minutes=10)) == (None, [])


def test_a_run_frozen_but_never_opened_holds_nobody_back(cohorts: tuple[Cohort, Cohort]) -> None:
    first, second = cohorts
    dead = run_prepare(now=RUN, source=RecordedSource())  # the process died right after

    assert retry(RUN + timedelta(minutes=2)) == (None, [])  # it may still be opening
    run, due = retry(RUN + timedelta(minutes=5))

    assert run is not None
    assert run.pk != dead.pk  # nobody decided on the dead one's snapshot
    assert set(due) == lineup(first) | lineup(second)


def test_a_queued_run_still_working_through_its_agents_is_left_alone(
    cohorts: tuple[Cohort, Cohort],
) -> None:
    run, _ = run_open(now=RUN, source=RecordedSource())
    assert run is not None
    run_queued(run_id=run.pk)
    # Its chains are slow (a model may take minutes): the retry serves retries only.
    assert retry(RUN + timedelta(minutes=30)) == (None, [])


def test_a_stalled_retry_run_never_takes_the_agents_a_working_run_has_not_reached(
    cohorts: tuple[Cohort, Cohort],
) -> None:
    from arena.services.events import Kind, event_record

    first, _second = cohorts
    run, _ = run_open(now=RUN, source=RecordedSource())
    assert run is not None
    run_queued(run_id=run.pk)
    serve(run, lineup(first), RUN + timedelta(minutes=1))  # its chains go on, slowly
    # A retry run opened at 00:35 whose worker died before it had sent its tasks.
    dead_retry = run_prepare(now=RUN + timedelta(minutes=30), source=RecordedSource())
    event_record(kind=Kind.RUN_STARTED, message=f"{dead_retry} started", run_id=dead_retry.pk)

    again, owed = retry(RUN + timedelta(minutes=40))

    assert again is not None
    assert again.pk == dead_retry.pk
    assert owed == []  # the second cohort is the 00:05 run's, on its snapshot
