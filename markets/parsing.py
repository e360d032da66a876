"""Turn Gamma API records into typed values, or refuse them with a stated reason.

A record is refused (OddRecord) rather than guessed at: the sync stores the reason and skips
it, so one odd record never stops the other 499. Text is kept verbatim — escaping it is the
job of whatever shows it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Any

from markets.exceptions import OddRecord

PRICE_PLACES = Decimal("0.000001")
DEFAULT_CATEGORY = "General"
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
    except ValueError as exc:
        raise OddRecord(f"{where}: {field} is not valid JSON ({exc.args[0]})") from exc
    if not isinstance(parsed, list):
        raise OddRecord(f"{where}: {field} is not a list")
    return parsed


def _decimal(value: Any, field: str, where: str) -> Decimal:
    if isinstance(value, bool) or value is None:
        raise OddRecord(f"{where}: {field} is {value!r}")
    try:
        number = Decimal(str(value).strip())
    except InvalidOperation as exc:
        raise OddRecord(f"{where}: {field} {value!r} is not a number") from exc
    if not number.is_finite():
        raise OddRecord(f"{where}: {field} {value!r} is not finite")
    return number


def _price(value: Any, where: str) -> Decimal:
    price = _decimal(value, "outcome price", where)
    if not Decimal(0) <= price <= Decimal(1):
        raise OddRecord(f"{where}: outcome price {value!r} is outside [0, 1]")
    return price.quantize(PRICE_PLACES, rounding=ROUND_HALF_EVEN)


def _datetime(value: Any, field: str, where: str) -> datetime | None:
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise OddRecord(f"{where}: {field} {value!r} is not a date")
    text = value.strip().replace("Z", "+00:00")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise OddRecord(f"{where}: {field} {value!r} is not an ISO date") from exc
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


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
    5. otherwise "General".
    """
    own = record.get("category")
    if isinstance(own, str) and own.strip():
        return own.strip()[:64]
    event = _first_event(record)
    ev_category = event.get("category")
    if isinstance(ev_category, str) and ev_category.strip():
        return ev_category.strip()[:64]
    if isinstance(event.get("electionType"), str) and event["electionType"].strip():
        return "Elections"
    tags = [t for t in event.get("tags") or [] if isinstance(t, dict)]
    labels = [
        str(t.get("label", "")).strip()
        for t in sorted(tags, key=lambda t: not t.get("forceShow"))
        if str(t.get("label", "")).strip().lower() not in GENERIC_TAGS
    ]
    labels = [label for label in labels if label]
    return labels[0][:64] if labels else DEFAULT_CATEGORY


def parse_market(record: Any) -> GammaMarket:
    """Return the market in one Gamma record; raise OddRecord if it does not fit.

    Refused: a record that is not an object, has no id or question, outcomes and prices that
    are missing, unreadable, of different lengths or outside [0, 1], an unparseable volume,
    liquidity or close date. Prices are quantized to 6 places (old markets carry 40 digits).
    """
    if not isinstance(record, dict):
        raise OddRecord(f"record {record!r:.60}: not a JSON object")
    raw_id = record.get("id")
    if raw_id in (None, "") or isinstance(raw_id, bool | dict | list):
        raise OddRecord("record without an id")
    polymarket_id = str(raw_id).strip()
    where = f"market {polymarket_id}"
    question = record.get("question")
    if not isinstance(question, str) or not question.strip():
        raise OddRecord(f"{where}: no question")
    outcomes = tuple(str(o) for o in _json_list(record.get("outcomes"), "outcomes", where))
    if len(outcomes) < 2:
        raise OddRecord(f"{where}: fewer than two outcomes {outcomes}")
    if len(set(outcomes)) != len(outcomes):
        raise OddRecord(f"{where}: repeated outcome names {outcomes}")
    raw_prices = _json_list(record.get("outcomePrices"), "outcomePrices", where)
    if len(raw_prices) != len(outcomes):
        raise OddRecord(
            f"{where}: {len(raw_prices)} prices for {len(outcomes)} outcomes {outcomes}"
        )
    prices = tuple(_price(p, where) for p in raw_prices)
    volume_source = record.get("volume", record.get("volumeNum"))
    volume = Decimal(0) if volume_source in (None, "") else _decimal(volume_source, "volume", where)
    if volume < 0:
        raise OddRecord(f"{where}: negative volume {volume_source!r}")
    liquidity_source = record.get("liquidity", record.get("liquidityNum"))
    liquidity = (
        None if liquidity_source in (None, "") else _decimal(liquidity_source, "liquidity", where)
    )
    event = _first_event(record)
    return GammaMarket(
        polymarket_id=polymarket_id[:32],
        condition_id=str(record.get("conditionId") or "")[:80],
        slug=str(record.get("slug") or "")[:255],
        question=question,
        description=str(record.get("description") or ""),
        category=derive_category(record),
        event_id=str(event.get("id") or "")[:32],
        event_slug=str(event.get("slug") or "")[:255],
        event_title=str(event.get("title") or ""),
        outcomes=outcomes,
        prices=prices,
        volume=volume.quantize(PRICE_PLACES),
        liquidity=liquidity.quantize(PRICE_PLACES) if liquidity is not None else None,
        close_date=_datetime(record.get("endDate") or record.get("endDateIso"), "endDate", where),
        active=bool(record.get("active", True)),
        closed=bool(record.get("closed", False)),
        neg_risk=bool(record.get("negRisk", False)),
        uma_resolution_status=str(record.get("umaResolutionStatus") or "")[:32],
        raw=record,
    )


@dataclass(frozen=True)
class ParsedBatch:
    """The markets of one response that parsed, and every refused record with its reason."""

    markets: tuple[GammaMarket, ...]
    rejections: tuple[tuple[str, str], ...]  # (id or "?", reason)


def parse_markets(records: list[Any]) -> ParsedBatch:
    """Parse every record; refuse odd ones and any repeat of an id already seen."""
    markets: list[GammaMarket] = []
    rejections: list[tuple[str, str]] = []
    seen: set[str] = set()
    for record in records:
        record_id = str(record.get("id", "?")) if isinstance(record, dict) else "?"
        try:
            market = parse_market(record)
        except OddRecord as exc:
            rejections.append((record_id, str(exc)))
            continue
        if market.polymarket_id in seen:
            rejections.append(
                (market.polymarket_id, f"market {market.polymarket_id}: duplicate id")
            )
            continue
        seen.add(market.polymarket_id)
        markets.append(market)
    return ParsedBatch(tuple(markets), tuple(rejections))
