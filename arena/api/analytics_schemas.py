"""Schemas of the analytics in the JSON API (`arena/api/analytics.py`, and the leaderboard's
rows in `arena/api/records.py`). Every figure is named as its definition (`/api/v1/analytics`'s
`definitions`, the methodology page); a figure that does not exist yet (no resolved bets, one
cohort so no interval, an infinite t) is null, never a made-up number."""

from __future__ import annotations

import math
from typing import Any

from ninja import Schema

from arena.selectors.analytics.definitions import DEFINITIONS
from arena.selectors.analytics.figures import (
    Analytics,
    CategoryFigures,
    CohortFigures,
    Comparison,
    ModelAnalytics,
    ReferenceAnalytics,
    Separation,
)
from scoring.murphy import Murphy
from scoring.statistics import Interval


def finite(value: float | None) -> float | None:
    """The value, or None where it is missing or not a finite number (JSON has no inf/NaN)."""
    if value is None or not math.isfinite(value):
        return None
    return value


class LeaderboardAnalyticsFields(Schema):
    """The analytics a leaderboard row carries beside its v1 figures (all over the same
    resolved bets; intervals are 95%, t-based, clustered by week and market)."""

    alpha: float | None  # mean δ = (b − x)² − (f − x)²; above 0 beats the market's price
    alpha_ci_low: float | None
    alpha_ci_high: float | None
    alpha_p_value: float | None  # two-sided, Alpha against 0
    # What the interval lets a reader say: "too early to tell" (under 10 weeks), "not
    # significant" (it holds the reference, or the figure rounds to it) or "significant"; null
    # without an interval. Alpha against 0, Brier against 0.25.
    alpha_claim: str | None
    brier_claim: str | None
    # Too little data to rank (under 30 resolved bets or 5 weeks of them): listed apart.
    provisional: bool | None
    weeks: int | None  # the weeks its resolved bets were decided in
    # Among its board's ranked rows by Brier, over the bootstrap's resampled worlds: the
    # central 95% of its ranks, P(rank 1) and its tier (null when not ranked).
    rank_low: int | None
    rank_high: int | None
    p_rank_first: float | None
    tier: int | None
    brier_ci_low: float | None
    brier_ci_high: float | None
    market_brier: float | None  # (b − x)² on the same bets
    coverage_alpha: float | None
    coverage_alpha_ci_low: float | None
    coverage_alpha_ci_high: float | None
    brier_skill_vs_random: float | None  # 1 − Brier / 0.25
    brier_skill_vs_random_ci_low: float | None
    brier_skill_vs_random_ci_high: float | None
    brier_skill_vs_market: float | None  # 1 − Brier / market Brier
    brier_skill_vs_market_ci_low: float | None
    brier_skill_vs_market_ci_high: float | None
    difficulty_adjusted_brier: float | None
    difficulty_adjusted_brier_ci_low: float | None
    difficulty_adjusted_brier_ci_high: float | None
    beat_share: float | None  # share of cohorts with Alpha above 0
    reliability: float | None  # Murphy REL (lower is better calibrated)
    resolution: float | None  # Murphy RES (higher discriminates better)
    uncertainty: float | None  # Murphy UNC = ō(1 − ō)


def _bound(interval: Interval | None, which: str) -> float | None:
    return None if interval is None else finite(getattr(interval, which))


def leaderboard_fields(row: ModelAnalytics | None) -> dict[str, Any]:
    """The `LeaderboardAnalyticsFields` of a row (all None for a row without analytics)."""
    if row is None:
        return dict.fromkeys(LeaderboardAnalyticsFields.model_fields)
    alpha, brier, murphy = row.alpha_interval, row.brier_interval, row.murphy
    return {
        "alpha": finite(row.alpha),
        "alpha_ci_low": finite(alpha.low) if alpha else None,
        "alpha_ci_high": finite(alpha.high) if alpha else None,
        "alpha_p_value": finite(row.alpha_test.p_value) if row.alpha_test else None,
        "alpha_claim": row.alpha_claim,
        "brier_claim": row.brier_claim,
        "provisional": row.provisional,
        "weeks": row.weeks_scored,
        "rank_low": row.rank_range.low if row.rank_range else None,
        "rank_high": row.rank_range.high if row.rank_range else None,
        "p_rank_first": row.rank_range.p_first if row.rank_range else None,
        "tier": row.tier,
        "brier_ci_low": finite(brier.low) if brier else None,
        "brier_ci_high": finite(brier.high) if brier else None,
        "market_brier": finite(row.market_brier),
        "coverage_alpha": finite(row.coverage_alpha),
        "coverage_alpha_ci_low": _bound(row.coverage_interval, "low"),
        "coverage_alpha_ci_high": _bound(row.coverage_interval, "high"),
        "brier_skill_vs_random": finite(row.skill_vs_random),
        "brier_skill_vs_random_ci_low": _bound(row.skill_vs_random_interval, "low"),
        "brier_skill_vs_random_ci_high": _bound(row.skill_vs_random_interval, "high"),
        "brier_skill_vs_market": finite(row.skill_vs_market),
        "brier_skill_vs_market_ci_low": _bound(row.skill_vs_market_interval, "low"),
        "brier_skill_vs_market_ci_high": _bound(row.skill_vs_market_interval, "high"),
        "difficulty_adjusted_brier": finite(row.difficulty_adjusted_brier),
        "difficulty_adjusted_brier_ci_low": _bound(row.difficulty_interval, "low"),
        "difficulty_adjusted_brier_ci_high": _bound(row.difficulty_interval, "high"),
        "beat_share": finite(row.beat_share),
        "reliability": finite(murphy.reliability) if murphy else None,
        "resolution": finite(murphy.resolution) if murphy else None,
        "uncertainty": finite(murphy.uncertainty) if murphy else None,
    }


class IntervalOut(Schema):
    """A 95% interval of a pooled figure: t-based with a standard error clustered by week (the
    weekly run) and market, or the pigeonhole bootstrap's percentiles over the same clusters."""

    estimate: float | None
    low: float | None  # null with fewer than two cohorts
    high: float | None
    standard_error: float | None
    weeks: int  # the weekly runs its bets were decided in: its clusters, with the markets
    markets: int
    cohorts: int  # deprecated (2026-11-28): the same count as `weeks`; read `weeks`
    bets: int
    # A bootstrap interval's Monte-Carlo error: the 95% half-width of its ends over fresh
    # resamples (a bound is worth no more places than this); null for a t interval.
    monte_carlo_error: float | None = None


def interval_out(interval: Interval | None) -> IntervalOut | None:
    if interval is None:
        return None
    return IntervalOut(
        estimate=finite(interval.estimate),
        low=finite(interval.low),
        high=finite(interval.high),
        standard_error=finite(interval.standard_error),
        weeks=interval.clusters,
        markets=interval.markets,
        cohorts=interval.clusters,
        bets=interval.count,
        monte_carlo_error=finite(interval.mc_error),
    )


class BinOut(Schema):
    """One forecast bin of a reliability diagram, [lower, upper)."""

    lower: float
    upper: float
    bets: int
    mean_forecast: float | None  # null for an empty bin
    observed_frequency: float | None


class MurphyOut(Schema):
    """Brier = uncertainty + reliability − resolution + residual (0 for bin-constant forecasts)."""

    bets: int
    brier: float
    uncertainty: float
    reliability: float
    resolution: float
    residual: float
    bins: list[BinOut]  # the reliability diagram's data


def murphy_out(murphy: Murphy | None) -> MurphyOut | None:
    if murphy is None:
        return None
    return MurphyOut(
        bets=murphy.count,
        brier=murphy.brier,
        uncertainty=murphy.uncertainty,
        reliability=murphy.reliability,
        resolution=murphy.resolution,
        residual=murphy.residual,
        bins=[
            BinOut(
                lower=b.lower,
                upper=b.upper,
                bets=b.count,
                mean_forecast=b.mean_forecast,
                observed_frequency=b.observed_frequency,
            )
            for b in murphy.bins
        ],
    )


class AnatomyOut(Schema):
    """Corollary 1: alpha = resolution_gain + reliability_gap (+ residual of the binning)."""

    alpha: float
    resolution_gain: float  # RES − RES of the market on the same bets
    reliability_gap: float  # REL of the market − REL
    residual: float


class MeanTestOut(Schema):
    """The two-sided t test of a row's Alpha against 0 (its interval's standard error)."""

    mean: float | None
    standard_error: float | None
    t: float | None  # null when infinite (every cohort the same non-zero figure)
    df: int
    p_value: float | None


class PowerOut(Schema):
    """Proposition 3 with the row's observed base rate and boldness."""

    bets: int
    alpha: float
    base_rate: float
    mean_squared_deviation: float  # mean (b − f)²
    delta_variance: float | None
    bets_needed: float | None  # to detect an edge the size of `alpha` at 80% power
    bets_more: int | None


class CohortFiguresOut(Schema):
    """A row's figures over one cohort's resolved bets, and its Alpha pooled so far."""

    cohort: int
    bets: int
    brier: float
    market_brier: float
    alpha: float
    cumulative_alpha: float
    cumulative_bets: int


class CategoryOut(Schema):
    """A row's figures over its resolved bets on one Polymarket category."""

    category: str
    bets: int
    brier: float
    market_brier: float
    alpha: float
    win_rate: float
    brier_skill_vs_market: float | None
    reliability: float | None
    resolution: float | None


class ModelAnalyticsOut(Schema):
    """A leaderboard row's analytics in full."""

    model: str
    display_name: str
    baseline: bool
    outside: bool  # an outside team's agent, deciding through the API
    admitted: bool  # an outside agent staff admitted to the main leaderboard
    offline: bool
    resolved_bets: int
    cohorts_scored: int
    brier: float | None
    market_brier: float | None
    alpha: float | None
    alpha_interval: IntervalOut | None
    alpha_bootstrap: IntervalOut | None
    alpha_test: MeanTestOut | None
    brier_interval: IntervalOut | None
    brier_bootstrap: IntervalOut | None
    beat_share: float | None
    brier_skill_vs_random: float | None
    brier_skill_vs_random_interval: IntervalOut | None
    brier_skill_vs_market: float | None
    brier_skill_vs_market_interval: IntervalOut | None
    coverage_alpha: float | None
    coverage_alpha_interval: IntervalOut | None
    coverage_markets: int  # questions: each agent × the resolved markets of its runs
    difficulty_adjusted_brier: float | None
    # Its 95% t interval from each bet's influence, clustered by week and market.
    difficulty_adjusted_brier_interval: IntervalOut | None
    # Over its two-outcome bets as forecasts of YES (the references' frame)...
    murphy: MurphyOut | None
    market_murphy: MurphyOut | None
    anatomy: AnatomyOut | None
    # ...and apart, over its bets on markets of more outcomes, each in its own outcome's frame
    multi_murphy: MurphyOut | None
    multi_market_murphy: MurphyOut | None
    power: PowerOut | None


class ModelAnalyticsDetailOut(ModelAnalyticsOut):
    cohorts: list[CohortFiguresOut]  # ascending, with cumulative Alpha
    categories: list[CategoryOut]


class ReferenceOut(Schema):
    """A pseudo-model on the questions the LLM lineup bet on; never ranked."""

    key: str  # market, random, crowd-median, crowd-geomean
    label: str
    rule: str
    offline: bool
    questions: int
    brier: float
    market_brier: float
    alpha: float
    brier_skill_vs_random: float | None
    brier_skill_vs_market: float | None
    expected: bool  # figures are the expectation (the random forecaster)
    murphy: MurphyOut | None


class RowRef(Schema):
    """A leaderboard row: a model, answered by the model itself or by its offline stand-in."""

    model: str  # the stable id
    offline: bool


class ComparisonOut(Schema):
    """Two rows' pooled figures compared over the weeks both played: first − second, with a
    standard error clustered by week and market (shared weeks and markets pair their bets), a
    two-sided t test, its p-value Holm-adjusted over the pairs of one metric and board, and
    the verdict it allows."""

    first: RowRef
    second: RowRef
    metric: str  # alpha or brier
    mean_difference: float | None  # first − second, bet-weighted
    standard_error: float | None
    t: float | None  # null when the standard error is 0
    df: int
    p_value: float | None
    holm_p_value: float | None  # adjusted over the pairs of one metric and board (Holm 1979)
    # "too early to tell" under 10 shared weeks; else "difference shown" at a Holm p under
    # 0.05, or "no difference shown"
    verdict: str
    weeks: int  # the weeks both played
    cohorts: int  # deprecated (2026-11-28): the same count as `weeks`; read `weeks`


class SeparationOut(Schema):
    """The two best LLM rows by `metric` and what separates them (003 Proposition 3 for two
    samples, a rough figure that treats bets as independent)."""

    metric: str
    first: RowRef
    second: RowRef
    difference: float
    bets_needed: float | None  # each, for 80% power at one-sided 5%
    bets_more: int | None  # the row with fewer resolved bets lacks this many
    p_value: float | None  # the pairwise comparison's, when there is one


class DefinitionOut(Schema):
    """A figure's definition: its name, formula and the source it follows."""

    name: str
    formula: str
    source: str


class AnalyticsOut(Schema):
    """Every leaderboard row's analytics beyond v1, the references, the pairwise comparisons,
    the power note's separation and each figure's definition with its source."""

    cohorts: str
    bins: int
    computed_at: str
    rows: list[ModelAnalyticsOut]
    references: list[ReferenceOut]
    comparisons: list[ComparisonOut]
    # The two best real LLM rows by Alpha (the offline stand-ins' when no real row has one).
    separation: SeparationOut | None
    definitions: list[DefinitionOut]


class ModelAnalyticsPage(Schema):
    """One model's rows of the analytics in full, cohort by cohort and by category."""

    model: str
    cohorts: str
    bins: int
    rows: list[ModelAnalyticsDetailOut]  # the real row, then the offline row


def _test_out(row: ModelAnalytics) -> MeanTestOut | None:
    test = row.alpha_test
    if test is None:
        return None
    return MeanTestOut(
        mean=finite(test.mean),
        standard_error=finite(test.standard_error),
        t=finite(test.t),
        df=test.df,
        p_value=finite(test.p_value),
    )


def _row_fields(row: ModelAnalytics) -> dict[str, Any]:
    anatomy = row.anatomy
    power = row.power
    return {
        "model": row.model.internal_id,
        "display_name": row.model.display_name,
        "baseline": row.model.is_baseline,
        "outside": row.model.is_outside,
        "admitted": row.model.admitted_to_main_board,  # only an outside agent can be
        "offline": row.offline,
        "resolved_bets": row.bets,
        "cohorts_scored": row.cohorts_scored,
        "brier": finite(row.brier),
        "market_brier": finite(row.market_brier),
        "alpha": finite(row.alpha),
        "alpha_interval": interval_out(row.alpha_interval),
        "alpha_bootstrap": interval_out(row.alpha_bootstrap),
        "alpha_test": _test_out(row),
        "brier_interval": interval_out(row.brier_interval),
        "brier_bootstrap": interval_out(row.brier_bootstrap),
        "beat_share": finite(row.beat_share),
        "brier_skill_vs_random": finite(row.skill_vs_random),
        "brier_skill_vs_random_interval": interval_out(row.skill_vs_random_interval),
        "brier_skill_vs_market": finite(row.skill_vs_market),
        "brier_skill_vs_market_interval": interval_out(row.skill_vs_market_interval),
        "coverage_alpha": finite(row.coverage_alpha),
        "coverage_alpha_interval": interval_out(row.coverage_interval),
        "coverage_markets": row.coverage_markets,
        "difficulty_adjusted_brier": finite(row.difficulty_adjusted_brier),
        "difficulty_adjusted_brier_interval": interval_out(row.difficulty_interval),
        "murphy": murphy_out(row.murphy),
        "market_murphy": murphy_out(row.market_murphy),
        "multi_murphy": murphy_out(row.multi_anatomy.agent if row.multi_anatomy else None),
        "multi_market_murphy": murphy_out(row.multi_anatomy.market if row.multi_anatomy else None),
        "anatomy": AnatomyOut(
            alpha=anatomy.alpha,
            resolution_gain=anatomy.resolution_gain,
            reliability_gap=anatomy.reliability_gap,
            residual=anatomy.residual,
        )
        if anatomy
        else None,
        "power": PowerOut(
            bets=power.bets,
            alpha=power.alpha,
            base_rate=power.base_rate,
            mean_squared_deviation=power.mean_squared_deviation,
            delta_variance=finite(power.delta_variance),
            bets_needed=finite(power.bets_needed),
            bets_more=power.bets_more if finite(power.bets_needed) is not None else None,
        )
        if power
        else None,
    }


def model_analytics_out(row: ModelAnalytics) -> ModelAnalyticsOut:
    return ModelAnalyticsOut(**_row_fields(row))


def _cohort_out(c: CohortFigures) -> CohortFiguresOut:
    return CohortFiguresOut(
        cohort=c.cohort,
        bets=c.bets,
        brier=c.brier,
        market_brier=c.market_brier,
        alpha=c.alpha,
        cumulative_alpha=c.cumulative_alpha,
        cumulative_bets=c.cumulative_bets,
    )


def _category_out(c: CategoryFigures) -> CategoryOut:
    return CategoryOut(
        category=c.category,
        bets=c.bets,
        brier=c.brier,
        market_brier=c.market_brier,
        alpha=c.alpha,
        win_rate=c.win_rate,
        brier_skill_vs_market=finite(c.skill_vs_market),
        reliability=c.reliability,
        resolution=c.resolution,
    )


def model_analytics_detail_out(row: ModelAnalytics) -> ModelAnalyticsDetailOut:
    return ModelAnalyticsDetailOut(
        **_row_fields(row),
        cohorts=[_cohort_out(c) for c in row.per_cohort],
        categories=[_category_out(c) for c in row.categories],
    )


def reference_out(reference: ReferenceAnalytics) -> ReferenceOut:
    return ReferenceOut(
        key=reference.key,
        label=reference.label,
        rule=reference.rule,
        offline=reference.offline,
        questions=reference.questions,
        brier=reference.brier,
        market_brier=reference.market_brier,
        alpha=reference.alpha,
        brier_skill_vs_random=finite(reference.skill_vs_random),
        brier_skill_vs_market=finite(reference.skill_vs_market),
        expected=reference.expected,
        murphy=murphy_out(reference.murphy),
    )


def _ref(key: tuple[str, bool]) -> RowRef:
    return RowRef(model=key[0], offline=key[1])


def comparison_out(comparison: Comparison) -> ComparisonOut:
    test = comparison.test
    return ComparisonOut(
        first=_ref(comparison.first),
        second=_ref(comparison.second),
        metric=comparison.metric,
        mean_difference=finite(test.mean_difference),
        standard_error=finite(test.standard_error),
        t=finite(test.t),
        df=test.df,
        p_value=finite(test.p_value),
        holm_p_value=finite(comparison.holm_p),
        verdict=comparison.verdict,
        weeks=test.pairs,
        cohorts=test.pairs,
    )


def separation_out(separation: Separation | None) -> SeparationOut | None:
    if separation is None:
        return None
    needed = finite(separation.bets_needed)
    return SeparationOut(
        metric=separation.metric,
        first=RowRef(model=separation.first.model.internal_id, offline=separation.first.offline),
        second=RowRef(model=separation.second.model.internal_id, offline=separation.second.offline),
        difference=separation.difference,
        bets_needed=needed,
        bets_more=separation.bets_more if needed is not None else None,
        p_value=finite(separation.comparison.test.p_value) if separation.comparison else None,
    )


def analytics_out(result: Analytics) -> AnalyticsOut:
    return AnalyticsOut(
        cohorts=result.cohorts,
        bins=result.bins,
        computed_at=result.computed_at.isoformat(),
        rows=[model_analytics_out(row) for row in result.rows],
        references=[reference_out(r) for r in result.references],
        comparisons=[comparison_out(c) for c in result.comparisons],
        separation=separation_out(
            result.separation("alpha") or result.separation("alpha", offline=True)
        ),
        definitions=[DefinitionOut(name=n, formula=f, source=s) for n, f, s in DEFINITIONS],
    )
