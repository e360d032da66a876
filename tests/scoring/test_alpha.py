"""Alpha, its variance and the sample sizes of 003 §3.4, §3.6 and Table 1."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring.alpha import (
    RANDOM_UNIFORM_BRIER,
    alpha_score,
    alpha_variance,
    bet_alphas,
    bets_to_separate,
    predictions_needed,
    rounds_needed,
)
from scoring.brier import brier_score

probability = st.floats(min_value=0.0, max_value=1.0)
outcome = st.sampled_from([0, 1])


def test_figure_2a_agent_beats_the_market_by_0_12() -> None:
    brier, market_brier, delta = bet_alphas([0.80], [0.60], [1])
    assert brier[0] == pytest.approx(0.04, abs=1e-12)
    assert market_brier[0] == pytest.approx(0.16, abs=1e-12)
    assert delta[0] == pytest.approx(0.12, abs=1e-12)
    assert alpha_score(forecast=0.80, market_price=0.60, outcome=1) == pytest.approx(
        0.12, abs=1e-12
    )


def test_alpha_is_negative_when_the_market_was_closer() -> None:
    assert alpha_score(forecast=0.80, market_price=0.60, outcome=0) == pytest.approx(
        0.36 - 0.64, abs=1e-12
    )


@pytest.mark.parametrize("x", [0, 1])
def test_a_uniform_random_forecast_scores_one_third(x: int) -> None:
    forecasts = np.random.default_rng(2026).uniform(0.0, 1.0, size=200_000)
    mean_brier = float(np.mean((forecasts - x) ** 2))
    assert abs(mean_brier - RANDOM_UNIFORM_BRIER) < 0.005


@given(probability, outcome)
def test_echoing_the_market_scores_exactly_zero(price: float, x: int) -> None:
    assert alpha_score(forecast=price, market_price=price, outcome=x) == 0.0
    *_, delta = bet_alphas([price], [price], [x])
    assert delta[0] == 0.0


@given(st.lists(st.tuples(probability, probability, outcome), min_size=1, max_size=30))
def test_bet_alphas_match_the_scalar_scores(bets: list[tuple[float, float, int]]) -> None:
    forecasts, prices, outcomes = zip(*bets, strict=True)
    brier, market_brier, delta = bet_alphas(forecasts, prices, outcomes)
    for i, (f, b, x) in enumerate(bets):
        assert brier[i] == pytest.approx(brier_score(forecast=f, outcome=x), abs=1e-15)
        assert market_brier[i] == pytest.approx(brier_score(forecast=b, outcome=x), abs=1e-15)
        assert delta[i] == pytest.approx(
            alpha_score(forecast=f, market_price=b, outcome=x), abs=1e-15
        )


def _expected(score: Callable[..., float], q: float, **probabilities: float) -> float:
    # E[score(X)] for X ~ Bernoulli(q), computed from the score function itself.
    return q * score(outcome=1, **probabilities) + (1.0 - q) * score(outcome=0, **probabilities)


GRID = [i / 100 for i in range(101)]


@pytest.mark.parametrize("q", [0.0, 0.1, 0.25, 0.5, 0.7, 0.93, 1.0])
def test_brier_is_proper_expected_score_is_least_at_the_true_probability(q: float) -> None:
    expected = [_expected(brier_score, q, forecast=p) for p in GRID]
    for p, value in zip(GRID, expected, strict=True):
        assert value == pytest.approx((p - q) ** 2 + q * (1.0 - q), abs=1e-12)
    assert GRID[int(np.argmin(expected))] == pytest.approx(q)


@pytest.mark.parametrize("b", [0.05, 0.4, 0.6, 0.99])
@pytest.mark.parametrize("q", [0.0, 0.2, 0.5, 0.81, 1.0])
def test_alpha_is_proper_expected_alpha_is_greatest_at_the_true_probability(
    q: float, b: float
) -> None:
    expected = [_expected(alpha_score, q, forecast=p, market_price=b) for p in GRID]
    assert GRID[int(np.argmax(expected))] == pytest.approx(q)


@pytest.mark.parametrize(("q", "b", "p"), [(0.5, 0.6, 0.8), (0.3, 0.2, 0.7), (0.9, 0.95, 0.5)])
def test_proposition_2_variance_matches_a_simulation(q: float, b: float, p: float) -> None:
    outcomes = (np.random.default_rng(7).uniform(size=400_000) < q).astype(int)
    *_, delta = bet_alphas(np.full(len(outcomes), p), np.full(len(outcomes), b), outcomes)
    formula = alpha_variance(q=q, market_price=b, forecast=p)
    assert formula == pytest.approx(4 * q * (1 - q) * (b - p) ** 2)
    assert float(np.var(delta)) == pytest.approx(formula, rel=0.03)


def test_echoing_the_market_has_no_variance() -> None:
    assert alpha_variance(q=0.5, market_price=0.3, forecast=0.3) == 0.0


# 003 Table 1: κ = 0.05 one-sided, power 0.80, q = 0.5, mean (b − p)² = 0.15².
TABLE_1 = [
    (0.005, 5_567, 796),
    (0.010, 1_392, 199),
    (0.020, 348, 50),
    (0.030, 155, 23),
    (0.050, 56, 8),
    (0.100, 14, 2),
]


@pytest.mark.parametrize(("alpha", "predictions", "rounds"), TABLE_1)
def test_proposition_3_reproduces_table_1(alpha: float, predictions: int, rounds: int) -> None:
    n = predictions_needed(alpha=alpha)
    assert n == pytest.approx(predictions, rel=0.01)
    assert rounds_needed(predictions=predictions, per_round=7) == rounds


@pytest.mark.parametrize(("alpha", "predictions", "rounds"), TABLE_1)
def test_rounds_from_exact_normal_quantiles(alpha: float, predictions: int, rounds: int) -> None:
    # The table rounds z to 1.645 and 0.842; exact quantiles give n = 5,564.3 at α* = 0.005,
    # i.e. 5,565 bets = exactly 795 rounds of 7, one fewer than the table's 796.
    n = predictions_needed(alpha=alpha)
    expected = 795 if alpha == 0.005 else rounds
    assert rounds_needed(predictions=n, per_round=7) == expected


def test_equation_6_n_times_alpha_squared_is_0_139() -> None:
    for alpha in (0.005, 0.02, 0.1):
        assert predictions_needed(alpha=alpha) * alpha**2 == pytest.approx(0.139, abs=0.0005)


def test_predictions_needed_scales_with_outcome_variance_and_boldness() -> None:
    base = predictions_needed(alpha=0.02)
    assert predictions_needed(alpha=0.02, q=0.1) == pytest.approx(base * 0.36)
    assert predictions_needed(alpha=0.02, mean_squared_deviation=0.3**2) == pytest.approx(4 * base)
    assert predictions_needed(alpha=0.02, power=0.5) == pytest.approx(
        base * (1.6449 / 2.4865) ** 2, rel=1e-4
    )


def test_rounds_needed_rounds_both_steps_up() -> None:
    assert rounds_needed(predictions=14.0, per_round=7) == 2
    assert rounds_needed(predictions=14.01, per_round=7) == 3
    assert rounds_needed(predictions=0.0, per_round=7) == 0


def test_bets_to_separate_two_models() -> None:
    z = 1.6448536269514722 + 0.8416212335729143
    assert bets_to_separate(difference=0.02, variance_a=0.01, variance_b=0.03) == pytest.approx(
        (z / 0.02) ** 2 * 0.04
    )
    assert bets_to_separate(difference=-0.02, variance_a=0.01, variance_b=0.03) == bets_to_separate(
        difference=0.02, variance_a=0.01, variance_b=0.03
    )
    assert bets_to_separate(difference=0.0, variance_a=0.01, variance_b=0.03) is None


@pytest.mark.parametrize(
    "kwargs",
    [
        {"forecast": 1.1, "market_price": 0.5, "outcome": 1},
        {"forecast": 0.5, "market_price": -0.1, "outcome": 1},
        {"forecast": 0.5, "market_price": math.nan, "outcome": 0},
        {"forecast": 0.5, "market_price": 0.5, "outcome": 2},
    ],
)
def test_alpha_score_refuses_bad_values(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="must be"):
        alpha_score(**kwargs)  # type: ignore[arg-type]


def test_bet_alphas_refuses_bad_values_and_unequal_lengths() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        bet_alphas([0.5, 0.5], [0.5], [1])
    with pytest.raises(ValueError, match="prices must be in"):
        bet_alphas([0.5], [1.5], [1])
    with pytest.raises(ValueError, match="outcomes must be 0 or 1"):
        bet_alphas([0.5], [0.5], [0.5])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"alpha": 0.0},
        {"alpha": -0.01},
        {"alpha": 0.02, "kappa": 0.0},
        {"alpha": 0.02, "power": 1.0},
    ],
)
def test_predictions_needed_refuses_bad_values(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="must be"):
        predictions_needed(**kwargs)


def test_rounds_and_separation_refuse_bad_values() -> None:
    with pytest.raises(ValueError, match="per_round"):
        rounds_needed(predictions=10.0, per_round=0)
    with pytest.raises(ValueError, match="predictions"):
        rounds_needed(predictions=-1.0, per_round=7)
    with pytest.raises(ValueError, match="variance_a"):
        bets_to_separate(difference=0.01, variance_a=-0.1, variance_b=0.1)
