"""Writes to the market catalogue."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
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
    updated: int = 0
    rejections: list[tuple[str, str]] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0
    markets: tuple[GammaMarket, ...] = ()
    run_id: int | None = None
    # Ids asked for by id that the source did not return at all (a refresh by id only).
    missing: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.error

    def summary(self) -> str:
        if self.error:
            return f"sync failed, catalogue unchanged: {self.error}"
        return (
            f"synced {len(self.markets)} markets from {self.source} in {self.seconds:.2f}s: "
            f"{self.created} new, {self.updated} updated, {len(self.rejections)} rejected "
            f"(of {self.fetched} fetched)"
            + (f"; not returned: {', '.join(self.missing)}" if self.missing else "")
        )


def _market_row(market: GammaMarket, now: datetime) -> Market:
    return Market(
        polymarket_id=market.polymarket_id,
        condition_id=market.condition_id,
        slug=market.slug,
        question=market.question,
        description=market.description,
        category=market.category,
        event_id=market.event_id,
        event_slug=market.event_slug,
        event_title=market.event_title,
        outcomes=list(market.outcomes),
        outcome_prices=[str(p) for p in market.prices],
        last_open_prices=[] if market.closed else [str(p) for p in market.prices],
        price=market.yes_price,
        volume=market.volume,
        liquidity=market.liquidity,
        close_date=market.close_date,
        active=market.active,
        closed=market.closed,
        neg_risk=market.neg_risk,
        uma_resolution_status=market.uma_resolution_status,
        raw=market.raw,
        last_synced_at=now,
        created_at=now,
        updated_at=now,
    )


def markets_upsert(
    *, markets: Sequence[GammaMarket], now: datetime | None = None, include_raw: bool = True
) -> tuple[int, int]:
    """Insert or update the given markets in bulk; return (created, updated).

    `include_raw=False` (the frequent price refreshes) leaves an open market's stored raw
    record as the catalogue sync last wrote it; a closed market's record is always kept,
    since it is the evidence its resolution is read from.

    A closed market keeps the prices it had when last open, in the order of the outcomes
    it now lists: a record that lists them anew (another order, a renamed one) carries each
    name's price over, and one update per such market writes it.

    A constant number of statements whatever the count (one read of existing ids, one of
    the closed ones' outcomes, bulk upserts in the database's batch size), plus that rare
    update. Safe to repeat.
    """
    now = now or timezone.now()
    # Rows are always locked in one order (by id), whatever order the caller's list is in
    # (volume for a sync, ids for a refresh, records for a resolution check): two upserts
    # running at once then wait for each other instead of deadlocking.
    markets = sorted(markets, key=lambda m: m.polymarket_id)
    ids = [m.polymarket_id for m in markets]
    with transaction.atomic():
        existing = set(
            Market.objects.select_for_update(of=("self",))
            .filter(polymarket_id__in=ids)
            .order_by("polymarket_id")
            .values_list("polymarket_id", flat=True)
        )
        relisted = _closed_last_open_relisted(
            [m for m in markets if m.closed and m.polymarket_id in existing]
        )
        for closed in (False, True):
            rows = [_market_row(m, now) for m in markets if m.closed is closed]
            if not closed and not include_raw:
                for row in rows:  # the stored record stays; don't ship 5 KB a row for nothing
                    if row.polymarket_id in existing:
                        row.raw = {}
            fields = SYNCED_FIELDS + ([] if closed else ["last_open_prices"])
            if not closed and not include_raw:
                fields = [f for f in fields if f != "raw"]
            if rows:
                Market.objects.bulk_create(
                    rows,
                    update_conflicts=True,
                    unique_fields=["polymarket_id"],
                    update_fields=fields,
                    batch_size=1000,
                )
        for pid, prices in relisted.items():  # rare: outcomes listed anew as it closes
            Market.objects.filter(polymarket_id=pid).update(last_open_prices=prices)
    created = len(set(ids) - existing)
    return created, len(ids) - created


def _closed_last_open_relisted(closed: Sequence[GammaMarket]) -> dict[str, list[Any]]:
    """Return, for each of the `closed` markets (stored, locked) whose record lists its
    outcomes otherwise than stored, the prices it had when last open in the order of the
    outcomes now listed, by name (None for a name never seen open). One read, none when
    no closed market is upserted (a sync of the open top markets)."""
    if not closed:
        return {}
    listed = {m.polymarket_id: list(m.outcomes) for m in closed}
    relisted = {}
    for pid, outcomes, last_open in Market.objects.filter(polymarket_id__in=listed).values_list(
        "polymarket_id", "outcomes", "last_open_prices"
    ):
        names = [str(o) for o in outcomes]
        if names != listed[pid]:
            by_name = dict(zip(names, last_open, strict=False))
            relisted[pid] = [by_name.get(name) for name in listed[pid]]
    return relisted


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
        result.created, result.updated = markets_upsert(markets=markets, now=started)
        if progress:
            progress(len(markets), len(markets))
    for record_id, reason in result.rejections:
        logger.warning("rejected Gamma record %s: %s", record_id, reason)
    result.seconds = time.perf_counter() - clock
    result.run_id = _record_run(result, started)
    return result


def markets_refresh(
    *, polymarket_ids: Iterable[str], source: MarketSource | None = None
) -> SyncResult:
    """Re-read the given markets by id (prices, closed flags) and upsert what parses.

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
    result.created, result.updated = markets_upsert(markets=result.markets, include_raw=False)
    result.seconds = time.perf_counter() - clock
    return result
