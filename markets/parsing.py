"""Turn Gamma API records into typed values, or refuse them with a stated reason.

A record is refused (OddRecord) rather than guessed at: the sync stores the reason and skips
it, so one odd record never stops the other 499. Text is kept verbatim — escaping it is the
job of whatever shows it — except a description past DESCRIPTION_MAX, which is cut (in the
stored raw record too), and a category, whose whitespace is collapsed. The limits below are
far past anything Polymarket sends (recorded maxima: a 121-character question, a 1,799-
character description, an 8.4 KB record) and keep one hostile record from filling the
database, the pages or the prompts; docs/markets.md lists them.
"""

from __future__ import annotations

import json
import logging
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Any

from markets.exceptions import OddRecord

logger = logging.getLogger(__name__)

PRICE_PLACES = Decimal("0.000001")
# Polymarket ids are short digit strings; the pages and the API link to /markets/<id>/ and
# accept exactly this alphabet, so an id outside it could be stored but never shown.
POLYMARKET_ID = re.compile(r"[0-9A-Za-z_-]{1,32}")
QUESTION_MAX = 1_000  # characters; a longer question is refused, never cut (it is the bet)
DESCRIPTION_MAX = 20_000  # characters; a longer description is cut to this
EVENT_TITLE_MAX = 1_000  # characters; cut
OUTCOME_MAX = 255  # characters: Market.winning_outcome holds one outcome name
# Market.volume and .liquidity hold 20 digits, 6 after the point.
AMOUNT_LIMIT = Decimal(10) ** 14
CLOSE_YEARS = range(2000, 2100)  # a close date outside these years is refused
RAW_MAX_CHARS = 100_000  # of text in the stored record, after the description is cut
SHOWN = 60  # characters of a hostile value quoted in a reason
DEFAULT_CATEGORY = "General"
SPORTS_CATEGORY = "Sports"
SPORTS_KEYS = ("sportsMarketType", "gameId")  # fields only a game's markets carry
# Gamma tags that say nothing about a market's subject.
GENERIC_TAGS = {"all", "featured", "trending", "new", "hide from new", "recurring"}


@dataclass(frozen=True)
class GammaMarket:
    """One market as Gamma reported it, checked and typed."""

    polymarket_id: str
    condition_id: str
    slug: str
    question: str
    description: str
    category: str
    event_id: str
    event_slug: str
    event_title: str
    outcomes: tuple[str, ...]
    prices: tuple[Decimal, ...]
    volume: Decimal
    liquidity: Decimal | None
    close_date: datetime | None
    active: bool
    closed: bool
    neg_risk: bool
    uma_resolution_status: str
    raw: dict[str, Any]

    @property
    def is_binary(self) -> bool:
        return tuple(o.lower() for o in self.outcomes) == ("yes", "no")

    @property
    def yes_price(self) -> Decimal | None:
        return self.prices[0] if self.is_binary else None


def _json_list(value: Any, field: str, where: str) -> list[Any]:
    """Read a list that Gamma sends as a JSON-encoded string (or, rarely, as a list)."""
    if value is None:
        raise OddRecord(f"{where}: {field} is missing")
    if isinstance(value, list):
        return value
    if not isinstance(value, str):
        raise OddRecord(f"{where}: {field} is neither a list nor a JSON string")
    try:
        parsed = json.loads(value, parse_float=Decimal)
    except RecursionError as exc:
        raise OddRecord(f"{where}: {field} is nested too deeply to read") from exc
    except ValueError as exc:
        raise OddRecord(f"{where}: {field} is not valid JSON ({shown(exc.args[0])})") from exc
    if not isinstance(parsed, list):
        raise OddRecord(f"{where}: {field} is not a list")
    return parsed


def shown(value: Any) -> str:
    """Return `value` as a reason quotes it: its repr (NULs, lone surrogates and control
    characters escaped, so the reason itself can be stored), cut to SHOWN characters."""
    text = repr(value)
    text = text if text.isprintable() else ascii(value)
    return text if len(text) <= SHOWN else f"{text[: SHOWN - 1]}…"


def _record_id(record: Any) -> str:
    """Return the id a rejection is filed under: as sent when it is printable text, else
    quoted like a reason quotes it ("?" without one)."""
    raw_id = record.get("id", "?") if isinstance(record, dict) else "?"
    text = str(raw_id)
    return text if text.isprintable() and len(text) <= SHOWN else shown(raw_id)


def _decimal(value: Any, field: str, where: str) -> Decimal:
    if isinstance(value, bool) or value is None:
        raise OddRecord(f"{where}: {field} is {value!r}")
    try:
        number = Decimal(str(value).strip())
    except InvalidOperation as exc:
        raise OddRecord(f"{where}: {field} {shown(value)} is not a number") from exc
    if not number.is_finite():
        raise OddRecord(f"{where}: {field} {shown(value)} is not finite")
    return number


def _amount(value: Any, field: str, where: str) -> Decimal:
    """Return a volume or liquidity as stored (6 places); raise OddRecord if it is not a
    finite number in [0, 10^14)."""
    amount = _decimal(value, field, where)
    if amount < 0:
        raise OddRecord(f"{where}: negative {field} {shown(value)}")
    if amount >= AMOUNT_LIMIT:
        raise OddRecord(f"{where}: {field} {shown(value)} is not below 10^14")
    return amount.quantize(PRICE_PLACES)


def _price(value: Any, where: str) -> Decimal:
    price = _decimal(value, "outcome price", where)
    if not Decimal(0) <= price <= Decimal(1):
        raise OddRecord(f"{where}: outcome price {shown(value)} is outside [0, 1]")
    return price.quantize(PRICE_PLACES, rounding=ROUND_HALF_EVEN)


def _datetime(value: Any, field: str, where: str) -> datetime | None:
    """Return the moment in UTC, or None for no date; raise OddRecord if it is not an ISO
    date or falls outside CLOSE_YEARS (year 9999 overflows as soon as it is moved)."""
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise OddRecord(f"{where}: {field} {shown(value)} is not a date")
    text = value.strip().replace("Z", "+00:00")
    try:
        moment = datetime.fromisoformat(text)
        moment = moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
    except ValueError as exc:
        raise OddRecord(f"{where}: {field} {shown(value)} is not an ISO date") from exc
    except OverflowError as exc:
        raise OddRecord(f"{where}: {field} {shown(value)} is out of range") from exc
    if moment.year not in CLOSE_YEARS:
        raise OddRecord(
            f"{where}: {field} {shown(value)} is outside the years "
            f"{CLOSE_YEARS.start}–{CLOSE_YEARS.stop - 1}"
        )
    return moment


def _outcome(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise OddRecord(f"{where}: outcome {shown(value)} is not a name")
    if len(value) > OUTCOME_MAX:
        raise OddRecord(f"{where}: an outcome name is longer than {OUTCOME_MAX} characters")
    return value


def _storable(raw: dict[str, Any], where: str) -> None:
    """Raise OddRecord if the record cannot be stored as received: a NUL or a lone surrogate
    in any string (PostgreSQL's text and jsonb refuse both, and one bad row fails the whole
    bulk upsert), NaN or Infinity (not JSON), a value JSON cannot hold (an integer too long
    to read arrives as a Decimal), or over RAW_MAX_CHARS characters of text.

    One pass over the values, without serialising the record: that costs twice as much.
    """
    stack: list[Any] = [raw]
    size = 0
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:
            size += len(item)
            if "\x00" in item:
                raise OddRecord(f"{where}: the record holds a NUL character")
            if not item.isascii() and not item.isprintable():
                try:
                    item.encode()
                except UnicodeEncodeError as exc:
                    raise OddRecord(f"{where}: the record holds a lone surrogate") from exc
        elif kind is dict:
            stack.extend(item)
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        elif kind is float:
            if not math.isfinite(item):
                raise OddRecord(f"{where}: the record holds {item!r}, which JSON cannot hold")
        elif not (item is None or kind is int or kind is bool):
            raise OddRecord(f"{where}: the record holds a {kind.__name__}, which JSON cannot hold")
    if size > RAW_MAX_CHARS:
        raise OddRecord(f"{where}: the record holds {size:,} characters, over {RAW_MAX_CHARS:,}")


def _first_event(record: dict[str, Any]) -> dict[str, Any]:
    events = record.get("events")
    if isinstance(events, list) and events and isinstance(events[0], dict):
        return events[0]
    return {}


def derive_category(record: dict[str, Any]) -> str:
    """Return the market's category by the documented rule (docs/markets.md).

    1. the record's own `category` (only 2020–2022 records carry one);
    2. its event's `category`;
    3. "Elections" when its event names an `electionType`;
    4. its event's first tag label that is not a generic one ("All", "Featured", …),
       preferring tags Gamma marks `forceShow`;
    5. "Sports" when the record names a `sportsMarketType` or a `gameId` (a game's market:
       moneyline, spread, a map's winner), which Gamma often files under no tag at all;
    6. otherwise "General".
    """
    own = _one_line(record.get("category"))
    if own:
        return own
    event = _first_event(record)
    ev_category = _one_line(event.get("category"))
    if ev_category:
        return ev_category
    if isinstance(event.get("electionType"), str) and event["electionType"].strip():
        return "Elections"
    tags = event.get("tags")
    tags = [t for t in tags if isinstance(t, dict)] if isinstance(tags, list) else []
    labels = [
        _one_line(t.get("label"))
        for t in sorted(tags, key=lambda t: not t.get("forceShow"))
        if _one_line(t.get("label")).lower() not in GENERIC_TAGS
    ]
    labels = [label for label in labels if label]
    if labels:
        return labels[0]
    if any(_one_line(record.get(key)) for key in SPORTS_KEYS):
        return SPORTS_CATEGORY
    return DEFAULT_CATEGORY


def _one_line(value: Any) -> str:
    """Return a category as stored: its words joined by single spaces (a category is a
    filter value: a newline or tab in it would name a category no link can ask for), cut to
    Market.category's 64 characters; "" for anything but text."""
    return " ".join(value.split())[:64] if isinstance(value, str) else ""


def parse_market(record: Any) -> GammaMarket:
    """Return the market in one Gamma record; raise OddRecord if it does not fit.

    Refused: a record that is not an object; an id outside POLYMARKET_ID; no question, or
    one over QUESTION_MAX; outcomes and prices that are missing, unreadable, of different
    lengths, not names (or over OUTCOME_MAX) or outside [0, 1]; a volume or liquidity that
    is not a finite number in [0, 10^14); a close date that is not an ISO date in
    CLOSE_YEARS; a record that cannot be stored as received (`_storable`). Prices are
    quantized to 6 places (old markets carry 40 digits); a description over DESCRIPTION_MAX
    is cut, in the stored record too.
    """
    if not isinstance(record, dict):
        raise OddRecord(f"record {shown(record)}: not a JSON object")
    raw_id = record.get("id")
    if raw_id in (None, "") or isinstance(raw_id, bool | dict | list):
        raise OddRecord("record without an id")
    polymarket_id = str(raw_id).strip()
    if not POLYMARKET_ID.fullmatch(polymarket_id):
        raise OddRecord(f"record id {shown(raw_id)} is not a Polymarket id")
    where = f"market {polymarket_id}"
    question = record.get("question")
    if not isinstance(question, str) or not question.strip():
        raise OddRecord(f"{where}: no question")
    if len(question) > QUESTION_MAX:
        raise OddRecord(f"{where}: question of {len(question):,} characters, over {QUESTION_MAX:,}")
    names = _json_list(record.get("outcomes"), "outcomes", where)
    outcomes = tuple(_outcome(o, where) for o in names)
    if len(outcomes) < 2:
        raise OddRecord(f"{where}: fewer than two outcomes {shown(outcomes)}")
    if len(set(outcomes)) != len(outcomes):
        raise OddRecord(f"{where}: repeated outcome names {shown(outcomes)}")
    raw_prices = _json_list(record.get("outcomePrices"), "outcomePrices", where)
    if len(raw_prices) != len(outcomes):
        raise OddRecord(
            f"{where}: {len(raw_prices)} prices for {len(outcomes)} outcomes {shown(outcomes)}"
        )
    prices = tuple(_price(p, where) for p in raw_prices)
    volume_source = record.get("volume", record.get("volumeNum"))
    volume = Decimal(0) if volume_source in (None, "") else _amount(volume_source, "volume", where)
    liquidity_source = record.get("liquidity", record.get("liquidityNum"))
    liquidity = (
        None if liquidity_source in (None, "") else _amount(liquidity_source, "liquidity", where)
    )
    close_date = _datetime(record.get("endDate") or record.get("endDateIso"), "endDate", where)
    description = str(record.get("description") or "")
    raw = record
    if len(description) > DESCRIPTION_MAX:
        description = (
            f"{description[:DESCRIPTION_MAX]} … [cut at {DESCRIPTION_MAX:,} of "
            f"{len(description):,} characters]"
        )
        raw = {**record, "description": description}
    _storable(raw, where)
    event = _first_event(record)
    return GammaMarket(
        polymarket_id=polymarket_id,
        condition_id=str(record.get("conditionId") or "")[:80],
        slug=str(record.get("slug") or "")[:255],
        question=question,
        description=description,
        category=derive_category(record),
        event_id=str(event.get("id") or "")[:32],
        event_slug=str(event.get("slug") or "")[:255],
        event_title=str(event.get("title") or "")[:EVENT_TITLE_MAX],
        outcomes=outcomes,
        prices=prices,
        volume=volume,
        liquidity=liquidity,
        close_date=close_date,
        active=bool(record.get("active", True)),
        closed=bool(record.get("closed", False)),
        neg_risk=bool(record.get("negRisk", False)),
        uma_resolution_status=str(record.get("umaResolutionStatus") or "")[:32],
        raw=raw,
    )


@dataclass(frozen=True)
class ParsedBatch:
    """The markets of one response that parsed, and every refused record with its reason."""

    markets: tuple[GammaMarket, ...]
    rejections: tuple[tuple[str, str], ...]  # (id or "?", reason)


def parse_markets(records: list[Any]) -> ParsedBatch:
    """Parse every record; refuse odd ones and any repeat of an id already seen.

    Each record is a unit of its own: an error parse_market did not foresee refuses that
    record (logged with its traceback), never the batch.
    """
    markets: list[GammaMarket] = []
    rejections: list[tuple[str, str]] = []
    seen: set[str] = set()
    for record in records:
        record_id = _record_id(record)
        try:
            market = parse_market(record)
        except OddRecord as exc:
            rejections.append((record_id, str(exc)))
            continue
        except Exception as exc:
            logger.exception("unreadable Gamma record %s", record_id)
            rejections.append((record_id, f"record {record_id}: unreadable ({shown(repr(exc))})"))
            continue
        if market.polymarket_id in seen:
            rejections.append(
                (market.polymarket_id, f"market {market.polymarket_id}: duplicate id")
            )
            continue
        seen.add(market.polymarket_id)
        markets.append(market)
    return ParsedBatch(tuple(markets), tuple(rejections))
