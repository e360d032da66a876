"""The weekly cohort start keeps the decision run's start grace (002 "Cohorts": a cohort starts
on Sunday at 00:00 UTC). A beat restarted mid-week fires the Sunday start it missed at once; a
cohort started then would first decide on Tuesday's snapshot, not Sunday's. So the start task,
like a decision run, starts the week's cohort only within its first day (COHORT_START_GRACE);
past it, it starts nothing and records the week as missed, for an operator to start by hand.

The task is called in this process (its body, as a worker runs it): the rule is the service's,
and the broker adds nothing to it.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from arena.models import Cohort, SystemEvent
from arena.services.cohorts import cohort_start
from arena.tasks import start_cohort
from arena.weeks import COHORT_START_GRACE, week_opens
from tests.arena.test_schedule_drills import lineup, missed_cohort_notice

FIRST_SUNDAY = date(2026, 3, 1)
MICROSECOND = timedelta(microseconds=1)

pytestmark = pytest.mark.django_db


def sunday(week: int) -> date:
    """The Sunday of the arena's `week` (1 is the first cohort's)."""
    return FIRST_SUNDAY + timedelta(weeks=week - 1)


def earlier_weeks_ran(week: int) -> None:
    """Every week before `week` had its cohort, started on time."""
    for earlier in range(1, week):
        cohort_start(week_start=sunday(earlier), now=week_opens(sunday(earlier)))


def missed_events(week: int) -> list[SystemEvent]:
    return list(
        SystemEvent.objects.filter(
            kind=SystemEvent.Kind.COHORT_MISSED, data__week_start=sunday(week).isoformat()
        )
    )


@pytest.mark.parametrize("week", [1, 2, 3])
def test_a_start_on_the_last_moment_of_the_grace_starts_the_cohort_dated_sunday_midnight(
    time_machine: Any, week: int
) -> None:
    earlier_weeks_ran(week)
    time_machine.move_to(week_opens(sunday(week)) + COHORT_START_GRACE - MICROSECOND, tick=False)

    assert start_cohort() == f"started Cohort {week} ({sunday(week):%Y-%m-%d})"

    cohort = Cohort.objects.get(week_start=sunday(week))
    assert cohort.number == week
    assert cohort.started_at == week_opens(sunday(week))
    assert cohort.agents.count() == lineup()
    assert not missed_events(week)


@pytest.mark.parametrize("past", [timedelta(0), MICROSECOND, timedelta(days=2)])
@pytest.mark.parametrize("week", [1, 2, 3])
def test_a_start_at_or_past_the_end_of_the_grace_starts_nothing_and_records_the_week_missed(
    time_machine: Any, client: Client, week: int, past: timedelta
) -> None:
    # At exactly the end of the grace the week's first day is over, as for a decision run and
    # the status page; two days past it is the restarted beat's Tuesday.
    earlier_weeks_ran(week)
    time_machine.move_to(week_opens(sunday(week)) + COHORT_START_GRACE + past, tick=False)

    assert start_cohort() == (
        "past the cohort's start grace: nothing started, the week is recorded as missed"
    )
    start_cohort()  # delivered again: said once

    assert not Cohort.objects.filter(week_start=sunday(week)).exists()
    assert Cohort.objects.count() == week - 1
    [missed] = missed_events(week)
    assert missed.level == SystemEvent.Level.WARNING
    command = f"manage.py start_cohort --week {sunday(week):%Y-%m-%d}"
    assert command in missed.message
    if week > 1:  # the arena runs weekly: the status page says how to start it
        notice = missed_cohort_notice(client)
        assert notice is not None
        assert notice.endswith(f"To start it now, run {command}.")


def test_a_restarted_beat_on_tuesday_leaves_the_week_to_the_operator_who_starts_it_once(
    time_machine: Any, client: Client
) -> None:
    earlier_weeks_ran(3)
    tuesday = datetime(2026, 3, 17, 9, 30, tzinfo=UTC)  # week 3's Tuesday
    time_machine.move_to(tuesday, tick=False)
    assert start_cohort().startswith("past the cohort's start grace")
    assert not Cohort.objects.filter(week_start=sunday(3)).exists()

    # The operator runs the command the status page gives; a later start changes nothing.
    call_command("start_cohort", "--week", f"{sunday(3):%Y-%m-%d}")
    assert start_cohort() == "Cohort 3 (2026-03-15) already exists"
    assert Cohort.objects.get(week_start=sunday(3)).agents.count() == lineup()
    assert missed_cohort_notice(client) is None
    assert len(missed_events(3)) == 1
