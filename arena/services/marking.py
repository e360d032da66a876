"""Mark to market (002): 10-minute portfolio snapshots."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import connection, transaction
from django.db.models import Avg, Count, Exists, OuterRef, Q, QuerySet, Subquery

from agents.models import BenchmarkModel
from arena import clock, money
from arena.models import (
    Agent,
    Cohort,
    PortfolioSnapshot,
    Position,
    SnapshotTick,
    Trade,
)
from markets import services as market_services
from markets.models import Market
from markets.sources import MarketSource

logger = logging.getLogger(__name__)


def held_market_ids() -> set[str]:
    """Return the Polymarket ids of every market in which an agent holds an open position
    (a baseline's position outlives its completed cohort, and is marked all the same)."""
    return set(
        Position.objects.filter(status=Position.Status.OPEN)
        .values_list("market__polymarket_id", flat=True)
        .order_by()  # the model's default ordering would widen the DISTINCT to every row
        .distinct()
    )


# ------------------------------------------------------------------ mark to market (002)

SNAPSHOT_SLOT = timedelta(minutes=10)


def snapshot_slot(now: datetime) -> datetime:
    """Return the 10-minute slot `now` falls in (UTC, floored)."""
    moment = now.astimezone(UTC)
    return moment.replace(minute=moment.minute - moment.minute % 10, second=0, microsecond=0)


def _price_at(prices: list[Any], *, side: str, index: int, binary: bool) -> Decimal | None:
    if binary:
        if not prices or prices[0] is None:
            return None
        yes = Decimal(str(prices[0]))
        return yes if index == 0 else Decimal(1) - yes
    if index >= len(prices) or prices[index] is None:
        return None
    return Decimal(str(prices[index]))


def position_mark(
    *,
    side: str,
    index: int,
    outcomes: list[Any],
    prices: list[Any],
    last_open_prices: list[Any],
    closed: bool,
    last_price: Decimal | None,
    shares: Decimal,
    cost_basis: Decimal,
) -> Decimal:
    """Return a position's side-correct valuation price.

    YES: the YES price; NO: 1 − YES; an outcome: its own price. When the market has no
    usable price — none reported, or closed and unresolved with a price at 0 — the
    position keeps the price the market had when last open, else its last trade price, else
    its average entry, rather than collapsing to zero (002).
    """
    binary = [str(o).lower() for o in outcomes] == ["yes", "no"]
    # Usable or not is decided for the whole market, so both sides of a pair stay
    # consistent: a closed, unresolved market with a missing or zero price has none (a
    # zero would wipe a position out before the resolution says so).
    usable = bool(prices) and not (
        closed and any(p is None or Decimal(str(p)) == 0 for p in prices)
    )
    price = _price_at(prices, side=side, index=index, binary=binary) if usable else None
    if price is not None:
        return price
    fallback = _price_at(last_open_prices, side=side, index=index, binary=binary)
    if fallback is not None:
        return fallback
    if last_price is not None:
        return last_price
    return cost_basis / shares if shares else Decimal(0)


def positions_value_by_agent(positions: QuerySet[Position]) -> dict[int, Decimal]:
    """Return Σ shares × side-correct mark price per agent for `positions` (two queries:
    the positions, then each of their markets once)."""
    rows = list(
        positions.order_by().values_list(
            "agent_id", "market_id", "outcome_index", "side", "shares", "cost_basis", "last_price"
        )
    )
    markets = {
        pk: (outcomes, prices, last_open, closed)
        for pk, outcomes, prices, last_open, closed in Market.objects.filter(
            pk__in={row[1] for row in rows}
        )
        .order_by()
        .values_list("pk", "outcomes", "outcome_prices", "last_open_prices", "closed")
    }
    values: dict[int, Decimal] = {}
    for agent_id, market_id, index, side, shares, cost, last_price in rows:
        outcomes, prices, last_open, closed = markets[market_id]
        price = position_mark(
            side=side, index=index, outcomes=outcomes, prices=prices,
            last_open_prices=last_open, closed=closed, last_price=last_price,
            shares=shares, cost_basis=cost,
        )  # fmt: skip
        values[agent_id] = values.get(agent_id, Decimal(0)) + shares * price
    return values


@dataclass
class TickReport:
    slot: datetime
    written: int = 0
    refreshed: int = 0
    refresh_error: str = ""
    skipped: bool = False

    def summary(self) -> str:
        if self.skipped:
            return f"slot {self.slot:%Y-%m-%d %H:%M} already snapshotted: nothing written"
        stale = f" (price refresh failed: {self.refresh_error})" if self.refresh_error else ""
        return (
            f"slot {self.slot:%Y-%m-%d %H:%M}: {self.written} snapshots, "
            f"{self.refreshed} markets refreshed{stale}"
        )


def agents_to_mark() -> QuerySet[Agent]:
    """Return the agents a tick marks: every agent of an active cohort, and every baseline
    agent of a completed cohort that still holds an open position (a long-dated bet: the
    cohort completes without waiting for baselines) or whose last position closed after its
    last snapshot (one more snapshot, so its curve ends at the settled value it is ranked by)."""
    holding = Position.objects.filter(agent=OuterRef("pk"), status=Position.Status.OPEN)
    closed_since = Position.objects.filter(
        agent=OuterRef("pk"), closed_at__gte=OuterRef("last_snapshot_at")
    )
    last_snapshot_at = (
        PortfolioSnapshot.objects.filter(agent=OuterRef("pk"))
        .order_by("-snapshot_timestamp")
        .values("snapshot_timestamp")[:1]
    )
    return Agent.objects.annotate(last_snapshot_at=Subquery(last_snapshot_at)).filter(
        Q(cohort__status=Cohort.Status.ACTIVE)
        | Q(Exists(holding) | Exists(closed_since), model__kind=BenchmarkModel.Kind.BASELINE)
    )


def portfolio_snapshots_write(*, agents: QuerySet[Agent], at: datetime, stale: bool = False) -> int:
    """Write one snapshot per agent of `agents` stamped `at`, valued at the stored prices;
    return how many. A constant number of queries whatever the number of agents or
    positions. An (agent, timestamp) already written is left as it is."""
    snapshots = portfolio_snapshots_build(agents=agents, at=at, stale=stale)
    PortfolioSnapshot.objects.bulk_create(snapshots, ignore_conflicts=True, batch_size=2000)
    return len(snapshots)


def portfolio_snapshots_build(
    *, agents: QuerySet[Agent], at: datetime, stale: bool = False
) -> list[PortfolioSnapshot]:
    """Return (unsaved) one snapshot per agent of `agents` stamped `at`, valued at the stored
    prices, from a constant number of queries."""
    rows = list(agents.order_by().values_list("pk", "cash", "cohort__starting_balance"))
    agent_ids = [pk for pk, _, _ in rows]
    values = positions_value_by_agent(
        Position.objects.filter(status=Position.Status.OPEN, agent_id__in=agent_ids)
    )
    brier = {
        row["agent_id"]: (row["mean"], row["n"])
        for row in Trade.objects.filter(
            kind=Trade.Kind.BUY,
            status=Trade.Status.EXECUTED,
            brier_score__isnull=False,
            agent_id__in=agent_ids,
        )
        .values("agent_id")
        .annotate(mean=Avg("brier_score"), n=Count("pk"))
        .order_by()
    }
    snapshots = []
    for agent_id, cash, starting in rows:
        positions_value = money.cents_down(values.get(agent_id, Decimal(0)))
        total = cash + positions_value
        mean, count = brier.get(agent_id, (None, 0))
        snapshots.append(
            PortfolioSnapshot(
                agent_id=agent_id,
                snapshot_timestamp=at,
                cash=cash,
                positions_value=positions_value,
                total_value=total,
                total_pnl=total - starting,
                total_pnl_percent=((total - starting) / starting * 100).quantize(Decimal("0.0001")),
                brier_score=mean,
                resolved_bets=count,
                prices_stale=stale,
            )
        )
    return snapshots


def _one_view_of_the_books() -> None:
    """Make the current (outermost) transaction read one snapshot of the database on
    PostgreSQL: cash and positions are read in separate statements, and under READ COMMITTED
    a settlement committing between them would be half counted. Inside a caller's
    transaction (a savepoint) the caller's isolation stands."""
    if connection.vendor == "postgresql" and not connection.savepoint_ids:
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")


def snapshots_take(
    *, now: datetime | None = None, source: MarketSource | None = None, refresh: bool = True
) -> TickReport:
    """Refresh the prices of every held market, then snapshot every agent of every active
    cohort (and every agent still holding a position in a completed one) at this 10-minute
    slot. A repeat for the same slot writes nothing. A failed
    refresh still snapshots, at the last known prices, and says so. Queries do not grow
    with the number of agents or positions."""
    now = now or clock.now()
    report = TickReport(slot=snapshot_slot(now))
    if SnapshotTick.objects.filter(slot=report.slot).exists():
        report.skipped = True
        return report
    if refresh:
        held = held_market_ids()
        result = market_services.markets_refresh(polymarket_ids=held, source=source)  # network
        report.refreshed = len(result.markets)
        report.refresh_error = result.error
    with transaction.atomic():
        # Read-only: on PostgreSQL one snapshot of the database (REPEATABLE READ), which
        # would refuse the inserts below once a settlement has touched an agent row.
        _one_view_of_the_books()
        snapshots = portfolio_snapshots_build(
            agents=agents_to_mark(), at=report.slot, stale=bool(report.refresh_error)
        )
    with transaction.atomic():
        _, created = SnapshotTick.objects.get_or_create(
            slot=report.slot,
            defaults={"refresh_error": report.refresh_error, "markets_refreshed": report.refreshed},
        )
        if not created:
            report.skipped = True
            return report
        PortfolioSnapshot.objects.bulk_create(snapshots, ignore_conflicts=True, batch_size=2000)
        report.written = len(snapshots)
        SnapshotTick.objects.filter(slot=report.slot).update(snapshots_written=report.written)
    return report
