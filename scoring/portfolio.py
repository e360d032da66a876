"""Portfolio arithmetic: shares, mark-to-market, settlement, sells and returns.

Plain floats in USD, shares and prices in [0, 1] (001 §2, 002 "Execution").
The calling service converts Decimals to floats and quantizes anything that
becomes money; nothing here rounds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import ROUND_DOWN, Decimal

# The benchmark's bet constraints (002 "Starting balance and constraints").
MAX_BET_FRACTION = 0.25
MIN_BET = 50.0
STARTING_BALANCE = 10_000.0

YES = "YES"
NO = "NO"

_CENT = Decimal("0.01")


def max_bet(cash: Decimal) -> Decimal:
    """Return the largest bet `cash` allows: 25% of it, floored to the cent (USD).

    The one rule for the maximum: the prompt shows it, execution enforces it, and a bet of
    exactly it implies full confidence. Floored, so what the prompt shows always executes.
    """
    return (cash * Decimal(str(MAX_BET_FRACTION))).quantize(_CENT, rounding=ROUND_DOWN)


def _check_price(name: str, price: float) -> None:
    if not 0.0 <= price <= 1.0:  # also rejects NaN
        raise ValueError(f"{name} must be in [0, 1], got {price!r}")


def _check_non_negative(name: str, value: float) -> None:
    if not (math.isfinite(value) and value >= 0.0):
        raise ValueError(f"{name} must be finite and not negative, got {value!r}")


def _check_finite(name: str, value: float) -> None:
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")


def side_price(*, yes_price: float, side: str) -> float:
    """Return the side-correct price of a binary market whose YES price is `yes_price`.

    `side` is "YES" (the YES price) or "NO" (1 - the YES price); prices are in [0, 1].
    Raise ValueError for any other side or a YES price outside [0, 1].
    """
    _check_price("yes_price", yes_price)
    if side == YES:
        return yes_price
    if side == NO:
        return 1.0 - yes_price
    raise ValueError(f"side must be {YES!r} or {NO!r}, got {side!r}")


def shares_for(*, amount: float, price: float) -> float:
    """Return the shares `amount` USD buys at `price` USD a share: amount / price.

    The price is the side-correct one, in (0, 1]. Raise ValueError when the amount
    is not positive and finite, or the price is not in (0, 1].
    """
    if not (math.isfinite(amount) and amount > 0.0):
        raise ValueError(f"amount must be positive and finite, got {amount!r}")
    # A price of exactly 1 buys nothing worth having, but the division is sound;
    # refusing such a trade is the engine's decision, not this function's.
    if not 0.0 < price <= 1.0:
        raise ValueError(f"price must be in (0, 1], got {price!r}")
    return amount / price


def position_value(*, shares: float, price: float) -> float:
    """Return the mark-to-market value in USD of `shares` at the side-correct `price`.

    Shares are not negative; the price is in [0, 1]. Raise ValueError otherwise.
    """
    _check_non_negative("shares", shares)
    _check_price("price", price)
    return shares * price


def unrealized_pnl(*, value: float, cost_basis: float) -> float:
    """Return the open position's P/L in USD: current value - cost basis (001 §2.2).

    Both are USD and not negative. Raise ValueError otherwise.
    """
    _check_non_negative("value", value)
    _check_non_negative("cost_basis", cost_basis)
    return value - cost_basis


def settlement_value(*, shares: float, won: bool) -> float:
    """Return what `shares` pay in USD at resolution: $1 each if the side won, else 0.

    Shares are not negative. Raise ValueError otherwise.
    """
    _check_non_negative("shares", shares)
    return shares if won else 0.0


def realized_pnl(*, proceeds: float, cost_basis: float) -> float:
    """Return the realized P/L in USD: proceeds (settlement or sale) - cost basis.

    Both are USD and not negative. Raise ValueError otherwise.
    """
    _check_non_negative("proceeds", proceeds)
    _check_non_negative("cost_basis", cost_basis)
    return proceeds - cost_basis


@dataclass(frozen=True)
class SellSplit:
    """How a partial or full sell divides a position. Shares, then USD."""

    shares_sold: float
    proceeds: float
    cost_released: float
    realized_pnl: float


def sell_fraction(
    *, shares: float, cost_basis: float, percentage: float, price: float
) -> SellSplit:
    """Return the split of selling `percentage` percent of a position at `price`.

    Shares sold = percentage / 100 x shares; proceeds = shares sold x price (USD);
    cost released = (shares sold / shares) x cost basis, so the basis shrinks in
    proportion; realized P/L = proceeds - cost released. At 100% the whole basis
    is released exactly. Raise ValueError unless shares > 0, cost basis >= 0,
    percentage in [1, 100] and price in [0, 1].
    """
    if not (math.isfinite(shares) and shares > 0.0):
        raise ValueError(f"shares must be positive and finite, got {shares!r}")
    _check_non_negative("cost_basis", cost_basis)
    if not 1.0 <= percentage <= 100.0:
        raise ValueError(f"percentage must be in [1, 100], got {percentage!r}")
    _check_price("price", price)
    fraction = percentage / 100.0
    shares_sold = fraction * shares
    proceeds = shares_sold * price
    # fraction equals shares_sold / shares but carries no extra rounding error.
    cost_released = fraction * cost_basis
    return SellSplit(
        shares_sold=shares_sold,
        proceeds=proceeds,
        cost_released=cost_released,
        realized_pnl=proceeds - cost_released,
    )


def total_value(*, cash: float, position_values: Iterable[float]) -> float:
    """Return the portfolio value in USD: cash + the sum of the position values.

    Cash and every position value are finite and not negative. Raise ValueError otherwise.
    """
    _check_non_negative("cash", cash)
    values = list(position_values)
    for value in values:
        _check_non_negative("position value", value)
    return math.fsum([cash, *values])


def total_pnl(*, total_value: float, initial: float = STARTING_BALANCE) -> float:
    """Return the P/L in USD against the initial balance: total value - initial.

    Raise ValueError unless the total value is finite and the initial balance positive.
    """
    _check_finite("total_value", total_value)
    if not (math.isfinite(initial) and initial > 0.0):
        raise ValueError(f"initial must be positive and finite, got {initial!r}")
    return total_value - initial


def return_percent(*, total_value: float, initial: float = STARTING_BALANCE) -> float:
    """Return the portfolio return in percent: (total value - initial) / initial x 100.

    Raise ValueError unless the total value is finite and the initial balance positive.
    """
    return total_pnl(total_value=total_value, initial=initial) / initial * 100.0
