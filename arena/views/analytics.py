"""The analytics on the pages: the leaderboard's analytics view (its columns, each row beside
its figures, the power note) and the model page's panels (diagrams and figures written out).
Every heading's tooltip is a definition from `arena.selectors.analytics.definitions`."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.utils.safestring import SafeString

from arena.selectors import standings
from arena.selectors.analytics import cache
from arena.selectors.analytics.definitions import DEFINITIONS, MIN_RANKED_BETS, MIN_RANKED_WEEKS
from arena.selectors.analytics.figures import (
    Analytics,
    CategoryFigures,
    Claim,
    ModelAnalytics,
    Separation,
)
from arena.selectors.panel import ModelSayDo
from arena.views import diagrams
from arena.views.diagrams import fixed, signed, signed_precise
from scoring.murphy import Murphy
from scoring.say_do import ReliabilityBin
from scoring.statistics import MIN_BOOTSTRAP_WEEKS, MIN_WEEKS_TO_CLAIM, Interval, MeanTest

ANALYTICS_SECTION = "analytics-beyond-v1"  # docs/methodology.md's heading, as the toc ids it

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
NO_INTERVAL = "one week: no interval yet"
# Past two years a count of weeks from a rough power analysis says no more than "a long time".
WEEKS_SHOWN = 104
SHOWN_RESIDUAL = 0.00005  # a residual that rounds to 0.0000 is not written out


# ---------------------------------------------------------------------------------------------
# The leaderboard's analytics view


@dataclass(frozen=True)
class AnalyticsColumn:
    """A heading of the analytics view: its label, the definition it shows as a tooltip and
    the methodology anchor of its formula."""

    label: str
    title: str
    anchor: str
    plain: str = ""  # its meaning in plain words, shown under the heading (no hover needed)


def _definition(name: str) -> str:
    """Return `name`'s formula and source from the analytics definitions ("" if none)."""
    for defined, formula, source in DEFINITIONS:
        if defined == name:
            return f"{defined}: {formula} ({source})"
    return ""


def analytics_columns() -> list[AnalyticsColumn]:
    """Return the analytics view's headings, one per figure column, in the table's order."""
    interval = _definition("Interval (t)")
    return [
        AnalyticsColumn(
            "Resolved bets",
            "n: the row's resolved bets, each a forecast that its side wins (cancelled markets "
            "are not scored)",
            ANALYTICS_SECTION,
            "forecasts scored so far",
        ),
        AnalyticsColumn(
            "Alpha (95% interval)",
            f"{_definition('Alpha')}. {interval}",
            "alpha",
            "above 0: beat the market's price",
        ),
        AnalyticsColumn(
            "Coverage-adj. Alpha",
            _definition("Coverage-adjusted Alpha"),
            "coverage-adjusted-alpha",
            "Alpha with every market it passed on counted as 0",
        ),
        AnalyticsColumn(
            "BSS vs 0.25",
            _definition("Brier skill score") + "; here against 0.25",
            "brier-skill-score",
            "above 0: better than always saying 50%",
        ),
        AnalyticsColumn(
            "BSS vs market",
            _definition("Brier skill score") + "; here against the market on the same bets",
            "brier-skill-score",
            "above 0: more accurate than the price",
        ),
        AnalyticsColumn(
            "Difficulty-adj. Brier",
            _definition("Difficulty-adjusted Brier"),
            "difficulty-adjusted-brier",
            "its error had its questions been of average difficulty",
        ),
        AnalyticsColumn(
            "Brier (95% interval)",
            "the v1 pooled Brier: mean of (f − x)² over the resolved bets. " + interval,
            "intervals-across-weeks-and-markets",
            "forecast error: lower is better",
        ),
        AnalyticsColumn(
            "p (Alpha ≠ 0)",
            _definition("p (Alpha ≠ 0)"),
            "p-values-and-beat",
            "how surprising its Alpha would be with no edge",
        ),
        AnalyticsColumn(
            "Beat%",
            _definition("Beat%"),
            "p-values-and-beat",
            "cohorts in which it beat the market",
        ),
    ]


@dataclass(frozen=True)
class AnalyticsLine:
    """A leaderboard row (`standing`, in the v1 order) beside its analytics (`figures`, None
    when the analytics have no such row)."""

    standing: standings.ModelRow
    figures: ModelAnalytics | None

    @property
    def alpha_claim(self) -> Claim | None:
        """What Alpha's interval lets the row say against the market (`figures.claim`)."""
        return self.figures.alpha_claim if self.figures is not None else None

    @property
    def brier_claim(self) -> Claim | None:
        """What Brier's interval lets the row say against 0.25, the 50% guesser's Brier."""
        return self.figures.brier_claim if self.figures is not None else None

    @property
    def single_week(self) -> bool:
        """Whether the row has resolved bets but no interval (they come from one week)."""
        interval = self.figures.alpha_interval if self.figures else None
        return interval is not None and interval.low is None


def _analytics_lines(rows: list[standings.ModelRow], analytics: Analytics) -> list[AnalyticsLine]:
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


def leaderboard_context(
    *,
    cohorts: str,
    llms: list[standings.ModelRow],
    baselines: list[standings.ModelRow],
    outside_rows: list[standings.ModelRow],
) -> dict[str, Any]:
    """Return what the leaderboard's analytics view adds to its context: the rows of each board
    (in the v1 order) beside their figures over `cohorts`, the references, the power note, the
    columns and the definitions."""
    analytics = cache.analytics(cohorts=cohorts)
    llm_lines = _analytics_lines(llms, analytics)
    baseline_lines = _analytics_lines(baselines, analytics)
    outside_lines = _analytics_lines(outside_rows, analytics)
    return {
        # The LLMs ranked (in the v1 order), then the baselines, never ranked, then the
        # outside agents ranked on their own board.
        "analytics_tables": [(llm_lines, True, "")]
        + [(baseline_lines, False, "baselines")]
        + ([(outside_lines, True, "outside")] if outside_lines else []),
        "min_weeks": MIN_WEEKS_TO_CLAIM,
        "any_single_week": any(
            line.single_week for line in llm_lines + baseline_lines + outside_lines
        ),
        "references": analytics.references,
        "power": _power_note(analytics),
        "columns": analytics_columns(),
        "analytics_section": ANALYTICS_SECTION,
        "analytics_definitions": [
            (name, f"{formula} ({source})") for name, formula, source in DEFINITIONS
        ],
    }


# ---------------------------------------------------------------------------------------------
# The main table's uncertainty: rank ranges, tiers, provisional rows


@dataclass(frozen=True)
class RankedLine:
    """A leaderboard row in its board's order, with its analytics (None without any)."""

    standing: standings.ModelRow
    figures: ModelAnalytics | None

    @property
    def provisional(self) -> bool:
        return self.figures is None or self.figures.provisional


@dataclass(frozen=True)
class BoardSplit:
    """A board split into its ranked real rows, its ranked offline stand-ins (ranked among
    themselves, after every real row) and its provisional rows, each in the board's order."""

    ranked: list[RankedLine]
    ranked_offline: list[RankedLine]
    provisional: list[RankedLine]

    @property
    def lead(self) -> list[RankedLine]:
        """The ranked rows the sentence under the table speaks of: the real ones, or where
        none is ranked (the demo), the offline stand-ins."""
        return self.ranked or self.ranked_offline


def _split(rows: list[standings.ModelRow], analytics: Analytics) -> BoardSplit:
    lines = [RankedLine(row, analytics.row(row.model.pk, row.offline)) for row in rows]
    ranked = [line for line in lines if not line.provisional]
    return BoardSplit(
        ranked=[line for line in ranked if not line.standing.offline],
        ranked_offline=[line for line in ranked if line.standing.offline],
        provisional=[line for line in lines if line.provisional],
    )


def _weeks_to_separate(analytics: Analytics, *, offline: bool) -> int | None:
    """The weeks more the power analysis expects before the two best ranked rows by Brier
    separate, if their observed gap is the true one: the bets the row with fewer lacks, at
    the rate it has placed them per week, and never fewer than the weeks it lacks of
    MIN_WEEKS_TO_CLAIM (before those, no difference is called at all). None when it cannot
    say (no second row, no variance, or no bets yet)."""
    separation = analytics.separation("brier", offline=offline, ranked_only=True)
    if separation is None or separation.bets_more is None:
        return None
    fewer = min(separation.first, separation.second, key=lambda r: r.bets)
    if not fewer.weeks_scored or not fewer.bets:
        return None
    weeks = math.ceil(separation.bets_more / (fewer.bets / fewer.weeks_scored))
    return max(weeks, MIN_WEEKS_TO_CLAIM - fewer.weeks_scored)


def _clusters(figures: ModelAnalytics) -> int:
    """The fewer of the weeks and the markets a row's Brier interval is clustered over."""
    interval = figures.brier_interval
    return min(interval.clusters, interval.markets) if interval is not None else 0


def ranking_says(split: BoardSplit, analytics: Analytics) -> tuple[str, str]:
    """The sentences under the main table: whether its ranking lets a difference be claimed
    yet, and the weeks the power analysis expects before the two best separate ("" each
    where there is nothing to say)."""
    lead = split.lead
    if not lead:
        return "", ""
    offline = not split.ranked
    figures = [line.figures for line in lead if line.figures is not None]
    whose = "offline stand-ins" if offline else "models"
    if len(lead) == 1:
        verdict = (
            f"Only one of the {whose} has enough data to be ranked: there is nothing to "
            "compare yet."
        )
    elif min(_clusters(f) for f in figures) < MIN_WEEKS_TO_CLAIM:
        verdict = (
            f"Too early to tell: a ranked row has under {MIN_WEEKS_TO_CLAIM} weeks (or markets) "
            "of resolved bets, so the rank ranges are shown but no model is called ahead of "
            "another."
        )
    elif len({f.tier for f in figures}) <= 1:
        verdict = (
            f"No model is distinguishable yet: every ranked {whose[:-1]}'s range of ranks "
            "reaches the first's, so they share tier 1."
        )
    else:
        tiers = len({f.tier for f in figures})
        verdict = (
            f"The ranked {whose} fall in {tiers} tiers: within a tier, none is established "
            "ahead of another."
        )
    weeks = _weeks_to_separate(analytics, offline=offline)
    if weeks is None or len(lead) == 1:
        return verdict, ""
    if weeks == 0:
        more = (
            "Had the gap between the two best been real, the power analysis expected them "
            "to have separated by now (80% power, one-sided 5%, bets treated as independent)."
        )
    else:
        when = (
            "in more than two years"
            if weeks > WEEKS_SHOWN
            else f"in about {weeks} more week{'s' if weeks != 1 else ''}"
        )
        more = (
            f"If the gap between the two best is real, the power analysis expects them to "
            f"separate {when}, at the rate they bet (80% power, one-sided 5%, bets treated as "
            "independent: a rough figure)."
        )
    return verdict, more


def ranked_by(sort: str, rows: list[standings.ModelRow], cohorts: str) -> list[standings.ModelRow]:
    """The board's rows in the order of an analytics figure over `cohorts` (from the cache)."""
    return cache.analytics(cohorts=cohorts).ranked_by(sort, rows)


def main_table_context(
    *, cohorts: str, llms: list[standings.ModelRow], outside_rows: list[standings.ModelRow]
) -> dict[str, Any]:
    """What the leaderboard's main (v1) table adds from the analytics, read from their cache:
    each board split into its ranked and its provisional rows, the ranked ones with their
    Brier interval, rank range, P(rank 1) and tier; and how many weeks more the power analysis
    expects before the two best separate."""
    analytics = cache.analytics(cohorts=cohorts)
    main = _split(llms, analytics)
    return {
        "main": main,
        "outside_board": _split(outside_rows, analytics),
        "ranking_says": ranking_says(main, analytics),
        "min_ranked_bets": MIN_RANKED_BETS,
        "min_ranked_weeks": MIN_RANKED_WEEKS,
    }


# ---------------------------------------------------------------------------------------------
# The model page's analytics panels


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
        return f"95% t {_interval(t, write)}; bootstrap from {MIN_BOOTSTRAP_WEEKS} weeks"
    places = shown_places(bootstrap.mc_error)

    def rounded(value: float) -> str:
        return signed(value, places) if signs else fixed(value, places)

    return f"95% t {_interval(t, write)}; bootstrap {_interval(bootstrap, rounded)}"


def shown_places(mc_error: float | None, most: int = 4) -> int:
    """The decimal places a bootstrap bound's Monte-Carlo error supports: the last shown digit
    no finer than the error (an error of 0.02 shows 0.4, of 0.004 shows 0.40), `most` at best
    and one at least."""
    if not mc_error or mc_error <= 0.0:
        return most
    return max(1, min(most, math.floor(-math.log10(mc_error))))


def _edge_interval(interval: Interval | None) -> str:
    if interval is None or interval.low is None or interval.high is None:
        return ""
    return f"; 95% t [{signed_precise(interval.low)}, {signed_precise(interval.high)}]"


def _edge_interval_plain(interval: Interval | None) -> str:
    if interval is None or interval.low is None or interval.high is None:
        return ""
    return f"; 95% t [{fixed(interval.low)}, {fixed(interval.high)}]"


def _skill_interval(interval: Interval | None) -> str:
    if interval is None or interval.low is None or interval.high is None:
        return ""
    return f"; 95% t [{signed(interval.low, 3)}, {signed(interval.high, 3)}]"


def _t_detail(test: MeanTest | None) -> str:
    if test is None:
        return "one week: no test yet"
    if test.t is None:
        return "no spread across weeks and markets: no test"
    return f"t = {fixed(test.t, 2)}, {test.df} df"


def p_value_text(p: float) -> str:
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
            p_value_text(test.p_value) if test and test.p_value is not None else "—",
            (
                f"t = {fixed(test.t, 2)}, {test.df} df"
                if test.t is not None
                else "no spread: no test"
            )
            if test
            else "one week: no test yet",
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
            "question effects estimated over every agent's bets"
            + _edge_interval_plain(row.difficulty_interval),
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
    """The Murphy identities and Alpha's anatomy written out: of the two-outcome bets in the
    YES frame, then of the bets on markets of more outcomes, apart, in their own frame."""
    lines = []
    if row.murphy is not None:
        lines.append(f"Its {row.murphy.count} two-outcome bets, as forecasts of YES:")
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
    multi = row.multi_anatomy
    if multi is not None:
        lines.append(
            f"Its {multi.agent.count} bets on markets of more outcomes, each a forecast of its "
            f"own outcome, apart: Alpha {signed(multi.alpha)} = resolution gain "
            f"{signed(multi.resolution_gain)} + reliability gap {signed(multi.reliability_gap)}"
            + _residual(multi.residual)
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


def analytics_panels(rows: Sequence[ModelAnalytics]) -> list[AnalyticsPanel]:
    """Return a panel per analytics row of a model (`cache.model_analytics`): the real row
    first, then the offline stand-in's; a row without resolved bets has no diagrams and no
    figures."""
    return [_panel(row) for row in rows]


def model_context(rows: Sequence[ModelAnalytics]) -> dict[str, Any]:
    """Return what the model page adds to its context for the analytics of its rows
    (`cache.model_analytics`): a panel per row, the definitions and the headings' tooltips."""
    return {
        "analytics": analytics_panels(rows),
        "analytics_definitions": DEFINITIONS,
        "tips": TIPS,
    }


def reliability_points(murphy: Murphy | None) -> Sequence[tuple[float, float, int]]:
    """(mean forecast, observed frequency, bets) of each non-empty bin: a reliability diagram."""
    if murphy is None:
        return []
    return [
        (b.mean_forecast, b.observed_frequency, b.count)
        for b in murphy.bins
        if b.count and b.mean_forecast is not None and b.observed_frequency is not None
    ]


def bin_points(bins: Sequence[ReliabilityBin]) -> Sequence[tuple[float, float, int]]:
    """(mean forecast, observed frequency, count) of each non-empty bin of a reliability table."""
    return [
        (b.mean_forecast, b.frequency, b.count)
        for b in bins
        if b.count and b.mean_forecast is not None and b.frequency is not None
    ]


@dataclass
class SayDoPanel:
    """What the model page draws of one row's methodology v2 figures (the model's, or its
    offline stand-in's): the figures, both reliability diagrams and the panel week by week."""

    figures: ModelSayDo
    panel_reliability: SafeString
    bet_reliability: SafeString
    weekly_alpha: SafeString | None
    weekly_brier: SafeString | None


def say_do_panels(rows: Sequence[ModelSayDo], *, baseline: bool) -> list[SayDoPanel]:
    """The model page's v2 diagrams for each of `rows`. The panel's reliability sets the stated
    P(YES) beside b on the same forecasts; the bets' sets each stated P(its side wins) beside
    the price paid for that side; the weekly charts pool Alpha question by question, so a
    week weighs by its resolved questions."""
    panels = []
    for row in rows:
        label = "Stand-in" if row.offline else ("Rule" if baseline else "Model")
        pooled, questions = 0.0, 0
        alpha_points, brier_points = [], []
        for week in row.weeks:
            pooled += week.alpha * week.questions
            questions += week.questions
            alpha_points.append((week.week_start, week.alpha, pooled / questions))
            brier_points.append((week.week_start, week.brier, week.market_brier))
        panels.append(
            SayDoPanel(
                figures=row,
                panel_reliability=diagrams.reliability_diagram(
                    bin_points(row.panel_reliability),
                    bin_points(row.panel_market_reliability),
                    forecaster_label=label,
                    market_label="Market (b)",
                    unit="forecast",
                ),
                bet_reliability=diagrams.reliability_diagram(
                    bin_points(row.bet_reliability),
                    bin_points(row.bet_market_reliability),
                    forecaster_label=label,
                    market_label="Price paid",
                ),
                weekly_alpha=diagrams.weekly_alpha_line(alpha_points, forecaster_label=label)
                if row.weeks
                else None,
                weekly_brier=diagrams.weekly_brier_lines(brier_points, forecaster_label=label)
                if row.weeks
                else None,
            )
        )
    return panels
