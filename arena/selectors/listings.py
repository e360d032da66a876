"""Reads only the JSON API needs (`arena/api/records.py`): lists across every agent, filtered.

The pages list decisions per cohort or per agent (`standings.cohort_decisions`,
`standings.agent_decisions`); the API lists them all, filtered and newest first, without the
prompts (`standings.LIST_DEFERRED`), in one query per page plus one count. So too every
trade, the catalogue's markets (the page's own listing, with each market's bet count) and
the resolutions. Each list has a stable order, so pages never skip or repeat a row.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.db.models import Count, Exists, F, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce

from agents.models import BenchmarkModel
from arena.models import Agent, Cohort, Decision, PanelForecast, Position, Trade
from arena.selectors import standings
from arena.selectors.standings import LIST_DEFERRED, MARKET_DEFERRED
from markets import selectors as catalogue
from markets.models import Market
from markets.selectors import MarketFilter


def decision_list(
    *,
    model: BenchmarkModel | None = None,
    cohort: Cohort | None = None,
    week: date | None = None,
    action: str | None = None,
    status: str | None = None,
) -> QuerySet[Decision]:
    """Return the decisions matching every filter given, newest week first, then by model
    (LLMs before baselines, in display order), then by id: a stable order for paging."""
    decisions = Decision.objects.select_related("agent__model", "cohort").defer(*LIST_DEFERRED)
    if model is not None:
        decisions = decisions.filter(agent__model=model)
    if cohort is not None:
        decisions = decisions.filter(cohort=cohort)
    if week is not None:
        decisions = decisions.filter(week_start=week)
    if action is not None:
        decisions = decisions.filter(action=action)
    if status is not None:
        decisions = decisions.filter(status=status)
    return decisions.order_by(
        "-week_start", "agent__model__kind", "agent__model__display_order", "-pk"
    )


def trade_list(
    *,
    model: BenchmarkModel | None = None,
    cohort: Cohort | None = None,
    agent: Agent | None = None,
    market: Market | None = None,
    kind: str | None = None,
    status: str | None = None,
) -> QuerySet[Trade]:
    """Return every order matching every filter given, executed or rejected, in the agent
    page's order (`standings.TRADE_ORDER`: stable, for paging), with its market, agent, model
    and cohort."""
    trades = Trade.objects.select_related("market", "agent__model", "agent__cohort").defer(
        *MARKET_DEFERRED
    )
    if model is not None:
        trades = trades.filter(agent__model=model)
    if cohort is not None:
        trades = trades.filter(agent__cohort=cohort)
    if agent is not None:
        trades = trades.filter(agent=agent)
    if market is not None:
        trades = trades.filter(market=market)
    if kind is not None:
        trades = trades.filter(kind=kind)
    if status is not None:
        trades = trades.filter(status=status)
    return trades.order_by(*standings.TRADE_ORDER)


def forecast_list(
    *,
    model: BenchmarkModel | None = None,
    cohort: Cohort | None = None,
    agent: Agent | None = None,
    market: Market | None = None,
    run_id: int | None = None,
    week: date | None = None,
) -> QuerySet[PanelForecast]:
    """Return every panel forecast (methodology v2) matching every filter given, newest week
    first, then by decision and question (stable, for paging), with its agent's model and
    cohort and its market's id."""
    rows = PanelForecast.objects.select_related("agent__model", "agent__cohort", "market").only(
        *(f.name for f in PanelForecast._meta.concrete_fields),
        "agent__model__internal_id",
        "agent__cohort__number",
        "market__polymarket_id",
    )
    if model is not None:
        rows = rows.filter(agent__model=model)
    if cohort is not None:
        rows = rows.filter(agent__cohort=cohort)
    if agent is not None:
        rows = rows.filter(agent=agent)
    if market is not None:
        rows = rows.filter(market=market)
    if run_id is not None:
        rows = rows.filter(run_id=run_id)
    if week is not None:
        rows = rows.filter(week_start=week)
    return rows.order_by("-week_start", "decision_id", "position")


def _count(rows: QuerySet[Any]) -> Coalesce:
    """A subquery counting `rows` (filtered on OuterRef("pk")), 0 when there are none."""
    counted = rows.order_by().values("market").annotate(n=Count("pk")).values("n")[:1]
    return Coalesce(Subquery(counted), 0)


def _bets_on_market() -> QuerySet[Trade]:
    """The bets on the outer market: executed BUYs (a rejected order moved no money)."""
    return Trade.objects.filter(
        market=OuterRef("pk"), kind=Trade.Kind.BUY, status=Trade.Status.EXECUTED
    )


def market_list(
    *, filters: MarketFilter | None = None, held: bool | None = None
) -> QuerySet[Market]:
    """Return the catalogue's listing (`markets.selectors.market_list`, the page's, in its
    stable order) with `bets`, the bets placed on each market; with held=True only the
    markets some agent bet on, with held=False only the others."""
    bets = _bets_on_market()
    markets = catalogue.market_list(filters=filters).annotate(bets=_count(bets))
    if held is True:
        markets = markets.filter(Exists(bets))
    elif held is False:
        markets = markets.exclude(Exists(bets))
    return markets


RESOLVED_KINDS = (Market.Resolution.RESOLVED, Market.Resolution.CANCELLED)


def resolution_list(
    *, resolution: str | None = None, since: date | None = None, until: date | None = None
) -> QuerySet[Market]:
    """Return the markets resolved or cancelled here, newest resolution first (then by id: a
    stable order), each with `positions_settled` (the positions its resolution paid out or
    refunded) and `bets_scored` (the bets it gave a Brier score; a cancelled market scores
    none). `since` and `until` are UTC days, both included."""
    markets = Market.objects.defer("raw", "description").filter(
        resolution__in=[resolution] if resolution else RESOLVED_KINDS
    )
    if since is not None:
        markets = markets.filter(resolved_at__gte=datetime.combine(since, time(), UTC))
    if until is not None and until < date.max:  # the last day has no "next day" to stop at
        next_day = datetime.combine(until + timedelta(days=1), time(), UTC)
        markets = markets.filter(resolved_at__lt=next_day)
    settled = Position.objects.filter(
        market=OuterRef("pk"), status__in=[Position.Status.SETTLED, Position.Status.CANCELLED]
    )
    scored = _bets_on_market().filter(brier_score__isnull=False)
    return markets.annotate(positions_settled=_count(settled), bets_scored=_count(scored)).order_by(
        F("resolved_at").desc(nulls_last=True), "-pk"
    )
