"""Thin Celery tasks of the catalogue."""

from __future__ import annotations

from celery import shared_task

from markets import services


@shared_task(name="markets.sync_markets", soft_time_limit=240, time_limit=270)
def sync_markets(limit: int | None = None) -> str:
    """Refresh the top markets by volume; return the one-line summary."""
    return services.markets_sync_top(limit=limit).summary()
