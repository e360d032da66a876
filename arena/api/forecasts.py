"""The forecasts' router (mounted at `/api/v1/forecasts`): methodology v2's panel forecasts,
row by row (by run, agent, model, cohort or market), and the panel's figures for every row
(the leaderboard's v2 view), from `arena/selectors/panel.py` (the pages' own selector)."""

from __future__ import annotations

from datetime import date, datetime

from django.http import HttpRequest
from ninja import Router, Schema

from arena.api.params import (
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
from arena.api.records_schemas import optional_decimal
from arena.models import PanelForecast
from arena.selectors import listings, panel
from arena.selectors.analytics import cache as analytics_cache
from scoring.statistics import Interval

router = Router(tags=["forecasts"])


class ForecastOut(Schema):
    """One agent's forecast of one panel question (docs/exports.md, "The forecasts export")."""

    forecast_id: int
    run_id: int
    decision_id: int
    agent_id: int
    model: str
    cohort: int
    week_start: date
    market_id: str
    question_index: int
    probability: str | None  # the stated P(YES); None when missing or invalid (imputed at b)
    imputed: bool
    problem: str
    b: str | None  # the reference price; None: not scored
    b_source: str  # snapshot or live
    outcome: int | None
    brier: float | None
    log_score: float | None
    created_at: datetime


class ForecastPage(Schema):
    count: int
    page: int
    page_size: int
    results: list[ForecastOut]


class PanelMeanOut(Schema):
    """A mean with its 95% t interval, clustered by week and market (None with too few)."""

    estimate: float
    low: float | None
    high: float | None
    n: int


class PanelRowOut(Schema):
    label: str
    model: str | None  # None for the LLM crowd
    kind: str  # llm, baseline, outside, or reference (the crowd)
    offline: bool
    ranked: bool  # coverage at least 80%
    # Its place in its own table by panel Brier (the real LLM rows 1, 2, …; the offline
    # stand-ins 1, 2, … among themselves); None when not ranked or not an LLM row.
    rank: int | None
    questions: int
    stated: int
    coverage: float
    consistency: float | None
    brier: PanelMeanOut
    log_score: PanelMeanOut
    alpha: PanelMeanOut
    # Murphy's decomposition of its Brier in the YES frame (10 equal-width bins).
    murphy_reliability: float | None
    murphy_resolution: float | None
    murphy_uncertainty: float | None


class PanelComparisonOut(Schema):
    """Two ranked LLM rows' panel Brier on their shared questions: first − second (below 0,
    the first forecast better), clustered by week and market, Holm-corrected over the pairs;
    no difference is called under `min_weeks` weeks of questions."""

    first: str
    second: str
    offline: bool
    questions: int
    weeks: int
    difference: PanelMeanOut
    p_value: float | None
    holm_p: float | None
    verdict: str  # too early to tell, no difference shown, or "<row> forecast better"
    # The shared questions a paired test needs to detect this difference (80% power,
    # one-sided 5%), if it is the true one; None when the difference or its spread is 0.
    questions_needed: float | None


class PanelBoardOut(Schema):
    methodology_version: str
    questions: int
    llms: list[PanelRowOut]
    references: list[PanelRowOut]
    outside: list[PanelRowOut]
    comparisons: list[PanelComparisonOut]
    min_weeks: int


def _forecast(row: PanelForecast) -> ForecastOut:
    return ForecastOut(
        forecast_id=row.pk,
        run_id=row.run_id,
        decision_id=row.decision_id,
        agent_id=row.agent_id,
        model=row.agent.model.internal_id,
        cohort=row.agent.cohort.number,
        week_start=row.week_start,
        market_id=row.market.polymarket_id,
        question_index=row.position,
        probability=optional_decimal(row.probability),
        imputed=row.imputed,
        problem=row.problem,
        b=optional_decimal(row.reference_price),
        b_source=row.reference,
        outcome=row.outcome,
        brier=row.brier_score,
        log_score=row.log_score,
        created_at=row.created_at,
    )


@router.get(
    "",
    response=ForecastPage,
    summary="Panel forecasts (methodology v2), newest week first",
    operation_id="arena_forecasts_api_forecast_list",
)
def forecast_list(
    request: HttpRequest,
    model: ModelId | None = None,
    cohort: QueryId | None = None,
    agent: QueryId | None = None,
    market: MarketId | None = None,
    run: QueryId | None = None,
    week: IsoDate | None = None,
    page: Page = 1,
    page_size: PageSize = 20,
) -> ForecastPage:
    """Every panel forecast matching every filter given: `model` a stable id, `cohort` a
    number, `agent` an id, `market` a Polymarket id, `run` a run's id, `week` the ISO date of
    the week's Sunday. Newest week first, then by decision and question. An unknown model,
    cohort, agent or market is a 422."""
    rows = listings.forecast_list(
        model=known_model(model),
        cohort=known_cohort(cohort),
        agent=known_agent(agent),
        market=known_market(market),
        run_id=run,
        week=week,
    )
    start = (page - 1) * page_size
    return ForecastPage(
        count=rows.count(),
        page=page,
        page_size=page_size,
        results=[_forecast(row) for row in rows[start : start + page_size]],
    )


def _interval(interval: Interval) -> PanelMeanOut:
    return PanelMeanOut(
        estimate=interval.estimate, low=interval.low, high=interval.high, n=interval.count
    )


def _row(row: panel.PanelRow) -> PanelRowOut:
    kind = "reference" if row.model is None else row.model.kind
    return PanelRowOut(
        label=row.label,
        model=row.model.internal_id if row.model is not None else None,
        kind=kind,
        offline=row.offline,
        ranked=row.ranked,
        rank=row.rank,
        questions=row.scores.questions,
        stated=row.scores.stated,
        coverage=row.scores.coverage,
        consistency=row.scores.consistency,
        brier=_interval(row.brier),
        log_score=_interval(row.log_score),
        alpha=_interval(row.alpha),
        murphy_reliability=row.murphy.reliability if row.murphy else None,
        murphy_resolution=row.murphy.resolution if row.murphy else None,
        murphy_uncertainty=row.murphy.uncertainty if row.murphy else None,
    )


@router.get(
    "/leaderboard",
    response=PanelBoardOut,
    summary="The forecast panel's figures of every row (methodology v2)",
    operation_id="arena_forecasts_api_panel_leaderboard",
)
def panel_leaderboard(request: HttpRequest) -> PanelBoardOut:
    """Every row's panel Brier, log score and Alpha over the resolved panel questions, each
    with its 95% interval and n, and its coverage and consistency (docs/methodology.md,
    "Methodology v2"); the references (the baselines, the LLM crowd) on the same questions.
    LLM rows ranked first by Brier, then the rows under 80% coverage (not ranked)."""
    board = analytics_cache.panel_board()
    return PanelBoardOut(
        methodology_version="v2",
        questions=board.questions,
        llms=[_row(r) for r in board.llms],
        references=[_row(r) for r in board.references],
        outside=[_row(r) for r in board.outside],
        comparisons=[
            PanelComparisonOut(
                first=c.first,
                second=c.second,
                offline=c.offline,
                questions=c.questions,
                weeks=c.weeks,
                difference=_interval(c.difference),
                p_value=c.p_value,
                holm_p=c.holm_p,
                verdict=c.verdict,
                questions_needed=c.questions_needed,
            )
            for c in board.comparisons
        ],
        min_weeks=panel.MIN_WEEKS,
    )
