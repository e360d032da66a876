"""A mark that moves whenever the arena's figures or records may have changed, so an answer
that is costly to compute (the leaderboard, an export's manifest) can be kept until it does."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from arena.models import (
    Decision,
    DecisionAttempt,
    PortfolioSnapshot,
    Position,
    ResolutionCheck,
    SnapshotTick,
    SystemEvent,
    Trade,
)
from markets.models import MarketSyncRun


def data_watermark() -> str:
    """Return the latest id of every table the arena adds rows to, and of the runs that record
    the updates made in place: catalogue syncs and ticks (prices, marking), resolution checks
    (settlement, scoring, completion) and system events (staff operations). One index read a
    table."""
    marks: list[QuerySet[Any]] = [
        Decision.objects.all(),
        DecisionAttempt.objects.all(),
        Trade.objects.all(),
        Position.objects.all(),
        PortfolioSnapshot.objects.all(),
        SnapshotTick.objects.all(),
        ResolutionCheck.objects.all(),
        SystemEvent.objects.all(),
        MarketSyncRun.objects.all(),
    ]
    latest = (rows.order_by("-pk").values_list("pk", flat=True).first() for rows in marks)
    return "-".join("" if pk is None else str(pk) for pk in latest)  # a cache key's part
