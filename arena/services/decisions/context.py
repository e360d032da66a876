"""What a decision sees: the agent's portfolio at the run's frozen prices, and the markets.

A lineup model's prompt is built from `decision_context`, the stored prompt an outside team
reads is the same rendering, and the outside API's portfolio page prices positions with
`portfolio_view`: every agent is shown the same figures for the same week.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from decimal import Decimal

from agents.types import DecisionContext, PortfolioView, PositionView
from arena import money
from arena.models import Agent, DecisionRun, Position
from arena.services.frozen import FrozenMarkets
from arena.valuation import position_mark
from markets.models import unread_by_engine_through


def portfolio_view(
    *, agent: Agent, frozen: FrozenMarkets, positions: Iterable[Position] | None = None
) -> PortfolioView:
    """Return the agent's portfolio priced at the frozen snapshot (side-correct prices).

    Positions are valued by the one valuation rule (`position_mark`) applied to the frozen
    prices: a closed, unresolved market with a missing or zero price keeps the price it had
    when last open, exactly as snapshots and pages value it."""
    views = []
    open_positions = (
        positions
        if positions is not None
        else agent.positions.filter(status=Position.Status.OPEN).select_related("market")
    )
    for position in open_positions:
        market = position.market
        row = frozen.rows.get(market.polymarket_id)
        outcomes = row.outcomes if row else market.outcomes
        price = position_mark(
            side=position.side,
            outcomes=outcomes,
            prices=row.outcome_prices if row else market.outcome_prices,
            # The prices when last open follow the market's outcomes as now listed: they
            # pair with the frozen ones only while those are listed alike.
            last_open_prices=market.last_open_prices if outcomes == market.outcomes else [],
            closed=row.closed if row else market.closed,
            last_price=position.last_price,
            shares=position.shares,
            cost_basis=position.cost_basis,
        )
        views.append(
            PositionView(
                position_id=str(position.pk),
                market_id=market.polymarket_id,
                question=market.question,
                side=position.side,
                shares=position.shares,
                avg_entry_price=position.avg_entry_price or Decimal("0"),
                current_price=money.price(price),
                current_value=money.cents_down(position.shares * price),
                cost_basis=position.cost_basis,
            )
        )
    return PortfolioView(
        cash=agent.cash, starting_balance=agent.cohort.starting_balance, positions=tuple(views)
    )


def decision_context(
    *, agent: Agent, run: DecisionRun, frozen: FrozenMarkets, as_of: datetime
) -> DecisionContext:
    """Return what `agent` is shown for the run's week: its portfolio (open positions at the
    run's frozen prices), the frozen markets and, under methodology v2, the week's panel."""
    positions = list(
        agent.positions.filter(status=Position.Status.OPEN)
        .select_related("market")
        .defer(*unread_by_engine_through("market"))
        .order_by("pk")
    )
    return DecisionContext(
        as_of=as_of,
        week_start=run.week_start,
        cohort_number=agent.cohort.number,
        portfolio=portfolio_view(agent=agent, frozen=frozen, positions=positions),
        markets=frozen.universe,
        panel=frozen.panel if agent.cohort.methodology_version != "v1" else (),
        methodology=agent.cohort.methodology_version,
    )
