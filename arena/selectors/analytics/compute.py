"""Analytics beyond the v1 leaderboard (issue 11), read from the resolved bets.

Clearly separate from the v1 figures (`standings.py`), whose definitions and default order do
not change. Each resolved bet is a forecast that its side wins (003 §3.4, in the side's terms):

- f = its implied confidence, b = the side-correct price its decision saw in the run's frozen
  snapshot (`Trade.price`, the bets export's `market_price`), x = 1 if its side won, else 0. A
  multi-outcome bet is a binary forecast on its outcome; cancelled bets are not scored.
- Brier (f − x)², market Brier (b − x)², Alpha δ = (b − x)² − (f − x)². A row's Alpha is the
  mean δ over its resolved bets, pooled like its Brier, so the bets export recomputes both.
- Intervals are across cohorts (one cluster per cohort, `scoring.statistics`): a cohort's bets
  share a week's news, so they are not independent draws.
- Rows are the leaderboard's: one per (model, offline or not); offline stand-ins are never
  pooled with the real models. The references (market consensus, the uniform random forecaster,
  the LLM crowd) are labelled pseudo-models, computed separately over real and offline rows.

The whole computation reads four queries and runs in one vectorised pass (bench/analytics.py);
`analytics()` keeps its answer until a bet is scored, a market resolves or a decision is made.
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Literal

import numpy as np
from django.core.cache import cache
from django.db import connection
from django.db.models import Exists, FloatField, OuterRef, QuerySet
from django.db.models.functions import Cast
from django.utils import timezone
from numpy.typing import NDArray

from agents.models import BenchmarkModel
from arena.models import Agent, Cohort, Decision, DecisionAttempt, SnapshotMarket, Trade
from arena.selectors.standings import offline_agent_ids
from markets.models import Market
from scoring.aggregates import RANDOM_BRIER, brier_skill_score
from scoring.alpha import RANDOM_UNIFORM_BRIER, bet_alphas, bets_to_separate, predictions_needed
from scoring.crowd import grouped_geometric_mean_odds, grouped_median
from scoring.difficulty import difficulty_adjusted_brier
from scoring.murphy import AlphaAnatomy, Murphy, alpha_anatomy, murphy_decomposition
from scoring.statistics import (
    MIN_BOOTSTRAP_COHORTS,
    Interval,
    MeanTest,
    PairedDifference,
    cell_mean_interval,
    grouped_bootstrap_intervals,
    paired_difference_test,
    pooled_mean_interval,
    pooled_mean_test,
    ratio_interval,
    share_positive,
)

DEFAULT_BINS = 10
MIN_BINS, MAX_BINS = 2, 50
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 20260423  # fixed: the same data gives the same interval on every request
POWER = 0.80
KAPPA = 0.05  # one-sided significance of the power analysis, as 003 §3.6.2
CACHE_SECONDS = 3600  # the key moves with the data; this bounds what it does not track
DIFFICULTY_MIN_ROWS = 3  # rows with bets in one fit of the market effects
CROWD_MIN_FORECASTS = 2  # models; a crowd of one is that model, not an aggregate

Metric = Literal["alpha", "brier"]

DEFINITIONS: list[tuple[str, str, str]] = [
    (
        "Alpha",
        "mean over resolved bets of δ = (b − x)² − (f − x)²: f the implied confidence, b the "
        "side-correct price the decision saw, x = 1 if the side won; above 0 beats the market",
        "Foresight Arena (003) §3.4, Definition 2",
    ),
    (
        "Market Brier",
        "mean of (b − x)² on the same bets: the market's price scored as the forecast",
        "003 §3.4",
    ),
    (
        "Coverage-adjusted Alpha",
        "Σ δ over every resolved market of the snapshots the agents saw ÷ the number of those "
        "markets; a market not bet on is imputed the market's price (δ = 0); 95% t interval "
        "clustered by cohort and market, the imputed zeros included",
        "ForecastBench (004) imputation, with 003's δ",
    ),
    (
        "Murphy decomposition",
        "Brier = UNC + REL − RES over K equal-width forecast bins: UNC = ō(1 − ō), REL = Σ nₖ"
        "(p̄ₖ − ōₖ)² ÷ N (calibration error), RES = Σ nₖ(ōₖ − ō)² ÷ N (discrimination); exact "
        "when forecasts are constant within bins, the residual is shown otherwise",
        "003 §3.5, Theorem 1 (Murphy, 1973)",
    ),
    (
        "Anatomy of Alpha",
        "Alpha = (RES − RES of the market) + (REL of the market − REL) on the same bets",
        "003 §3.5, Corollary 1",
    ),
    (
        "Brier skill score",
        "1 − Brier ÷ reference: against the 50% guesser (0.25), and against the market's "
        "Brier on the same bets; 95% t intervals from the Brier's, and from the ratio Brier ÷ "
        "market Brier linearised (clustered by cohort and market)",
        "001 §1.5; 003 §3.4",
    ),
    (
        "Interval (t)",
        "pooled figure ± t₀.₉₇₅,G−1 × SE across cohorts; SE clustered two ways, by cohort and "
        "by market (concurrent cohorts bet on the same markets, whose outcomes are drawn "
        "once), G the fewer of cohorts and markets",
        "000 §5.2, with Student's t; Cameron, Gelbach & Miller (2011) two-way clustering",
    ),
    (
        "Interval (bootstrap)",
        f"2.5th–97.5th percentile of the pooled figure over {BOOTSTRAP_RESAMPLES} seeded "
        "resampled worlds weighting every cohort and every market by a Poisson(1) draw "
        "(pigeonhole bootstrap, "
        "conservative: about twice the variance where bets are independent); "
        f"shown from {MIN_BOOTSTRAP_COHORTS} cohorts",
        "004 (bootstrapped intervals); Owen (2007)",
    ),
    (
        "p (Alpha ≠ 0)",
        "two-sided p of t = Alpha ÷ SE (the interval's) with G − 1 degrees of freedom; none "
        "when the SE is 0",
        "003 §6.6",
    ),
    ("Beat%", "share of cohorts whose Alpha is above 0", "003 §6.2"),
    (
        "Pairwise difference",
        "difference of two models' pooled figures over the cohorts both played, its SE "
        "clustered by cohort and market (so a shared cohort or market pairs their bets), "
        "two-sided p; no correction for the many pairs compared",
        "004 (pairwise comparisons)",
    ),
    (
        "Var(δ)",
        "4q(1 − q)(b − p)² for one bet; the observed variance of δ is shown per model",
        "003 §3.6.1, Proposition 2",
    ),
    (
        "Bets to detect an edge",
        "n ≥ ((z₁₋κ + z_π) ÷ α*)² × 4q̄(1 − q̄) × mean (b − p)², κ = 0.05 one-sided, π = 0.80; "
        "with a row's own Alpha as α* it is a rough, after-the-fact figure that assumes "
        "independent bets",
        "003 §3.6.2, Proposition 3",
    ),
    (
        "Difficulty-adjusted Brier",
        "Brier with market fixed effects estimated over all agents' bets (agents choose "
        "different markets): mean over the row's bets of (Brier − the market's effect); a "
        "contrast between rows on the Brier scale, which can leave [0, 1] where rows share "
        f"few markets; shown where at least {DIFFICULTY_MIN_ROWS} rows are fitted together",
        "ForecastBench leaderboard practice (not in the 004 paper)",
    ),
    (
        "LLM crowd",
        "per market and run, the median and the geometric mean of odds of the lineup's "
        "forecasts (as the YES probability for a binary market), scored as a pseudo-model",
        "004 (LLM crowd aggregates)",
    ),
    (
        "Random (uniform)",
        "a forecast drawn uniformly on [0, 1]: expected Brier 1/3 on any outcome",
        "003 §5.4",
    ),
    ("Market consensus", "the price as the forecast: Alpha 0 by construction", "003 §5.4"),
]


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
    murphy: Murphy | None = None
    market_murphy: Murphy | None = None
    anatomy: AlphaAnatomy | None = None
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
    power: PowerFigures | None = None
    brier_variance: float | None = None  # observed per-bet variance of the Brier score
    per_cohort: list[CohortFigures] = field(default_factory=list)
    categories: list[CategoryFigures] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, bool]:
        return (self.model.internal_id, self.offline)

    @property
    def alpha_significant(self) -> bool | None:
        """Whether the t interval of Alpha excludes 0 (None without an interval)."""
        return _excludes(self.alpha_interval, 0.0)

    @property
    def brier_significant(self) -> bool | None:
        """Whether the t interval of Brier excludes 0.25, the 50% guesser's (None without an
        interval)."""
        return _excludes(self.brier_interval, RANDOM_BRIER)


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
        return _skill(self.brier, self.market_brier)


@dataclass(frozen=True)
class Comparison:
    """Two rows' per-cohort figures compared on the cohorts both bet in."""

    first: tuple[str, bool]  # the rows' (stable id, offline)
    second: tuple[str, bool]
    metric: Metric
    test: PairedDifference


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

    def rows_of(self, model: BenchmarkModel) -> list[ModelAnalytics]:
        return [row for row in self.rows if row.model.pk == model.pk]

    def separation(self, metric: Metric = "alpha", *, offline: bool = False) -> Separation | None:
        """The two best LLM rows (real, or offline) by `metric`, and what separates them."""
        ranked = [
            r
            for r in self.rows
            if not r.model.is_baseline
            # An outside agent is on the main board only once staff admitted it (issue 13).
            and not r.model.on_outside_board
            and r.offline == offline
            and _figure(r, metric) is not None
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


def _within(interval: Interval | None, lowest: float, highest: float) -> Interval | None:
    """The interval with its bounds kept to the figure's range (a Brier is never below 0): a
    t interval is symmetric, and near a bound of the range it would pass it."""
    if interval is None or interval.low is None or interval.high is None:
        return interval
    return replace(interval, low=max(interval.low, lowest), high=min(interval.high, highest))


def _scaled(interval: Interval | None, factor: float) -> Interval | None:
    """The interval of factor × x (factor > 0) from the interval of x."""
    if interval is None:
        return None

    def times(value: float | None) -> float | None:
        return None if value is None else value * factor

    return replace(
        interval,
        estimate=interval.estimate * factor,
        low=times(interval.low),
        high=times(interval.high),
        standard_error=times(interval.standard_error),
    )


def _one_minus(interval: Interval | None) -> Interval | None:
    """The interval of 1 − x from the interval of x (a skill score from a Brier ratio)."""
    if interval is None:
        return None
    return replace(
        interval,
        estimate=1.0 - interval.estimate,
        low=None if interval.high is None else 1.0 - interval.high,
        high=None if interval.low is None else 1.0 - interval.low,
    )


def _excludes(interval: Interval | None, reference: float) -> bool | None:
    if interval is None or interval.low is None or interval.high is None:
        return None
    return not (interval.low <= reference <= interval.high)


def _skill(brier: float | None, reference: float | None) -> float | None:
    if brier is None or reference is None or not 0.0 < reference <= 1.0:
        return None
    return brier_skill_score(brier=brier, reference=reference)


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


# ---------------------------------------------------------------------------------------------
# Reading the bets


@dataclass
class _Bets:
    """The resolved bets of the scope, as columns (one entry per bet)."""

    agent: NDArray[np.int64]
    row: NDArray[np.int64]  # index into the row keys
    cohort: NDArray[np.int64]  # cohort number
    run: NDArray[np.int64]
    market: NDArray[np.int64]
    binary: NDArray[np.bool_]  # a two-outcome market (Yes/No, Over/Under, team v team)
    second_side: NDArray[np.bool_]  # the bet is on the second outcome of a binary market
    side: list[str]
    category: NDArray[np.int64]  # index into `categories`
    in_universe: NDArray[np.bool_]  # the market was among the top 500 its run showed
    forecast: NDArray[np.float64]
    price: NDArray[np.float64]
    outcome: NDArray[np.float64]
    brier: NDArray[np.float64] = field(init=False)
    market_brier: NDArray[np.float64] = field(init=False)
    delta: NDArray[np.float64] = field(init=False)

    def __post_init__(self) -> None:
        self.brier, self.market_brier, self.delta = bet_alphas(
            self.forecast, self.price, self.outcome
        )


def _scope(cohorts: str) -> QuerySet[Agent]:
    agents = Agent.objects.all()
    if cohorts == "completed":
        agents = agents.filter(cohort__status=Cohort.Status.COMPLETED)
    return agents


def _scored_bets(agents: QuerySet[Agent]) -> QuerySet[Trade]:
    return Trade.objects.filter(
        agent_id__in=agents.order_by().values("pk"),
        kind=Trade.Kind.BUY,
        status=Trade.Status.EXECUTED,
        brier_score__isnull=False,
        side_won__isnull=False,
        implied_confidence__isnull=False,
        price__isnull=False,
    )


def _read_bets(
    agents: QuerySet[Agent], row_of_agent: dict[int, int], cohort_of_agent: dict[int, int]
) -> tuple[_Bets, list[str]]:
    trades = _scored_bets(agents)
    universe = SnapshotMarket.objects.filter(
        run_id=OuterRef("decision__run_id"), market_id=OuterRef("market_id"), rank__isnull=False
    )
    rows = list(
        trades.order_by()
        # Read as floats by the database: a Decimal per price, converted back to a float here,
        # was a third of the read on SQLite.
        .annotate(in_universe=Exists(universe), price_float=Cast("price", FloatField()))
        .values_list(
            "agent_id",
            "decision__run_id",
            "market_id",
            "side",
            "price_float",
            "implied_confidence",
            "side_won",
            "in_universe",
        )
    )
    # Each market's category and, for a two-outcome market, its first outcome: the frame its
    # questions are asked in (YES of a Yes/No market; a bet's side is "YES", "NO" or the name).
    markets: dict[int, tuple[str, str | None]] = {
        pk: (
            category or "",
            str(outcomes[0]).lower() if isinstance(outcomes, list) and len(outcomes) == 2 else None,
        )
        for pk, category, outcomes in Market.objects.filter(
            pk__in=trades.order_by().values("market_id")
        ).values_list("pk", "category", "outcomes")
    }
    categories = sorted({category for category, _ in markets.values()})
    category_index = {name: number for number, name in enumerate(categories)}
    # Columns at once (one transpose), not a generator per column over 40,000 tuples.
    columns = list(zip(*rows, strict=True)) if rows else [()] * 8
    agent_ids, run_ids, market_ids, sides, prices, confidences, won, in_universe = columns
    agent = np.array(agent_ids, dtype=np.int64)
    first_outcome = [markets[m][1] for m in market_ids]
    category_of = {pk: category_index[category] for pk, (category, _) in markets.items()}
    binary = np.array([first is not None for first in first_outcome], dtype=np.bool_)
    side_list = list(sides)
    bets = _Bets(
        agent=agent,
        row=np.array([row_of_agent[a] for a in agent_ids], dtype=np.int64),
        cohort=np.array([cohort_of_agent[a] for a in agent_ids], dtype=np.int64),
        run=np.array([r or 0 for r in run_ids], dtype=np.int64),
        market=np.array(market_ids, dtype=np.int64),
        binary=binary,
        second_side=np.array(
            [
                first is not None and side.lower() != first
                for first, side in zip(first_outcome, side_list, strict=True)
            ],
            dtype=np.bool_,
        ),
        side=side_list,
        category=np.array([category_of[m] for m in market_ids], dtype=np.int64),
        in_universe=np.array(in_universe, dtype=np.bool_),
        forecast=np.array(confidences, dtype=np.float64),  # never null (filtered)
        price=np.array(prices, dtype=np.float64),  # never null (filtered)
        outcome=np.array(won, dtype=np.float64),
    )
    return bets, categories


# ---------------------------------------------------------------------------------------------
# Computing


def _per_cohort(
    cohort: NDArray[np.int64], values: NDArray[np.float64]
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]]:
    """(cohort numbers, Σ values, bets) per cohort, cohorts ascending."""
    numbers, inverse = np.unique(cohort, return_inverse=True)
    sums = np.bincount(inverse, weights=values, minlength=len(numbers)).astype(np.float64)
    counts = np.bincount(inverse, minlength=len(numbers)).astype(np.int64)
    return numbers, sums, counts


def _fill_row(
    row: ModelAnalytics,
    bets: _Bets,
    mask: NDArray[np.bool_],
    categories: list[str],
    bins: int,
) -> None:
    forecast, price, outcome = bets.forecast[mask], bets.price[mask], bets.outcome[mask]
    brier, market_brier, delta = bets.brier[mask], bets.market_brier[mask], bets.delta[mask]
    n = int(mask.sum())
    row.bets = n
    if n == 0:
        return
    row.brier = float(brier.mean())
    row.market_brier = float(market_brier.mean())
    row.alpha = float(delta.mean())
    numbers, alpha_sums, counts = _per_cohort(bets.cohort[mask], delta)
    _, brier_sums, _ = _per_cohort(bets.cohort[mask], brier)
    _, market_sums, _ = _per_cohort(bets.cohort[mask], market_brier)
    cohort, market = bets.cohort[mask], bets.market[mask]
    row.alpha_interval = _within(pooled_mean_interval(delta, cohort, market), -1.0, 1.0)
    row.brier_interval = _within(pooled_mean_interval(brier, cohort, market), 0.0, 1.0)
    row.alpha_test = pooled_mean_test(delta, cohort, market)
    cohort_alphas = (alpha_sums / counts).tolist()
    row.beat_share = share_positive(cohort_alphas)
    row.cohorts_scored = len(numbers)
    cumulative_sums, cumulative_counts = np.cumsum(alpha_sums), np.cumsum(counts)
    row.per_cohort = [
        CohortFigures(
            cohort=int(numbers[i]),
            bets=int(counts[i]),
            brier=float(brier_sums[i] / counts[i]),
            market_brier=float(market_sums[i] / counts[i]),
            alpha=float(alpha_sums[i] / counts[i]),
            cumulative_alpha=float(cumulative_sums[i] / cumulative_counts[i]),
            cumulative_bets=int(cumulative_counts[i]),
        )
        for i in range(len(numbers))
    ]
    row.anatomy = alpha_anatomy(forecast, price, outcome, bins=bins)
    if row.anatomy is not None:
        row.murphy, row.market_murphy = row.anatomy.agent, row.anatomy.market
    row.skill_vs_random = _skill(row.brier, RANDOM_BRIER)
    row.skill_vs_market = _skill(row.brier, row.market_brier)
    row.skill_vs_random_interval = _one_minus(_scaled(row.brier_interval, 1.0 / RANDOM_BRIER))
    row.skill_vs_market_interval = _one_minus(ratio_interval(brier, market_brier, cohort, market))
    delta_variance = float(delta.var(ddof=1)) if n > 1 else None
    row.brier_variance = float(brier.var(ddof=1)) if n > 1 else None
    mean_squared_deviation = float(((price - forecast) ** 2).mean())
    base_rate = float(outcome.mean())
    needed = None
    if row.alpha != 0.0 and mean_squared_deviation > 0.0 and 0.0 < base_rate < 1.0:
        needed = predictions_needed(
            alpha=abs(row.alpha),
            kappa=KAPPA,
            power=POWER,
            q=base_rate,
            mean_squared_deviation=mean_squared_deviation,
        )
    row.power = PowerFigures(
        bets=n,
        alpha=row.alpha,
        base_rate=base_rate,
        mean_squared_deviation=mean_squared_deviation,
        delta_variance=delta_variance,
        bets_needed=needed,
    )
    row.categories = []
    category = bets.category[mask]
    for index in np.unique(category).tolist():
        in_category = category == index
        k = int(in_category.sum())
        murphy = murphy_decomposition(forecast[in_category], outcome[in_category], bins=bins)
        category_brier = float(brier[in_category].mean())
        category_market = float(market_brier[in_category].mean())
        row.categories.append(
            CategoryFigures(
                category=categories[index] or "Uncategorised",
                bets=k,
                brier=category_brier,
                market_brier=category_market,
                alpha=float(delta[in_category].mean()),
                win_rate=float(outcome[in_category].mean()),
                skill_vs_market=_skill(category_brier, category_market),
                reliability=murphy.reliability if murphy else None,
                resolution=murphy.resolution if murphy else None,
            )
        )
    row.categories.sort(key=lambda c: (-c.bets, c.category))


def _coverage(
    agents: QuerySet[Agent],
    bets: _Bets,
    row_of_agent: dict[int, int],
    cohort_of_agent: dict[int, int],
    rows: list[ModelAnalytics],
) -> None:
    """Coverage-adjusted Alpha: every resolved market of the top 500 a run showed is a question
    for every agent that decided in that run; one it did not bet on is imputed δ = 0 (the
    market's price as its forecast), and its bets on one question count once (their mean). Its
    interval is clustered by cohort and market like the others, from each row's questions
    counted per cell (cohort × market) rather than written out one by one."""
    agent_ids = agents.order_by().values("pk")
    universe: dict[int, list[int]] = defaultdict(list)
    for run_id, market_id in (
        SnapshotMarket.objects.filter(
            rank__isnull=False,
            market__resolution=Market.Resolution.RESOLVED,
            run_id__in=Decision.objects.filter(agent_id__in=agent_ids).order_by().values("run_id"),
        )
        .order_by()
        .values_list("run_id", "market_id")
    ):
        universe[run_id].append(market_id)
    shown = {run_id: np.array(ids, dtype=np.int64) for run_id, ids in universe.items()}
    seen: dict[int, list[tuple[int, NDArray[np.int64]]]] = defaultdict(list)
    for agent_id, run_id in (
        Decision.objects.filter(agent_id__in=agent_ids, run_id__isnull=False)
        .order_by()
        .values_list("agent_id", "run_id")
        .distinct()
    ):
        if run_id in shown:
            seen[row_of_agent[agent_id]].append((cohort_of_agent[agent_id], shown[run_id]))
    # δ per question (agent, run, market), each question's bets weighted to count once.
    mask = bets.in_universe
    keys = np.stack([bets.agent[mask], bets.run[mask], bets.market[mask]], axis=1)
    _, inverse, per_question = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    weighted = bets.delta[mask] / per_question[inverse.reshape(-1)]
    bet_rows, bet_cohorts, bet_markets = bets.row[mask], bets.cohort[mask], bets.market[mask]
    for index, row in enumerate(rows):
        if not seen.get(index):
            continue
        parts = seen[index]
        cohorts = np.concatenate([np.full(len(ids), c, dtype=np.int64) for c, ids in parts])
        markets = np.concatenate([ids for _, ids in parts])
        # A cell (cohort, market) as one integer: the row's questions counted per cell.
        base = int(max(markets.max(), bets.market.max() if len(bets.market) else 0)) + 1
        cells, counts = np.unique(cohorts * base + markets, return_counts=True)
        mine = np.flatnonzero(bet_rows == index)
        at = np.searchsorted(cells, bet_cohorts[mine] * base + bet_markets[mine])
        # A scored bet on a market not (or no longer) counted resolved is not a question: the
        # numerator takes only the questions its denominator counts.
        counted = at < len(cells)
        counted[counted] = cells[at[counted]] == (bet_cohorts * base + bet_markets)[mine][counted]
        sums = np.zeros(len(cells))
        np.add.at(sums, at[counted], weighted[mine[counted]])
        row.coverage_markets = int(counts.sum())
        row.coverage_interval = _within(
            cell_mean_interval(sums, counts, cells // base, cells % base), -1.0, 1.0
        )
        if row.coverage_interval is not None:
            row.coverage_alpha = row.coverage_interval.estimate


def _difficulty(bets: _Bets, rows: list[ModelAnalytics]) -> None:
    """Difficulty-adjusted Brier: market fixed effects estimated over every agent's bets, the
    real rows (LLMs and baselines) in one fit and the offline stand-ins in another, so an
    offline answer never moves a real row's figure."""
    offline_rows = np.array([r.offline for r in rows], dtype=np.bool_)
    for offline in (False, True):
        mask = offline_rows[bets.row] == offline
        # Two forecasters' effects are only their difference, split evenly: too few to read
        # as each one's Brier on markets of average difficulty.
        if len(np.unique(bets.row[mask])) < DIFFICULTY_MIN_ROWS:
            continue
        _, market_codes = np.unique(bets.market[mask], return_inverse=True)
        adjusted = difficulty_adjusted_brier(
            bets.brier[mask], bets.row[mask], market_codes.reshape(-1), forecaster_count=len(rows)
        )
        for index, row in enumerate(rows):
            if row.offline == offline and not math.isnan(adjusted[index]):
                row.difficulty_adjusted_brier = float(adjusted[index])


def _references(bets: _Bets, rows: list[ModelAnalytics], bins: int) -> list[ReferenceAnalytics]:
    """The market consensus, the random forecaster and the LLM crowd, each over the questions
    the LLM rows (real, then separately offline) bet on. A question is a market in a run, as
    the probability of YES for a binary market and of the bet's outcome otherwise."""
    references: list[ReferenceAnalytics] = []
    # The LLM crowd is the lineup's: an outside team's agent is not one of its LLMs.
    llm_rows = np.array(
        [not r.model.is_baseline and not r.model.is_outside for r in rows], dtype=np.bool_
    )
    offline_rows = np.array([r.offline for r in rows], dtype=np.bool_)
    if len(bets.row) == 0:
        return references
    # A binary market's questions are asked of its first outcome (YES of a Yes/No market): a
    # bet on the second with confidence c forecasts 1 − c that the first wins; its price and
    # outcome flip with it, so every figure of the question is the same in either frame.
    flip = bets.second_side
    # A question's frame: the first outcome of a binary market (-1), else the outcome bet on.
    outcome_codes: dict[str, int] = {}
    frame = np.fromiter(
        (
            -1 if binary else outcome_codes.setdefault(side, len(outcome_codes))
            for binary, side in zip(bets.binary.tolist(), bets.side, strict=True)
        ),
        np.int64,
        len(bets.side),
    )
    forecast = np.where(flip, 1.0 - bets.forecast, bets.forecast)
    price = np.where(flip, 1.0 - bets.price, bets.price)
    outcome = np.where(flip, 1.0 - bets.outcome, bets.outcome)
    for offline in (False, True):
        mask = llm_rows[bets.row] & (offline_rows[bets.row] == offline)
        if not mask.any():
            continue
        members = np.flatnonzero(mask)
        keys = np.stack([bets.run[members], bets.market[members], frame[members]], axis=1)
        _, first_of, question = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        question = question.reshape(-1)
        first = members[first_of]
        # The crowd is of models, not of bets: a model with agents in several concurrent
        # cohorts (or two bets on one question) gives one forecast, their mean.
        voters, voter_of = np.unique(
            np.stack([question, bets.row[members]], axis=1), axis=0, return_inverse=True
        )
        voter_of = voter_of.reshape(-1)
        votes = np.bincount(voter_of, weights=forecast[members]) / np.bincount(voter_of)
        voter_question = voters[:, 0]
        models_per_question = np.bincount(voter_question, minlength=len(first))
        q_price, q_outcome = price[first], outcome[first]
        market_brier = float(((q_price - q_outcome) ** 2).mean())
        label = " — on the offline stand-ins' questions" if offline else ""
        references.append(
            ReferenceAnalytics(
                key="market",
                label="Market consensus" + label,
                rule="the frozen price the decisions saw, as the forecast",
                offline=offline,
                questions=len(first),
                brier=market_brier,
                market_brier=market_brier,
                alpha=0.0,
                murphy=murphy_decomposition(q_price, q_outcome, bins=bins),
            )
        )
        references.append(
            ReferenceAnalytics(
                key="random",
                label="Random (uniform)" + label,
                rule="a forecast drawn uniformly on [0, 1]; its expected figures",
                offline=offline,
                questions=len(first),
                brier=RANDOM_UNIFORM_BRIER,
                market_brier=market_brier,
                alpha=market_brier - RANDOM_UNIFORM_BRIER,
                murphy=None,
                expected=True,
            )
        )
        crowd = models_per_question >= CROWD_MIN_FORECASTS
        if not crowd.any():
            continue
        c_price, c_outcome = price[first[crowd]], outcome[first[crowd]]
        for key, name, aggregate in (
            ("crowd-median", "LLM crowd, median", grouped_median),
            ("crowd-geomean", "LLM crowd, geometric mean of odds", grouped_geometric_mean_odds),
        ):
            forecasts = aggregate(votes, voter_question)[crowd]
            c_brier, c_market, c_delta = bet_alphas(forecasts, c_price, c_outcome)
            references.append(
                ReferenceAnalytics(
                    key=key,
                    label=name + label,
                    rule=(
                        f"the {name.split(', ')[1]} of the lineup's forecasts on a market in a "
                        f"run, where at least {CROWD_MIN_FORECASTS} models bet on it (a "
                        "model's agents in concurrent cohorts count once, their mean)"
                    ),
                    offline=offline,
                    questions=int(crowd.sum()),
                    brier=float(c_brier.mean()),
                    market_brier=float(c_market.mean()),
                    alpha=float(c_delta.mean()),
                    murphy=murphy_decomposition(forecasts, c_outcome, bins=bins),
                )
            )
    return references


def _comparisons(bets: _Bets, rows: list[ModelAnalytics]) -> list[Comparison]:
    """Every pair of ranked rows of one kind (real with real, offline with offline) and one
    board (the main one, or the outside agents' own) on Alpha and on Brier, over the cohorts
    both played (`paired_difference_test`)."""
    comparisons: list[Comparison] = []
    llms = [(i, r) for i, r in enumerate(rows) if not r.model.is_baseline and r.bets]
    metrics: tuple[tuple[Metric, NDArray[np.float64]], ...] = (
        ("alpha", bets.delta),
        ("brier", bets.brier),
    )
    for number, (i, first) in enumerate(llms):
        for j, second in llms[number + 1 :]:
            if first.offline != second.offline:
                continue
            if first.model.on_outside_board != second.model.on_outside_board:
                continue
            both = (bets.row == i) | (bets.row == j)
            for metric, values in metrics:
                test = paired_difference_test(
                    values[both], bets.cohort[both], bets.market[both], bets.row[both] == i
                )
                if test is not None:
                    comparisons.append(Comparison(first.key, second.key, metric, test))
    return comparisons


def compute_analytics(*, cohorts: str = "all", bins: int = DEFAULT_BINS) -> Analytics:
    """Return the analytics of every leaderboard row over `cohorts` ("all", or "completed":
    only the agents of completed cohorts), with `bins` forecast bins, from the database."""
    agents = _scope(cohorts)
    lineup = list(BenchmarkModel.objects.all())
    lineup_order = {m.pk: number for number, m in enumerate(lineup)}
    by_pk = {m.pk: m for m in lineup}
    agent_rows = list(agents.order_by().values_list("pk", "model_id", "cohort__number"))
    offline = offline_agent_ids(agents.order_by().values("pk"))
    played = {(model_id, pk in offline) for pk, model_id, _ in agent_rows}
    # As the leaderboard (`standings.model_rows`): an active model with no agent in scope has
    # one empty real row; one whose agents are all offline stand-ins has its offline row only.
    seen = {model_id for model_id, _ in played}
    keys = sorted(
        played | {(m.pk, False) for m in lineup if m.active and m.pk not in seen},
        key=lambda k: (lineup_order[k[0]], k[1]),
    )
    index = {key: number for number, key in enumerate(keys)}
    rows = [ModelAnalytics(model=by_pk[model_id], offline=off) for model_id, off in keys]
    row_of_agent = {pk: index[(model_id, pk in offline)] for pk, model_id, _ in agent_rows}
    cohort_of_agent = {pk: number for pk, _, number in agent_rows}
    bets, categories = _read_bets(agents, row_of_agent, cohort_of_agent)
    for number, row in enumerate(rows):
        _fill_row(row, bets, bets.row == number, categories, bins)
    # Every row's bootstrap in the same resampled worlds: one set of draws for them all.
    bootstraps = grouped_bootstrap_intervals(
        [bets.delta, bets.brier],
        bets.row,
        bets.cohort,
        bets.market,
        resamples=BOOTSTRAP_RESAMPLES,
        seed=BOOTSTRAP_SEED,
    )
    for number, (alpha_bootstrap, brier_bootstrap) in bootstraps.items():
        rows[number].alpha_bootstrap = _within(alpha_bootstrap, -1.0, 1.0)
        rows[number].brier_bootstrap = _within(brier_bootstrap, 0.0, 1.0)
    _coverage(agents, bets, row_of_agent, cohort_of_agent, rows)
    _difficulty(bets, rows)
    return Analytics(
        cohorts=cohorts,
        bins=bins,
        rows=rows,
        references=_references(bets, rows, bins),
        comparisons=_comparisons(bets, rows),
        computed_at=timezone.now(),
    )


def analytics_watermark() -> str:
    """A mark that moves when the analytics may change: a bet scored (the latest scoring time:
    a bet is scored at its settlement, so the latest only moves forward), a market resolved or
    cancelled (their count and latest time), a decision made or a round of one retried in
    place (which agents are offline, which runs they saw), a cohort completed, the lineup
    changed. One query of index reads: every page that shows the analytics pays it on every
    request. An edit that moves none of these (a market's category) shows within
    `CACHE_SECONDS`."""
    trade, market = Trade._meta.db_table, Market._meta.db_table
    decision, attempt = Decision._meta.db_table, DecisionAttempt._meta.db_table
    cohort, lineup = Cohort._meta.db_table, BenchmarkModel._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            # Only our own table names are formatted in; the values are parameters.
            f"SELECT (SELECT MAX(scored_at) FROM {trade}),"  # nosec B608
            f" (SELECT COUNT(*) FROM {market} WHERE resolution <> %s),"
            f" (SELECT MAX(resolved_at) FROM {market} WHERE resolution <> %s),"
            f" (SELECT MAX(id) FROM {decision}),"
            f" (SELECT MAX(id) FROM {attempt}),"
            f" (SELECT COUNT(*) FROM {cohort} WHERE status = %s),"
            f" (SELECT COUNT(*) FROM {lineup}),"
            f" (SELECT COUNT(*) FROM {lineup} WHERE active = %s)",
            [Market.Resolution.OPEN, Market.Resolution.OPEN, Cohort.Status.COMPLETED, True],
        )
        row = cursor.fetchone()
    return "-".join("" if part is None else str(part) for part in row)


def analytics(*, cohorts: str = "all", bins: int = DEFAULT_BINS) -> Analytics:
    """Return `compute_analytics`, kept until `analytics_watermark` moves."""
    # The mark holds timestamps (spaces, colons): hashed, the key suits every cache backend.
    mark = hashlib.sha256(analytics_watermark().encode()).hexdigest()[:32]
    key = f"analytics:v1:{cohorts}:{bins}:{mark}"
    found = cache.get(key)
    if isinstance(found, Analytics):
        return found
    result = compute_analytics(cohorts=cohorts, bins=bins)
    cache.set(key, result, CACHE_SECONDS)
    return result


def model_analytics(
    *, model: BenchmarkModel, cohorts: str = "all", bins: int = DEFAULT_BINS
) -> list[ModelAnalytics]:
    """Return `model`'s rows of `analytics` (real first, then offline)."""
    return analytics(cohorts=cohorts, bins=bins).rows_of(model)


def reliability_points(murphy: Murphy | None) -> Sequence[tuple[float, float, int]]:
    """(mean forecast, observed frequency, bets) of each non-empty bin: a reliability diagram."""
    if murphy is None:
        return []
    return [
        (b.mean_forecast, b.observed_frequency, b.count)
        for b in murphy.bins
        if b.count and b.mean_forecast is not None and b.observed_frequency is not None
    ]
