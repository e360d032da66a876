"""The outside agents' weekly decision window (issue 13): when their submissions are taken."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from django.conf import settings


def outside_window(week_start: date) -> tuple[datetime, datetime]:
    """Return (opens, closes) of the week's decision window, in UTC: a submission is taken
    at `opens` <= now < `closes`. Minutes after Sunday 00:00 UTC, from the settings
    OUTSIDE_WINDOW_OPENS_MINUTES and OUTSIDE_WINDOW_CLOSES_MINUTES (default 00:05–01:00)."""
    sunday = datetime(week_start.year, week_start.month, week_start.day, tzinfo=UTC)
    opens = sunday + timedelta(minutes=settings.OUTSIDE_WINDOW_OPENS_MINUTES)
    closes = sunday + timedelta(minutes=settings.OUTSIDE_WINDOW_CLOSES_MINUTES)
    return opens, closes
