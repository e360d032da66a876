"""The frozen snapshot: the markets every decision of a run sees."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Set
from dataclasses import dataclass, replace
from datetime import date, datetime
from decimal import Decimal

from django.conf import settings
from django.db import transaction

from agents.types import (
    MarketView,
)
from arena import clock, money
from arena.exceptions import TradeRejected
from arena.models import (
    DecisionRun,
    SnapshotMarket,
)
from arena.panel import END_AFTER_WINDOW, Candidate, panel_pick, panel_seed
from arena.selectors.ticks import held_market_ids
from arena.weeks import cohort_week_start, outside_window
from markets import services as market_services
from markets.models import UNREAD_BY_ENGINE, Market
from markets.sources import MarketSource, live_read_source, market_source

logger = logging.getLogger(__name__)


# ---------------------------------------------------------------------- the frozen snapshot


def run_prepare(
    *,
    now: datetime | None = None,
    source: MarketSource | None = None,
    week_start: date | None = None,
) -> DecisionRun:
    """Refresh the top markets and the markets agents hold, then freeze them as one snapshot
    that every decision of the run sees. A failed refresh freezes the catalogue as it stands
    and says so in `sync_summary`."""
    now = now or clock.now()
    source = source or market_source()
    limit = settings.MARKET_UNIVERSE_SIZE
    result = market_services.markets_sync_top(limit=limit, source=source)  # network, no txn
    week_start = week_start or cohort_week_start(now)
    week_panel = _week_panel(week_start)
    # The held markets, and the week's panel questions (a later run of the week freezes them
    # whether or not they are still among the top), at their prices now.
    held = held_market_ids()
    asked = set(week_panel[1]) if week_panel else set()
    refresh = market_services.markets_refresh(polymarket_ids=held | asked, source=source)
    summary = result.summary() + ("" if refresh.ok else f"; held refresh failed: {refresh.error}")
    if result.ok:
        universe_ids = [m.polymarket_id for m in result.markets[:limit]]
    else:
        universe_ids = list(
            Market.objects.filter(resolution=Market.Resolution.OPEN, closed=False, active=True)
            .order_by("-volume")
            .values_list("polymarket_id", flat=True)[:limit]
        )
    with transaction.atomic():
        run = DecisionRun.objects.create(
            week_start=week_start,
            started_at=now,
            source=source.name,
            universe_size=len(universe_ids),
            sync_summary=summary,
        )
        markets = Market.objects.defer(*UNREAD_BY_ENGINE).in_bulk(
            set(universe_ids) | held | asked,
            field_name="polymarket_id",
        )
        rank = {pid: i for i, pid in enumerate(universe_ids, start=1)}
        frozen = SnapshotMarket.objects.bulk_create(
            [
                SnapshotMarket(
                    run=run,
                    market=market,
                    rank=rank.get(pid),
                    polymarket_id=pid,
                    question=market.question,
                    category=market.category,
                    outcomes=market.outcomes,
                    outcome_prices=market.outcome_prices,
                    volume=market.volume,
                    liquidity=market.liquidity,
                    close_date=market.close_date,
                    closed=market.closed or market.resolution != Market.Resolution.OPEN,
                )
                for pid, market in markets.items()
            ],
            batch_size=1000,
        )
        try:
            with transaction.atomic():  # the panel's failure must not cost the week its snapshot
                run.panel_seed, run.panel = week_panel or run_panel(
                    run.week_start, frozen, asked_before=_asked_before(run.week_start)
                )
                run.save(update_fields=["panel_seed", "panel"])
        except Exception:
            logger.exception("%s: no forecast panel could be picked", run)
            run.panel_seed, run.panel = "", []
    return run


def _week_panel(week_start: date) -> tuple[str, list[str]] | None:
    """The panel an earlier run of the week picked (its seed and questions), or None: every
    round of a week's decisions, retries included, asks the same questions, at its own run's
    prices (frozen with it, ranked among the top markets or not)."""
    row = (
        DecisionRun.objects.filter(week_start=week_start)
        .exclude(panel_seed="")
        .order_by("pk")
        .values_list("panel_seed", "panel")
        .first()
    )
    return (row[0], list(row[1])) if row is not None else None


def _asked_before(week_start: date) -> set[str]:
    """The markets of every earlier week's panel (published with their runs)."""
    panels = DecisionRun.objects.filter(week_start__lt=week_start).exclude(panel_seed="")
    return {pid for panel in panels.values_list("panel", flat=True) for pid in panel}


def run_panel(
    week_start: date, frozen: Iterable[SnapshotMarket], *, asked_before: Set[str] = frozenset()
) -> tuple[str, list[str]]:
    """The week's forecast panel over a run's frozen markets (arena/panel.py): its seed, from
    the week and every frozen market's prices (in the order of their ids as strings), and its
    questions, from the ranked markets (the top of the catalogue; a market frozen only because
    an agent holds it is none) that no earlier week's panel asked (`asked_before`)."""
    rows = list(frozen)
    seed = panel_seed(
        week_start=week_start,
        snapshot=[
            (row.polymarket_id, [_price_text(p) for p in row.outcome_prices]) for row in rows
        ],
    )
    candidates = [
        Candidate(
            market_id=row.polymarket_id,
            outcomes=tuple(str(o) for o in row.outcomes),
            prices=tuple(_price_text(p) for p in row.outcome_prices),
            liquidity=row.liquidity,
            close_date=row.close_date,
            closed=row.closed,
        )
        for row in rows
        # A question is asked in one week only: its forecasts of an earlier week are public
        # by the time an outside agent answers this one's, and the lineup never sees them.
        if row.rank is not None and row.polymarket_id not in asked_before
    ]
    earliest_end = outside_window(week_start)[1] + END_AFTER_WINDOW
    panel = panel_pick(candidates, seed=seed, earliest_end=earliest_end, size=settings.PANEL_SIZE)
    return seed, panel


def _price_text(price: object) -> str | None:
    return None if price is None else str(price)


def _view(row: SnapshotMarket) -> MarketView:
    return MarketView(
        market_id=row.polymarket_id,
        question=row.question,
        category=row.category,
        outcomes=tuple(str(o) for o in row.outcomes),
        prices=tuple(Decimal(p) if p is not None else None for p in row.outcome_prices),
        volume=row.volume,
        close_date=row.close_date,
    )


@dataclass(frozen=True)
class Quote:
    """The side-correct price an order executes at, with the prices it was chosen from: the
    run's frozen snapshot, and (for an outside agent's order) the live price read from
    Polymarket at its submission."""

    price: Decimal
    snapshot_price: Decimal
    live_price: Decimal | None = None


@dataclass(frozen=True)
class LiveMarkets:
    """The markets an outside agent's answer orders, re-read from Polymarket at its
    submission: the open ones' live views, and why any other cannot be traded now."""

    views: dict[str, MarketView]
    refused: dict[str, str]  # market id → why no order executes in it now


@dataclass
class FrozenMarkets:
    """A run's snapshot in memory: views by Polymarket id, the universe in rank order.

    `live` is set for an outside agent's submission (`with_live_markets`): its orders then
    execute at the worse, for the agent, of the frozen and the live side-correct price, and
    never in a market that has closed since the snapshot. The lineup answers minutes after
    the snapshot froze; an outside agent may answer most of an hour later, and must not buy
    the hour's news at the snapshot's price."""

    run: DecisionRun
    rows: dict[str, SnapshotMarket]
    views: dict[str, MarketView]
    universe: tuple[MarketView, ...]
    live: LiveMarkets | None = None

    @classmethod
    def load(cls, run: DecisionRun) -> FrozenMarkets:
        """Return the run's snapshot; a run's snapshot never changes, so it is read once per
        process and shared by the run's decisions."""
        cached = _FROZEN_CACHE.get(run.pk)
        if cached is not None and cached.run.started_at == run.started_at:
            return cached
        rows = {r.polymarket_id: r for r in run.markets.all()}
        views = {pid: _view(row) for pid, row in rows.items()}
        ranked = sorted((r for r in rows.values() if r.rank), key=lambda r: r.rank or 0)
        frozen = cls(run, rows, views, tuple(views[r.polymarket_id] for r in ranked))
        _FROZEN_CACHE.clear()  # keep one run: a process works through one run at a time
        _FROZEN_CACHE[run.pk] = frozen
        return frozen

    @property
    def panel(self) -> tuple[MarketView, ...]:
        """The week's forecast panel (methodology v2) at this snapshot's prices, in its order."""
        return tuple(self.views[pid] for pid in self.run.panel if pid in self.views)

    def quote(self, market_id: str, side: str, *, buying: bool) -> Quote:
        """Return the price an order on `side` of the market executes at, or raise
        TradeRejected. Without live markets, the frozen side-correct price. With them, the
        worse for the agent of the frozen and the live price: the higher for a buy, the
        lower for a sell; and no order in a market that closed, or could not be read."""
        view = self.views.get(market_id)
        if view is None:
            raise TradeRejected(f"unknown market {market_id}: not in this run's snapshot")
        frozen = side_price(view, side)
        if frozen is None:
            raise TradeRejected(f"no price for {side} in market {market_id}")
        if self.live is None:
            return Quote(price=frozen, snapshot_price=frozen)
        refused = self.live.refused.get(market_id)
        if refused:
            raise TradeRejected(f"market {market_id} at submission: {refused}")
        live_view = self.live.views.get(market_id)
        live = side_price(live_view, side) if live_view is not None else None
        if live is None:
            raise TradeRejected(
                f"no live price for {side} in market {market_id} at submission: not executed "
                "at the snapshot's price alone"
            )
        worse = max(frozen, live) if buying else min(frozen, live)
        return Quote(price=worse, snapshot_price=frozen, live_price=live)

    def with_live_markets(
        self, market_ids: Iterable[str], *, source: MarketSource | None = None
    ) -> FrozenMarkets:
        """Re-read the given markets from Polymarket now (a network call: never inside a
        transaction; bounded, as someone waits on it: `live_read_source`) and return this
        snapshot with their live state attached (`quote`). A
        market the refresh could not read, did not return, or found closed, resolved or no
        longer active takes no order; the run's own snapshot is left as it is."""
        wanted = sorted({m for m in market_ids if m in self.views})
        refused: dict[str, str] = {}
        views: dict[str, MarketView] = {}
        if wanted:
            result = market_services.markets_refresh(
                polymarket_ids=wanted, source=source or live_read_source()
            )
            if not result.ok:
                refused = {m: f"the live price could not be read ({result.error})" for m in wanted}
            else:
                rows = Market.objects.defer(*UNREAD_BY_ENGINE).in_bulk(
                    wanted, field_name="polymarket_id"
                )
                returned = {m.polymarket_id for m in result.markets}
                for market_id in wanted:
                    market = rows.get(market_id)
                    if market is None or market_id not in returned:
                        refused[market_id] = "Polymarket did not return a readable record"
                    # Closed as the lineup's orders see it (closed upstream or settled here):
                    # a market trading past its end date stays tradable for every agent.
                    elif market.resolution != Market.Resolution.OPEN:
                        refused[market_id] = f"{market.resolution} since the snapshot"
                    elif market.closed or not market.active:
                        refused[market_id] = "closed since the snapshot"
                    else:
                        views[market_id] = _market_view(market)
        return replace(self, live=LiveMarkets(views=views, refused=refused))


def _market_view(market: Market) -> MarketView:
    return MarketView(
        market_id=market.polymarket_id,
        question=market.question,
        category=market.category,
        outcomes=tuple(str(o) for o in market.outcomes),
        prices=tuple(price for _, price in market.prices_by_outcome()),
        volume=market.volume,
        close_date=market.close_date,
    )


_FROZEN_CACHE: dict[int, FrozenMarkets] = {}


def side_price(view: MarketView, side: str) -> Decimal | None:
    """Return the side-correct price: YES the stored price, NO 1 − it, an outcome its own."""
    if view.is_binary:
        yes = view.yes_price
        if yes is None or side not in ("YES", "NO"):
            return None
        return yes if side == "YES" else money.price(Decimal(1) - yes)
    for outcome, price in zip(view.outcomes, view.prices, strict=False):
        if outcome == side:
            return price
    return None


def outcome_index(view: MarketView, side: str) -> int:
    if view.is_binary:
        return 0 if side == "YES" else 1
    return list(view.outcomes).index(side)
