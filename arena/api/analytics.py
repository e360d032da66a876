"""The analytics' router (mounted at `/api/v1/analytics/`): the figures beyond the v1
leaderboard (Alpha, intervals, Murphy terms, skill scores, pairwise comparisons), from
`arena/selectors/analytics/` (the pages' own selectors), with every definition's name, formula
and source."""

from __future__ import annotations

from typing import Annotated, Literal

from django.http import Http404, HttpRequest
from ninja import Query, Router

from agents.models import BenchmarkModel
from arena.api.analytics_schemas import (
    AnalyticsOut,
    ModelAnalyticsPage,
    analytics_out,
    model_analytics_detail_out,
)
from arena.selectors.analytics import cache, definitions

router = Router(tags=["analytics"])

Bins = Annotated[int, Query(ge=definitions.MIN_BINS, le=definitions.MAX_BINS)]
Scope = Literal["all", "completed", "v1", "v2"]


@router.get(
    "",
    response=AnalyticsOut,
    summary="Analytics of every leaderboard row",
    operation_id="arena_analytics_api_analytics",
)
def analytics(
    request: HttpRequest, cohorts: Scope = "all", bins: Bins = definitions.DEFAULT_BINS
) -> AnalyticsOut:
    """Every leaderboard row's Alpha, intervals, tests, Murphy decomposition (with `bins`
    equal-width forecast bins), coverage-adjusted Alpha, skill scores, difficulty-adjusted
    Brier and power; the reference pseudo-models (market consensus, random, LLM crowd); the
    pairwise comparisons (over the weeks both played, clustered by week and market, with
    Holm-adjusted p-values).
    `cohorts=completed` reads completed cohorts only; `v1` or `v2` the cohorts of that
    methodology version only.
    Kept until a bet is scored, a market resolves or a decision is made."""
    return analytics_out(cache.analytics(cohorts=cohorts, bins=bins))


# Stable ids may hold "/" or ":" (a provider-style id): the path converter keeps them.
@router.get(
    "/models/{path:internal_id}",
    response=ModelAnalyticsPage,
    summary="One model's analytics",
    operation_id="arena_analytics_api_model_analytics",
)
def model_analytics(
    request: HttpRequest,
    internal_id: str,
    cohorts: Scope = "all",
    bins: Bins = definitions.DEFAULT_BINS,
) -> ModelAnalyticsPage:
    """The model's rows (real, then its offline stand-ins') in full, with Alpha cohort by
    cohort (and cumulative) and per Polymarket category."""
    if "\x00" in internal_id:  # PostgreSQL refuses NUL in text; no id holds one
        raise Http404("No such model.")
    try:
        model = BenchmarkModel.objects.get(internal_id=internal_id)
    except BenchmarkModel.DoesNotExist as exc:
        raise Http404("No such model.") from exc
    rows = cache.model_analytics(model=model, cohorts=cohorts, bins=bins)
    return ModelAnalyticsPage(
        model=model.internal_id,
        cohorts=cohorts,
        bins=bins,
        rows=[model_analytics_detail_out(row) for row in rows],
    )
