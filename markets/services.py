"""Writes to the market catalogue."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Context, Decimal
from typing import Any, NamedTuple

from django.conf import settings
from django.db import connection, models, transaction
from django.db.models import Value
from django.utils import timezone

from markets.exceptions import GammaUnavailable
from markets.models import Market, MarketSyncRun
from markets.parsing import GammaMarket, parse_markets
from markets.signals import market_fetch_failed
from markets.sources import MarketSource, market_source

logger = logging.getLogger(__name__)

# Fields a sync may overwrite. Resolution state is ours and only settlement changes it.
SYNCED_FIELDS = [
    "condition_id",
    "slug",
    "question",
    "description",
    "category",
    "event_id",
    "event_slug",
    "event_title",
    "outcomes",
    "outcome_prices",
    "price",
    "volume",
    "liquidity",
    "close_date",
    "active",
    "closed",
    "neg_risk",
    "uma_resolution_status",
    "raw",
    "last_synced_at",
    "updated_at",
]


@dataclass
class SyncResult:
    """What one sync did. `markets` are the parsed markets in the order the source ranked them."""

    source: str
    requested: int
    fetched: int = 0
    created: int = 0
    updated: int = 0  # stored markets written: a value changed
    unchanged: int = 0  # stored markets heard with nothing new: not written
    rejections: list[tuple[str, str]] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0
    markets: tuple[GammaMarket, ...] = ()
    run_id: int | None = None
    # Ids asked for by id that the source did not return at all (a refresh by id only).
    missing: list[str] = field(default_factory=list)
    # When the source was heard: every market in `markets` is as of then, written or
    # unchanged. None when nothing was heard (a failed fetch, nothing asked).
    synced_at: datetime | None = None

    @property
    def ok(self) -> bool:
        return not self.error

    def summary(self) -> str:
        if self.error:
            return f"sync failed, catalogue unchanged: {self.error}"
        return (
            f"synced {len(self.markets)} markets from {self.source} in {self.seconds:.2f}s: "
            f"{self.created} new, {self.updated} updated, {self.unchanged} unchanged, "
            f"{len(self.rejections)} rejected "
            f"(of {self.fetched} fetched)"
            + (f"; not returned: {', '.join(self.missing)}" if self.missing else "")
        )


def _record_values(market: GammaMarket) -> dict[str, Any]:
    """Return the values a record gives a market's row (but its id and time stamps)."""
    prices = [str(p) for p in market.prices]
    return {
        "condition_id": market.condition_id,
        "slug": market.slug,
        "question": market.question,
        "description": market.description,
        "category": market.category,
        "event_id": market.event_id,
        "event_slug": market.event_slug,
        "event_title": market.event_title,
        "outcomes": list(market.outcomes),
        "outcome_prices": prices,
        "last_open_prices": [] if market.closed else prices,
        "price": market.yes_price,
        "volume": market.volume,
        "liquidity": market.liquidity,
        "close_date": market.close_date,
        "active": market.active,
        "closed": market.closed,
        "neg_risk": market.neg_risk,
        "uma_resolution_status": market.uma_resolution_status,
        "raw": market.raw,
    }


def _market_row(market: GammaMarket, now: datetime, values: dict[str, Any] | None = None) -> Market:
    values = dict(values or _record_values(market))
    # The raw record as a parameter of its own, one per row: left to itself, Django inserts
    # many rows on PostgreSQL as one array a column (UNNEST), and psycopg escapes each 5 kB
    # record into its array's literal in Python, which took more of a 500-market sync's time
    # than the database did (0.49 s → 0.31 s a sync; the same rows are written).
    values["raw"] = Value(values["raw"], output_field=models.JSONField())
    return Market(
        polymarket_id=market.polymarket_id,
        **values,
        last_synced_at=now,
        created_at=now,
        updated_at=now,
    )


# Stamped on every row written, never compared: a row is written only when a value changed.
_STAMPS = ("last_synced_at", "updated_at")
# What a record may change on a stored row, compared before anything is written.
_COMPARED = (*(f for f in SYNCED_FIELDS if f not in (*_STAMPS, "raw")), "last_open_prices")
_JSON_FIELDS = frozenset(f.name for f in Market._meta.fields if isinstance(f, models.JSONField))
_DECIMAL_FIELDS = {f.name: f for f in Market._meta.fields if isinstance(f, models.DecimalField)}


class Upserted(NamedTuple):
    """What one upsert did: rows inserted, stored rows written because a value changed, and
    stored rows left as they were (every value the same)."""

    created: int
    updated: int
    unchanged: int


def markets_upsert(
    *, markets: Sequence[GammaMarket], now: datetime | None = None, include_raw: bool = True
) -> Upserted:
    """Insert the new markets and update the stored ones whose values changed, in bulk; a
    stored market whose record brings nothing new is not written at all.

    `include_raw=False` (the frequent price refreshes) leaves an open market's stored raw
    record as the catalogue sync last wrote it; a closed market's record is always kept,
    since it is the evidence its resolution is read from.

    A closed market keeps the prices it had when last open, in the order of the outcomes
    it now lists: a record that lists them anew (another order, a renamed one) carries each
    name's price over, and one update per such market writes it.

    `last_synced_at` says when the row was last written (first stored, or changed), not
    when the source was last heard from: a refresh that heard every market unchanged writes
    nothing, and its caller keeps the time it heard them (`SyncResult.synced_at`; the tick
    stores it once, `SnapshotTick.refreshed_at`).

    A constant number of statements whatever the count (one locked read of the stored rows'
    values, one of the closed ones' raw records when the refresh leaves raw alone, bulk
    upserts of the new and changed rows in the database's batch size), plus that rare
    update. Safe to repeat.
    """
    now = now or timezone.now()
    # Rows are always locked in one order (by id), whatever order the caller's list is in
    # (volume for a sync, ids for a refresh, records for a resolution check): two upserts
    # running at once then wait for each other instead of deadlocking.
    markets = sorted(markets, key=lambda m: m.polymarket_id)
    ids = [m.polymarket_id for m in markets]
    read = (*_COMPARED, "raw") if include_raw else _COMPARED
    with transaction.atomic():
        stored: dict[str, dict[str, Any]] = {
            row[0]: dict(zip(read, row[1:], strict=True))
            for row in Market.objects.select_for_update(of=("self",))
            .filter(polymarket_id__in=ids)
            .order_by("polymarket_id")
            .values_list("polymarket_id", *read)
        }
        if not include_raw:  # a closed market's record is compared too: it is always kept
            _raw_read(stored, [m.polymarket_id for m in markets if m.closed])
        rows: dict[bool, list[Market]] = {False: [], True: []}
        relisted: dict[str, list[Any]] = {}
        for market in markets:
            values = _record_values(market)
            before = stored.get(market.polymarket_id)
            fields = _written_fields(closed=market.closed, include_raw=include_raw)
            if before is not None:
                if _same_row(values, before, fields):
                    continue
                if market.closed:
                    prices = _last_open_relisted(market, before)
                    if prices is not None:  # rare: outcomes listed anew as it closes
                        relisted[market.polymarket_id] = prices
                elif not include_raw:  # the stored record stays; don't ship 5 KB a row
                    values["raw"] = {}
            rows[market.closed].append(_market_row(market, now, values))
        for closed, written in rows.items():
            if written:
                Market.objects.bulk_create(
                    written,
                    update_conflicts=True,
                    unique_fields=["polymarket_id"],
                    update_fields=_written_fields(closed=closed, include_raw=include_raw),
                    batch_size=1000,
                )
        for pid, prices in relisted.items():
            Market.objects.filter(polymarket_id=pid).update(last_open_prices=prices)
    written_count = len(rows[False]) + len(rows[True])
    created = len(ids) - len(stored)
    return Upserted(created, written_count - created, len(ids) - written_count)


def _written_fields(*, closed: bool, include_raw: bool) -> list[str]:
    """Return the fields an upsert writes on a stored row: a closed market keeps its last
    open prices, and an open one its raw record when the refresh leaves raw alone."""
    fields = SYNCED_FIELDS + ([] if closed else ["last_open_prices"])
    if not closed and not include_raw:
        fields = [f for f in fields if f != "raw"]
    return fields


def _raw_read(stored: dict[str, dict[str, Any]], closed: list[str]) -> None:
    """Add the stored raw record of each of the `closed` markets that is stored (locked
    already). One read, none when no closed market is upserted (a sync of the open top
    markets, most refreshes)."""
    wanted = [pid for pid in closed if pid in stored]
    if wanted:
        for pid, raw in Market.objects.filter(polymarket_id__in=wanted).values_list(
            "polymarket_id", "raw"
        ):
            stored[pid]["raw"] = raw


def _same_row(values: dict[str, Any], stored: dict[str, Any], fields: Sequence[str]) -> bool:
    """Return whether writing the record's `values` of `fields` would leave the stored row
    as it is, each value compared as the database gives it back: a decimal at its column's
    places (`_as_read`), a JSON value by content and kind (`_same_kinds`). The plain
    equality first: most values are the very same."""
    for name in fields:
        if name in _STAMPS:
            continue
        new, old = values[name], stored[name]
        if new == old:
            if name in _JSON_FIELDS and not _same_kinds(new, old):
                return False
        elif name not in _DECIMAL_FIELDS or _as_read(_DECIMAL_FIELDS[name], new) != old:
            return False
    return True


def _as_read(field: models.DecimalField[Any, Any], value: Decimal | None) -> Decimal | None:
    """Return `value` as `field` reads back once stored: at the column's places, and on
    SQLite, which keeps decimals as floating point, at the 15 digits Django reads from it."""
    if value is None:
        return None
    if connection.vendor == "sqlite":
        value = _SQLITE_DIGITS.create_decimal_from_float(float(value))
    places = Decimal(1).scaleb(-int(field.decimal_places or 0))
    return value.quantize(places, context=Context(prec=field.max_digits))


_SQLITE_DIGITS = Context(prec=15)


def _same_kinds(new: Any, old: Any) -> bool:
    """Return whether two JSON values found equal are of the same kinds throughout: Python
    takes True for 1, JSON does not. (1 and 1.0 are one number: PostgreSQL's jsonb may give
    either back.)"""
    # Equal strings are strings on both sides: only numbers, lists and objects are walked.
    if isinstance(new, dict):
        return isinstance(old, dict) and all(
            type(v) is str or _same_kinds(v, old[k]) for k, v in new.items()
        )
    if isinstance(new, list | tuple):
        return isinstance(old, list | tuple) and all(
            type(a) is str or _same_kinds(a, b) for a, b in zip(new, old, strict=True)
        )
    return isinstance(new, bool) is isinstance(old, bool)


def _last_open_relisted(market: GammaMarket, stored: dict[str, Any]) -> list[Any] | None:
    """Return, for a closed market (stored, locked) whose record lists its outcomes
    otherwise than stored, the prices it had when last open in the order of the outcomes
    now listed, by name (None for a name never seen open); None when they are listed as
    stored."""
    names = [str(o) for o in stored["outcomes"]]
    listed = list(market.outcomes)
    if names == listed:
        return None
    by_name = dict(zip(names, stored["last_open_prices"], strict=False))
    return [by_name.get(name) for name in listed]


def _record_run(result: SyncResult, started: datetime) -> int:
    run = MarketSyncRun.objects.create(
        source=result.source,
        requested=result.requested,
        fetched=result.fetched,
        created=result.created,
        updated=result.updated,
        rejected=len(result.rejections),
        rejections=[{"id": i, "reason": r} for i, r in result.rejections],
        status=MarketSyncRun.Status.FAILED if result.error else MarketSyncRun.Status.OK,
        error=result.error,
        started_at=started,
        finished_at=timezone.now(),
    )
    return run.pk


def markets_sync_top(
    *,
    limit: int | None = None,
    source: MarketSource | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SyncResult:
    """Fetch the top `limit` active markets by volume and upsert them into the catalogue.

    The fetch happens before any write and outside any transaction: a failed fetch leaves the
    catalogue exactly as it was and the result's `error` says why. Odd records are refused
    one by one with their reason (logged and stored on the sync run). Safe to repeat.
    """
    limit = limit or settings.MARKET_UNIVERSE_SIZE
    source = source or market_source()
    result = SyncResult(source=source.name, requested=limit)
    started = timezone.now()
    clock = time.perf_counter()
    try:
        records = source.fetch_top_markets(limit)
    except GammaUnavailable as exc:
        result.error = str(exc)
        logger.error("market sync failed: %s", exc)
        market_fetch_failed.send(
            sender=markets_sync_top,
            operation="sync",
            source=source.name,
            error=result.error,
            requested=limit,
        )
    else:
        result.fetched = len(records)
        batch = parse_markets(records)
        result.rejections = list(batch.rejections)
        markets = []
        for market in batch.markets:
            if market.active and not market.closed:
                markets.append(market)
            else:
                result.rejections.append(
                    (market.polymarket_id, f"market {market.polymarket_id}: closed or inactive")
                )
        result.markets = tuple(markets)
        if progress:
            progress(0, len(markets))
        result.created, result.updated, result.unchanged = markets_upsert(
            markets=markets, now=started
        )
        result.synced_at = started
        if progress:
            progress(len(markets), len(markets))
    for record_id, reason in result.rejections:
        logger.warning("rejected Gamma record %s: %s", record_id, reason)
    result.seconds = time.perf_counter() - clock
    result.run_id = _record_run(result, started)
    return result


def markets_refresh(
    *,
    polymarket_ids: Iterable[str],
    source: MarketSource | None = None,
    now: datetime | None = None,
) -> SyncResult:
    """Re-read the given markets by id (prices, closed flags) and upsert what parses; a
    market heard unchanged is not written. `now` (default: the wall clock) stamps the rows
    written and is the result's `synced_at`, when every market in `result.markets` was heard.

    Raises nothing on a failed fetch: the result's `error` says why and nothing is written.
    """
    ids = sorted(set(polymarket_ids))
    source = source or market_source()
    result = SyncResult(source=source.name, requested=len(ids))
    clock = time.perf_counter()
    if not ids:
        return result
    try:
        records: list[Any] = source.fetch_markets_by_ids(ids)
    except GammaUnavailable as exc:
        result.error = str(exc)
        logger.error("market refresh failed: %s", exc)
        market_fetch_failed.send(
            sender=markets_refresh,
            operation="refresh",
            source=source.name,
            error=result.error,
            requested=len(ids),
        )
        return result
    result.fetched = len(records)
    batch = parse_markets(records)
    wanted = set(ids)
    result.rejections = list(batch.rejections)
    result.markets = tuple(m for m in batch.markets if m.polymarket_id in wanted)
    returned = {str(r.get("id")) for r in records if isinstance(r, dict)}
    result.missing = sorted(wanted - returned)
    result.synced_at = now or timezone.now()
    result.created, result.updated, result.unchanged = markets_upsert(
        markets=result.markets, now=result.synced_at, include_raw=False
    )
    result.seconds = time.perf_counter() - clock
    return result
