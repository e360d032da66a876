"""Receivers of other apps' signals: what the operations record keeps of them."""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver

from arena.services.events import Kind, Level, event_record
from markets.signals import market_fetch_failed


@receiver(market_fetch_failed, dispatch_uid="arena.market_fetch_failed")
def record_market_fetch_failure(
    sender: Any, *, operation: str, source: str, error: str, requested: int, **kw: Any
) -> None:
    event_record(
        kind=Kind.SYNC_FAILED,
        level=Level.WARNING,
        message=f"market {operation} from {source} failed ({requested} markets asked): {error}",
        data={"operation": operation, "source": source, "requested": requested},
    )
