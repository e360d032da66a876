"""A position's mark and value: the one valuation rule that snapshots, pages, exports and the
agents' prompts all read (001 §2.4, 002).

A position holds an outcome by its name (`side_outcome_index`), never by where Gamma lists it:
a record may list the outcomes in another order than the one the position was bought on. It is
marked at its side-correct price: YES the YES price, NO 1 − YES, an outcome its own price. A
market with no usable price keeps the price it had when last open, else the position's last
trade price, else its average entry, so that a position never collapses to zero before the
resolution says so. The snapshot write computes the same rule in SQL (`arena.services.marking`);
a test holds the two to agreement on every case.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db.models import QuerySet

from arena.models import Position
from arena.seal import sealed_from
from markets.models import Market


def _price_at(prices: list[Any], *, side: str, index: int, binary: bool) -> Decimal | None:
    if binary:
        if not prices or prices[0] is None:
            return None
        yes = Decimal(str(prices[0]))
        return yes if index == 0 else Decimal(1) - yes
    if index >= len(prices) or prices[index] is None:
        return None
    return Decimal(str(prices[index]))


def side_outcome_index(*, side: str, outcomes: list[Any] | tuple[Any, ...]) -> int | None:
    """Return the index in `outcomes` of the outcome a position on `side` holds, or None
    when the list no longer names it.

    A side is an outcome's exact name, or YES / NO, bought on a binary market: the outcome
    named yes / no in any case, while the market's outcomes are still that pair (in either
    order). Exact names are unique in a market (markets.parsing refuses repeats), so at most
    one outcome matches. `arena.services.marking` matches in SQL by the same rule.
    """
    names = [str(o) for o in outcomes]
    if side in names:
        return names.index(side)
    lowered = [name.lower() for name in names]
    if side in ("YES", "NO") and sorted(lowered) == ["no", "yes"]:
        return lowered.index(side.lower())
    return None


def position_mark(
    *,
    side: str,
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
    price = _known_mark(
        side=side, outcomes=outcomes, prices=prices, last_open_prices=last_open_prices,
        closed=closed, last_price=last_price,
    )  # fmt: skip
    if price is not None:
        return price
    return cost_basis / shares if shares else Decimal(0)


def position_value(
    *,
    side: str,
    outcomes: list[Any],
    prices: list[Any],
    last_open_prices: list[Any],
    closed: bool,
    last_price: Decimal | None,
    shares: Decimal,
    cost_basis: Decimal,
) -> Decimal:
    """Return a position's value: shares × `position_mark`; at its average entry, its cost
    basis itself (shares × (cost ÷ shares), without the division's last-digit rounding)."""
    price = _known_mark(
        side=side, outcomes=outcomes, prices=prices, last_open_prices=last_open_prices,
        closed=closed, last_price=last_price,
    )  # fmt: skip
    if price is not None:
        return shares * price
    return cost_basis if shares else Decimal(0)


def _known_mark(
    *,
    side: str,
    outcomes: list[Any],
    prices: list[Any],
    last_open_prices: list[Any],
    closed: bool,
    last_price: Decimal | None,
) -> Decimal | None:
    """`position_mark` short of the average entry: None when the position falls to it.

    `prices` and `last_open_prices` are in the order of `outcomes` (markets.services keeps
    the prices when last open in the order of the outcomes now listed)."""
    index = side_outcome_index(side=side, outcomes=outcomes)
    if index is None:
        return last_price  # an outcome the market no longer lists has no price of its own
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
    return last_price


def positions_value_by_agent(positions: QuerySet[Position]) -> dict[int, Decimal]:
    """Return Σ shares × side-correct mark price per agent for `positions` (two queries:
    the positions, then each of their markets once)."""
    columns = ("agent_id", "market_id", "side", "shares", "cost_basis", "last_price")
    if sealed_from() is None:
        rows = list(positions.order_by().values_list(*columns))
    else:  # the rows themselves, which the seal shows as they stood when it began
        rows = [tuple(getattr(p, c) for c in columns) for p in positions.order_by()]
    markets = {
        pk: (outcomes, prices, last_open, closed)
        for pk, outcomes, prices, last_open, closed in Market.objects.filter(
            pk__in={row[1] for row in rows}
        )
        .order_by()
        .values_list("pk", "outcomes", "outcome_prices", "last_open_prices", "closed")
    }
    values: dict[int, Decimal] = {}
    for agent_id, market_id, side, shares, cost, last_price in rows:
        outcomes, prices, last_open, closed = markets[market_id]
        value = position_value(
            side=side, outcomes=outcomes, prices=prices,
            last_open_prices=last_open, closed=closed, last_price=last_price,
            shares=shares, cost_basis=cost,
        )  # fmt: skip
        values[agent_id] = values.get(agent_id, Decimal(0)) + value
    return values
