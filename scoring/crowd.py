"""Crowd aggregates of several forecasts of one outcome (ForecastBench 004, Appendix E).

ForecastBench aggregates its LLM crowd by the median and by the geometric mean of odds
(which it also calls the geometric mean of log odds, Satopää et al. 2014): the mean of the
forecasts' log odds, mapped back to a probability. Both are the same number.
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
