"""Intervals and tests across cohorts: Student t, cluster-robust and bootstrap (000 §5.2).

Cohorts are the independent units: every agent of a cohort sees the same markets in the
same week, so bets within one cohort share their luck. Each function therefore takes one
value (or one sum and count) per cohort and draws its uncertainty from the spread between
cohorts, never from the count of bets alone.

Student's t is computed here from the regularized incomplete beta function (Lentz's
continued fraction), so the project needs no scipy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike, NDArray

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
# quantiles (0.975 at each cohort count) for every row: each is computed once.
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
    """A pooled mean over `count` bets in `clusters` cohorts, with its interval.

    low, high and standard_error are None when fewer than two cohorts have bets.
    """

    estimate: float
    low: float | None
    high: float | None
    standard_error: float | None
    clusters: int
    count: int


def _clusters(
    sums: ArrayLike, counts: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    s = np.asarray(sums, dtype=np.float64)
    n = np.asarray(counts, dtype=np.float64)
    if s.ndim != 1 or n.ndim != 1 or len(s) != len(n):
        raise ValueError(f"sums and counts must be 1-d of equal length, got {s.shape}, {n.shape}")
    if not bool(np.all(np.isfinite(s))):
        raise ValueError("sums must be finite")
    if not bool(np.all((n >= 0.0) & (n == np.floor(n)) & np.isfinite(n))):
        raise ValueError("counts must be non-negative whole numbers")
    if bool(np.any((n == 0.0) & (s != 0.0))):
        raise ValueError("a cohort with no bets must have a sum of 0")
    kept = n > 0.0
    return s[kept], n[kept]


def _cluster_standard_error(s: NDArray[np.float64], n: NDArray[np.float64], mean: float) -> float:
    clusters = len(s)
    total = float(n.sum())
    squares = float(np.sum((s - mean * n) ** 2))
    return math.sqrt(clusters / (clusters - 1) * squares) / total


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")


def pooled_mean_interval(
    sums: ArrayLike, counts: ArrayLike, *, level: float = 0.95
) -> Interval | None:
    """Return the pooled mean of per-bet values with a cluster-robust t interval over cohorts.

    One entry per cohort: `sums[c]` is the sum of its per-bet values (Brier, δ, …) and
    `counts[c]` its number of bets; cohorts with no bets are ignored. The estimate is
    Σ sums / Σ counts, the leaderboard's pooled figure. Its standard error is the
    cluster-robust ratio-estimator one, SE² = C/(C − 1) · Σ_c (s_c − m·n_c)² / (Σ n)², and
    the interval estimate ± t_{(1+level)/2, C−1} · SE. With equal counts per cohort this is
    exactly the classic t interval of the cohort means, mean ± t · s/√C, the interval of
    000 §5.2 with t in place of its 1.96, which is too narrow for a handful of cohorts.

    Return None when there are no bets; low, high and standard_error are None with fewer
    than two cohorts. Raise ValueError for unequal lengths, non-finite sums, counts that are
    not non-negative whole numbers, a non-zero sum with no bets, or level outside (0, 1).
    """
    _check_level(level)
    s, n = _clusters(sums, counts)
    if len(s) == 0:
        return None
    total = int(n.sum())
    estimate = float(s.sum()) / float(n.sum())
    if len(s) < 2:
        return Interval(estimate, None, None, None, clusters=len(s), count=total)
    error = _cluster_standard_error(s, n, estimate)
    half = student_t_quantile((1.0 + level) / 2.0, len(s) - 1) * error
    return Interval(estimate, estimate - half, estimate + half, error, len(s), total)


def bootstrap_pooled_interval(
    sums: ArrayLike,
    counts: ArrayLike,
    *,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> Interval | None:
    """Return the pooled mean with a percentile bootstrap interval resampling whole cohorts.

    Same inputs and estimate as `pooled_mean_interval`. Each of `resamples` draws picks C
    cohorts with replacement and recomputes the pooled mean; low and high are the
    (1 − level)/2 and (1 + level)/2 quantiles of those means and standard_error their
    standard deviation. Deterministic for a `seed` (numpy PCG64). Return None when there
    are no bets; low, high and standard_error are None with fewer than two cohorts.
    Raise ValueError as `pooled_mean_interval` does, or for resamples < 1.
    """
    _check_level(level)
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples!r}")
    s, n = _clusters(sums, counts)
    if len(s) == 0:
        return None
    total = int(n.sum())
    estimate = float(s.sum()) / float(n.sum())
    if len(s) < 2:
        return Interval(estimate, None, None, None, clusters=len(s), count=total)
    generator = np.random.Generator(np.random.PCG64(seed))
    picks = generator.integers(0, len(s), size=(resamples, len(s)))
    means = s[picks].sum(axis=1) / n[picks].sum(axis=1)
    low, high = np.quantile(means, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    error = float(np.std(means, ddof=1)) if resamples > 1 else 0.0
    return Interval(estimate, float(low), float(high), error, len(s), total)


@dataclass(frozen=True)
class MeanTest:
    """A two-sided t test of a pooled mean against a null value, df = cohorts − 1."""

    mean: float
    standard_error: float
    t: float
    df: int
    p_value: float


def _t_and_p(difference: float, error: float, df: int) -> tuple[float, float]:
    if error == 0.0:
        # No spread between cohorts: any difference is certain, none is no evidence.
        if difference == 0.0:
            return 0.0, 1.0
        return math.copysign(math.inf, difference), 0.0
    t = difference / error
    return t, _t_two_sided(t, df)


def pooled_mean_test(sums: ArrayLike, counts: ArrayLike, *, null: float = 0.0) -> MeanTest | None:
    """Return the two-sided t test of the pooled mean against `null` over cohorts.

    Inputs as `pooled_mean_interval`; t = (pooled mean − null) / cluster-robust SE with
    C − 1 degrees of freedom, p in [0, 1]. With SE = 0, t = ±inf and p = 0 when the mean
    differs from null, t = 0 and p = 1 when it equals it. Return None with fewer than two
    cohorts with bets. Raise ValueError as `pooled_mean_interval` does, or for a non-finite
    null.
    """
    if not math.isfinite(null):
        raise ValueError(f"null must be finite, got {null!r}")
    s, n = _clusters(sums, counts)
    if len(s) < 2:
        return None
    mean = float(s.sum()) / float(n.sum())
    error = _cluster_standard_error(s, n, mean)
    df = len(s) - 1
    t, p = _t_and_p(mean - null, error, df)
    return MeanTest(mean=mean, standard_error=error, t=t, df=df, p_value=p)


@dataclass(frozen=True)
class PairedDifference:
    """A two-sided paired t test of a − b over `pairs` cohorts, df = pairs − 1."""

    mean_difference: float
    standard_error: float
    t: float
    df: int
    p_value: float
    pairs: int


def _finite_values(name: str, values: ArrayLike) -> NDArray[np.float64]:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-d, got shape {array.shape}")
    if not bool(np.all(np.isfinite(array))):
        raise ValueError(f"{name} must be finite")
    return array


def paired_difference_test(a: ArrayLike, b: ArrayLike) -> PairedDifference | None:
    """Return the two-sided paired t test of a − b, one pair per cohort.

    `a[i]` and `b[i]` are two models' values (Brier, Alpha, …) in cohort i. The standard
    error is sd(a − b)/√pairs, p is in [0, 1]; with SE = 0 the rule of `pooled_mean_test`
    applies. Return None with fewer than two pairs. Raise ValueError for unequal lengths or
    non-finite values.
    """
    x = _finite_values("a", a)
    y = _finite_values("b", b)
    if len(x) != len(y):
        raise ValueError(f"a and b differ in length: {len(x)}, {len(y)}")
    pairs = len(x)
    if pairs < 2:
        return None
    difference = x - y
    mean = math.fsum(difference.tolist()) / pairs
    error = float(np.std(difference, ddof=1)) / math.sqrt(pairs)
    t, p = _t_and_p(mean, error, pairs - 1)
    return PairedDifference(
        mean_difference=mean, standard_error=error, t=t, df=pairs - 1, p_value=p, pairs=pairs
    )


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
