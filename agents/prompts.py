"""Build the chat messages of a weekly decision from a DecisionContext.

The wording lives in versioned template files (agents/prompt_templates/<PROMPT_VERSION>/), so a
stored prompt can be traced to its template. Output is deterministic: the same context gives
byte-identical messages.

Version v3 (the current one) is v2's layout for methodology v2: after the market table, the
week's forecast panel, in the shared part too, and the answer's stated probabilities (a
probability on every bet, a forecast for every panel question). `prompt_version` gives the
version a cohort's methodology asks with: v2 for methodology v1, v3 for v2.

Version v2 puts what every agent of a run shares first: the system prompt,
then the run's market table; the agent's date line, portfolio and positions come last. The
information is v1's, only reordered, so providers that cache a prompt's prefix can reuse the
shared part across the agents of a run (`shared_prefix` is where it ends). v1 (portfolio
first) stays renderable, with `version="v1"`, for decisions stored under it.

The market list is the bulk of every call, so it is compact: one line per market with the
columns defined once, markets grouped under their category, a binary market's YES price only,
volume as "$1.2M", the close date as YYYY-MM-DD. Market text is hostile input and goes through
flatten_text, so a question can never forge a line or a column.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal
from importlib import resources

from agents.parsing import COLUMN_SEPARATOR, MAX_INVALID_EXCERPT, flatten_text, invalid_excerpt
from agents.types import DecisionContext, MarketView, PortfolioView, PositionView

PROMPT_VERSION = "v3"
PROMPT_VERSIONS = ("v1", "v2", "v3")
# The prompt each methodology asks with (arena's Cohort.methodology_version).
_PROMPT_FOR_METHODOLOGY = {"v1": "v2", "v2": "v3"}
# In a user template, the end of the part every agent of a run shares (rendered as nothing).
SHARED_PART_ENDS = "{{shared_part_ends_here}}"
DEFAULT_CATEGORY = "General"
UNKNOWN = "n/a"

Message = dict[str, str]

_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
_TENTH = Decimal("0.1")
_ONE = Decimal("1")
_POSITIONS_LEGEND = (
    "One line per position: position id|market id|question|side|shares|average entry price|"
    "current price|value|unrealized P/L (prices are for the position's side)"
)


def prompt_version(methodology: str) -> str:
    """Return the prompt version a cohort of methodology `methodology` asks with."""
    try:
        return _PROMPT_FOR_METHODOLOGY[methodology]
    except KeyError:
        raise ValueError(f"unknown methodology version {methodology!r}") from None


def build_messages(context: DecisionContext, *, version: str | None = None) -> list[Message]:
    """Return the [system, user] chat messages for one agent's weekly decision, in `version`
    (default: the one the context's methodology asks with)."""
    version = version or prompt_version(context.methodology)
    return [
        {"role": "system", "content": system_prompt(version=version)},
        {"role": "user", "content": user_prompt(context, version=version)},
    ]


def shared_prefix(context: DecisionContext, *, version: str | None = None) -> str:
    """Return the start of the user message that every agent of the run shares ("" in v1).

    With the system prompt before it, this is the prefix a provider can cache once per run:
    the market table. Everything after it (date, cohort, portfolio) is the agent's own. The
    user message of `build_messages` and of `build_retry_messages` both start with it.
    """
    version = version or prompt_version(context.methodology)
    if SHARED_PART_ENDS not in _template("user.txt", version):
        return ""
    return _user_parts(context, version)[0]


def build_retry_messages(
    context: DecisionContext,
    *,
    invalid_response: str,
    error: str,
    version: str | None = None,
) -> list[Message]:
    """Return the messages asking again after an invalid response.

    The user message is the original user prompt, then the validation `error`, the first
    MAX_INVALID_EXCERPT characters of `invalid_response` (verbatim) and a request for valid
    JSON only.
    """
    version = version or prompt_version(context.methodology)
    retry = retry_section(invalid_response=invalid_response, error=error, version=version)
    return [
        {"role": "system", "content": system_prompt(version=version)},
        {"role": "user", "content": f"{user_prompt(context, version=version)}\n\n{retry}"},
    ]


def retry_section(*, invalid_response: str, error: str, version: str = PROMPT_VERSION) -> str:
    """Return the part a retry adds after the user prompt: the validation `error` and the
    first MAX_INVALID_EXCERPT characters of `invalid_response`. An outside agent's
    resubmission is asked with the same words (arena/services/decisions/outside.py)."""
    return _render(
        "retry.txt",
        version,
        error=error,
        excerpt_limit=str(MAX_INVALID_EXCERPT),
        invalid_response=invalid_excerpt(invalid_response),
    )


def system_prompt(*, version: str = PROMPT_VERSION) -> str:
    """Return the system prompt: protocol, rules and scoring; the same for every agent."""
    return _render("system.txt", version)


def user_prompt(context: DecisionContext, *, version: str | None = None) -> str:
    """Return the user prompt: the date, the agent's portfolio and positions, the markets
    (in v2 the markets first, as the shared part, and the agent's own figures after them)."""
    version = version or prompt_version(context.methodology)
    return "".join(_user_parts(context, version))


def _user_parts(context: DecisionContext, version: str) -> tuple[str, str]:
    """Return the user prompt as (shared part, agent part); the shared part is "" in v1."""
    portfolio = context.portfolio
    values = dict(
        as_of=f"{_utc(context.as_of):%Y-%m-%d %H:%M} UTC",
        week_start=context.week_start.isoformat(),
        cohort_number=str(context.cohort_number),
        cash=_money(portfolio.cash),
        max_bet=_max_bet(portfolio),
        positions_value=_money(portfolio.positions_value),
        total_value=_money(portfolio.total_value),
        pnl=_money(portfolio.pnl, signed=True),
        pnl_percent=f"{portfolio.pnl_percent:+.2f}%",
        starting_balance=_money(portfolio.starting_balance),
        positions=format_positions(portfolio),
        market_count=str(len(context.markets)),
        markets=format_markets(context.markets),
        panel_count=str(len(context.panel)),
        panel=format_panel(context.panel),
    )
    shared, marker, own = _template("user.txt", version).rpartition(SHARED_PART_ENDS)
    if not marker:  # no shared part in this version's layout
        return "", _fill(own, values)
    return _fill(shared, values), _fill(own, values)


def _max_bet(portfolio: PortfolioView) -> str:
    """Return the maximum bet as the prompt shows it; when it is under the minimum, with the
    consequence spelled out, so the model is not left to discover that its bets all fail."""
    shown = _money(portfolio.max_bet)
    if portfolio.can_bet:
        return shown
    return (
        f"{shown}, under the {_money(portfolio.min_bet)} minimum bet: no bet can execute, "
        "so reply SELL or HOLD"
    )


def format_positions(portfolio: PortfolioView) -> str:
    """Return the open-positions section: a legend, then one line per position."""
    if not portfolio.positions:
        return "None."
    return "\n".join([_POSITIONS_LEGEND, *(_position_line(p) for p in portfolio.positions)])


def format_markets(markets: Sequence[MarketView]) -> str:
    """Return the market lines, grouped under "# category" headings.

    Categories appear in the order of their first market and markets keep their given order
    (the engine's, by volume), so the output depends only on `markets`: every agent of a run
    is shown the same section, rendered once.
    """
    key = tuple(markets)
    try:
        return _markets_section(key)
    except TypeError:  # a value that cannot be hashed (a signalling NaN) is rendered afresh
        return _markets_section.__wrapped__(key)


@functools.lru_cache(maxsize=8)
def _markets_section(markets: tuple[MarketView, ...]) -> str:
    if not markets:
        return "None."
    groups: dict[str, list[MarketView]] = {}
    for market in markets:
        category = flatten_text(market.category) or DEFAULT_CATEGORY
        groups.setdefault(category, []).append(market)
    lines: list[str] = []
    for category, members in groups.items():
        lines.append(f"# {category}")
        lines.extend(_market_line(market) for market in members)
    return "\n".join(lines)


def format_panel(panel: Sequence[MarketView]) -> str:
    """Return the forecast panel's lines, in the panel's order: id|question|close date|YES
    price."""
    if not panel:
        return "None."
    return "\n".join(
        COLUMN_SEPARATOR.join(
            [
                flatten_text(market.market_id),
                flatten_text(market.question),
                _utc(market.close_date).date().isoformat() if market.close_date else UNKNOWN,
                _percent(market.yes_price),
            ]
        )
        for market in panel
    )


def _market_line(market: MarketView) -> str:
    cells = [
        flatten_text(market.market_id),
        flatten_text(market.question),
        _volume(market.volume),
        _utc(market.close_date).date().isoformat() if market.close_date else UNKNOWN,
    ]
    if market.is_binary:
        cells.append(_percent(market.yes_price))
    else:
        for index, outcome in enumerate(market.outcomes):
            price = market.prices[index] if index < len(market.prices) else None
            cells.append(f"{flatten_text(outcome)} {_percent(price)}")
    return COLUMN_SEPARATOR.join(cells)


def _position_line(position: PositionView) -> str:
    cells = [
        flatten_text(position.position_id),
        flatten_text(position.market_id),
        flatten_text(position.question),
        flatten_text(position.side),
        f"{position.shares:,.2f}",
        _percent(position.avg_entry_price),
        _percent(position.current_price),
        _money(position.current_value),
        _money(position.unrealized_pnl, signed=True),
    ]
    return COLUMN_SEPARATOR.join(cells)


def _percent(price: Decimal | None) -> str:
    """Return a price in [0, 1] as a percentage with one decimal: 0.4567 → "45.7%"."""
    if price is None:
        return UNKNOWN
    return f"{_unsigned_zero((price * 100).quantize(_TENTH, rounding=ROUND_HALF_UP)):f}%"


def _money(amount: Decimal, *, signed: bool = False) -> str:
    """Return USD with 2 decimals and thousands separators: "$1,234.50", "-$3.00"."""
    sign = "-" if amount < 0 else ("+" if signed else "")
    return f"{sign}${abs(amount):,.2f}"


def _unsigned_zero(value: Decimal) -> Decimal:
    """A zero without its sign: a price or volume given as "-0" reads as 0, and figures that
    compare equal read alike (the market section is rendered once for equal markets)."""
    return value.copy_abs() if value.is_zero() else value


def _volume(volume: Decimal) -> str:
    """Return a volume compactly: "$1.2B", "$12.3M", "$850k", "$420"."""
    # Each threshold is where the smaller unit would round up to 1000 of itself.
    if volume >= Decimal("999950000"):
        return f"${(volume / 10**9).quantize(_TENTH, rounding=ROUND_HALF_UP):f}B"
    if volume >= Decimal("999500"):
        return f"${(volume / 10**6).quantize(_TENTH, rounding=ROUND_HALF_UP):f}M"
    if volume >= Decimal("999.5"):
        return f"${(volume / 10**3).quantize(_ONE, rounding=ROUND_HALF_UP):f}k"
    return f"${_unsigned_zero(volume.quantize(_ONE, rounding=ROUND_HALF_UP)):f}"


def _utc(moment: datetime) -> datetime:
    """Return `moment` in UTC; a naive datetime is taken to be UTC already."""
    return moment if moment.tzinfo is None else moment.astimezone(UTC)


@functools.cache
def _template(name: str, version: str = PROMPT_VERSION) -> str:
    if version not in PROMPT_VERSIONS:
        raise ValueError(f"unknown prompt version {version!r}; known: {PROMPT_VERSIONS}")
    path = resources.files("agents") / "prompt_templates" / version / name
    return path.read_text(encoding="utf-8").rstrip("\n")


def _render(name: str, version: str, **values: str) -> str:
    """Return template `name` of `version` with each {{placeholder}} replaced by its value."""
    return _fill(_template(name, version), values)


def _fill(template: str, values: dict[str, str]) -> str:
    """Return `template` with each {{placeholder}} replaced by its value.

    Values are inserted once and never re-scanned, so market text containing "{{cash}}"
    stays literal. A placeholder without a value raises KeyError.
    """
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], template)
