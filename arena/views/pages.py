"""Public pages of the arena: leaderboard, cohorts, agents, decisions."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.http import urlencode

from arena import charts, clock
from arena.models import Agent, Cohort, Decision
from arena.selectors import curves
from arena.selectors import standings as selectors
from arena.selectors.analytics import cache
from arena.selectors.analytics.definitions import DEFINITIONS
from arena.selectors.analytics.figures import Analytics, ModelAnalytics, Separation


def _get_cohort(number: int) -> Cohort:
    return get_object_or_404(Cohort, number=number)


def _get_agent(number: int, agent_id: int) -> Agent:
    return get_object_or_404(
        Agent.objects.select_related("model", "cohort"), pk=agent_id, cohort__number=number
    )


def _cohort_span(cohort: Cohort) -> timedelta:
    """How long the cohort has run: what its chart shows by default."""
    start = datetime.combine(cohort.week_start, time(0), tzinfo=UTC)
    return (cohort.completed_at or clock.now()) - start


# What the leaderboard says it ranks by, per sort, and the link's short name.
SORT_LABELS = {
    "brier": ("pooled Brier score, lower is better", "Brier"),
    "return": ("average return", "return"),
    "win_rate": ("win rate", "win rate"),
    "resolved_bets": ("resolved bets, most first", "resolved bets"),
}
SCOPE_LABELS = {"all": "every cohort", "completed": "completed cohorts only"}


# The leaderboard's column sets: the v1 figures (the default, unchanged) or the analytics of
# issue 11 beside them; what the switch's links say.
VIEW_LABELS = {"v1": "v1 figures", "analytics": "analytics (Alpha against the market, intervals)"}
ANALYTICS_SECTION = "analytics-beyond-v1"  # docs/methodology.md's heading, as the toc ids it


@dataclass(frozen=True)
class AnalyticsColumn:
    """A heading of the analytics view: its label, the definition it shows as a tooltip and
    the methodology anchor of its formula."""

    label: str
    title: str
    anchor: str


def _definition(name: str) -> str:
    """Return `name`'s formula and source from the analytics definitions ("" if none)."""
    for defined, formula, source in DEFINITIONS:
        if defined == name:
            return f"{defined}: {formula} ({source})"
    return ""


def _analytics_columns() -> list[AnalyticsColumn]:
    interval = _definition("Interval (t)")
    return [
        AnalyticsColumn(
            "Resolved bets",
            "n: the row's resolved bets, each a forecast that its side wins (cancelled markets "
            "are not scored)",
            ANALYTICS_SECTION,
        ),
        AnalyticsColumn("Alpha (95% interval)", f"{_definition('Alpha')}. {interval}", "alpha"),
        AnalyticsColumn(
            "Coverage-adj. Alpha", _definition("Coverage-adjusted Alpha"), "coverage-adjusted-alpha"
        ),
        AnalyticsColumn(
            "BSS vs 0.25",
            _definition("Brier skill score") + "; here against 0.25",
            "brier-skill-score",
        ),
        AnalyticsColumn(
            "BSS vs market",
            _definition("Brier skill score") + "; here against the market on the same bets",
            "brier-skill-score",
        ),
        AnalyticsColumn(
            "Difficulty-adj. Brier",
            _definition("Difficulty-adjusted Brier"),
            "difficulty-adjusted-brier",
        ),
        AnalyticsColumn(
            "Brier (95% interval)",
            "the v1 pooled Brier: mean of (f − x)² over the resolved bets. " + interval,
            "intervals-across-cohorts",
        ),
        AnalyticsColumn("p (Alpha ≠ 0)", _definition("p (Alpha ≠ 0)"), "p-values-and-beat"),
        AnalyticsColumn("Beat%", _definition("Beat%"), "p-values-and-beat"),
    ]


@dataclass(frozen=True)
class AnalyticsLine:
    """A leaderboard row (`standing`, in the v1 order) beside its analytics (`figures`, None
    when the analytics have no such row)."""

    standing: selectors.ModelRow
    figures: ModelAnalytics | None

    @property
    def alpha_not_significant(self) -> bool:
        """Whether the 95% t interval of Alpha contains 0 (False without an interval)."""
        return self.figures is not None and self.figures.alpha_significant is False

    @property
    def brier_not_significant(self) -> bool:
        """Whether the 95% t interval of Brier contains 0.25, the 50% guesser's Brier."""
        return self.figures is not None and self.figures.brier_significant is False

    @property
    def single_cohort(self) -> bool:
        """Whether the row has resolved bets but no interval (they come from one cohort)."""
        interval = self.figures.alpha_interval if self.figures else None
        return interval is not None and interval.low is None


def _analytics_lines(rows: list[selectors.ModelRow], analytics: Analytics) -> list[AnalyticsLine]:
    return [AnalyticsLine(row, analytics.row(row.model.pk, row.offline)) for row in rows]


@dataclass(frozen=True)
class PowerNote:
    """The power note: the separation of the two best rows by Alpha, and whether they are the
    offline stand-ins (no real model has two rows with resolved bets)."""

    separation: Separation | None
    offline: bool

    def _more(self, bets: int) -> int:
        s = self.separation
        if s is None or s.bets_needed is None:
            return 0
        return max(0, math.ceil(s.bets_needed) - bets)

    @property
    def needed(self) -> int | None:
        """The resolved bets each row needs, whole (the count the shortfalls are taken from)."""
        s = self.separation
        return None if s is None or s.bets_needed is None else math.ceil(s.bets_needed)

    @property
    def first_more(self) -> int:
        """The resolved bets the leading row lacks for the power the note quotes."""
        return self._more(self.separation.first.bets) if self.separation else 0

    @property
    def second_more(self) -> int:
        return self._more(self.separation.second.bets) if self.separation else 0


def _power_note(analytics: Analytics) -> PowerNote:
    real = analytics.separation("alpha", offline=False)
    if real is not None:
        return PowerNote(real, offline=False)
    return PowerNote(analytics.separation("alpha", offline=True), offline=True)


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
    sort = sort if sort in selectors.LEADERBOARD_SORTS else "brier"
    cohorts = request.GET.get("cohorts", "")
    cohorts = cohorts if cohorts in selectors.COHORT_SCOPES else "all"
    view = request.GET.get("view", "")
    view = view if view in VIEW_LABELS else "v1"
    llms, baselines, outside_rows = selectors.boards(sort=sort, cohorts=cohorts)
    context = {
        "llms": llms,
        "baselines": baselines,
        "outside_rows": outside_rows,
        "baseline_notes": selectors.baseline_notes(llms=llms, baselines=baselines),
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
        "view_links": [
            (label, _leaderboard_query(sort=sort, cohorts=cohorts, view=key), key == view)
            for key, label in VIEW_LABELS.items()
        ],
        "definitions": selectors.MODEL_DEFINITIONS,
        "cohorts": selectors.cohort_list()[:5],
    }
    if view == "analytics":
        # Read only when asked for: the v1 view stays exactly what it was, queries included.
        analytics = cache.analytics(cohorts=cohorts)
        llm_lines = _analytics_lines(llms, analytics)
        baseline_lines = _analytics_lines(baselines, analytics)
        outside_lines = _analytics_lines(outside_rows, analytics)
        context |= {
            # The LLMs ranked (in the v1 order), then the baselines, never ranked, then the
            # outside agents ranked on their own board (issue 13).
            "analytics_tables": [(llm_lines, True, "")]
            + [(baseline_lines, False, "baselines")]
            + ([(outside_lines, True, "outside")] if outside_lines else []),
            "any_single_cohort": any(
                line.single_cohort for line in llm_lines + baseline_lines + outside_lines
            ),
            "references": analytics.references,
            "power": _power_note(analytics),
            "columns": _analytics_columns(),
            "analytics_section": ANALYTICS_SECTION,
            "analytics_definitions": [
                (name, f"{formula} ({source})") for name, formula, source in DEFINITIONS
            ],
        }
    return render(request, "arena/leaderboard.html", context)


def cohort_list(request: HttpRequest) -> HttpResponse:
    return render(request, "arena/cohort_list.html", {"cohorts": selectors.cohort_list()})


def cohort_detail(request: HttpRequest, number: int) -> HttpResponse:
    cohort = _get_cohort(number)
    standings = selectors.agent_standings(agents=cohort.agents.all())
    range_key = curves.range_from(request.GET.get("range"), covering=_cohort_span(cohort))
    series = curves.value_series(agents=[s.agent for s in standings], range_key=range_key)
    return render(
        request,
        "arena/cohort_detail.html",
        {
            "cohort": cohort,
            "standings": standings,
            "chart": charts.value_chart(series, range_key=range_key),
            # Baselines never keep a cohort alive: what they still hold is marked and settled.
            "open_after_completion": sum(s.open_positions for s in standings)
            if cohort.completed_at
            else 0,
            "decisions": selectors.cohort_decisions(cohort=cohort),
            "definitions": selectors.METRIC_DEFINITIONS,
        },
    )


def agent_detail(request: HttpRequest, number: int, agent_id: int) -> HttpResponse:
    agent = _get_agent(number, agent_id)
    (standing,) = selectors.agent_standings(agents=Agent.objects.filter(pk=agent.pk))
    range_key = curves.range_from(request.GET.get("range"), covering=_cohort_span(agent.cohort))
    series = curves.value_series(agents=[agent], range_key=range_key)
    return render(
        request,
        "arena/agent_detail.html",
        {
            "agent": agent,
            "standing": standing,
            "chart": charts.value_chart(series, range_key=range_key),
            "positions": selectors.agent_positions(agent=agent),
            "trades": selectors.agent_trades(agent=agent)[:200],
            "decisions": selectors.agent_decisions(agent=agent),
        },
    )


def decision_detail(request: HttpRequest, decision_id: int) -> HttpResponse:
    try:
        decision = selectors.decision_detail(decision_id=decision_id)
    except Decision.DoesNotExist:
        return render(request, "404.html", status=404)
    return render(request, "arena/decision_detail.html", {"decision": decision})
