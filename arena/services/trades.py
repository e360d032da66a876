"""Trades: buys and sells at the frozen side-correct price, and rejected orders."""

from __future__ import annotations

import logging
from datetime import datetime
from decimal import Decimal

from django.db import transaction

from agents.types import (
    BetOrder,
    MarketView,
    SellOrder,
)
from arena import clock, money
from arena.exceptions import ClaimLost, TradeRejected
from arena.models import (
    Agent,
    Cohort,
    Decision,
    Position,
    SnapshotMarket,
    Trade,
)
from arena.services.frozen import FrozenMarkets, Quote, outcome_index
from markets.models import UNREAD_BY_ENGINE, Market, unread_by_engine_through
from scoring.brier import implied_confidence

logger = logging.getLogger(__name__)


def trade_reject(
    *, decision: Decision, order: BetOrder | SellOrder, reason: str, index: int, try_number: int
) -> Trade:
    """Record an order that could not execute, with its reason and inputs. Only under the
    live claim (raise ClaimLost otherwise): a worker that lost its claim must not record the
    order the claim holder will execute."""
    with transaction.atomic():
        _claim_held(decision)
        return _rejected_trade(
            decision=decision, order=order, reason=reason, index=index, try_number=try_number
        )


def _rejected_trade(
    *, decision: Decision, order: BetOrder | SellOrder, reason: str, index: int, try_number: int
) -> Trade:
    is_bet = isinstance(order, BetOrder)
    market = (
        Market.objects.filter(polymarket_id=order.market_id).defer(*UNREAD_BY_ENGINE).first()
        if isinstance(order, BetOrder)
        else None
    )
    position = (
        Position.objects.filter(pk=order.position_id, agent_id=decision.agent_id)
        .select_related("market")
        .defer(*unread_by_engine_through("market"))
        .first()
        if isinstance(order, SellOrder) and order.position_id.isdigit()
        else None
    )
    return Trade.objects.create(
        decision=decision,
        agent_id=decision.agent_id,
        order_index=index,
        try_number=try_number,
        kind=Trade.Kind.BUY if is_bet else Trade.Kind.SELL,
        status=Trade.Status.REJECTED,
        reject_reason=reason,
        market=market or (position.market if position else None),
        position=position,
        requested_market_id=order.market_id if isinstance(order, BetOrder) else "",
        requested_position_id=order.position_id if isinstance(order, SellOrder) else "",
        side=order.side if isinstance(order, BetOrder) else (position.side if position else ""),
        requested_amount=money.cents_down(order.amount)
        if isinstance(order, BetOrder) and order.amount <= money.MAX_STORABLE
        else None,
        requested_percentage=order.percentage if isinstance(order, SellOrder) else None,
        stated_probability=stated_probability(order) if isinstance(order, BetOrder) else None,
        created_at=clock.now(),
    )


def _market_locked(pk: int) -> Market:
    """The order's market row, locked for the trade (its largest columns left unread)."""
    return Market.objects.select_for_update(of=("self",)).defer(*UNREAD_BY_ENGINE).get(pk=pk)


def _claim_held(decision: Decision) -> None:
    """Lock the decision row; raise ClaimLost unless this executor still holds its claim (the
    row is RUNNING under the claim `decision.tries` was read with)."""
    held = (
        Decision.objects.select_for_update(of=("self",))
        .filter(pk=decision.pk, status=Decision.Status.RUNNING, tries=decision.tries)
        .values_list("pk", flat=True)
        .order_by("pk")
        .first()
    )
    if held is None:
        raise ClaimLost(f"decision {decision.pk} is no longer held by claim {decision.tries}")


def _claim_check(decision: Decision) -> None:
    """Lock the decision row and its cohort's row, in that order, inside the trade's
    transaction; raise ClaimLost unless this executor still holds the decision's claim, and
    TradeRejected when the cohort has completed meanwhile (a completion re-checks under the
    same lock)."""
    _claim_held(decision)
    active = (
        Cohort.objects.select_for_update(of=("self",))
        .filter(pk=decision.cohort_id, status=Cohort.Status.ACTIVE)
        .values_list("pk", flat=True)
        .order_by("pk")
        .first()
    )
    if active is None:
        raise TradeRejected("the cohort has completed: no more trades")


def trade_buy(
    *, decision: Decision, order: BetOrder, frozen: FrozenMarkets, index: int, try_number: int = 1
) -> Trade:
    """Buy `order.amount` USD of a side at the frozen side-correct price, or raise TradeRejected.

    Rules (002): amount ≥ $50 and ≤ 25% of cash now; a usable price strictly between 0 and 1;
    the market open; shares = amount / price (rounded down); one open position per market and
    side — a second bet adds shares and cost basis. Stores the bet's implied confidence.
    """
    view, row, amount, quote = _buy_quote(order=order, frozen=frozen)
    price = quote.price
    now = clock.now()
    with transaction.atomic():
        _claim_check(decision)
        # The market is locked as a settlement locks it, and before the agent, in the
        # settlement's order (market, then agent): a buy racing the settlement either commits
        # first (and its position is settled) or sees the market resolved and is rejected.
        market = _market_locked(row.market_id)
        agent = Agent.objects.select_for_update(of=("self",)).get(pk=decision.agent_id)
        if row.closed or market.closed or market.resolution != Market.Resolution.OPEN:
            raise TradeRejected(f"market {order.market_id} is closed")
        max_bet = money.max_bet(agent.cash)
        if amount > agent.cash:
            raise TradeRejected(f"bet ${amount} is more than the ${agent.cash} cash left")
        if amount > max_bet:
            raise TradeRejected(f"bet ${amount} is over 25% of cash (max ${max_bet})")
        shares = money.shares_down(amount / price)
        if shares <= 0:
            raise TradeRejected("bet buys no shares")
        cash_before = agent.cash
        # Plain values computed from the locked row, never F() arithmetic: SQLite would do
        # it in binary floating point and drift off the cent.
        debited = Agent.objects.filter(pk=agent.pk, cash__gte=amount).update(
            cash=cash_before - amount
        )
        if debited != 1:
            raise TradeRejected(f"bet ${amount} is more than the cash left")
        position = _position_add(
            agent=agent, market=market, view=view, side=order.side,
            shares=shares, amount=amount, price=price, now=now,
        )  # fmt: skip
        return Trade.objects.create(
            decision=decision,
            agent=agent,
            order_index=index,
            try_number=try_number,
            kind=Trade.Kind.BUY,
            status=Trade.Status.EXECUTED,
            market=market,
            position=position,
            requested_market_id=order.market_id,
            side=order.side,
            requested_amount=amount,
            price=price,
            snapshot_price=quote.snapshot_price,
            live_price=quote.live_price,
            shares=shares,
            amount=amount,
            cash_before=cash_before,
            cash_after=cash_before - amount,
            implied_confidence=implied_confidence(
                amount=float(amount), cash_before=float(cash_before)
            ),
            stated_probability=stated_probability(order),
            created_at=now,
        )


def stated_probability(order: BetOrder) -> Decimal | None:
    """The probability a bet stated that its side wins, as stored (methodology v2; none
    under v1)."""
    return None if order.probability is None else money.probability(order.probability)


def _buy_quote(
    *, order: BetOrder, frozen: FrozenMarkets
) -> tuple[MarketView, SnapshotMarket, Decimal, Quote]:
    """Return the bet's market as the run froze it (its view and row), the amount (cents
    down) and its quote (`FrozenMarkets.quote`: the frozen side-correct price, or for an
    outside agent the worse of it and the live one); raise TradeRejected when the market is
    not in the snapshot or has closed since, the amount is under the minimum or the price
    leaves nothing to trade. Nothing here needs a lock: it reads the order and the prices
    already read."""
    view = frozen.views.get(order.market_id)
    row = frozen.rows.get(order.market_id)
    if view is None or row is None:
        raise TradeRejected(f"unknown market {order.market_id}: not in this run's snapshot")
    amount = money.cents_down(order.amount)
    if amount < money.MIN_BET:
        raise TradeRejected(f"bet ${amount} is under the ${money.MIN_BET} minimum")
    quote = frozen.quote(order.market_id, order.side, buying=True)
    if quote.price <= 0 or quote.price >= 1:
        raise TradeRejected(f"price {quote.price} of {order.side} leaves nothing to trade (0 or 1)")
    return view, row, amount, quote


def _position_add(
    *,
    agent: Agent,
    market: Market,
    view: MarketView,
    side: str,
    shares: Decimal,
    amount: Decimal,
    price: Decimal,
    now: datetime,
) -> Position:
    """Add a buy to the agent's open position on the market's side (one per market and side:
    a second bet adds shares and cost basis), or open that position; return it. Runs inside
    the buy's transaction, under its locks."""
    position = (
        Position.objects.select_for_update(of=("self",))
        .filter(agent=agent, market=market, side=side, status=Position.Status.OPEN)
        .order_by("pk")
        .first()
    )
    if position:
        Position.objects.filter(pk=position.pk).update(
            shares=position.shares + shares,
            cost_basis=position.cost_basis + amount,
            last_price=price,
        )
        return position
    return Position.objects.create(
        agent=agent,
        market=market,
        side=side,
        outcome_index=outcome_index(view, side),
        shares=shares,
        cost_basis=amount,
        last_price=price,
        opened_at=now,
    )


def trade_sell(
    *, decision: Decision, order: SellOrder, frozen: FrozenMarkets, index: int, try_number: int = 1
) -> Trade:
    """Sell `order.percentage` of a held position at the frozen side-correct price, or raise
    TradeRejected. Proceeds (rounded down) go to cash; cost basis falls proportionally
    (released rounded up); 100% closes the position."""
    now = clock.now()
    position_id = int(order.position_id) if order.position_id.isdigit() else -1
    market_id = (
        Position.objects.filter(pk=position_id, agent_id=decision.agent_id)
        .values_list("market_id", flat=True)
        .first()
    )
    if market_id is None:
        raise TradeRejected(f"position {order.position_id} is not held by this agent")
    with transaction.atomic():
        _claim_check(decision)
        # Market first, then position and agent: the settlement's order, so a sell racing a
        # settlement waits for it instead of deadlocking against it.
        market = _market_locked(market_id)
        position = (
            Position.objects.select_for_update(of=("self",))
            .filter(pk=position_id, agent_id=decision.agent_id)
            .order_by("pk")
            .first()
        )
        if position is None or position.status != Position.Status.OPEN:
            raise TradeRejected(f"position {order.position_id} is not held by this agent")
        if market.closed or market.resolution != Market.Resolution.OPEN:
            raise TradeRejected(f"market {market.polymarket_id} is closed")
        quote = frozen.quote(market.polymarket_id, position.side, buying=False)
        price = quote.price
        shares_sold, proceeds, released = _sale_figures(
            position=position, percentage=order.percentage, price=price
        )
        realized = proceeds - released
        agent = Agent.objects.select_for_update(of=("self",)).get(pk=decision.agent_id)
        cash_before = agent.cash
        Agent.objects.filter(pk=agent.pk).update(cash=cash_before + proceeds)
        remaining = position.shares - shares_sold
        Position.objects.filter(pk=position.pk).update(
            shares=remaining,
            cost_basis=position.cost_basis - released,
            realized_pnl=position.realized_pnl + realized,
            last_price=price,
            status=Position.Status.OPEN if remaining > 0 else Position.Status.CLOSED,
            closed_at=None if remaining > 0 else now,
        )
        return Trade.objects.create(
            decision=decision,
            agent=agent,
            order_index=index,
            try_number=try_number,
            kind=Trade.Kind.SELL,
            status=Trade.Status.EXECUTED,
            market=market,
            position=position,
            requested_position_id=order.position_id,
            side=position.side,
            requested_percentage=order.percentage,
            price=price,
            snapshot_price=quote.snapshot_price,
            live_price=quote.live_price,
            shares=shares_sold,
            amount=proceeds,
            cash_before=cash_before,
            cash_after=cash_before + proceeds,
            cost_basis_released=released,
            realized_pnl=realized,
            created_at=now,
        )


def _sale_figures(
    *, position: Position, percentage: Decimal, price: Decimal
) -> tuple[Decimal, Decimal, Decimal]:
    """Return the shares a sale of `percentage` of `position` sells (rounded down; 100% sells
    them all), its proceeds at `price` (cents down) and the cost basis it releases (in
    proportion, rounded up but never past the whole, so realized P/L never gains a cent);
    raise TradeRejected when it sells no share."""
    fraction = percentage / Decimal(100)
    full = percentage >= 100
    shares_sold = position.shares if full else money.shares_down(position.shares * fraction)
    if shares_sold <= 0:
        raise TradeRejected("sell of 0 shares")
    proceeds = money.cents_down(shares_sold * price)
    released = (
        position.cost_basis
        if full
        else min(
            money.cents_up(position.cost_basis * shares_sold / position.shares),
            position.cost_basis,
        )
    )
    return shares_sold, proceeds, released
