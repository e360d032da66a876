"""The operations record: what the system did or suffered, kept in the database."""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction

from arena import clock
from arena.evidence import storable_json, storable_text
from arena.models import SystemEvent

logger = logging.getLogger(__name__)

Kind = SystemEvent.Kind
Level = SystemEvent.Level


def event_record(
    *,
    kind: str,
    message: str,
    level: str = Level.INFO,
    cohort_id: int | None = None,
    agent_id: int | None = None,
    decision_id: int | None = None,
    run_id: int | None = None,
    market_id: int | None = None,
    data: dict[str, Any] | None = None,
) -> SystemEvent | None:
    """Record one system event; return it, or None when even recording failed.

    The record must never become the failure: a broken write is logged and swallowed, so a
    caller can record from inside its own error handling.
    """
    try:
        with transaction.atomic():  # a savepoint inside a caller's transaction
            return SystemEvent.objects.create(
                kind=kind,
                level=level,
                message=storable_text(message)[:4000],
                cohort_id=cohort_id,
                agent_id=agent_id,
                decision_id=decision_id,
                run_id=run_id,
                market_id=market_id,
                data=storable_json(data or {}),
                created_at=clock.now(),
            )
    except Exception:
        logger.exception("could not record the %s event: %s", kind, message)
        return None
