"""Intervals and tests of pooled per-bet figures: Student t, cluster-robust and bootstrap
(000 §5.2).

Bets are not independent draws. Every active cohort decides in the same weekly run, on the
same frozen snapshot, so the bets of one week share its news whichever cohort made them; bets
on one market share its single outcome, across weeks too. Each function therefore takes every
bet's value with its week (the weekly run it was decided in) and its market, and draws its
uncertainty from the spread between those clusters (two-way), never from the count of bets
alone.

Student's t is computed here from the regularized incomplete beta function (Lentz's
continued fraction), so the project needs no scipy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike, NDArray

from scoring.codes import dense_codes

_EPSILON = 1e-16
_TINY = 1e-300
_MAX_TERMS = 100_000


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    # The continued fraction of I_x(a, b) by the modified Lentz method (Numerical Recipes
    # §6.4); it converges fast for x < (a + 1) / (a + b + 2), which the caller ensures.
    c = 1.0
    d = 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    fraction = d
    for m in range(1, _MAX_TERMS + 1):
        m2 = 2 * m
        for numerator in (
            m * (b - m) * x / ((a + m2 - 1.0) * (a + m2)),
            -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            fraction *= c * d
        if abs(c * d - 1.0) < _EPSILON:
            return fraction
    raise ArithmeticError(f"incomplete beta did not converge for a={a}, b={b}, x={x}")


def regularized_incomplete_beta(a: float, b: float, x: float) -> float:
    """Return I_x(a, b), the regularized incomplete beta function, in [0, 1].

    Raise ValueError unless a > 0, b > 0 and x is in [0, 1].
    """
    if not (a > 0.0 and b > 0.0):
        raise ValueError(f"a and b must be positive, got a={a!r}, b={b!r}")
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"x must be in [0, 1], got {x!r}")
    if x in (0.0, 1.0):
        return x
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_continued_fraction(a, b, x) / a
    return 1.0 - front * _beta_continued_fraction(b, a, 1.0 - x) / b


def _check_df(df: float) -> None:
    if not (df > 0.0 and math.isfinite(df)):
        raise ValueError(f"df must be positive and finite, got {df!r}")


def _t_tail(t: float, df: float) -> float:
    # P(T > |t|), computed directly so that far tails keep their precision.
    if math.isinf(t):
        return 0.0
    return 0.5 * regularized_incomplete_beta(df / 2.0, 0.5, df / (df + t * t))


def student_t_cdf(t: float, df: float) -> float:
    """Return P(T ≤ t) for Student's t with `df` degrees of freedom, in [0, 1].

    `t` may be ±inf. Raise ValueError for NaN t or df not positive and finite.
    """
    _check_df(df)
    if math.isnan(t):
        raise ValueError("t must not be NaN")
    tail = _t_tail(t, df)
    return 1.0 - tail if t > 0.0 else tail


def _t_two_sided(t: float, df: float) -> float:
    return min(1.0, 2.0 * _t_tail(t, df))


# A bisection of a continued fraction is costly, and the analytics ask for the same few
# quantiles (0.975 at each count of weeks) for every row: each is computed once.
@lru_cache(maxsize=4096)
def student_t_quantile(p: float, df: float) -> float:
    """Return the t with P(T ≤ t) = p for Student's t with `df` degrees of freedom.

    Accurate to 1e-10 (relative, for large t); ±inf at p = 1 and p = 0. Raise ValueError
    for p outside [0, 1] or df not positive and finite.
    """
    _check_df(df)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be in [0, 1], got {p!r}")
    if p == 0.0:
        return -math.inf
    if p == 1.0:
        return math.inf
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -student_t_quantile(1.0 - p, df)
    # Solve P(T > t) = 1 − p for t > 0, bracketing then bisecting: the tail is monotone, and
    # comparing tails rather than CDFs keeps small upper probabilities exact.
    target = 1.0 - p
    low, high = 0.0, max(1.0, NormalDist().inv_cdf(p))
    while _t_tail(high, df) > target:
        low, high = high, high * 2.0
    for _ in range(400):
        middle = 0.5 * (low + high)
        if _t_tail(middle, df) > target:
            low = middle
        else:
            high = middle
        if high - low <= 1e-13 * max(1.0, high):
            break
    return 0.5 * (low + high)


@dataclass(frozen=True)
class Interval:
    """A pooled mean over `count` bets in `clusters` weeks on `markets` markets, with its
    interval. low, high and standard_error are None with fewer than two weeks (or markets)."""

    estimate: float
    low: float | None
    high: float | None
    standard_error: float | None
    clusters: int
    count: int
    markets: int = 0
    # A bootstrap interval's Monte-Carlo error: the larger of its two ends' 95% half-widths
    # over fresh sets of resamples (`quantile_mc_error`); None for a t interval (exact).
    mc_error: float | None = None


def quantile_mc_error(draws: ArrayLike, p: float, *, z: float = 1.959963984540054) -> float:
    """Return the 95% Monte-Carlo half-width of the empirical p-quantile of R resampled draws:
    the number of draws at or below the true quantile is Binomial(R, p), so the quantile lies
    between the order statistics of ranks Rp ∓ z√(Rp(1 − p)) with 95% probability; half their
    distance is the half-width. A bound shown to more places than this is noise of the
    resampling, not of the data. Raise ValueError for fewer than two draws or p outside
    (0, 1)."""
    x = np.sort(_finite_values("draws", draws))
    if len(x) < 2:
        raise ValueError("quantile_mc_error needs at least two draws")
    _check_level(p)
    spread = z * math.sqrt(len(x) * p * (1.0 - p))
    below = max(0, math.floor(len(x) * p - spread) - 1)
    above = min(len(x) - 1, math.ceil(len(x) * p + spread) - 1)
    return float(x[above] - x[below]) / 2.0


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")


def _codes(name: str, values: ArrayLike, length: int) -> NDArray[np.intp]:
    """Dense codes 0..G−1 of the clusters the bets fall in (any sortable labels)."""
    labels = np.asarray(values)
    if labels.shape != (length,):
        raise ValueError(f"{name} must be 1-d with one entry per bet, got shape {labels.shape}")
    return dense_codes(labels)


def _bets(
    values: ArrayLike, weeks: ArrayLike, markets: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.intp], NDArray[np.intp]]:
    v = _finite_values("values", values)
    return v, _codes("weeks", weeks, len(v)), _codes("markets", markets, len(v))


def _groups_of(codes: NDArray[np.intp]) -> int:
    return int(codes.max()) + 1 if len(codes) else 0


def _clustered(psi: NDArray[np.float64], codes: NDArray[np.intp], groups: int) -> float:
    """G/(G − 1) · Σ_g (Σ_{i∈g} ψᵢ)² over the non-empty groups of dense-enough `codes`."""
    counts = np.bincount(codes, minlength=groups)
    present = int(np.count_nonzero(counts))
    if present < 2:
        return 0.0
    sums = np.bincount(codes, weights=psi, minlength=groups)
    return present / (present - 1) * float(np.sum(sums**2))


def clustered_variance(influence: ArrayLike, clusters: ArrayLike) -> float:
    """Return the cluster-robust variance of a statistic Σ ψᵢ: G/(G − 1) · Σ_g (Σ_{i∈g} ψᵢ)².

    `influence` holds each bet's ψᵢ (its part of the statistic's deviation, e.g.
    (vᵢ − mean)/N for a pooled mean) and `clusters` each bet's cluster label; bets of one
    cluster may be correlated in any way, clusters are independent. 0 with fewer than two
    clusters. Raise ValueError for unequal lengths or non-finite influence.
    """
    psi = _finite_values("influence", influence)
    codes = _codes("clusters", clusters, len(psi))
    return _clustered(psi, codes, _groups_of(codes))


def _cell_codes(c: NDArray[np.intp], m: NDArray[np.intp]) -> NDArray[np.intp]:
    """Codes of the (week, market) cells of the bets coded `c` and `m`."""
    weeks, markets = _groups_of(c), _groups_of(m)
    cells = c * markets + m
    if weeks * markets > 4 * len(c) + 1024:
        # A sparse table (most cells hold no bet): count only the cells that hold bets, not a
        # bin for every week × market.
        cells = _codes("cells", cells, len(cells))
    return cells


def _two_way(
    psi: NDArray[np.float64],
    c: NDArray[np.intp],
    m: NDArray[np.intp],
    cells: NDArray[np.intp] | None = None,
) -> float:
    by_week = _clustered(psi, c, _groups_of(c))
    by_market = _clustered(psi, m, _groups_of(m))
    if cells is None:
        cells = _cell_codes(c, m)
    by_cell = _clustered(psi, cells, _groups_of(cells))
    # Cameron, Gelbach and Miller's estimator can come out below either one-way variance (or
    # at or below 0) with few clusters: a second way of clustering never makes the interval
    # narrower than either one alone, so the larger of the three is taken.
    return max(by_week + by_market - by_cell, by_week, by_market)


def two_way_variance(influence: ArrayLike, weeks: ArrayLike, markets: ArrayLike) -> float:
    """Return the variance of Σ ψᵢ clustered two ways, by week and by market.

    `weeks` holds each bet's weekly run (every cohort active that week decides in it, on the
    same snapshot and the same news) and `markets` its market (one outcome for every bet on
    it, whichever week), so neither clustering alone is honest. Cameron, Gelbach and Miller's
    two-way estimator V_week + V_market − V_week×market, floored at the larger one-way
    variance: with few clusters the estimator can fall below either (or to 0 and below), and
    a second way of clustering must never narrow the interval.
    """
    psi = _finite_values("influence", influence)
    return _two_way(psi, _codes("weeks", weeks, len(psi)), _codes("markets", markets, len(psi)))


def two_way_variances(
    influences: ArrayLike, weeks: ArrayLike, markets: ArrayLike
) -> NDArray[np.float64]:
    """Return `two_way_variance` of each row of `influences` (K × N, one row per statistic of
    the same N bets), the bets' weeks and markets coded once for them all."""
    psi = np.asarray(influences, dtype=np.float64)
    if psi.ndim != 2:
        raise ValueError(f"influences must be 2-d, one row per statistic, got shape {psi.shape}")
    if not bool(np.all(np.isfinite(psi))):
        raise ValueError("influences must be finite")
    c = _codes("weeks", weeks, psi.shape[1])
    m = _codes("markets", markets, psi.shape[1])
    cells = _cell_codes(c, m)
    return np.array([_two_way(row, c, m, cells) for row in psi], dtype=np.float64)


def pooled_mean_interval(
    values: ArrayLike, weeks: ArrayLike, markets: ArrayLike, *, level: float = 0.95
) -> Interval | None:
    """Return the pooled mean of per-bet values with a t interval clustered by week and market.

    One entry per bet in each argument: its value (Brier, δ, …), its week and its market.
    The estimate is the plain mean, the leaderboard's pooled figure. Its standard error comes
    from `two_way_variance` with ψᵢ = (vᵢ − mean)/N, and the interval is
    estimate ± t_{(1+level)/2, G−1} · SE with G the fewer of weeks and markets: 000 §5.2's t
    interval across independent units (t in place of its 1.96, which is too narrow for a
    handful of them), the units being the weekly runs, widened where weeks share markets.
    With one bet per week on distinct markets it is the classic t interval of the week values.

    Return None when there are no bets; low, high and standard_error are None with fewer than
    two weeks or markets. Raise ValueError for unequal lengths, non-finite values or level
    outside (0, 1).
    """
    _check_level(level)
    v, c, m = _bets(values, weeks, markets)
    if len(v) == 0:
        return None
    estimate = math.fsum(v.tolist()) / len(v)
    week_count, market_count = _groups_of(c), _groups_of(m)
    groups = min(week_count, market_count)
    if groups < 2:
        return Interval(estimate, None, None, None, week_count, len(v), market_count)
    error = math.sqrt(_two_way((v - estimate) / len(v), c, m))
    half = student_t_quantile((1.0 + level) / 2.0, groups - 1) * error
    return Interval(
        estimate, estimate - half, estimate + half, error, week_count, len(v), market_count
    )


def within_range(interval: Interval | None, lowest: float, highest: float) -> Interval | None:
    """Return the interval with its ends kept inside the figure's range [lowest, highest] (a
    Brier score is never below 0): a t interval is symmetric, and near an end of the range
    with few weeks it passes it. The estimate and standard error are left as they are."""
    if interval is None or interval.low is None or interval.high is None:
        return interval
    return replace(interval, low=max(interval.low, lowest), high=min(interval.high, highest))


def cell_mean_interval(
    sums: ArrayLike,
    counts: ArrayLike,
    weeks: ArrayLike,
    markets: ArrayLike,
    *,
    level: float = 0.95,
) -> Interval | None:
    """Return a pooled mean given per cell (week × market) as Σ values and a count, with the
    t interval of `pooled_mean_interval` (clustered by week and market).

    One entry per cell: the sum of its values, how many values it holds, its week and its
    market. For figures over many values that are mostly 0 — a coverage-adjusted Alpha imputes
    δ = 0 on every market not bet on — without writing out every zero. The estimate is
    Σ sums ÷ Σ counts; `count` of the result is Σ counts. Cells with a count of 0 are ignored.
    Return None when there are no values. Raise ValueError for unequal lengths, non-finite
    sums, counts that are not non-negative whole numbers, or level outside (0, 1).
    """
    _check_level(level)
    totals, c, m = _bets(sums, weeks, markets)
    n = _finite_values("counts", counts)
    if n.shape != totals.shape:
        raise ValueError("counts must have one entry per cell")
    if not bool(np.all((n >= 0.0) & (n == np.floor(n)))):
        raise ValueError("counts must be non-negative whole numbers")
    kept = n > 0.0
    totals, n = totals[kept], n[kept]
    c, m = _codes("weeks", c[kept], len(n)), _codes("markets", m[kept], len(n))
    values = int(n.sum())
    if values == 0:
        return None
    # Most cells of a coverage figure sum to 0: summed exactly, they add nothing (unless every
    # one is 0, whose sign is then kept as fsum gives it).
    nonzero = totals[totals != 0.0]
    estimate = math.fsum((nonzero if len(nonzero) else totals).tolist()) / values
    week_count, market_count = _groups_of(c), _groups_of(m)
    groups = min(week_count, market_count)
    if groups < 2:
        return Interval(estimate, None, None, None, week_count, values, market_count)
    error = math.sqrt(_two_way((totals - estimate * n) / values, c, m))
    half = student_t_quantile((1.0 + level) / 2.0, groups - 1) * error
    return Interval(
        estimate, estimate - half, estimate + half, error, week_count, values, market_count
    )


def ratio_interval(
    numerators: ArrayLike,
    denominators: ArrayLike,
    weeks: ArrayLike,
    markets: ArrayLike,
    *,
    level: float = 0.95,
) -> Interval | None:
    """Return Σ numerators ÷ Σ denominators over the bets with a t interval clustered by week
    and market (the ratio linearised: ψᵢ = (nᵢ − R·dᵢ) ÷ Σ d).

    For a ratio of two pooled figures of the same bets, such as a Brier score over the market's
    Brier on those bets (a skill score against the market is 1 − that ratio). Same clusters,
    degrees of freedom and None rules as `pooled_mean_interval`; also None when Σ denominators
    is 0. Raise ValueError for unequal lengths, non-finite values or level outside (0, 1).
    """
    _check_level(level)
    top, c, m = _bets(numerators, weeks, markets)
    bottom = _finite_values("denominators", denominators)
    if bottom.shape != top.shape:
        raise ValueError("denominators must have one entry per bet")
    total = math.fsum(bottom.tolist())
    if len(top) == 0 or total == 0.0:
        return None
    estimate = math.fsum(top.tolist()) / total
    week_count, market_count = _groups_of(c), _groups_of(m)
    groups = min(week_count, market_count)
    if groups < 2:
        return Interval(estimate, None, None, None, week_count, len(top), market_count)
    error = math.sqrt(_two_way((top - estimate * bottom) / total, c, m))
    half = student_t_quantile((1.0 + level) / 2.0, groups - 1) * error
    return Interval(
        estimate, estimate - half, estimate + half, error, week_count, len(top), market_count
    )


MIN_BOOTSTRAP_WEEKS = 5  # a percentile bootstrap of fewer clusters claims too much
MIN_WEEKS_TO_CLAIM = 10
"""Below this many weeks a figure keeps its interval but makes no claim of a difference
("too early to tell"): a t test with df = G − 1 under 9 rests on a handful of clusters, whose
variance estimate is itself too noisy to trust a p-value from."""


@dataclass(frozen=True)
class MeanTest:
    """A two-sided t test of a pooled mean against a null value, df = G − 1 (G the fewer of
    weeks and markets). t and p_value are None when the standard error is 0: values that
    never vary across clusters carry no evidence either way."""

    mean: float
    standard_error: float
    t: float | None
    df: int
    p_value: float | None


def _t_and_p(difference: float, error: float, df: int) -> tuple[float | None, float | None]:
    if error == 0.0:
        return None, None
    t = difference / error
    return t, _t_two_sided(t, df)


def pooled_mean_test(
    values: ArrayLike, weeks: ArrayLike, markets: ArrayLike, *, null: float = 0.0
) -> MeanTest | None:
    """Return the two-sided t test of the pooled mean against `null`.

    Inputs and standard error as `pooled_mean_interval`; t = (mean − null)/SE with G − 1
    degrees of freedom, p in [0, 1]. Return None with fewer than two weeks or markets.
    Raise ValueError as `pooled_mean_interval` does, or for a non-finite null.
    """
    if not math.isfinite(null):
        raise ValueError(f"null must be finite, got {null!r}")
    v, c, m = _bets(values, weeks, markets)
    groups = min(_groups_of(c), _groups_of(m))
    if groups < 2:
        return None
    mean = math.fsum(v.tolist()) / len(v)
    error = math.sqrt(_two_way((v - mean) / len(v), c, m))
    t, p = _t_and_p(mean - null, error, groups - 1)
    return MeanTest(mean=mean, standard_error=error, t=t, df=groups - 1, p_value=p)


@dataclass(frozen=True)
class PairedDifference:
    """Two forecasters' pooled means compared on the weeks both played: their difference,
    its two-way clustered standard error, t, df and two-sided p (None when the error is 0)."""

    mean_difference: float
    standard_error: float
    t: float | None
    df: int
    p_value: float | None
    pairs: int  # the weeks both played


def _finite_values(name: str, values: ArrayLike) -> NDArray[np.float64]:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-d, got shape {array.shape}")
    if not bool(np.all(np.isfinite(array))):
        raise ValueError(f"{name} must be finite")
    return array


def paired_difference_test(
    values: ArrayLike, weeks: ArrayLike, markets: ArrayLike, first: ArrayLike
) -> PairedDifference | None:
    """Return the test of mean(first forecaster's values) − mean(second's), paired by week.

    One entry per bet of either forecaster: its value, week, market and whether it is the
    first forecaster's (`first`, booleans). Only the weeks both forecasters have bets in
    are kept. The difference of the pooled means has ψᵢ = (vᵢ − m₁)/N₁ for the first's bets and
    −(vᵢ − m₂)/N₂ for the second's; clustered by week and by market (`two_way_variance`),
    the two forecasters' bets of one week, or on one market, offset each other: that is the
    pairing, and it keeps the bet-weighted difference the leaderboard shows. df = G − 1, G
    the fewer of shared weeks and markets. Return None with fewer than two shared weeks
    or markets. Raise ValueError for unequal lengths or non-finite values.
    """
    return paired_difference_tests([values], weeks, markets, first)[0]


def paired_difference_tests(
    columns: Sequence[ArrayLike], weeks: ArrayLike, markets: ArrayLike, first: ArrayLike
) -> list[PairedDifference | None]:
    """Return `paired_difference_test` of each of `columns` (values of the same bets: a
    forecaster pair's Alpha and Brier, say), the bets' weeks and markets coded once."""
    values = [_finite_values("values", column) for column in columns]
    length = len(values[0]) if values else 0
    if any(len(v) != length for v in values):
        raise ValueError("the columns must have one entry per bet each")
    c, m = _codes("weeks", weeks, length), _codes("markets", markets, length)
    mine = np.asarray(first, dtype=np.bool_)
    if mine.shape != (length,):
        raise ValueError(f"first must have one entry per bet, got shape {mine.shape}")
    week_count = _groups_of(c)
    shared = (np.bincount(c[mine], minlength=week_count) > 0) & (
        np.bincount(c[~mine], minlength=week_count) > 0
    )
    keep = shared[c]
    mine = mine[keep]
    kept = int(np.count_nonzero(keep))
    c, m = _codes("weeks", c[keep], kept), _codes("markets", m[keep], kept)
    groups = min(_groups_of(c), _groups_of(m))
    if groups < 2:
        return [None for _ in values]
    cells = _cell_codes(c, m)
    tests: list[PairedDifference | None] = []
    for v in (column[keep] for column in values):
        a, b = v[mine], v[~mine]
        mean_a, mean_b = math.fsum(a.tolist()) / len(a), math.fsum(b.tolist()) / len(b)
        psi = np.where(mine, (v - mean_a) / len(a), -(v - mean_b) / len(b))
        error = math.sqrt(_two_way(psi, c, m, cells))
        difference = mean_a - mean_b
        t, p = _t_and_p(difference, error, groups - 1)
        tests.append(
            PairedDifference(
                mean_difference=difference,
                standard_error=error,
                t=t,
                df=groups - 1,
                p_value=p,
                pairs=int(shared.sum()),
            )
        )
    return tests


def share_positive(values: ArrayLike) -> float | None:
    """Return the share of values above 0, in [0, 1] (Beat%: cohorts with positive Alpha).

    Return None when there are no values. Raise ValueError for non-1-d or NaN values.
    """
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"values must be 1-d, got shape {array.shape}")
    if bool(np.any(np.isnan(array))):
        raise ValueError("values must not be NaN")
    if len(array) == 0:
        return None
    return int(np.count_nonzero(array > 0.0)) / len(array)


def holm_adjusted(p_values: Sequence[float | None]) -> list[float | None]:
    """Return Holm's step-down adjusted p-values (Holm 1979), in the order given: the k-th
    smallest of m p-values is multiplied by m − k + 1, each kept at least the one before it,
    at most 1. A p-value of None (no test) stays None and is not counted among the m."""
    tested = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    for p, _ in tested:
        if not (math.isfinite(p) and 0.0 <= p <= 1.0):
            raise ValueError(f"a p-value is in [0, 1], got {p!r}")
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    m = len(tested)
    for k, (p, index) in enumerate(tested):
        running = max(running, min(1.0, (m - k) * p))
        adjusted[index] = running
    return adjusted
