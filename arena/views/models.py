"""The lineup's public pages: every model, and one model across all its cohorts."""

from __future__ import annotations

from collections.abc import Sequence

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.safestring import SafeString

from agents.models import BenchmarkModel
from arena.selectors import curves, standings
from arena.selectors import models as model_stats
from arena.selectors import panel as panel_selectors
from arena.selectors.analytics import cache as analytics_cache
from arena.selectors.analytics.figures import ModelAnalytics
from arena.views import analytics, charts, cost_diagram, diagrams
from scoring.pareto import pareto_set

# The most bets listed on a model's page (newest first); the count says how many there are.
MAX_BETS = 100  # the latest; every bet of a year renders slower than the page's budget


def _get_model(internal_id: str) -> BenchmarkModel:
    """Return the lineup model with this stable id, or raise Http404 (also for an id with a
    NUL: PostgreSQL refuses one in a query, and no stored id holds one)."""
    if "\x00" in internal_id:
        raise Http404("No such model.")
    try:
        return BenchmarkModel.objects.get(internal_id=internal_id)
    except BenchmarkModel.DoesNotExist as exc:
        raise Http404("No such model.") from exc


def _cost_points(rows: Sequence[standings.ModelRow]) -> list[cost_diagram.CostPoint]:
    """The LLM rows with both a known USD per decision and a Brier (offline stand-ins make no
    call, so have no cost), with their Brier interval and whether each is on the Pareto set
    of cost and Brier."""
    costed = [
        row
        for row in rows
        if not row.model.is_baseline
        and row.brier is not None
        and row.usage.usd_per_decision is not None
    ]
    if not costed:
        return []
    figures = analytics_cache.analytics()
    front = pareto_set([(float(r.usage.usd_per_decision or 0), r.brier or 0.0) for r in costed])
    points = []
    for row, on_front in zip(costed, front, strict=True):
        analytics_row = figures.row(row.model.pk, row.offline)
        interval = analytics_row.brier_interval if analytics_row is not None else None
        points.append(
            cost_diagram.CostPoint(
                label=row.model.display_name + (" (offline stand-in)" if row.offline else ""),
                usd=float(row.usage.usd_per_decision or 0),
                brier=row.brier or 0.0,
                low=interval.low if interval is not None else None,
                high=interval.high if interval is not None else None,
                on_front=on_front,
            )
        )
    return points


def model_list(request: HttpRequest) -> HttpResponse:
    rows = standings.model_rows()
    points = _cost_points(rows)
    return render(
        request,
        "arena/model_list.html",
        {
            "cost_chart": cost_diagram.cost_accuracy(points) if points else None,
            "cost_points": points,
            "llms": [row for row in rows if not row.model.is_baseline],
            "baselines": [row for row in rows if row.model.is_baseline],
            "definitions": standings.MODEL_DEFINITIONS,
        },
    )


def _cohort_alphas(rows: Sequence[ModelAnalytics]) -> dict[tuple[int, bool], float]:
    """Each (cohort number, offline) of the model's analytics rows: its cohort's Alpha."""
    return {
        (figures.cohort, row.offline): figures.alpha for row in rows for figures in row.per_cohort
    }


def _cohort_strips(
    model: BenchmarkModel, rows: list[standings.ModelRow], alphas: dict[tuple[int, bool], float]
) -> list[tuple[standings.ModelRow, SafeString]]:
    """Each row's Brier, Alpha and return cohort by cohort, drawn (rows without an agent
    left out)."""
    drawn = []
    for row in rows:
        if not row.agents:
            continue
        points = [
            diagrams.CohortPoint(
                cohort=s.agent.cohort.number,
                brier=s.brier,
                alpha=alphas.get((s.agent.cohort.number, row.offline)),
                return_percent=float(s.return_percent),
            )
            for s in sorted(row.agents, key=lambda s: s.agent.cohort.number)
        ]
        label = f"{model.display_name}{' (offline stand-in)' if row.offline else ''}"
        drawn.append((row, diagrams.cohort_strips(points, forecaster_label=label)))
    return drawn


def model_detail(request: HttpRequest, internal_id: str) -> HttpResponse:
    model = _get_model(internal_id)
    rows = standings.model_rows(model=model)
    agents = sorted((s for row in rows for s in row.agents), key=lambda s: -s.agent.cohort.number)
    bets = model_stats.model_bets(model=model)
    real = next((row for row in rows if not row.offline), None)  # its calls, if any
    figures = analytics_cache.model_analytics(model=model)
    alphas = _cohort_alphas(figures)
    range_key = curves.range_from(request.GET.get("range"))
    chart = charts.value_chart(
        curves.value_series(
            agents=[s.agent for s in agents], range_key=range_key, label_by="cohort"
        ),
        range_key=range_key,
    )
    return render(
        request,
        "arena/model_detail.html",
        {
            "model": model,
            "rows": rows,
            "agents": [(s, alphas.get((s.agent.cohort.number, s.offline))) for s in agents],
            "cohort_strips": _cohort_strips(model, rows, alphas),
            "offline_agent_ids": {s.agent.pk for s in agents if s.offline},
            "bets": bets[:MAX_BETS],
            "bet_count": bets.count(),
            "max_bets": MAX_BETS,
            "baseline_rule": model_stats.baseline_rule(model) if model.is_baseline else "",
            "chart": chart,
            "versions_seen": real.usage.models_seen if real else [],
            "reasoning_seen": {
                "share": real.usage.reasoning_share if real else None,
                "calls": len(real.usage.reasoning_tokens) if real else 0,
                "median": real.usage.median_reasoning_tokens if real else None,
            },
            "definitions": standings.MODEL_DEFINITIONS,
            "say_do": analytics.say_do_panels(
                panel_selectors.model_say_do(
                    model=model, offline={s.agent.pk for s in agents if s.offline}
                ),
                baseline=model.is_baseline,
            ),
        }
        | analytics.model_context(figures),
    )
