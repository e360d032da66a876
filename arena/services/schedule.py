"""The weekly schedules: django-celery-beat's rows kept in step with the settings, and what the
schedules missed: a weekly cohort whose start never ran (Redis or beat down through its first
day) is reported, never started late behind the operators' backs."""

from __future__ import annotations

from datetime import date
from typing import Any

from celery.schedules import crontab
from django.conf import settings
from django.db import transaction
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from arena.models import Cohort, SystemEvent
from arena.services.events import Kind, Level, event_record

COHORT_TASK = "arena.start_cohort"


def cohort_missed_record(*, week_start: date, start_fired: bool = False) -> bool:
    """Record, once for the week, a warning that the cohort of `week_start` was never started
    while the arena runs weekly (an earlier cohort exists, the weekly start is scheduled, or
    `start_fired`: the weekly start itself came past its grace), with the command that starts
    it. Return True when it was recorded now."""
    if Cohort.objects.filter(week_start=week_start).exists():
        return False
    weekly = (
        start_fired
        or Cohort.objects.filter(week_start__lt=week_start).exists()
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


@transaction.atomic
def schedules_sync() -> list[str]:
    """Upsert one PeriodicTask per CELERY_BEAT_SCHEDULE entry, by name, in UTC.

    Rows are updated in place, never deleted and recreated, so `last_run_at` and the run
    count survive. Return the names synced. Safe to repeat.
    """
    names = []
    for name, entry in settings.CELERY_BEAT_SCHEDULE.items():
        schedule: Any = entry["schedule"]
        if not isinstance(schedule, crontab):
            raise TypeError(f"schedule {name!r} must be a crontab")
        cron, _ = CrontabSchedule.objects.get_or_create(
            minute=schedule._orig_minute,
            hour=schedule._orig_hour,
            day_of_week=schedule._orig_day_of_week,
            day_of_month=schedule._orig_day_of_month,
            month_of_year=schedule._orig_month_of_year,
            timezone="UTC",
        )
        options: dict[str, Any] = dict(entry.get("options") or {})  # type: ignore[call-overload]
        PeriodicTask.objects.update_or_create(
            name=name,
            defaults={
                "task": entry["task"],
                "crontab": cron,
                "interval": None,
                "expire_seconds": options.get("expire_seconds"),
                "enabled": True,
            },
        )
        names.append(name)
    return names
