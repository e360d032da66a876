"""How the site writes figures: one filter per kind, so every page writes them alike.

- money: `$15,429.53`, `−$120.00` (a true minus sign), `—` when there is no figure;
- signed_money: the same with `+` on gains, for profit and loss;
- percent: a value already in percent units, at most two decimals with trailing zeros dropped
  (`50%`, `12.5%`, `−3.14%`), so a SELL of half a position reads `50%`, never `50.0000%`;
- signed_percent: the same with `+` on gains, for returns;
- ratio_percent: a fraction (win rate 0.531) as a percent (`53.1%`);
- brier: four decimals (`0.2125`);
- edge: a signed figure against a reference (an Alpha), four decimals, or two significant
  figures where four would hide it as 0 (`+0.0123`, `−0.000012`);
- skill: a signed skill score, three decimals (`+0.790`, `−0.299`);
- whole_percent: a fraction as a whole percent (`29%`), for shares of a few cohorts;
- price: a probability price, four decimals (`0.6350`);
- shares: two decimals with thousands separators (`1,234.57`);
- usd_cost: an API cost in dollars, enough places to show a fraction of a cent (`$0.0042`).
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation

from django import template

register = template.Library()

MISSING = "—"
MINUS = "−"


def _decimal(value: object) -> Decimal | None:
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        number = value if isinstance(value, Decimal) else Decimal(str(value))
    except (InvalidOperation, ValueError, TypeError):
        return None
    return number if number.is_finite() else None


def _places(number: Decimal, places: int) -> Decimal:
    return number.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN)


def _grouped(number: Decimal, places: int) -> str:
    return f"{abs(_places(number, places)):,.{places}f}"


def _sign(number: Decimal, *, plus: bool) -> str:
    if number < 0:
        return MINUS
    return "+" if plus and number > 0 else ""


def _money(value: object, *, plus: bool) -> str:
    number = _decimal(value)
    if number is None:
        return MISSING
    rounded = _places(number, 2)
    return f"{_sign(rounded, plus=plus)}${_grouped(rounded, 2)}"


@register.filter
def money(value: object) -> str:
    return _money(value, plus=False)


@register.filter
def signed_money(value: object) -> str:
    return _money(value, plus=True)


def _percent(number: Decimal | None, *, plus: bool) -> str:
    if number is None:
        return MISSING
    rounded = _places(number, 2)
    text = _grouped(rounded, 2).rstrip("0").rstrip(".")
    return f"{_sign(rounded, plus=plus)}{text}%"


@register.filter
def percent(value: object) -> str:
    return _percent(_decimal(value), plus=False)


@register.filter
def signed_percent(value: object) -> str:
    return _percent(_decimal(value), plus=True)


@register.filter
def ratio_percent(value: object) -> str:
    number = _decimal(value)
    return _percent(None if number is None else number * 100, plus=False)


def _fixed(value: object, places: int, *, plus: bool = False) -> str:
    number = _decimal(value)
    if number is None:
        return MISSING
    rounded = _places(number, places)
    return f"{_sign(rounded, plus=plus)}{_grouped(rounded, places)}"


@register.filter
def brier(value: object) -> str:
    return _fixed(value, 4)


@register.filter
def price(value: object) -> str:
    """A market price or a probability as the prompts write it, a percentage: 0.4567 →
    "45.67%" (two decimals: a stored price's four places, where the prompt rounds to one)."""
    number = _decimal(value)
    if number is None:
        return MISSING
    rounded = _places(number * 100, 2)
    return f"{_sign(rounded, plus=False)}{_grouped(rounded, 2)}%"


@register.filter
def four_places(value: object) -> str:
    """A figure that is not a price, to four decimals: 0.01234 → "0.0123"."""
    return _fixed(value, 4)


@register.filter
def shares(value: object) -> str:
    return _fixed(value, 2)


@register.filter
def usd_cost(value: object) -> str:
    number = _decimal(value)
    if number is None:
        return MISSING
    places = 2 if abs(number) >= 1 else 4
    return f"{_sign(_places(number, places), plus=False)}${_grouped(number, places)}"


@register.filter
def edge(value: object) -> str:
    number = _decimal(value)
    places = 4
    if number is not None and number != 0 and abs(number) < Decimal("0.00005"):
        places = min(8, 1 - abs(number).adjusted())  # two significant figures
    return _fixed(number, places, plus=True)


@register.filter
def less(value: object, other: object) -> Decimal | None:
    """`value` − `other` (a stated probability less the price paid: its edge); None when
    either is missing."""
    a, b = _decimal(value), _decimal(other)
    return None if a is None or b is None else a - b


@register.filter
def skill(value: object) -> str:
    return _fixed(value, 3, plus=True)


@register.filter
def whole_percent(value: object) -> str:
    number = _decimal(value)
    if number is None:
        return MISSING
    rounded = _places(number * 100, 0)
    return f"{_sign(rounded, plus=False)}{_grouped(rounded, 0)}%"
