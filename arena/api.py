"""The arena's read-only JSON API, mounted at /api/v1/ by `forecaster/api.py`.

Each endpoint calls the selectors that serve the pages (`arena/selectors/`), so a figure here
is the page's figure; this module only shapes them (`arena/schemas.py`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

from django.http import Http404, HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Path, Query, Router

from agents.models import BenchmarkModel
from arena.models import Agent, Cohort
from arena.schemas import (
    CohortDetailOut,
    CohortOut,
    CohortPage,
    LeaderboardOut,
    ModelDetailOut,
    ModelRowOut,
    SeriesOut,
    StandingOut,
    decimal_string,
    return_string,
)
from arena.selectors import curves, standings

router = Router(tags=["arena"])

MAX_PAGE_SIZE = 100
MAX_PAGE = 1_000_000  # far beyond any real list; keeps the offset an ordinary integer
MAX_ID = 2**31 - 1  # ids and numbers past a 32-bit integer name nothing (and overflow SQL)

Id = Annotated[int, Path(ge=1, le=MAX_ID)]
C = TypeVar("C", bound=CohortOut)
RangeKey = Literal["10M", "1H", "1D", "1W", "1M", "3M", "ALL"]


def _model_row(row: standings.ModelRow) -> ModelRowOut:
    return ModelRowOut(
        model=row.model.internal_id,
        display_name=row.model.display_name,
        provider=row.model.provider,
        baseline=row.model.is_baseline,
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


@router.get("/leaderboard", response=LeaderboardOut, summary="Leaderboard across every cohort")
def leaderboard(request: HttpRequest, sort: Literal["brier", "return"] = "brier") -> LeaderboardOut:
    """The LLM rows ranked by pooled Brier (lower first) or mean return, offline rows after
    the real ones, then the baselines (never ranked among the LLMs)."""
    llms, baselines = standings.leaderboard(sort=sort)
    return LeaderboardOut(sort=sort, rows=[_model_row(row) for row in llms + baselines])


@router.get("/models", response=list[ModelRowOut], summary="Every model of the lineup")
def model_list(request: HttpRequest) -> list[ModelRowOut]:
    return [_model_row(row) for row in standings.model_rows()]


# Stable ids may hold "/" or ":" (a provider-style id): the path converter keeps them.
@router.get("/models/{path:internal_id}", response=ModelDetailOut, summary="One model")
def model_detail(request: HttpRequest, internal_id: str) -> ModelDetailOut:
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
        active=model.active,
        rows=[_model_row(row) for row in rows],
        agents=[_standing(s) for row in rows for s in row.agents],
    )


@router.get("/cohorts", response=CohortPage, summary="Cohorts, newest first")
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


@router.get("/cohorts/{number}", response=CohortDetailOut, summary="One cohort's standings")
def cohort_detail(request: HttpRequest, number: Id) -> CohortDetailOut:
    cohort = get_object_or_404(standings.cohort_list(), number=number)
    rows = standings.agent_standings(agents=cohort.agents.all())
    return _cohort(cohort, CohortDetailOut, standings=[_standing(s) for s in rows])


@router.get("/agents/{agent_id}/series", response=SeriesOut, summary="An agent's value series")
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
