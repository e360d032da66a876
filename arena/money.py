"""Where figures are born: quantize once, never in the agent's favour."""

from __future__ import annotations

from decimal import ROUND_DOWN, ROUND_HALF_EVEN, ROUND_UP, Decimal

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


# The largest amount a money column (14 digits, 2 places) holds: a model may ask for more,
# and its rejected order is then stored without the figure rather than crash the run.
MAX_STORABLE = Decimal("999999999999.99")
