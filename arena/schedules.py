"""Keep django-celery-beat's rows in step with the schedules declared in settings."""

from __future__ import annotations

from typing import Any

from celery.schedules import crontab
from django.conf import settings
from django.db import transaction
from django_celery_beat.models import CrontabSchedule, PeriodicTask


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
