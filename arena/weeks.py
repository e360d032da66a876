"""The arena's calendar: the cohort week, its grace periods, the decisions' retry deadline,
the outside agents' decision window, and the 10-minute snapshot slot.

Pure arithmetic on moments and dates, read by every layer (services, selectors, the API, the
demo), so that a rule about time is written once. Everything is in UTC.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from django.conf import settings

from arena import clock

# How long after Sunday 00:00 UTC a decision run still starts the week's missing cohort.
COHORT_START_GRACE = timedelta(days=1)

# How long a run may still be working through its agents (each task's hard limit is 16 min):
# within it, a retry run leaves the agents it has not reached yet alone.
RUN_GRACE = timedelta(hours=3)
# How long a run may take to open and send its agents' tasks (seconds, in practice): a run
# frozen but not opened, or opened but not queued, for longer lost its process meanwhile,
# and the next retry run serves its agents within minutes, in the Sunday window's retries.
QUEUE_GRACE = timedelta(minutes=3)

# Portfolio snapshots are taken every ten minutes, one per agent and slot.
SNAPSHOT_SLOT = timedelta(minutes=10)


def cohort_week_start(now: datetime | None = None) -> date:
    """Return the Sunday (UTC) of the week containing `now`: the cohort's week start."""
    moment = (now or clock.now()).astimezone(UTC)
    day = moment.date()
    return day - timedelta(days=(day.weekday() + 1) % 7)


def week_opens(week_start: date) -> datetime:
    """Return the moment the week of `week_start` opens: that day's 00:00 UTC."""
    return datetime(week_start.year, week_start.month, week_start.day, tzinfo=UTC)


def within_start_grace(week_start: date, now: datetime) -> bool:
    """Return True while the cohort of `week_start` may still be started by the schedule (the
    weekly start, a decision run): before `COHORT_START_GRACE` after Sunday 00:00 UTC. Past it,
    a cohort started late would first decide on prices days younger than its week's (a restarted
    beat fires a missed start at once); only an operator starts it then."""
    return now - week_opens(week_start) < COHORT_START_GRACE


def retry_deadline(week_start: date) -> datetime:
    """Return the moment after which no decision of the week of `week_start` is asked again:
    DECISION_RETRY_DEADLINE_HOURS after Sunday 00:00 UTC (default 24: the end of Sunday).
    A retry later than that would decide on prices days younger than every other agent's."""
    return week_opens(week_start) + timedelta(hours=settings.DECISION_RETRY_DEADLINE_HOURS)


def outside_window(week_start: date) -> tuple[datetime, datetime]:
    """Return (opens, closes) of the week's decision window, in UTC: a submission is taken
    at `opens` <= now < `closes`. Minutes after Sunday 00:00 UTC, from the settings
    OUTSIDE_WINDOW_OPENS_MINUTES and OUTSIDE_WINDOW_CLOSES_MINUTES (default 00:05–01:00)."""
    sunday = week_opens(week_start)
    opens = sunday + timedelta(minutes=settings.OUTSIDE_WINDOW_OPENS_MINUTES)
    closes = sunday + timedelta(minutes=settings.OUTSIDE_WINDOW_CLOSES_MINUTES)
    return opens, closes


def snapshot_slot(now: datetime) -> datetime:
    """Return the 10-minute slot `now` falls in (UTC, floored)."""
    moment = now.astimezone(UTC)
    return moment.replace(minute=moment.minute - moment.minute % 10, second=0, microsecond=0)
