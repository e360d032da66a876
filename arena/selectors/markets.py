"""Reads of a market's page: who holds which side at what entry, every trade on it, each
resolved bet's Brier, and the market's price history while agents held it.

Price history comes only from what is stored: the prices each decision run froze
(`SnapshotMarket`, what the agents saw) and the market's latest synced price. The
10-minute marking refreshes a held market's current price in place (only when it changed)
and stores only each agent's portfolio totals (`PortfolioSnapshot`), never a per-market
price, so between two runs there is no stored point and none is invented.

When the market was last heard from the source (`market_heard_at`) is its row's
`last_synced_at` (when a sync last wrote it), or the later tick that heard it unchanged.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from django.utils import timezone

from agents.models import BenchmarkModel
from arena.models import Decision, PanelForecast, Position, SnapshotMarket, SnapshotTick, Trade
from arena.selectors.curves import Series
from arena.selectors.standings import ANSWERED_OFFLINE, offline_agent_ids
from arena.weeks import SNAPSHOT_SLOT
from markets.models import Market
from scoring.panel import question_forecast, question_spread

# The most points a price series keeps; a longer one is thinned evenly (first and last kept).
MAX_PRICE_POINTS = 1000
# The most outcomes of a multi-outcome market drawn when no agent held any of them.
MAX_OUTCOME_SERIES = 8
# Rows a list of the page shows: a market every cohort buys gathers hundreds of positions and
# trades, and rendering them all costs more than the page's budget (bench/README.md §3).
LIST_LIMIT = 50


@dataclass(frozen=True)
class Holding:
    """One position in the market (open, sold, settled or refunded) and whether its agent's
    decisions were answered by an offline stand-in (then labelled offline everywhere)."""

    position: Position
    offline: bool


@dataclass(frozen=True)
class MarketTrade:
    """One trade on the market, executed or rejected, with its agent's offline flag."""

    trade: Trade
    offline: bool


@dataclass(frozen=True)
class PricePoint:
    """The market's prices at one moment: frozen by a decision run (`run_id` set), or the
    latest catalogue sync (`run_id` None)."""

    at: datetime
    prices: tuple[tuple[str, Decimal | None], ...]
    run_id: int | None = None

    @property
    def source(self) -> str:
        return "decision run" if self.run_id is not None else "latest sync"


# One colour per drawn outcome, in outcome order (no model is drawn here, so none of the
# models' fixed colours is implied).
OUTCOME_PALETTE = ("#2a5bd7", "#f08a24", "#1b998b", "#6f2dbd", "#d7263d", "#5c946e", "#c1a100")


@dataclass(frozen=True)
class ModelForecast:
    """A model's forecast of the market as a question of one week's panel (methodology v2):
    the mean of its agents' stated probabilities of YES, how far apart they lay, and the
    reference price b they were scored against."""

    week_start: date
    model: BenchmarkModel
    probability: float | None  # None: none of its agents stated one (imputed at b)
    spread: float | None  # max − min of its agents' stated ones; None under two
    stated: int
    agents: int
    reference_price: float | None
    brier: float | None  # its forecast's (b where none stated one), once resolved
    offline: bool


@dataclass
class MarketPage:
    """Everything the market page shows, read in a constant number of queries."""

    market: Market
    holdings: list[Holding]
    trades: list[MarketTrade]
    price_points: list[PricePoint]
    price_lines: list[Series]
    held_from: datetime | None = None
    held_until: datetime | None = None  # None while a position is still open
    scored: list[MarketTrade] = field(default_factory=list)
    heard_at: datetime | None = None  # when the source was last heard about it (never: None)
    forecasts: list[ModelForecast] = field(default_factory=list)

    @property
    def ever_held(self) -> bool:
        return self.held_from is not None

    @property
    def holdings_shown(self) -> list[Holding]:
        """Open positions first, then the earliest closed ones, up to LIST_LIMIT."""
        return self.holdings[:LIST_LIMIT]

    @property
    def trades_shown(self) -> list[MarketTrade]:
        """The latest LIST_LIMIT trades, oldest first."""
        return self.trades[-LIST_LIMIT:]

    @property
    def scored_shown(self) -> list[MarketTrade]:
        """The latest LIST_LIMIT scored bets, oldest first."""
        return self.scored[-LIST_LIMIT:]

    @property
    def open_holdings(self) -> list[Holding]:
        return [h for h in self.holdings if h.position.status == Position.Status.OPEN]


def market_get(*, polymarket_id: str) -> Market:
    """Return the catalogue market, without its raw Gamma record; raise Market.DoesNotExist."""
    return Market.objects.defer("raw").get(polymarket_id=polymarket_id)


def market_page(*, market: Market, now: datetime | None = None) -> MarketPage:
    """Return the market's holders, trades, scored bets, price history and when it was last
    heard from the source (five queries, always the same five, whatever the number of
    positions, trades or runs).

    Holders are every position ever opened in the market, open ones first. Trades are every
    order that named the market, rejected ones included, oldest first. `scored` are the
    executed bets a resolution scored (a cancelled market scores none). The price history
    covers the time some agent held the market, plus the run prices agents traded on.
    """
    now = now or timezone.now()
    positions = list(
        Position.objects.filter(market=market)
        .select_related("agent__model", "agent__cohort")
        .order_by("opened_at", "pk")
    )
    positions.sort(key=lambda p: p.status != Position.Status.OPEN)  # open first (stable)
    trades = list(
        Trade.objects.filter(market=market)
        .select_related("agent__model", "agent__cohort")
        .order_by("created_at", "decision_id", "try_number", "order_index")
    )
    offline = _offline_trader_ids(market=market)
    holdings = [Holding(p, p.agent_id in offline) for p in positions]
    rows = [MarketTrade(t, t.agent_id in offline) for t in trades]
    held_from = min((p.opened_at for p in positions), default=None)
    still_held = any(p.status == Position.Status.OPEN for p in positions)
    held_until = (
        None
        if still_held or not positions
        else max((p.closed_at or p.opened_at for p in positions), default=None)
    )
    heard_at = market_heard_at(market=market, positions=positions, now=now)
    points = _price_points(
        market=market,
        held_from=held_from,
        held_until=held_until,
        traded_at=sorted({t.created_at for t in trades}),
        heard_at=heard_at,
        now=now,
    )
    sides = [p.side for p in positions] + [t.side for t in trades if t.side]
    return MarketPage(
        market=market,
        holdings=holdings,
        trades=rows,
        price_points=points,
        price_lines=_price_lines(market=market, points=points, sides=sides),
        held_from=held_from,
        held_until=held_until,
        scored=[
            row
            for row in rows
            if row.trade.kind == Trade.Kind.BUY
            and row.trade.status == Trade.Status.EXECUTED
            and row.trade.brier_score is not None
        ],
        heard_at=heard_at,
        forecasts=market_forecasts(market=market),
    )


def market_forecasts(*, market: Market) -> list[ModelForecast]:
    """Every model's forecast of the market in each week it was a panel question, latest week
    first, then by model, its offline stand-in apart (three queries; two when it never was
    one). Its Brier is the model's forecast's, once resolved, as the panel's figures score it:
    the mean of its agents' stated ones, b where none stated one."""
    rows = list(
        PanelForecast.objects.filter(market=market)
        .order_by("week_start", "agent__model_id", "pk")
        .values_list(
            "week_start", "agent__model_id", "agent_id", "probability", "reference_price",
            "outcome",
        )
    )  # fmt: skip
    if not rows:
        return []
    stand_ins = offline_agent_ids({row[2] for row in rows})
    grouped: dict[tuple[date, int, bool], list[tuple[Any, ...]]] = {}
    for row in rows:
        grouped.setdefault((row[0], row[1], row[2] in stand_ins), []).append(row)
    models = BenchmarkModel.objects.in_bulk({model_id for _, model_id, _ in grouped})
    forecasts = []
    for (week, model_id, offline), group in grouped.items():
        stated = [float(r[3]) if r[3] is not None else None for r in group]
        references = [float(r[4]) for r in group if r[4] is not None]
        b = sum(references) / len(references) if references else None
        own = question_forecast(stated)
        p = own if own is not None else b
        outcome = group[0][5]
        forecasts.append(
            ModelForecast(
                week_start=week,
                model=models[model_id],
                probability=own,
                spread=question_spread(stated),
                stated=sum(value is not None for value in stated),
                agents=len(group),
                reference_price=b,
                brier=(p - outcome) ** 2 if p is not None and outcome is not None else None,
                offline=offline,
            )
        )
    forecasts.sort(
        key=lambda f: (-f.week_start.toordinal(), f.model.display_order, f.model.pk, f.offline)
    )
    return forecasts


def market_heard_at(
    *, market: Market, positions: Sequence[Position], now: datetime
) -> datetime | None:
    """Return when the market was last heard from the source, its price as of then: when a
    sync last wrote its row (`last_synced_at`: first stored, or a value changed), or the
    later tick whose refresh heard it unchanged. A tick refreshes every market a position
    is open in and keeps when, once (`SnapshotTick.refreshed_at`), so the market counts as
    heard by the latest tick of its `positions`' holding whose refresh brought it back, if
    one of them was open then. One query, run whether or not anybody held it.

    Not counted: the resolution checks and the weekly run's refresh, which record no time
    of their own; a market they heard unchanged and no tick did keeps its row's time."""
    written = market.last_synced_at
    spans = [
        (p.opened_at, now if p.status == Position.Status.OPEN else p.closed_at or p.opened_at)
        for p in positions
    ]
    start = min((opened for opened, _ in spans), default=now)
    end = max((until for _, until in spans), default=now)
    # A tick's refresh is stamped in its slot: slot <= refreshed_at < slot + SNAPSHOT_SLOT.
    tick = (
        SnapshotTick.objects.filter(
            slot__gt=start - SNAPSHOT_SLOT,
            slot__lte=end,
            refreshed_at__gte=start,
            refreshed_at__lte=end,
        )
        .order_by("-slot")
        .values_list("refreshed_at", "not_refreshed")
        .first()
    )
    if tick is None:
        return written
    heard, not_refreshed = tick
    if (
        heard is None
        or market.polymarket_id in not_refreshed
        or not any(opened <= heard <= until for opened, until in spans)
    ):
        return written  # that tick did not hear it: nothing later is known for sure
    return heard if written is None or heard > written else written


def _offline_trader_ids(*, market: Market) -> set[int]:
    """Return the agents that traded the market (every position starts with a trade) any of
    whose decisions an offline stand-in answered: the rule of `standings` (an agent is
    offline as a whole), in one query whether or not anybody traded."""
    traders = Trade.objects.filter(market=market).values("agent_id")
    return set(
        Decision.objects.filter(ANSWERED_OFFLINE, agent_id__in=traders)
        .order_by()
        .values_list("agent_id", flat=True)
        .distinct()
    )


def _prices(outcomes: list[Any], prices: list[Any]) -> tuple[tuple[str, Decimal | None], ...]:
    padded = list(prices) + [None] * len(outcomes)
    return tuple((str(o), _decimal(p)) for o, p in zip(outcomes, padded, strict=False))


def _decimal(value: Any) -> Decimal | None:
    if value is None:
        return None
    try:
        number = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return None
    return number if number.is_finite() else None


def _price_points(
    *,
    market: Market,
    held_from: datetime | None,
    held_until: datetime | None,
    traded_at: list[datetime],
    heard_at: datetime | None,
    now: datetime,
) -> list[PricePoint]:
    """Return the stored prices of the market while it was held, oldest first: each run's
    frozen prices from the first position's opening to the last one's close (or now); for
    every trade, the prices of the last run that froze the market before it (the run the
    order was priced from: it starts before the position opens); and the latest synced price,
    as of when it was last heard (`heard_at`), when that falls in the held time. A market no
    agent ever traded has no history here."""
    until = held_until or now
    frozen = list(  # read even when nobody traded: the page's queries never vary
        SnapshotMarket.objects.filter(market=market)
        .order_by("run__started_at", "run_id")
        .values_list("run_id", "run__started_at", "outcomes", "outcome_prices")
    )
    starts = [started_at for _, started_at, _, _ in frozen]
    priced_from = {  # the runs trades were priced from
        frozen[i - 1][0] for i in (bisect_right(starts, moment) for moment in traded_at) if i
    }
    points = [
        PricePoint(started_at, _prices(outcomes, prices), run_id)
        for run_id, started_at, outcomes, prices in frozen
        if run_id in priced_from or (held_from is not None and held_from <= started_at <= until)
    ]
    synced = heard_at
    if synced is not None and held_from is not None and held_from <= synced <= until:
        if not points or synced > points[-1].at:
            points.append(PricePoint(synced, _prices(market.outcomes, market.outcome_prices)))
    return points


def _price_lines(*, market: Market, points: list[PricePoint], sides: list[str]) -> list[Series]:
    """Return the lines to draw, for `arena.views.charts.price_chart`: the YES price of a binary
    market (NO is 1 − YES), or each outcome some agent bet on of a multi-outcome market (the
    first few when none was)."""
    if not points:
        return []
    names = [str(o) for o in market.outcomes]
    if market.is_binary:
        wanted = names[:1]
    else:
        wanted = [n for n in names if n in set(sides)] or names[:MAX_OUTCOME_SERIES]
    lines = []
    for i, outcome in enumerate(wanted):
        series = [
            (point.at, price)
            for point in points
            for name, price in point.prices
            if name == outcome and price is not None
        ]
        if series:
            colour = OUTCOME_PALETTE[i % len(OUTCOME_PALETTE)]
            lines.append(Series(f"outcome-{i}", outcome, colour, False, _thin(series)))
    return lines


def _thin(points: list[tuple[datetime, Decimal]]) -> list[tuple[datetime, Decimal]]:
    """Keep at most MAX_PRICE_POINTS points, evenly spaced, always the first and the last."""
    if len(points) <= MAX_PRICE_POINTS:
        return points
    step = (len(points) - 1) / (MAX_PRICE_POINTS - 1)
    return [points[round(i * step)] for i in range(MAX_PRICE_POINTS)]
