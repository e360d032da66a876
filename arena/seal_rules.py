"""What the seal covers of each table (arena/seal.py), in one place.

Each table an agent's week shows in has its rule: the filter of the rows that stay visible
under a seal that began at `seal` (Sunday 00:00 UTC), and, for the rows whose figures the
week changes in place, how to show them as they stood then. `install()` (run once, when the
app is ready) hands each model its rule; `SealedManager` refuses to read under a seal a
model that has none.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import models
from django.db.models import Q

from arena.models import (
    Agent,
    AgentSnapshotRollup,
    Decision,
    DecisionAttempt,
    DeterminismCheck,
    PanelForecast,
    PortfolioSnapshot,
    Position,
    SystemEvent,
    Trade,
)
from arena.seal import AsOf, SealedRows, sealed_from


def _week_trades(*, seal: datetime, **where: Any) -> list[Trade]:
    """The executed trades since the seal began, read past the seal: their effect is what
    `as_of` takes back out."""
    return list(
        Trade._base_manager.filter(status=Trade.Status.EXECUTED, created_at__gte=seal, **where)
    )


def agents_as_of(agents: list[Agent], seal: datetime) -> None:
    """Each agent's cash as it stood when the seal began: the week's trades taken back out
    (a settlement since is the market's news, and stays)."""
    moved: dict[int, Decimal] = defaultdict(Decimal)
    for trade in _week_trades(seal=seal, agent_id__in=[a.pk for a in agents]):
        moved[trade.agent_id] += (trade.cash_after or 0) - (trade.cash_before or 0)
    for agent in agents:
        agent.cash -= moved.get(agent.pk, Decimal(0))


def positions_as_of(positions: list[Position], seal: datetime) -> None:
    """Each position as it stood when the seal began: the week's buys and sales of it taken
    back out (shares, cost basis, realized P/L, open or sold). A settlement since is the
    market's news and stays, its payout in proportion to the shares then."""
    by_position: dict[int, list[Trade]] = defaultdict(list)
    for trade in _week_trades(seal=seal, position_id__in=[p.pk for p in positions]):
        by_position[trade.position_id or 0].append(trade)
    for position in positions:
        week = by_position.get(position.pk)
        if not week:
            continue
        shares_now = position.shares
        for trade in week:
            if trade.kind == Trade.Kind.BUY:
                position.shares -= trade.shares or 0
                position.cost_basis -= trade.amount or 0
            else:
                position.shares += trade.shares or 0
                position.cost_basis += trade.cost_basis_released or 0
                position.realized_pnl -= trade.realized_pnl or 0
        if position.status == Position.Status.CLOSED and position.shares > 0:
            position.status, position.closed_at = Position.Status.OPEN, None
        if position.settlement_value is not None and shares_now > 0:
            payout = position.settlement_value * position.shares / shares_now
            position.settlement_value = payout.quantize(Decimal("0.01"))


def positions_open(prefix: str = "") -> Q:
    """The open positions as the reader may see them (`prefix`: the path to the positions,
    for a filter across a relation). Under a seal a position sold since it began was still
    open then (`positions_as_of` shows it so); one opened since is left out by the manager,
    or, across a relation the manager does not reach, here."""
    seal = sealed_from()
    still_open = Q(**{f"{prefix}status": Position.Status.OPEN})
    if seal is None:
        return still_open
    sold_since = Q(**{f"{prefix}status": Position.Status.CLOSED, f"{prefix}closed_at__gte": seal})
    return (still_open | sold_since) & Q(**{f"{prefix}opened_at__lt": seal})


RULES: dict[type[models.Model], tuple[SealedRows | None, AsOf | None]] = {
    # The week's decisions and every attempt of them.
    Decision: (lambda seal: Q(week_start__lt=seal.date()), None),
    DecisionAttempt: (lambda seal: Q(decision__week_start__lt=seal.date()), None),
    DeterminismCheck: (lambda seal: Q(decision__week_start__lt=seal.date()), None),
    PanelForecast: (lambda seal: Q(week_start__lt=seal.date()), None),
    # What was executed since, and the positions opened since; the rest as it stood.
    Trade: (lambda seal: Q(created_at__lt=seal), None),
    Position: (lambda seal: Q(opened_at__lt=seal), positions_as_of),
    Agent: (None, agents_as_of),
    # The marking since (a cash drop is a stake), by slot and by a rollup's last snapshot.
    PortfolioSnapshot: (lambda seal: Q(snapshot_timestamp__lt=seal), None),
    AgentSnapshotRollup: (lambda seal: Q(last_at__lt=seal), None),
    # What happened before; since, only what concerns no agent, decision or run: the
    # markets' and the schedule's news (a sync, a settlement, a cohort started).
    SystemEvent: (
        lambda seal: (
            Q(created_at__lt=seal) | Q(agent__isnull=True, decision__isnull=True, run__isnull=True)
        ),
        None,
    ),
}


def install() -> None:
    """Hand each model its rule (read by `SealedManager`)."""
    for model, rule in RULES.items():
        model.seal_rules = rule  # type: ignore[attr-defined]
