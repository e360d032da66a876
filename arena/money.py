"""Where figures are born: quantize once, never in the agent's favour."""

from __future__ import annotations

from decimal import ROUND_DOWN, ROUND_HALF_EVEN, ROUND_UP, Decimal
from typing import Any

from django.db import models

# The one rule for the maximum bet lives with the other pure rules; re-exported here.
from scoring.portfolio import max_bet as max_bet

CENT = Decimal("0.01")
SHARE = Decimal("0.000001")
PRICE = Decimal("0.000001")
MIN_BET = Decimal("50")
MAX_BET_FRACTION = Decimal("0.25")


def cents_down(value: Decimal) -> Decimal:
    """Cash the agent receives, or an amount it asks to pay: rounded toward zero."""
    return value.quantize(CENT, rounding=ROUND_DOWN)


def cents_up(value: Decimal) -> Decimal:
    """Cost basis released by a sale: rounded up, so realized P/L never gains a cent."""
    return value.quantize(CENT, rounding=ROUND_UP)


def shares_down(value: Decimal) -> Decimal:
    return value.quantize(SHARE, rounding=ROUND_DOWN)


def price(value: Decimal) -> Decimal:
    return value.quantize(PRICE, rounding=ROUND_HALF_EVEN)


def probability(value: Decimal) -> Decimal:
    """A stated probability as stored: to the price's 6 places, kept strictly inside (0, 1)
    (a stated 0.9999999 is 0.999999, not 1, whose log score would be infinite)."""
    return min(max(price(value), PRICE), 1 - PRICE)


# The largest amount a money column (14 digits, 2 places) holds: a model may ask for more,
# and its rejected order is then stored without the figure rather than crash the run.
MAX_STORABLE = Decimal("999999999999.99")


# The columns figures are stored in: the places match the quantizers above.


def money_field(**kw: Any) -> Any:
    """USD with cents (STYLE §3)."""
    return models.DecimalField(max_digits=14, decimal_places=2, **kw)


def shares_field(**kw: Any) -> Any:
    return models.DecimalField(max_digits=20, decimal_places=6, **kw)


def price_field(**kw: Any) -> Any:
    return models.DecimalField(max_digits=7, decimal_places=6, **kw)


def percent_field(**kw: Any) -> Any:
    """A return in percent, 4 places. Never clamped, so as wide as the money it is read
    from: a total value (`money_field`) is under 10^12 dollars, which over a starting balance of
    a cent or more is under 10^16 percent. A winning $2,500 bet at 0.0002 alone is
    +124,975%."""
    return models.DecimalField(max_digits=24, decimal_places=4, **kw)
