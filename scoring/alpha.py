"""Alpha: a bet's Brier score against the market's, and how many bets it takes (003 §3.4, §3.6).

A bet's forecast f and the market price b it traded against are both probabilities of
the same outcome x. Its Alpha δ = (b − x)² − (f − x)² is the Brier score the market would
have had minus the bet's own: positive when the bet beat the market, 0 when it echoed it.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike, NDArray

from scoring.brier import brier_score

# Expected Brier score of a forecast drawn uniformly from [0, 1], whatever the outcome:
# ∫₀¹ (p − x)² dp = 1/3 for x = 0 and x = 1 alike (003 §5.4).
RANDOM_UNIFORM_BRIER = 1.0 / 3.0


def probabilities(name: str, values: ArrayLike) -> NDArray[np.float64]:
    """Return `values` as a 1-d float array, checked to lie in [0, 1].

    Raise ValueError when they are not 1-d or a value is outside [0, 1] (NaN included).
    """
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-d, got shape {array.shape}")
    if not bool(np.all((array >= 0.0) & (array <= 1.0))):  # NaN fails both comparisons
        raise ValueError(f"{name} must be in [0, 1]")
    return array


def outcomes_array(values: ArrayLike) -> NDArray[np.float64]:
    """Return the outcomes as a 1-d float array of 0.0 and 1.0.

    Raise ValueError when they are not 1-d or an outcome is other than 0 or 1.
    """
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"outcomes must be 1-d, got shape {array.shape}")
    if not bool(np.all((array == 0.0) | (array == 1.0))):
        raise ValueError("outcomes must be 0 or 1")
    return array


def alpha_score(*, forecast: float, market_price: float, outcome: int) -> float:
    """Return a bet's Alpha δ = (b − x)² − (f − x)², in [−1, 1]; above 0 beats the market.

    `forecast` f and `market_price` b are probabilities of the outcome in [0, 1]; `outcome`
    x is 1 if it happened, else 0. Raise ValueError for a probability outside [0, 1] or an
    outcome other than 0 or 1.
    """
    market = brier_score(forecast=market_price, outcome=outcome)
    return market - brier_score(forecast=forecast, outcome=outcome)


def bet_alphas(
    forecasts: ArrayLike, prices: ArrayLike, outcomes: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Return (brier, market_brier, delta) per bet, three float arrays as long as the input.

    brier = (f − x)², market_brier = (b − x)², delta = market_brier − brier. Raise ValueError
    for a forecast or price outside [0, 1], an outcome other than 0 or 1, or unequal lengths.
    """
    f = probabilities("forecasts", forecasts)
    b = probabilities("prices", prices)
    x = outcomes_array(outcomes)
    if not len(f) == len(b) == len(x):
        raise ValueError(
            f"forecasts, prices and outcomes differ in length: {len(f)}, {len(b)}, {len(x)}"
        )
    brier = (f - x) ** 2
    market_brier = (b - x) ** 2
    return brier, market_brier, market_brier - brier


def _check_unit(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:  # also rejects NaN
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")


def alpha_variance(*, q: float, market_price: float, forecast: float) -> float:
    """Return Var(δ) = 4q(1 − q)(b − p)² of one bet's Alpha (003 Proposition 2), in [0, 1].

    `q` is the probability the outcome happens; `market_price` b and `forecast` p are the
    probabilities the market and the bet state. Raise ValueError for any outside [0, 1].
    """
    _check_unit("q", q)
    _check_unit("market_price", market_price)
    _check_unit("forecast", forecast)
    return 4.0 * q * (1.0 - q) * (market_price - forecast) ** 2


def _z_sum(kappa: float, power: float) -> float:
    if not 0.0 < kappa < 1.0:
        raise ValueError(f"kappa must be in (0, 1), got {kappa!r}")
    if not 0.0 < power < 1.0:
        raise ValueError(f"power must be in (0, 1), got {power!r}")
    normal = NormalDist()
    return normal.inv_cdf(1.0 - kappa) + normal.inv_cdf(power)


def predictions_needed(
    *,
    alpha: float,
    kappa: float = 0.05,
    power: float = 0.80,
    q: float = 0.5,
    mean_squared_deviation: float = 0.15**2,
) -> float:
    """Return the resolved bets n needed to detect a true Alpha `alpha` (003 equation 5).

    n = ((z_{1−κ} + z_π) / α*)² · 4q(1 − q) · mean((b − p)²), unrounded, for a one-sided
    test at significance `kappa` with power `power`; `q` is the mean outcome probability and
    `mean_squared_deviation` the mean squared gap between bet and market. With the defaults
    n ≈ 0.139 / α*² (equation 6). The result is positive (0 when q is 0 or 1 or the bets
    echo the market). Raise ValueError for alpha ≤ 0 or not finite, kappa or power outside
    (0, 1), q outside [0, 1], or mean_squared_deviation outside [0, 1].
    """
    if not (math.isfinite(alpha) and alpha > 0.0):
        raise ValueError(f"alpha must be positive and finite, got {alpha!r}")
    _check_unit("q", q)
    _check_unit("mean_squared_deviation", mean_squared_deviation)
    z = _z_sum(kappa, power)
    return (z / alpha) ** 2 * 4.0 * q * (1.0 - q) * mean_squared_deviation


def rounds_needed(*, predictions: float, per_round: int) -> int:
    """Return the rounds (cohorts) needed for `predictions` resolved bets: ⌈⌈n⌉ / k⌉.

    `per_round` k is the resolved bets one round yields. Raise ValueError when predictions
    is negative or not finite, or per_round is not positive.
    """
    if not (math.isfinite(predictions) and predictions >= 0.0):
        raise ValueError(f"predictions must be non-negative and finite, got {predictions!r}")
    if per_round < 1:
        raise ValueError(f"per_round must be positive, got {per_round!r}")
    return -(-math.ceil(predictions) // per_round)


def bets_to_separate(
    *,
    difference: float,
    variance_a: float,
    variance_b: float,
    kappa: float = 0.05,
    power: float = 0.80,
) -> float | None:
    """Return the resolved bets each of two models needs to tell their means apart.

    For a one-sided test at significance `kappa` with power `power` of a true difference
    `difference` between two independent means (per-bet δ or Brier, same units), whose
    per-bet variances are `variance_a` and `variance_b`:
    n = ((z_{1−κ} + z_π) / |difference|)² · (variance_a + variance_b), unrounded, ≥ 0.
    Return None when the difference is 0 (no number of bets suffices). Raise ValueError for
    a difference that is not finite, a negative or non-finite variance, or kappa or power
    outside (0, 1).
    """
    if not math.isfinite(difference):
        raise ValueError(f"difference must be finite, got {difference!r}")
    for name, variance in (("variance_a", variance_a), ("variance_b", variance_b)):
        if not (math.isfinite(variance) and variance >= 0.0):
            raise ValueError(f"{name} must be non-negative and finite, got {variance!r}")
    z = _z_sum(kappa, power)
    if difference == 0.0:
        return None
    return (z / abs(difference)) ** 2 * (variance_a + variance_b)
