"""The analytics' results: a row's figures, the references, the comparisons and what separates
the two best rows. Plain dataclasses, filled by `compute` and kept whole by `cache`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from agents.models import BenchmarkModel
from arena.selectors.analytics.definitions import KAPPA, MIN_RANKED_BETS, MIN_RANKED_WEEKS, POWER
from arena.selectors.standings import ModelRow, rows_ranked
from scoring.aggregates import RANDOM_BRIER, brier_skill_score
from scoring.alpha import bets_to_separate
from scoring.bootstrap import RankRange
from scoring.murphy import AlphaAnatomy, Murphy
from scoring.statistics import (
    MIN_WEEKS_TO_CLAIM,
    Interval,
    MeanTest,
    PairedDifference,
)

Metric = Literal["alpha", "brier"]
Claim = Literal["too early to tell", "not significant", "significant"]
TOO_EARLY: Claim = "too early to tell"
NOT_SHOWN: Claim = "not significant"
SHOWN: Claim = "significant"
SHOWN_PLACES = 4  # Alpha and Brier are shown to 4 decimals


def skill_score(brier: float | None, reference: float | None) -> float | None:
    """Return 1 − brier ÷ reference, or None when either is missing or the reference is not
    in (0, 1]."""
    if brier is None or reference is None or not 0.0 < reference <= 1.0:
        return None
    return brier_skill_score(brier=brier, reference=reference)


@dataclass(frozen=True)
class CohortFigures:
    """A row's figures over one cohort's resolved bets, and its Alpha pooled so far."""

    cohort: int
    bets: int
    brier: float
    market_brier: float
    alpha: float
    cumulative_alpha: float  # pooled over this cohort and every earlier one
    cumulative_bets: int


@dataclass(frozen=True)
class CategoryFigures:
    """A row's figures over its resolved bets on one Polymarket category."""

    category: str
    bets: int
    brier: float
    market_brier: float
    alpha: float
    win_rate: float
    skill_vs_market: float | None
    reliability: float | None
    resolution: float | None


@dataclass(frozen=True)
class PowerFigures:
    """Proposition 3 with the row's own figures: how many resolved bets detect an edge the size
    of its observed Alpha (one-sided κ = 0.05, power 0.80), with the observed base rate and
    boldness in place of 003's assumed q̄ = 0.5 and |b − p| = 0.15."""

    bets: int
    alpha: float
    base_rate: float
    mean_squared_deviation: float  # mean (b − f)²: how far the row's forecasts stray from b
    delta_variance: float | None  # observed per-bet variance of δ
    bets_needed: float | None  # None when the observed Alpha is 0 or the row echoes the market

    @property
    def bets_more(self) -> int | None:
        if self.bets_needed is None:
            return None
        return max(0, math.ceil(self.bets_needed) - self.bets)


@dataclass
class ModelAnalytics:
    """One leaderboard row's analytics (a model's agents of one kind: real or offline)."""

    model: BenchmarkModel
    offline: bool
    bets: int = 0
    brier: float | None = None
    market_brier: float | None = None
    alpha: float | None = None
    alpha_interval: Interval | None = None
    alpha_bootstrap: Interval | None = None
    brier_interval: Interval | None = None
    brier_bootstrap: Interval | None = None
    alpha_test: MeanTest | None = None
    beat_share: float | None = None
    cohorts_scored: int = 0
    # The Murphy terms and Alpha's anatomy of its two-outcome bets in the YES frame (as the
    # references'); of its bets on markets of more outcomes apart, each in its own frame.
    murphy: Murphy | None = None
    market_murphy: Murphy | None = None
    anatomy: AlphaAnatomy | None = None
    multi_anatomy: AlphaAnatomy | None = None
    skill_vs_random: float | None = None
    skill_vs_market: float | None = None
    # 95% t intervals of the skill scores: 1 − the Brier's interval ÷ 0.25, and 1 − the
    # interval of Brier ÷ market Brier (a ratio of two pooled figures of the same bets).
    skill_vs_random_interval: Interval | None = None
    skill_vs_market_interval: Interval | None = None
    coverage_alpha: float | None = None
    coverage_interval: Interval | None = None
    coverage_markets: int = 0  # questions: each agent × the resolved markets of its runs
    difficulty_adjusted_brier: float | None = None
    # Its 95% t interval, clustered by week and market (`compute._difficulty`).
    difficulty_interval: Interval | None = None
    power: PowerFigures | None = None
    brier_variance: float | None = None  # observed per-bet variance of the Brier score
    per_cohort: list[CohortFigures] = field(default_factory=list)
    categories: list[CategoryFigures] = field(default_factory=list)
    # Its place among the ranked rows of its board by Brier (`compute.rank_rows`): the range
    # of its ranks over the bootstrap's resampled worlds, P(rank 1), and its tier. None for a
    # baseline, a provisional row, or a board of one.
    rank_range: RankRange | None = None
    tier: int | None = None

    @property
    def weeks_scored(self) -> int:
        """The weeks its resolved bets were decided in."""
        return self.brier_interval.clusters if self.brier_interval is not None else 0

    @property
    def provisional(self) -> bool:
        """Too little data to be ranked: under MIN_RANKED_BETS resolved bets or under
        MIN_RANKED_WEEKS weeks of them. Shown, listed apart, never ranked."""
        return self.bets < MIN_RANKED_BETS or self.weeks_scored < MIN_RANKED_WEEKS

    @property
    def key(self) -> tuple[str, bool]:
        return (self.model.internal_id, self.offline)

    @property
    def alpha_claim(self) -> Claim | None:
        """What Alpha's interval lets the page say against the market's 0 (`claim`)."""
        return claim(self.alpha_interval, 0.0)

    @property
    def brier_claim(self) -> Claim | None:
        """What Brier's interval lets the page say against 0.25, the 50% guesser's."""
        return claim(self.brier_interval, RANDOM_BRIER)


@dataclass(frozen=True)
class ReferenceAnalytics:
    """A pseudo-model scored on the questions the LLM lineup bet on: never ranked."""

    key: str  # market, random, crowd-median, crowd-geomean
    label: str
    rule: str
    offline: bool  # computed over the offline stand-ins' questions
    questions: int
    brier: float
    market_brier: float
    alpha: float
    murphy: Murphy | None
    expected: bool = False  # the random forecaster's figures are its expectation

    @property
    def skill_vs_random(self) -> float:
        return brier_skill_score(brier=self.brier, reference=RANDOM_BRIER)

    @property
    def skill_vs_market(self) -> float | None:
        return skill_score(self.brier, self.market_brier)


@dataclass(frozen=True)
class Comparison:
    """Two rows' pooled figures compared on the weeks both bet in, with the test's p-value
    Holm-adjusted over its family (one metric, one board, real or offline rows)."""

    first: tuple[str, bool]  # the rows' (stable id, offline)
    second: tuple[str, bool]
    metric: Metric
    test: PairedDifference
    holm_p: float | None = None

    @property
    def verdict(self) -> str:
        """ "too early to tell" under MIN_WEEKS_TO_CLAIM shared weeks, whatever the p-value;
        else "difference shown" at a Holm p under 0.05, "no difference shown" otherwise."""
        # The test's clusters are the fewer of its shared weeks and markets (df + 1).
        if min(self.test.pairs, self.test.df + 1) < MIN_WEEKS_TO_CLAIM:
            return str(TOO_EARLY)
        if abs(self.test.mean_difference) < 0.5 * 10**-SHOWN_PLACES:
            return "no difference shown"  # a difference shown as 0.0000 is none
        if self.holm_p is not None and self.holm_p < 0.05:
            return "difference shown"
        return "no difference shown"


@dataclass(frozen=True)
class Separation:
    """How far the evidence is from separating the two best rows by a metric (Proposition 3
    for two samples): the bets each needs so a one-sided test at κ = 0.05 detects the observed
    difference with power 0.80, and how many more that is than the smaller row has."""

    metric: Metric
    first: ModelAnalytics
    second: ModelAnalytics
    difference: float
    bets_needed: float | None
    comparison: Comparison | None

    @property
    def bets_more(self) -> int | None:
        if self.bets_needed is None:
            return None
        have = min(self.first.bets, self.second.bets)
        return max(0, math.ceil(self.bets_needed) - have)


@dataclass
class Analytics:
    """Every row's analytics, the references and the pairwise comparisons, for one scope."""

    cohorts: str
    bins: int
    rows: list[ModelAnalytics]
    references: list[ReferenceAnalytics]
    comparisons: list[Comparison]
    computed_at: datetime

    def row(self, model_id: int, offline: bool) -> ModelAnalytics | None:
        for row in self.rows:
            if row.model.pk == model_id and row.offline == offline:
                return row
        return None

    def ranked_by(self, sort: str, rows: list[ModelRow]) -> list[ModelRow]:
        """Leaderboard `rows` in the order of an analytics figure, higher first: `alpha`, or
        `p_first` (P(rank 1)); rows without it last, offline rows after the real ones, ties
        in the lineup's order."""

        def figure(row: ModelRow) -> float | None:
            found = self.row(row.model.pk, row.offline)
            if found is None:
                return None
            if sort == "p_first":
                return found.rank_range.p_first if found.rank_range is not None else None
            return found.alpha

        return rows_ranked(rows, figure, higher_first=True)

    def rows_of(self, model: BenchmarkModel) -> list[ModelAnalytics]:
        return [row for row in self.rows if row.model.pk == model.pk]

    def separation(
        self, metric: Metric = "alpha", *, offline: bool = False, ranked_only: bool = False
    ) -> Separation | None:
        """The two best LLM rows (real, or offline) by `metric`, and what separates them; with
        `ranked_only`, the two best of the rows the main table ranks (none provisional)."""
        ranked = [
            r
            for r in self.rows
            if not r.model.is_baseline
            # An outside agent is on the main board only once staff admitted it.
            and not r.model.on_outside_board
            and r.offline == offline
            and _figure(r, metric) is not None
            and not (ranked_only and r.provisional)
        ]
        if len(ranked) < 2:
            return None
        ranked.sort(key=lambda r: _rank_value(r, metric))
        first, second = ranked[0], ranked[1]
        a, b = _figure(first, metric), _figure(second, metric)
        assert a is not None
        assert b is not None
        variance_a, variance_b = _variance(first, metric), _variance(second, metric)
        needed = None
        if variance_a is not None and variance_b is not None:
            needed = bets_to_separate(
                difference=a - b,
                variance_a=variance_a,
                variance_b=variance_b,
                kappa=KAPPA,
                power=POWER,
            )
        comparison = next(
            (
                c
                for c in self.comparisons
                if c.metric == metric and {c.first, c.second} == {first.key, second.key}
            ),
            None,
        )
        return Separation(metric, first, second, a - b, needed, comparison)


def claim(interval: Interval | None, reference: float) -> Claim | None:
    """What a pooled figure's 95% interval lets a page say of its difference from `reference`:
    None without an interval (bets from one week or one market); TOO_EARLY under
    MIN_WEEKS_TO_CLAIM weeks or markets, whatever the interval; NOT_SHOWN when the interval
    holds the reference, or the figure is within half a unit of its shown precision
    (SHOWN_PLACES) of it, as a figure shown as the reference cannot be called different from it;
    else SHOWN."""
    if interval is None or interval.low is None or interval.high is None:
        return None
    # A t interval's df is G − 1, G the fewer of its weeks and markets: both must be enough.
    if min(interval.clusters, interval.markets) < MIN_WEEKS_TO_CLAIM:
        return TOO_EARLY
    if abs(interval.estimate - reference) < 0.5 * 10**-SHOWN_PLACES:
        return NOT_SHOWN
    if interval.low <= reference <= interval.high:
        return NOT_SHOWN
    return SHOWN


def _figure(row: ModelAnalytics, metric: Metric) -> float | None:
    return row.alpha if metric == "alpha" else row.brier


def _rank_value(row: ModelAnalytics, metric: Metric) -> float:
    value = _figure(row, metric)
    assert value is not None
    return -value if metric == "alpha" else value  # a higher Alpha, a lower Brier first


def _variance(row: ModelAnalytics, metric: Metric) -> float | None:
    if metric == "alpha":
        return row.power.delta_variance if row.power else None
    return row.brier_variance
