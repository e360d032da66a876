"""Public pages of the arena: leaderboard, cohorts, agents, decisions."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.http import urlencode

from arena import clock
from arena.models import Agent, Cohort, Decision
from arena.selectors import curves
from arena.selectors import panel as panel_selectors
from arena.selectors import standings as standings_selectors
from arena.selectors.analytics import cache as analytics_cache
from arena.views import analytics, charts, headline


def _get_cohort(number: int) -> Cohort:
    return get_object_or_404(Cohort, number=number)


def _get_agent(number: int, agent_id: int) -> Agent:
    return get_object_or_404(
        Agent.objects.select_related("model", "cohort"), pk=agent_id, cohort__number=number
    )


def _cohort_start(cohort: Cohort) -> datetime:
    return datetime.combine(cohort.week_start, time(0), tzinfo=UTC)


def _cohort_span(cohort: Cohort) -> timedelta:
    """How long the cohort has run: what its chart shows by default."""
    return (cohort.completed_at or clock.now()) - _cohort_start(cohort)


# What the leaderboard says it ranks by, per sort, and the link's short name.
SORT_LABELS = {
    "brier": ("pooled Brier score, lower is better", "Brier"),
    "return": ("average return", "return"),
    "win_rate": ("win rate", "win rate"),
    "resolved_bets": ("resolved bets, most first", "resolved bets"),
    "alpha": ("Alpha against the market, higher is better", "Alpha"),
    "p_first": ("the share of resampled worlds in which it ranks first by Brier", "P(rank 1)"),
    "cohorts": ("cohorts played, most first", "cohorts"),
    "cost": ("USD per decision, lowest first", "cost"),
    "latency": ("p95 latency, fastest first", "latency"),
    "malformed": ("malformed first answers, fewest first", "malformed"),
}
SCOPE_LABELS = {
    "all": "every cohort",
    "completed": "completed cohorts only",
    "v1": "methodology v1 cohorts",
    "v2": "methodology v2 cohorts",
}


# The leaderboard's column sets: the v1 figures (the default, unchanged) or the analytics
# beside them (`arena/views/analytics.py`); what the switch's links say.
VIEW_LABELS = {
    "v1": "v1 figures",
    "analytics": "analytics (Alpha against the market, intervals)",
    "panel": "v2 forecast panel (stated probabilities)",
}


def _leaderboard_query(*, sort: str, cohorts: str, view: str = "v1") -> str:
    """The query string of a leaderboard view, naming only what differs from the default."""
    wanted = {
        "sort": sort if sort != "brier" else "",
        "cohorts": cohorts if cohorts != "all" else "",
        "view": view if view != "v1" else "",
    }
    return urlencode({key: value for key, value in wanted.items() if value})


def leaderboard(request: HttpRequest) -> HttpResponse:
    sort = request.GET.get("sort", "")
    sort = sort if sort in SORT_LABELS else "brier"
    cohorts = request.GET.get("cohorts", "")
    cohorts = cohorts if cohorts in standings_selectors.COHORT_SCOPES else "all"
    view = request.GET.get("view", "")
    view = view if view in VIEW_LABELS else "v1"
    llms, baselines, outside_rows = standings_selectors.boards(sort=sort, cohorts=cohorts)
    if sort in standings_selectors.ANALYTICS_SORTS:
        llms, outside_rows = (
            analytics.ranked_by(sort, llms, cohorts),
            analytics.ranked_by(sort, outside_rows, cohorts),
        )
    context = {
        "llms": llms,
        "baselines": baselines,
        "outside_rows": outside_rows,
        "baseline_notes": standings_selectors.baseline_notes(llms=llms, baselines=baselines),
        "any_offline": any(row.offline for row in llms),
        "any_unknown_cost": any(row.usage.unknown_cost for row in llms),
        "sort": sort,
        "sort_label": SORT_LABELS[sort][0],
        "sort_links": [
            (name, _leaderboard_query(sort=key, cohorts=cohorts, view=view), key == sort)
            for key, (_, name) in SORT_LABELS.items()
        ],
        "cohorts_scope": cohorts,
        "scope_links": [
            (label, _leaderboard_query(sort=sort, cohorts=key, view=view), key == cohorts)
            for key, label in SCOPE_LABELS.items()
        ],
        "view": view,
        "panel_query": _leaderboard_query(sort=sort, cohorts=cohorts, view="panel"),
        "brier_query": _leaderboard_query(sort="brier", cohorts=cohorts, view=view),
        "sort_is_brier": sort == "brier",
        "view_links": [
            (label, _leaderboard_query(sort=sort, cohorts=cohorts, view=key), key == view)
            for key, label in VIEW_LABELS.items()
        ],
        "definitions": standings_selectors.MODEL_DEFINITIONS,
        "cohorts": standings_selectors.cohort_list()[:5],
    }
    if view == "v1":
        context |= analytics.main_table_context(
            cohorts=cohorts, llms=llms, outside_rows=outside_rows
        )
        if sort == "brier" and cohorts == "all":
            # Once the panel has resolved questions, the default page leads with its table:
            # every model scored on the same questions, by a proper rule.
            board = analytics_cache.panel_board()
            if board.llms:
                context |= {
                    "headline": board,
                    "headline_says": headline.panel_says(board),
                    "panel_size": settings.PANEL_SIZE,
                }
    if view == "analytics":
        # Read only when asked for: the v1 view stays exactly what it was, queries included.
        context |= analytics.leaderboard_context(
            cohorts=cohorts, llms=llms, baselines=baselines, outside_rows=outside_rows
        )
    if view == "panel":
        context |= {
            "panel": analytics_cache.panel_board(),
            "panel_size": settings.PANEL_SIZE,
            "panel_min_weeks": panel_selectors.MIN_WEEKS,
        }
    return render(request, "arena/leaderboard.html", context)


def cohort_list(request: HttpRequest) -> HttpResponse:
    return render(request, "arena/cohort_list.html", {"cohorts": standings_selectors.cohort_list()})


def cohort_detail(request: HttpRequest, number: int) -> HttpResponse:
    cohort = _get_cohort(number)
    standings = standings_selectors.agent_standings(agents=cohort.agents.all())
    range_key = curves.range_from(request.GET.get("range"), covering=_cohort_span(cohort))
    series = curves.value_series(agents=[s.agent for s in standings], range_key=range_key)
    return render(
        request,
        "arena/cohort_detail.html",
        {
            "cohort": cohort,
            "standings": standings,
            "chart": charts.value_chart(
                series, range_key=range_key, not_before=_cohort_start(cohort)
            ),
            # Baselines never keep a cohort alive: what they still hold is marked and settled.
            "open_after_completion": sum(s.open_positions for s in standings)
            if cohort.completed_at
            else 0,
            "decisions": standings_selectors.cohort_decisions(cohort=cohort),
            "definitions": standings_selectors.METRIC_DEFINITIONS,
        },
    )


def agent_detail(request: HttpRequest, number: int, agent_id: int) -> HttpResponse:
    agent = _get_agent(number, agent_id)
    (standing,) = standings_selectors.agent_standings(agents=Agent.objects.filter(pk=agent.pk))
    range_key = curves.range_from(request.GET.get("range"), covering=_cohort_span(agent.cohort))
    series = curves.value_series(agents=[agent], range_key=range_key)
    return render(
        request,
        "arena/agent_detail.html",
        {
            "agent": agent,
            "standing": standing,
            "chart": charts.value_chart(
                series, range_key=range_key, not_before=_cohort_start(agent.cohort)
            ),
            "positions": standings_selectors.agent_positions(agent=agent),
            "trades": standings_selectors.agent_trades(agent=agent)[:200],
            "decisions": standings_selectors.agent_decisions(agent=agent),
        },
    )


def decision_detail(request: HttpRequest, decision_id: int) -> HttpResponse:
    try:
        decision = standings_selectors.decision_detail(decision_id=decision_id)
    except Decision.DoesNotExist:
        return render(request, "404.html", status=404)
    return render(request, "arena/decision_detail.html", {"decision": decision})
