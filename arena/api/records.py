"""The arena's read-only JSON API, mounted at /api/v1/ by `forecaster/api.py`.

Each endpoint calls the selectors that serve the pages (`arena/selectors/`), so a figure here
is the page's figure; this module only shapes them (`arena/api/records_schemas.py`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

from django.core.cache import cache
from django.db.models import QuerySet
from django.http import Http404, HttpRequest
from django.shortcuts import get_object_or_404
from django.utils import timezone
from ninja import Path, Query, Router
from ninja.errors import HttpError

from agents.models import BenchmarkModel
from arena.api.analytics_schemas import leaderboard_fields, reference_out
from arena.api.errors import ErrorEnvelope
from arena.api.params import (
    MAX_ID,
    MAX_PAGE,
    MAX_PAGE_SIZE,
    IsoDate,
    MarketId,
    ModelId,
    Page,
    PageSize,
    QueryId,
    known_agent,
    known_cohort,
    known_market,
    known_model,
)
from arena.api.records_schemas import (
    AgentDetailOut,
    AttemptOut,
    CohortDetailOut,
    CohortOut,
    CohortPage,
    DecisionDetailOut,
    DecisionOut,
    DecisionPage,
    HoldingOut,
    LeaderboardOut,
    LeaderboardRowOut,
    MarketDetailOut,
    MarketOut,
    MarketPage,
    ModelDetailOut,
    ModelPage,
    ModelRowOut,
    ModelVersionOut,
    OutcomePriceOut,
    PositionOut,
    PositionPage,
    PricePointOut,
    ResolutionOut,
    ResolutionPage,
    SeriesOut,
    StandingOut,
    StatusOut,
    TradeOut,
    TradePage,
    TradeRowOut,
    decimal_string,
    optional_decimal,
    return_string,
    status_out,
)
from arena.models import Agent, Cohort, Decision, DecisionAttempt, Position, Trade
from arena.selectors import commitments, curves, listings, markets, standings
from arena.selectors import status as status_selectors
from arena.selectors.analytics.cache import analytics
from arena.selectors.analytics.figures import Analytics
from arena.selectors.watermark import data_watermark
from markets.models import Market
from markets.selectors import MarketFilter

router = Router(tags=["arena"])

CACHE_SECONDS = 600  # a tick's interval: the longest a costly answer is kept

Id = Annotated[int, Path(ge=1, le=MAX_ID)]
C = TypeVar("C", bound=CohortOut)
RangeKey = Literal["10M", "1H", "1D", "1W", "1M", "3M", "ALL"]
ActionKey = Literal["BET", "SELL", "HOLD"]
DecisionStatus = Literal["pending", "running", "awaiting", "done", "retryable", "skipped"]
# Polymarket's ids are short digit strings; anything else names no market.
# Stable ids are printable text: a control character (NUL breaks PostgreSQL) names no model.
PolymarketId = Annotated[str, Path(min_length=1, max_length=32, pattern=r"^[0-9A-Za-z_-]+$")]
SearchText = Annotated[str, Query(max_length=200, pattern=r"^[^\x00-\x1f]*$")]
Category = Annotated[str, Query(max_length=64, pattern=r"^[^\x00-\x1f]*$")]
LeaderboardSort = Literal[
    "brier", "return", "win_rate", "resolved_bets", "alpha", "p_first", "cohorts", "cost",
    "latency", "malformed",
]  # fmt: skip
TradeKind = Literal["BUY", "SELL"]
TradeStatus = Literal["executed", "rejected"]
MarketStatus = Literal["open", "closed", "resolved", "cancelled"]
MarketSort = Literal["volume", "close"]
ResolutionKind = Literal["resolved", "cancelled"]
# An agent's own page shows its latest trades; the rest are a page away (/agents/{id}/trades).
AGENT_TRADES_SHOWN = 50


def _page_of(page: int, page_size: int) -> slice:
    start = (page - 1) * page_size
    return slice(start, start + page_size)


def _model_row(row: standings.ModelRow) -> ModelRowOut:
    return ModelRowOut(
        model=row.model.internal_id,
        display_name=row.model.display_name,
        provider=row.model.provider,
        baseline=row.model.is_baseline,
        outside=row.model.is_outside,
        admitted=row.model.admitted_to_main_board,  # only an outside agent can be
        active=row.model.active,
        offline=row.offline,
        brier=row.brier,
        avg_return=return_string(row.avg_return),
        win_rate=row.win_rate,
        resolved_bets=row.resolved_bets,
        cohorts=row.cohorts,
        bankrupt=row.bankrupt,
    )


def _standing(standing: standings.AgentStanding) -> StandingOut:
    agent = standing.agent
    return StandingOut(
        agent=agent.pk,
        cohort=agent.cohort.number,
        model=agent.model.internal_id,
        display_name=agent.model.display_name,
        baseline=agent.model.is_baseline,
        outside=agent.model.is_outside,
        cash=decimal_string(standing.cash),
        positions_value=decimal_string(standing.positions_value),
        total_value=decimal_string(standing.total_value),
        return_percent=return_string(standing.return_percent) or "",
        brier=standing.brier,
        resolved_bets=standing.resolved_bets,
        open_positions=standing.open_positions,
        offline=standing.offline,
        status=agent.status,
    )


def _position(row: standings.PositionRow) -> PositionOut:
    position = row.position
    return PositionOut(
        id=position.pk,
        market=position.market.polymarket_id,
        question=position.market.question,
        side=position.side,
        outcome_index=position.outcome_index,
        status=position.status,
        shares=decimal_string(position.shares),
        cost_basis=decimal_string(position.cost_basis),
        realized_pnl=decimal_string(position.realized_pnl),
        settlement_value=optional_decimal(position.settlement_value),
        price_now=optional_decimal(row.price_now),
        value_now=optional_decimal(row.value_now),
        opened_at=position.opened_at,
        closed_at=position.closed_at,
    )


def _trade_fields(trade: Trade, *, market: Market | None = None) -> dict[str, Any]:
    """The trade's fields; `market` is the trade's market when the caller has it already."""
    market = market or trade.market
    return {
        "id": trade.pk,
        "decision": trade.decision_id,
        "agent": trade.agent_id,
        "kind": trade.kind,
        "status": trade.status,
        "reject_reason": trade.reject_reason,
        "market": market.polymarket_id if market else None,
        "side": trade.side,
        "order_index": trade.order_index,
        "try_number": trade.try_number,
        "price": optional_decimal(trade.price),
        "snapshot_price": optional_decimal(trade.snapshot_price),
        "live_price": optional_decimal(trade.live_price),
        "shares": optional_decimal(trade.shares),
        "amount": optional_decimal(trade.amount),
        "implied_confidence": trade.implied_confidence,
        "brier": trade.brier_score,
        "side_won": trade.side_won,
        "created_at": trade.created_at,
    }


def _trade_row(trade: Trade, *, offline: bool, market: Market | None = None) -> TradeRowOut:
    """The trade with its agent's cohort and model (`trade.agent` read with both)."""
    agent = trade.agent
    return TradeRowOut(
        **_trade_fields(trade, market=market),
        cohort=agent.cohort.number,
        model=agent.model.internal_id,
        display_name=agent.model.display_name,
        offline=offline,
    )


def _trade_page(trades: QuerySet[Trade], page: int, page_size: int) -> TradePage:
    """One page of `trades` (a `trade_list`), each marked offline by the standings' rule."""
    rows = list(trades[_page_of(page, page_size)])
    offline = standings.offline_agent_ids({t.agent_id for t in rows})
    return TradePage(
        count=trades.count(),
        page=page,
        page_size=page_size,
        results=[_trade_row(t, offline=t.agent_id in offline) for t in rows],
    )


def _market_fields(market: Market) -> dict[str, Any]:
    """The catalogue's facts of a market and its status, shared by the list and the detail."""
    return {
        "polymarket_id": market.polymarket_id,
        "question": market.question,
        "category": market.category,
        "slug": market.slug,
        "event_title": market.event_title,
        "outcomes": [str(o) for o in market.outcomes],
        "outcome_prices": [None if p is None else str(p) for p in market.outcome_prices],
        "volume": decimal_string(market.volume),
        "liquidity": optional_decimal(market.liquidity),
        "close_date": market.close_date,
        "closed": market.closed,
        "resolution": market.resolution,
        "winning_outcome": market.winning_outcome,
        "resolved_at": market.resolved_at,
        "status": market.status,
        "status_label": market.status_label,
    }


def _price_point(point: markets.PricePoint) -> PricePointOut:
    return PricePointOut(
        at=point.at,
        source=point.source,
        run=point.run_id,
        prices=[
            OutcomePriceOut(outcome=outcome, price=optional_decimal(price))
            for outcome, price in point.prices
        ],
    )


def _decision_fields(decision: Decision) -> dict[str, Any]:
    return {
        "id": decision.pk,
        "agent": decision.agent_id,
        "cohort": decision.cohort.number,
        "model": decision.agent.model.internal_id,
        "display_name": decision.agent.model.display_name,
        "week_start": decision.week_start,
        "status": decision.status,
        "action": decision.action,
        "responder": decision.responder,
        "parse_failed": decision.parse_failed,
        "created_at": decision.created_at,
    }


def _attempt(attempt: DecisionAttempt, digests: dict[int, str]) -> AttemptOut:
    """The attempt with its commitment's digest (`digests`: by attempt id, where it has one)."""
    return AttemptOut(
        number=attempt.number,
        responder=attempt.responder,
        requested_model=attempt.requested_model,
        response_model=attempt.response_model,
        upstream_provider=attempt.upstream_provider,
        prompt_tokens=attempt.prompt_tokens,
        completion_tokens=attempt.completion_tokens,
        reasoning_tokens=attempt.reasoning_tokens,
        cost_usd=optional_decimal(attempt.cost_usd),
        latency_ms=attempt.latency_ms,
        raw_response=attempt.raw_response,
        commitment_salt=attempt.commitment_salt,
        commitment_sha256=digests.get(attempt.pk),
        parse_error=attempt.parse_error,
        api_error=attempt.api_error,
        valid=attempt.valid,
        started_at=attempt.started_at,
    )


def _cohort(cohort: Cohort, schema: type[C], **more: Any) -> C:
    """Return the cohort as `schema`: its fields, with the counts `cohort_list` annotates."""
    return schema(
        number=cohort.number,
        week_start=cohort.week_start,
        started_at=cohort.started_at,
        status=cohort.status,
        completed_at=cohort.completed_at,
        methodology_version=cohort.methodology_version,
        agent_count=getattr(cohort, "agent_count", 0),
        open_positions=getattr(cohort, "open_positions", 0),
        **more,
    )


def _table_ranks(rows: list[standings.ModelRow], figures: Analytics) -> dict[tuple[int, bool], int]:
    """Each row's rank in its table, in the table's order: the real rows and the offline
    stand-ins ranked apart (as the page shows them), the provisional rows left out."""
    ranks: dict[tuple[int, bool], int] = {}
    for offline in (False, True):
        ranked = [
            (row.model.pk, row.offline)
            for row in rows
            if row.offline == offline
            and (found := figures.row(row.model.pk, row.offline)) is not None
            and not found.provisional
        ]
        ranks |= {key: number for number, key in enumerate(ranked, start=1)}
    return ranks


@router.get(
    "/leaderboard",
    response=LeaderboardOut,
    summary="Leaderboard across cohorts",
    operation_id="arena_api_leaderboard",
)
def leaderboard(
    request: HttpRequest,
    sort: LeaderboardSort = "brier",
    cohorts: Literal["all", "completed", "v1", "v2"] = "all",
    baselines: Literal["include", "exclude"] = "include",
    outside: Literal["include", "exclude"] = "exclude",
) -> LeaderboardOut:
    """The LLM rows ranked by `sort`: pooled Brier, USD per decision, p95 latency or the
    malformed share lower first; mean return, win rate, resolved bets, cohorts, Alpha or
    `p_first` (the analytics' P(rank 1)) higher first; rows without the figure last,
    offline rows after the real ones. Then the baselines (never ranked among the LLMs),
    unless `baselines=exclude`.
    With `cohorts=completed` every figure comes from the agents of completed cohorts only;
    with `v1` or `v2`, from those of cohorts of that methodology version (`all` pools both
    versions' v1 figures, which v2 keeps).
    Each row also carries the analytics beyond v1 on the same bets (Alpha against the market
    price with its 95% interval clustered by week and market, Murphy terms, ...;
    `/api/v1/analytics` has them in full); `references` are pseudo-models, never ranked. Outside
    agents are on their own board, after the baselines with `outside=include`, unless staff
    admitted one to the main ranking (its row says `outside: true, admitted: true`)."""
    # A year holds hundreds of agents: the answer is kept until the data may have changed
    # (the watermark moves: a trade, tick, sync, check or staff operation) or for a tick.
    key = f"api-leaderboard:{sort}:{cohorts}:{baselines}:{outside}:{data_watermark()}"
    found: LeaderboardOut | None = cache.get(key)
    if found is None:
        llms, baseline_rows, outside_rows = standings.boards(
            sort=sort, cohorts=cohorts, baselines=baselines == "include"
        )
        outside_rows = outside_rows if outside == "include" else []
        figures = analytics(cohorts=cohorts)
        if sort in standings.ANALYTICS_SORTS:
            llms = figures.ranked_by(sort, llms)
            outside_rows = figures.ranked_by(sort, outside_rows)
        ranks = _table_ranks(llms, figures) | _table_ranks(outside_rows, figures)
        found = LeaderboardOut(
            sort=sort,
            cohorts=cohorts,
            baselines=baselines,
            outside=outside,
            rows=[
                LeaderboardRowOut(
                    **_model_row(row).model_dump(),
                    **leaderboard_fields(figures.row(row.model.pk, row.offline)),
                    rank=ranks.get((row.model.pk, row.offline)),
                )
                for row in llms + baseline_rows + outside_rows
            ],
            references=[reference_out(r) for r in figures.references],
        )
        cache.set(key, found, timeout=CACHE_SECONDS)
    return found


@router.get(
    "/models",
    response=ModelPage,
    summary="Every model of the lineup, a page at a time",
    operation_id="arena_api_model_list",
)
def model_list(
    request: HttpRequest,
    page: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 1,
    page_size: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = 100,
) -> ModelPage:
    rows = standings.model_rows()
    start = (page - 1) * page_size
    return ModelPage(
        count=len(rows),
        page=page,
        page_size=page_size,
        results=[_model_row(row) for row in rows[start : start + page_size]],
    )


# Stable ids may hold "/" or ":" (a provider-style id): the path converter keeps them.
@router.get(
    "/models/{path:internal_id}",
    response=ModelDetailOut,
    summary="One model",
    operation_id="arena_api_model_detail",
)
def model_detail(request: HttpRequest, internal_id: str) -> ModelDetailOut:
    if "\x00" in internal_id:  # PostgreSQL refuses NUL in text; no id holds one
        raise Http404("No such model.")
    try:
        model = BenchmarkModel.objects.get(internal_id=internal_id)
    except BenchmarkModel.DoesNotExist as exc:
        raise Http404("No such model.") from exc
    rows = standings.model_rows(model=model)
    return ModelDetailOut(
        model=model.internal_id,
        display_name=model.display_name,
        provider=model.provider,
        baseline=model.is_baseline,
        outside=model.is_outside,
        active=model.active,
        openrouter_id=model.openrouter_id,
        upstream_model_id=model.upstream_model_id,
        release_date=model.release_date,
        reasoning_mode=model.reasoning_mode,
        reasoning_max_tokens=model.reasoning_max_tokens,
        versions_answering=[
            ModelVersionOut(name=name, calls=calls)
            for row in rows
            if not row.offline
            for name, calls in row.usage.models_seen
        ],
        rows=[_model_row(row) for row in rows],
        agents=[_standing(s) for row in rows for s in row.agents],
    )


@router.get(
    "/cohorts",
    response=CohortPage,
    summary="Cohorts, newest first",
    operation_id="arena_api_cohort_list",
)
def cohort_list(
    request: HttpRequest,
    page: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 1,
    page_size: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = 20,
) -> CohortPage:
    cohorts = standings.cohort_list()
    start = (page - 1) * page_size
    return CohortPage(
        count=cohorts.count(),
        page=page,
        page_size=page_size,
        results=[_cohort(c, CohortOut) for c in cohorts[start : start + page_size]],
    )


@router.get(
    "/cohorts/{number}",
    response=CohortDetailOut,
    summary="One cohort's standings",
    operation_id="arena_api_cohort_detail",
)
def cohort_detail(request: HttpRequest, number: Id) -> CohortDetailOut:
    cohort = get_object_or_404(standings.cohort_list(), number=number)
    rows = standings.agent_standings(agents=cohort.agents.all())
    return _cohort(cohort, CohortDetailOut, standings=[_standing(s) for s in rows])


@router.get(
    "/agents/{agent_id}/series",
    response=SeriesOut,
    summary="An agent's value series",
    operation_id="arena_api_agent_series",
)
def agent_series(
    request: HttpRequest,
    agent_id: Id,
    range: RangeKey = "ALL",  # noqa: A002
) -> SeriesOut:
    """The agent's total value over the range, downsampled as the charts draw it."""
    agent = get_object_or_404(Agent.objects.select_related("model", "cohort"), pk=agent_id)
    (series,) = curves.value_series(agents=[agent], range_key=range)
    return SeriesOut(
        agent=agent.pk,
        label=series.label,
        range=range,
        points=[(at, decimal_string(value)) for at, value in series.points],
    )


@router.get(
    "/agents/{agent_id}",
    response=AgentDetailOut,
    summary="An agent, its positions and latest trades",
    operation_id="arena_api_agent_detail",
)
def agent_detail(request: HttpRequest, agent_id: Id) -> AgentDetailOut:
    """The agent's standing now, every position (open ones marked to market: `price_now`,
    `value_now`) and its latest trades, executed or rejected, newest first, with the count
    of all of them (every one is at /agents/{id}/trades)."""
    agents = Agent.objects.filter(pk=agent_id)
    found = standings.agent_standings(agents=agents)
    if not found:
        raise Http404("No such agent.")
    (standing,) = found
    agent = standing.agent
    trades = standings.agent_trades(agent=agent)
    return AgentDetailOut(
        standing=_standing(standing),
        positions=[_position(row) for row in standings.agent_positions(agent=agent)],
        trades=[TradeOut(**_trade_fields(t)) for t in trades[:AGENT_TRADES_SHOWN]],
        trades_count=trades.count(),
    )


@router.get(
    "/agents/{agent_id}/positions",
    response=PositionPage,
    summary="An agent's positions",
    operation_id="arena_api_agent_position_list",
)
def agent_position_list(
    request: HttpRequest, agent_id: Id, page: Page = 1, page_size: PageSize = 20
) -> PositionPage:
    """Every position the agent opened, open first, then newest first; open ones marked to
    market (`price_now`, `value_now`)."""
    agent = get_object_or_404(Agent, pk=agent_id)
    rows = standings.agent_positions(agent=agent)
    return PositionPage(
        count=len(rows),
        page=page,
        page_size=page_size,
        results=[_position(row) for row in rows[_page_of(page, page_size)]],
    )


@router.get(
    "/agents/{agent_id}/trades",
    response=TradePage,
    summary="An agent's trades",
    operation_id="arena_api_agent_trade_list",
)
def agent_trade_list(
    request: HttpRequest, agent_id: Id, page: Page = 1, page_size: PageSize = 20
) -> TradePage:
    """Every order of the agent, executed or rejected, newest first (by id): /trades?agent=."""
    agent = get_object_or_404(Agent, pk=agent_id)
    return _trade_page(listings.trade_list(agent=agent), page, page_size)


@router.get(
    "/trades",
    response=TradePage,
    summary="Trades, newest first",
    operation_id="arena_api_trade_list",
)
def trade_list(
    request: HttpRequest,
    model: ModelId | None = None,
    cohort: QueryId | None = None,
    agent: QueryId | None = None,
    market: MarketId | None = None,
    kind: TradeKind | None = None,
    status: TradeStatus | None = None,
    page: Page = 1,
    page_size: PageSize = 20,
) -> TradePage:
    """Every order the agents placed, executed or rejected (with its reason), newest first by
    id, matching every filter given: `model` a stable id, `cohort` a number, `agent` an id,
    `market` a Polymarket id. An unknown model, cohort, agent or market is a 422."""
    trades = listings.trade_list(
        model=known_model(model),
        cohort=known_cohort(cohort),
        agent=known_agent(agent),
        market=known_market(market),
        kind=kind,
        status=status,
    )
    return _trade_page(trades, page, page_size)


@router.get(
    "/decisions",
    response=DecisionPage,
    summary="Decisions, newest week first",
    operation_id="arena_api_decision_list",
)
def decision_list(
    request: HttpRequest,
    model: ModelId | None = None,
    cohort: Annotated[int | None, Query(ge=1, le=MAX_ID)] = None,
    week: IsoDate | None = None,
    action: ActionKey | None = None,
    status: DecisionStatus | None = None,
    page: Page = 1,
    page_size: PageSize = 20,
) -> DecisionPage:
    """Every decision matching the filters: `model` a stable id, `cohort` a number, `week`
    the ISO date of the week's Sunday. An unknown model or cohort is a 422."""
    decisions = listings.decision_list(
        model=known_model(model),
        cohort=known_cohort(cohort),
        week=week,
        action=action,
        status=status,
    )
    start = (page - 1) * page_size
    return DecisionPage(
        count=decisions.count(),
        page=page,
        page_size=page_size,
        results=[DecisionOut(**_decision_fields(d)) for d in decisions[start : start + page_size]],
    )


@router.get(
    "/decisions/{decision_id}",
    response=DecisionDetailOut,
    summary="One decision",
    operation_id="arena_api_decision_detail",
)
def decision_detail(request: HttpRequest, decision_id: Id) -> DecisionDetailOut:
    """The decision with its prompts, the decision it parsed, every attempt (raw responses
    included, each with its commitment's salt and digest) and its trades."""
    try:
        decision = standings.decision_detail(decision_id=decision_id)
    except Decision.DoesNotExist as exc:
        raise Http404("No such decision.") from exc
    digests = commitments.attempt_digests(decision_id=decision.pk)
    return DecisionDetailOut(
        **_decision_fields(decision),
        reasoning=decision.reasoning,
        system_prompt=decision.system_prompt,
        user_prompt=decision.user_prompt,
        parsed=decision.parsed,
        prompt_version=decision.prompt_version,
        cost_usd=optional_decimal(decision.cost_usd),
        attempts=[
            _attempt(a, digests) for a in sorted(decision.attempts.all(), key=lambda a: a.number)
        ],
        trades=[TradeOut(**_trade_fields(t)) for t in decision.trades.all()],
    )


@router.get(
    "/markets",
    response=MarketPage,
    summary="The market catalogue",
    operation_id="arena_api_market_list",
)
def market_list(
    request: HttpRequest,
    q: SearchText = "",
    category: Category = "",
    status: MarketStatus | None = None,
    sort: MarketSort = "volume",
    held: bool | None = None,
    page: Page = 1,
    page_size: PageSize = 20,
) -> MarketPage:
    """The catalogue as its page lists it (`q` searches the question or matches the id;
    `sort=volume`, highest first, or `close`, soonest first), each market with the bets
    agents placed on it; `held=true` keeps the markets some agent bet on, `held=false` the
    others."""
    filters = MarketFilter(q=q.strip(), category=category.strip(), status=status or "", sort=sort)
    found = listings.market_list(filters=filters, held=held)
    return MarketPage(
        count=found.count(),
        page=page,
        page_size=page_size,
        results=[
            MarketOut(**_market_fields(m), bets=getattr(m, "bets", 0))
            for m in found[_page_of(page, page_size)]
        ],
    )


@router.get(
    "/markets/{polymarket_id}",
    response=MarketDetailOut,
    summary="One market",
    operation_id="arena_api_market_detail",
)
def market_detail(request: HttpRequest, polymarket_id: PolymarketId) -> MarketDetailOut:
    """The catalogue's facts, the market's status, its holders, trades and scored bets, and
    its stored prices while agents held it (the market page's price history)."""
    try:
        market = markets.market_get(polymarket_id=polymarket_id)
    except Market.DoesNotExist as exc:
        raise Http404("No such market.") from exc
    page = markets.market_page(market=market)
    return MarketDetailOut(
        **_market_fields(market),
        description=market.description,
        holders=[_holding(h) for h in page.holdings_shown],
        holders_count=len(page.holdings),
        trades=[_trade_row(t.trade, offline=t.offline, market=market) for t in page.trades_shown],
        trades_count=len(page.trades),
        scored=[_trade_row(t.trade, offline=t.offline, market=market) for t in page.scored_shown],
        scored_count=len(page.scored),
        held_from=page.held_from,
        held_until=page.held_until,
        price_history=[_price_point(p) for p in page.price_points],
    )


@router.get(
    "/resolutions",
    response={200: ResolutionPage, 400: ErrorEnvelope},
    summary="Markets resolved or cancelled, newest first",
    operation_id="arena_api_resolution_list",
)
def resolution_list(
    request: HttpRequest,
    resolution: ResolutionKind | None = None,
    since: IsoDate | None = None,
    until: IsoDate | None = None,
    page: Page = 1,
    page_size: PageSize = 20,
) -> ResolutionPage:
    """The markets resolved (a winning outcome) or cancelled (refunded) here, newest
    resolution first, each with the positions it settled and the bets it scored. `since`
    and `until` are UTC days, both included; `until` before `since` is a 400."""
    if since is not None and until is not None and until < since:
        raise HttpError(400, "until: must be the same day as since or later")
    found = listings.resolution_list(resolution=resolution, since=since, until=until)
    return ResolutionPage(
        count=found.count(),
        page=page,
        page_size=page_size,
        results=[
            ResolutionOut(
                polymarket_id=m.polymarket_id,
                question=m.question,
                category=m.category,
                outcomes=[str(o) for o in m.outcomes],
                resolution=m.resolution,
                winning_outcome=m.winning_outcome,
                resolved_at=m.resolved_at,
                resolution_note=m.resolution_note,
                positions_settled=getattr(m, "positions_settled", 0),
                bets_scored=getattr(m, "bets_scored", 0),
            )
            for m in found[_page_of(page, page_size)]
        ],
    )


def _holding(holding: markets.Holding) -> HoldingOut:
    position: Position = holding.position
    return HoldingOut(
        agent=position.agent_id,
        cohort=position.agent.cohort.number,
        model=position.agent.model.internal_id,
        display_name=position.agent.model.display_name,
        offline=holding.offline,
        side=position.side,
        status=position.status,
        shares=decimal_string(position.shares),
        cost_basis=decimal_string(position.cost_basis),
        opened_at=position.opened_at,
        closed_at=position.closed_at,
    )


@router.get(
    "/status",
    response=StatusOut,
    summary="The system's last runs and next schedules",
    operation_id="arena_api_system_status",
)
def system_status(request: HttpRequest) -> StatusOut:
    """The last catalogue sync, decision run (with how its decisions ended), snapshot tick and
    resolution check, and the next run of every scheduled job."""
    return status_out(status_selectors.system_status(now=timezone.now()))
