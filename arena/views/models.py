"""The lineup's public pages: every model, and one model across all its cohorts."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.safestring import SafeString

from agents.models import BenchmarkModel
from arena import charts, diagrams
from arena.diagrams import fixed, signed, signed_precise
from arena.selectors import curves, standings
from arena.selectors import models as model_stats
from arena.selectors.analytics import cache
from arena.selectors.analytics.definitions import DEFINITIONS
from arena.selectors.analytics.figures import CategoryFigures, ModelAnalytics
from scoring.murphy import Murphy
from scoring.statistics import MIN_BOOTSTRAP_COHORTS, Interval, MeanTest

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


def model_list(request: HttpRequest) -> HttpResponse:
    rows = standings.model_rows()
    return render(
        request,
        "arena/model_list.html",
        {
            "llms": [row for row in rows if not row.model.is_baseline],
            "baselines": [row for row in rows if row.model.is_baseline],
            "definitions": standings.MODEL_DEFINITIONS,
        },
    )


def model_detail(request: HttpRequest, internal_id: str) -> HttpResponse:
    model = _get_model(internal_id)
    rows = standings.model_rows(model=model)
    agents = sorted((s for row in rows for s in row.agents), key=lambda s: -s.agent.cohort.number)
    bets = model_stats.model_bets(model=model)
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
            "agents": agents,
            "offline_agent_ids": {s.agent.pk for s in agents if s.offline},
            "bets": bets[:MAX_BETS],
            "bet_count": bets.count(),
            "max_bets": MAX_BETS,
            "baseline_rule": model_stats.baseline_rule(model) if model.is_baseline else "",
            "chart": chart,
            "definitions": standings.MODEL_DEFINITIONS,
            "analytics": analytics_panels(model),
            "analytics_definitions": DEFINITIONS,
            "tips": TIPS,
        },
    )


# ---------------------------------------------------------------------------------------------
# Analytics beyond the v1 figures (issue 11)

# Headings' tooltips: the analytics' definitions, and the v1 ones for Brier and win rate.
DEFINED: dict[str, str] = {
    **{name: text for name, text in standings.METRIC_DEFINITIONS},
    **{name: text for name, text, _ in DEFINITIONS},
}
TIPS = {  # the same, under names a template can look up
    "alpha": DEFINED["Alpha"],
    "market_brier": DEFINED["Market Brier"],
    "brier": DEFINED["Brier"],
    "win_rate": DEFINED["Win rate"],
    "skill": DEFINED["Brier skill score"],
    "murphy": DEFINED["Murphy decomposition"],
    "power": DEFINED["Bets to detect an edge"],
}
NO_INTERVAL = "one cohort: no interval yet"
SHOWN_RESIDUAL = 0.00005  # a residual that rounds to 0.0000 is not written out


@dataclass(frozen=True)
class Figure:
    """One headline figure of an analytics panel, written out: its value and what qualifies
    it (interval, counts), with its definition as a tooltip."""

    name: str
    value: str
    detail: str = ""
    tip: str = ""


@dataclass
class AnalyticsPanel:
    """What the model page draws for one analytics row (the model's, or its offline
    stand-in's): the diagrams as SVG markup, the headline figures and the power line."""

    row: ModelAnalytics
    who: str  # "the model", "its rule" or "offline stand-in": whose forecasts these are
    reliability: SafeString | None = None
    murphy: SafeString | None = None
    cumulative: SafeString | None = None
    figures: list[Figure] = field(default_factory=list)
    power: str = ""
    identities: list[str] = field(default_factory=list)  # Brier = UNC + REL − RES; Alpha's anatomy
    # Each category's figures, with its Alpha written out and its tone ("pos", "neg" or "").
    categories: list[tuple[CategoryFigures, str, str]] = field(default_factory=list)


def _interval(interval: Interval | None, write: Callable[[float], str]) -> str:
    if interval is None or interval.low is None or interval.high is None:
        return NO_INTERVAL
    return f"[{write(interval.low)}, {write(interval.high)}]"


def _intervals(t: Interval | None, bootstrap: Interval | None, *, signs: bool) -> str:
    write = signed if signs else fixed
    if t is None or t.low is None:
        return NO_INTERVAL
    if bootstrap is None or bootstrap.low is None:
        return f"95% t {_interval(t, write)}; bootstrap from {MIN_BOOTSTRAP_COHORTS} cohorts"
    return f"95% t {_interval(t, write)}; bootstrap {_interval(bootstrap, write)}"


def _edge_interval(interval: Interval | None) -> str:
    if interval is None or interval.low is None or interval.high is None:
        return ""
    return f"; 95% t [{signed_precise(interval.low)}, {signed_precise(interval.high)}]"


def _skill_interval(interval: Interval | None) -> str:
    if interval is None or interval.low is None or interval.high is None:
        return ""
    return f"; 95% t [{signed(interval.low, 3)}, {signed(interval.high, 3)}]"


def _t_detail(test: MeanTest | None) -> str:
    if test is None:
        return "one cohort: no test yet"
    if test.t is None:
        return "no spread across cohorts and markets: no test"
    return f"t = {fixed(test.t, 2)}, {test.df} df"


def _p_value(p: float) -> str:
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def _figures(row: ModelAnalytics) -> list[Figure]:
    assert row.alpha is not None
    assert row.brier is not None
    assert row.market_brier is not None
    cohorts = f"{row.cohorts_scored} cohort{'s' if row.cohorts_scored != 1 else ''}"
    test = row.alpha_test
    figures = [
        Figure(
            "Alpha",
            signed(row.alpha),
            f"over {row.bets} resolved bets in {cohorts}; "
            + _intervals(row.alpha_interval, row.alpha_bootstrap, signs=True),
            DEFINED["Alpha"],
        ),
        Figure(
            "p (Alpha ≠ 0)",
            _p_value(test.p_value) if test and test.p_value is not None else "—",
            (
                f"t = {fixed(test.t, 2)}, {test.df} df"
                if test.t is not None
                else "no spread: no test"
            )
            if test
            else "one cohort: no test yet",
            DEFINED["p (Alpha ≠ 0)"],
        ),
        Figure(
            "Beat%",
            f"{row.beat_share:.0%}" if row.beat_share is not None else "—",
            f"of {cohorts} with Alpha above 0",
            DEFINED["Beat%"],
        ),
        Figure(
            "Coverage-adjusted Alpha",
            signed_precise(row.coverage_alpha) if row.coverage_alpha is not None else "—",
            f"over {row.coverage_markets:,} questions: each of its agents × the resolved "
            "markets of the runs it decided in" + _edge_interval(row.coverage_interval)
            if row.coverage_markets
            else "no resolved market of its runs' snapshots",
            DEFINED["Coverage-adjusted Alpha"],
        ),
        Figure(
            "Brier",
            fixed(row.brier),
            _intervals(row.brier_interval, row.brier_bootstrap, signs=False),
            DEFINED["Brier"],
        ),
        Figure(
            "Market Brier",
            fixed(row.market_brier),
            "the price on the same bets",
            DEFINED["Market Brier"],
        ),
        Figure(
            "BSS vs random",
            signed(row.skill_vs_random, 3) if row.skill_vs_random is not None else "—",
            "against the 50% guesser's 0.25" + _skill_interval(row.skill_vs_random_interval),
            DEFINED["Brier skill score"],
        ),
        Figure(
            "BSS vs market",
            signed(row.skill_vs_market, 3) if row.skill_vs_market is not None else "—",
            "against the market's Brier on the same bets"
            + _skill_interval(row.skill_vs_market_interval),
            DEFINED["Brier skill score"],
        ),
        Figure(
            "Difficulty-adjusted Brier",
            fixed(row.difficulty_adjusted_brier)
            if row.difficulty_adjusted_brier is not None
            else "—",
            "market effects estimated over every agent's bets",
            DEFINED["Difficulty-adjusted Brier"],
        ),
    ]
    return figures


def _tone(written: str) -> str:
    """The colour class of a written figure: by its sign as shown, so 0.0000 is never red."""
    return {"+": "pos", "−": "neg"}.get(written[:1], "")


def _residual(value: float) -> str:
    return f" + residual {signed(value)}" if abs(value) >= SHOWN_RESIDUAL else ""


def _identities(row: ModelAnalytics, label: str) -> list[str]:
    lines = []
    for who, murphy in ((label, row.murphy), ("Market", row.market_murphy)):
        if murphy is not None:
            lines.append(
                f"{who}: Brier {fixed(murphy.brier)} = UNC {fixed(murphy.uncertainty)} + REL "
                f"{fixed(murphy.reliability)} − RES {fixed(murphy.resolution)}"
                + _residual(murphy.residual)
            )
    anatomy = row.anatomy
    if anatomy is not None:
        lines.append(
            f"Alpha {signed(anatomy.alpha)} = resolution gain {signed(anatomy.resolution_gain)}"
            f" + reliability gap {signed(anatomy.reliability_gap)}" + _residual(anatomy.residual)
        )
    return lines


def _power(row: ModelAnalytics) -> str:
    power = row.power
    if power is None:
        return ""
    have = f"it has {power.bets}"
    if power.bets_needed is None or power.bets_more is None:
        return (
            f"Its Alpha is {signed_precise(power.alpha)} with forecasts that do not stray from the "
            f"price: there is no edge to detect; {have} resolved bets."
        )
    needed = f"{math.ceil(power.bets_needed):,}"
    more = f" ({power.bets_more:,} more needed)" if power.bets_more else ", enough"
    # Proposition 3 is symmetric: a deficit against the market is as hard to detect as an edge.
    return (
        f"Telling an Alpha of {signed_precise(power.alpha)} from 0 (the market) needs about "
        f"{needed} resolved bets at 80% power (one-sided, κ = 0.05, with its own base rate and "
        f"boldness); {have}{more}."
    )


def _panel(row: ModelAnalytics) -> AnalyticsPanel:
    if row.offline:
        who = "offline stand-in"
    else:
        who = "its rule" if row.model.is_baseline else "the model"
    panel = AnalyticsPanel(row=row, who=who)
    if not row.bets:
        return panel
    label = "Stand-in" if row.offline else ("Rule" if row.model.is_baseline else "Model")
    panel.reliability = diagrams.reliability_diagram(
        reliability_points(row.murphy),
        reliability_points(row.market_murphy),
        forecaster_label=label,
    )
    if row.murphy is not None and row.market_murphy is not None:
        panel.murphy = diagrams.murphy_bars(
            (row.murphy.uncertainty, row.murphy.reliability, row.murphy.resolution),
            (
                row.market_murphy.uncertainty,
                row.market_murphy.reliability,
                row.market_murphy.resolution,
            ),
            forecaster_label=label,
        )
    panel.cumulative = diagrams.cumulative_alpha_line(
        [(c.cohort, c.alpha, c.cumulative_alpha) for c in row.per_cohort],
        forecaster_label=label,
    )
    panel.identities = _identities(row, label)
    panel.figures = _figures(row)
    panel.categories = [(c, signed(c.alpha), _tone(signed(c.alpha))) for c in row.categories]
    panel.power = _power(row)
    return panel


def analytics_panels(model: BenchmarkModel) -> list[AnalyticsPanel]:
    """Return a panel per analytics row of `model`: the real row first, then the offline
    stand-in's; a row without resolved bets has no diagrams and no figures."""
    return [_panel(row) for row in cache.model_analytics(model=model)]


def reliability_points(murphy: Murphy | None) -> Sequence[tuple[float, float, int]]:
    """(mean forecast, observed frequency, bets) of each non-empty bin: a reliability diagram."""
    if murphy is None:
        return []
    return [
        (b.mean_forecast, b.observed_frequency, b.count)
        for b in murphy.bins
        if b.count and b.mean_forecast is not None and b.observed_frequency is not None
    ]
