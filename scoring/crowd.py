"""Crowd aggregates of several forecasts of one outcome (ForecastBench 004, Appendix E).

ForecastBench aggregates its LLM crowd by the median, the geometric mean and the geometric
mean of log odds (Satopää et al. 2014); here the median and the geometric mean of odds: the
mean of the forecasts' log odds, mapped back to a probability.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from scoring.alpha import probabilities


def _forecasts(values: ArrayLike) -> NDArray[np.float64]:
    array = probabilities("forecasts", values)
    if len(array) == 0:
        raise ValueError("forecasts must not be empty")
    return array


def crowd_median(forecasts: ArrayLike) -> float:
    """Return the median of the forecasts, in [0, 1] (the mean of the middle two when even).

    Raise ValueError when there are none or one is outside [0, 1].
    """
    return float(np.median(_forecasts(forecasts)))


def crowd_geometric_mean_odds(forecasts: ArrayLike, *, clip: float = 0.001) -> float:
    """Return 1 / (1 + exp(−mean(logit p))), the geometric mean of the forecasts' odds.

    Each forecast is first clipped to [clip, 1 − clip]: a bet's implied confidence reaches
    exactly 0 or 1, whose log odds are infinite, and one such forecast would otherwise
    decide the crowd alone. The result is in [clip, 1 − clip]. Raise ValueError when there
    are no forecasts, one is outside [0, 1], or clip is outside (0, 0.5).
    """
    if not 0.0 < clip < 0.5:
        raise ValueError(f"clip must be in (0, 0.5), got {clip!r}")
    p = np.clip(_forecasts(forecasts), clip, 1.0 - clip)
    mean_log_odds = float(np.mean(np.log(p) - np.log1p(-p)))
    return 1.0 / (1.0 + math.exp(-mean_log_odds))


def _groups(values: ArrayLike, groups: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    p = probabilities("forecasts", values)
    codes = np.asarray(groups, dtype=np.intp)
    if codes.shape != p.shape:
        raise ValueError(f"forecasts and groups differ in length: {len(p)}, {codes.size}")
    if codes.size and codes.min() < 0:
        raise ValueError("group codes must not be negative")
    return p, codes


def grouped_median(forecasts: ArrayLike, groups: ArrayLike) -> NDArray[np.float64]:
    """Return `crowd_median` of each group's forecasts at once (a year's crowd in one pass).

    `groups` are integer codes 0..G−1, one per forecast; entry g of the result is group g's
    median, NaN for a code no forecast carries. Raise ValueError as `crowd_median` does, or
    for unequal lengths or a negative code.
    """
    p, codes = _groups(forecasts, groups)
    size = int(codes.max()) + 1 if codes.size else 0
    order = np.lexsort((p, codes))  # by group, then by forecast within the group
    ordered = p[order]
    counts = np.bincount(codes, minlength=size)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])) if size else counts
    result = np.full(size, np.nan)
    filled = counts > 0
    low = starts[filled] + (counts[filled] - 1) // 2
    high = starts[filled] + counts[filled] // 2
    result[filled] = (ordered[low] + ordered[high]) / 2.0
    return result


def grouped_geometric_mean_odds(
    forecasts: ArrayLike, groups: ArrayLike, *, clip: float = 0.001
) -> NDArray[np.float64]:
    """Return `crowd_geometric_mean_odds` of each group's forecasts at once (see
    `grouped_median` for `groups`); NaN for a code no forecast carries."""
    if not 0.0 < clip < 0.5:
        raise ValueError(f"clip must be in (0, 0.5), got {clip!r}")
    p, codes = _groups(forecasts, groups)
    size = int(codes.max()) + 1 if codes.size else 0
    p = np.clip(p, clip, 1.0 - clip)
    counts = np.bincount(codes, minlength=size)
    sums = np.bincount(codes, weights=np.log(p) - np.log1p(-p), minlength=size)
    result = np.full(size, np.nan)
    filled = counts > 0
    result[filled] = 1.0 / (1.0 + np.exp(-sums[filled] / counts[filled]))
    return result
