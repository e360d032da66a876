"""A mark that moves whenever the arena's figures or records may have changed, so an answer
that is costly to compute (the leaderboard, an export's manifest) can be kept until it does."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from agents.models import BenchmarkModel
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
from arena.seal import cache_part
from markets.models import MarketSyncRun


def data_watermark() -> str:
    """Return the latest id of every table the arena adds rows to, and of the runs that record
    the updates made in place: catalogue syncs and ticks (prices, marking), resolution checks
    (settlement, scoring, completion) and system events (staff operations); and the lineup's
    latest change. One index read a table."""
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
    # The lineup's rows change in place (a name; an outside agent admitted to the main board,
    # which moves it between boards): their latest change, and who is admitted, move the mark
    # too (a dozen rows, read whole).
    lineup = list(BenchmarkModel.objects.values_list("pk", "updated_at", "admitted_to_main_board"))
    changed = max((at for _, at, _ in lineup), default=None)
    admitted = ",".join(str(pk) for pk, _, yes in sorted(lineup) if yes)
    parts = ["" if pk is None else str(pk) for pk in latest]
    changed_at = "" if changed is None else f"{changed.timestamp():.6f}"
    # An answer read under the seal is another answer than the same data's unsealed one.
    return "-".join([*parts, changed_at, admitted, cache_part()])
