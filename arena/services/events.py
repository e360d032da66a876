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


# The kind of the event every staff action in the admin records.
STAFF_ACTION = Kind.STAFF_ACTION


def staff_action_record(
    *,
    actor_id: int | None,
    actor_username: str,
    action: str,
    summary: str,
    failed: bool = False,
    data: dict[str, Any] | None = None,
    cohort_id: int | None = None,
) -> SystemEvent | None:
    """Record that a staff member ran `action` in the admin; return the event, or None.

    One STAFF_ACTION event, a warning when the run `failed` and info otherwise, whose data
    names who ran it (`actor`: username and id), the action and `data`, linked to `cohort_id`
    when there is one. Like every event it never raises (`event_record`).
    """
    return event_record(
        kind=STAFF_ACTION,
        level=Level.WARNING if failed else Level.INFO,
        message=f"{actor_username} ran {action} in the admin: {summary}",
        data={
            "actor": {"username": actor_username, "id": actor_id},
            "action": action,
            **(data or {}),
        },
        cohort_id=cohort_id,
    )
