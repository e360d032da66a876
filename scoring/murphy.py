"""Murphy's decomposition of the Brier score and the anatomy of Alpha (003 §3.5).

Theorem 1: over N forecasts sorted into K bins, Brier = UNC + REL − RES, where
UNC = ō(1 − ō) depends on the outcomes only, REL (reliability, calibration error) is the
count-weighted squared gap between each bin's mean forecast and its observed frequency,
and RES (resolution) the count-weighted squared gap between each bin's observed frequency
and the base rate ō. The identity is exact when forecasts are constant within each bin;
otherwise the within-bin spread leaves a small `residual`, reported rather than hidden.

Corollary 1: on the same bets the agent and the market share UNC, so
Alpha = (RES_agent − RES_market) + (REL_market − REL_agent).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from scoring.alpha import outcomes_array, probabilities


@dataclass(frozen=True)
class CalibrationBin:
    """One forecast bin [lower, upper): its bets, mean forecast and observed frequency.

    The mean forecast and observed frequency are in [0, 1], None when the bin is empty.
    """

    lower: float
    upper: float
    count: int
    mean_forecast: float | None
    observed_frequency: float | None


@dataclass(frozen=True)
class Murphy:
    """Brier = UNC + REL − RES + residual over `count` forecasts (003 Theorem 1)."""

    count: int
    brier: float
    uncertainty: float
    reliability: float
    resolution: float
    bins: tuple[CalibrationBin, ...]

    @property
    def residual(self) -> float:
        """Return brier − (UNC + REL − RES): the within-bin terms, 0 for bin-constant forecasts."""
        return self.brier - (self.uncertainty + self.reliability - self.resolution)


def _bin_indices(forecasts: NDArray[np.float64], bins: int) -> NDArray[np.intp]:
    # Bin k is [k/K, (k+1)/K); a forecast of exactly 1.0 belongs to the last bin.
    # The small nudge keeps a forecast on a bin edge in its bin: 0.58 × 50 is 28.999999999999996.
    return np.minimum(np.floor(forecasts * bins + 1e-9), bins - 1).astype(np.intp)


def _decompose(forecasts: NDArray[np.float64], outcomes: NDArray[np.float64], bins: int) -> Murphy:
    count = len(forecasts)
    index = _bin_indices(forecasts, bins)
    counts = np.bincount(index, minlength=bins)
    forecast_sums = np.bincount(index, weights=forecasts, minlength=bins)
    outcome_sums = np.bincount(index, weights=outcomes, minlength=bins)
    filled = counts > 0
    mean_forecast = np.divide(forecast_sums, counts, out=np.zeros(bins), where=filled)
    observed = np.divide(outcome_sums, counts, out=np.zeros(bins), where=filled)
    base_rate = math.fsum(outcomes.tolist()) / count
    reliability = float(np.sum(counts * (mean_forecast - observed) ** 2)) / count
    resolution = float(np.sum(counts * (observed - base_rate) ** 2)) / count
    calibration = tuple(
        CalibrationBin(
            lower=k / bins,
            upper=(k + 1) / bins,
            count=int(counts[k]),
            mean_forecast=float(mean_forecast[k]) if filled[k] else None,
            observed_frequency=float(observed[k]) if filled[k] else None,
        )
        for k in range(bins)
    )
    return Murphy(
        count=count,
        brier=math.fsum(((forecasts - outcomes) ** 2).tolist()) / count,
        uncertainty=base_rate * (1.0 - base_rate),
        reliability=reliability,
        resolution=resolution,
        bins=calibration,
    )


def _check_bins(bins: int) -> None:
    if bins < 1:
        raise ValueError(f"bins must be at least 1, got {bins!r}")


def murphy_decomposition(
    forecasts: ArrayLike, outcomes: ArrayLike, *, bins: int = 10
) -> Murphy | None:
    """Return the Murphy decomposition of the forecasts' Brier score, None when there are none.

    `forecasts` are probabilities in [0, 1] and `outcomes` 0 or 1, one each per bet; `bins`
    equal-width bins split [0, 1], bin k = [k/K, (k+1)/K) with the last closed at 1.0. Every
    bin is listed, an empty one with count 0. UNC is in [0, 0.25]; REL and RES in [0, 1].
    Raise ValueError for bins < 1, a forecast outside [0, 1], an outcome other than 0 or 1,
    or unequal lengths.
    """
    _check_bins(bins)
    f = probabilities("forecasts", forecasts)
    x = outcomes_array(outcomes)
    if len(f) != len(x):
        raise ValueError(f"forecasts and outcomes differ in length: {len(f)}, {len(x)}")
    if len(f) == 0:
        return None
    return _decompose(f, x, bins)


@dataclass(frozen=True)
class AlphaAnatomy:
    """Alpha = resolution gain + reliability gap + residual on shared bets (003 Corollary 1)."""

    alpha: float
    resolution_gain: float
    reliability_gap: float
    agent: Murphy
    market: Murphy

    @property
    def residual(self) -> float:
        """Return alpha − (resolution gain + reliability gap): the two sides' within-bin terms."""
        return self.alpha - (self.resolution_gain + self.reliability_gap)


def alpha_anatomy(
    forecasts: ArrayLike, prices: ArrayLike, outcomes: ArrayLike, *, bins: int = 10
) -> AlphaAnatomy | None:
    """Return Alpha split into resolution gain and reliability gap, None when there are no bets.

    The bets' `forecasts` and the market `prices` they traded at are decomposed over the same
    `outcomes` (so the same UNC): resolution_gain = RES_agent − RES_market, reliability_gap
    = REL_market − REL_agent, alpha = mean δ = market Brier − agent Brier, in [−1, 1].
    Raise ValueError for bins < 1, a probability outside [0, 1], an outcome other than 0
    or 1, or unequal lengths.
    """
    _check_bins(bins)
    f = probabilities("forecasts", forecasts)
    b = probabilities("prices", prices)
    x = outcomes_array(outcomes)
    if not len(f) == len(b) == len(x):
        raise ValueError(
            f"forecasts, prices and outcomes differ in length: {len(f)}, {len(b)}, {len(x)}"
        )
    if len(f) == 0:
        return None
    agent = _decompose(f, x, bins)
    market = _decompose(b, x, bins)
    delta = (b - x) ** 2 - (f - x) ** 2
    return AlphaAnatomy(
        alpha=math.fsum(delta.tolist()) / len(delta),
        resolution_gain=agent.resolution - market.resolution,
        reliability_gap=market.reliability - agent.reliability,
        agent=agent,
        market=market,
    )
