"""What the schedules missed: a weekly cohort whose start never ran (Redis or beat down through
its first day) is reported, never started late behind the operators' backs."""

from __future__ import annotations

from datetime import date

from django_celery_beat.models import PeriodicTask

from arena.models import Cohort, SystemEvent
from arena.services.events import Kind, Level, event_record

COHORT_TASK = "arena.start_cohort"


def cohort_missed_record(*, week_start: date) -> bool:
    """Record, once for the week, a warning that the cohort of `week_start` was never started
    while the arena runs weekly (an earlier cohort exists, or the weekly start is scheduled),
    with the command that starts it. Return True when it was recorded now."""
    if Cohort.objects.filter(week_start=week_start).exists():
        return False
    weekly = (
        Cohort.objects.filter(week_start__lt=week_start).exists()
        or PeriodicTask.objects.filter(task=COHORT_TASK, enabled=True).exists()
    )
    week = week_start.isoformat()
    if (
        not weekly
        or SystemEvent.objects.filter(kind=Kind.COHORT_MISSED, data__week_start=week).exists()
    ):
        return False
    event_record(
        kind=Kind.COHORT_MISSED,
        level=Level.WARNING,
        message=f"no cohort was started for the week of {week} and its first day is over: no "
        f"run starts it any more; to start it, run `manage.py start_cohort --week {week}`",
        data={"week_start": week},
    )
    return True
