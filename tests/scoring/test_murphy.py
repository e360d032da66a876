"""Murphy's decomposition (003 Theorem 1) and the anatomy of Alpha (003 Corollary 1)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring.alpha import bet_alphas
from scoring.murphy import CalibrationBin, alpha_anatomy, murphy_decomposition


def test_hand_example() -> None:
    # Bin [0.2, 0.3): two bets at 0.2, one happened; bin [0.8, 0.9): three at 0.8, two happened.
    murphy = murphy_decomposition([0.2, 0.2, 0.8, 0.8, 0.8], [0, 1, 1, 1, 0])
    assert murphy is not None
    assert murphy.count == 5
    assert murphy.brier == pytest.approx(1.4 / 5, abs=1e-12)
    assert murphy.uncertainty == pytest.approx(0.6 * 0.4, abs=1e-12)
    assert murphy.reliability == pytest.approx((2 * 0.3**2 + 3 * (0.8 - 2 / 3) ** 2) / 5, abs=1e-12)
    assert murphy.resolution == pytest.approx((2 * 0.1**2 + 3 * (2 / 3 - 0.6) ** 2) / 5, abs=1e-12)
    assert murphy.residual == pytest.approx(0.0, abs=1e-12)
    assert murphy.bins[2] == CalibrationBin(0.2, 0.3, 2, 0.2, 0.5)
    assert murphy.bins[8].count == 3
    assert murphy.bins[8].observed_frequency == pytest.approx(2 / 3)


def test_every_bin_is_listed_and_empty_ones_have_no_means() -> None:
    murphy = murphy_decomposition([0.0, 1.0, 0.5], [0, 1, 1], bins=4)
    assert murphy is not None
    assert [(b.lower, b.upper, b.count) for b in murphy.bins] == [
        (0.0, 0.25, 1),
        (0.25, 0.5, 0),
        (0.5, 0.75, 1),
        (0.75, 1.0, 1),  # the last bin is closed at 1.0
    ]
    assert murphy.bins[1].mean_forecast is None
    assert murphy.bins[1].observed_frequency is None


def test_a_perfect_forecaster_has_no_reliability_error_and_full_resolution() -> None:
    murphy = murphy_decomposition([0.0, 1.0, 1.0, 0.0], [0, 1, 1, 0])
    assert murphy is not None
    assert murphy.brier == 0.0
    assert murphy.reliability == 0.0
    assert murphy.resolution == pytest.approx(murphy.uncertainty) == pytest.approx(0.25)


def test_forecasts_spread_within_a_bin_leave_a_residual() -> None:
    murphy = murphy_decomposition([0.0, 0.09, 0.95, 1.0], [0, 1, 0, 1])
    assert murphy is not None
    assert murphy.residual != pytest.approx(0.0, abs=1e-6)
    assert murphy.residual == pytest.approx(
        murphy.brier - (murphy.uncertainty + murphy.reliability - murphy.resolution)
    )


@st.composite
def bin_constant_bets(draw: st.DrawFn) -> tuple[int, list[float], list[float], list[int]]:
    """Bets whose agent forecasts and market prices are each constant within every bin."""
    bins = draw(st.integers(min_value=1, max_value=20))
    offset = st.floats(min_value=0.01, max_value=0.99)
    agent_value = [(k + draw(offset)) / bins for k in range(bins)]
    market_value = [(k + draw(offset)) / bins for k in range(bins)]
    bets = draw(
        st.lists(
            st.tuples(st.integers(0, bins - 1), st.integers(0, bins - 1), st.sampled_from([0, 1])),
            min_size=1,
            max_size=60,
        )
    )
    forecasts = [agent_value[k] for k, _, _ in bets]
    prices = [market_value[k] for _, k, _ in bets]
    return bins, forecasts, prices, [x for _, _, x in bets]


@given(bin_constant_bets())
def test_theorem_1_is_exact_for_bin_constant_forecasts(
    bets: tuple[int, list[float], list[float], list[int]],
) -> None:
    bins, forecasts, _, outcomes = bets
    murphy = murphy_decomposition(forecasts, outcomes, bins=bins)
    assert murphy is not None
    assert murphy.residual == pytest.approx(0.0, abs=1e-12)
    plain = math.fsum((f - x) ** 2 for f, x in zip(forecasts, outcomes, strict=True))
    assert murphy.brier == pytest.approx(plain / len(forecasts), abs=1e-15)
    base_rate = sum(outcomes) / len(outcomes)
    assert murphy.uncertainty == pytest.approx(base_rate * (1 - base_rate), abs=1e-15)
    assert sum(b.count for b in murphy.bins) == len(forecasts)
    assert len(murphy.bins) == bins


@given(bin_constant_bets())
def test_corollary_1_alpha_is_resolution_gain_plus_reliability_gap(
    bets: tuple[int, list[float], list[float], list[int]],
) -> None:
    bins, forecasts, prices, outcomes = bets
    anatomy = alpha_anatomy(forecasts, prices, outcomes, bins=bins)
    assert anatomy is not None
    assert anatomy.alpha == pytest.approx(
        anatomy.resolution_gain + anatomy.reliability_gap, abs=1e-12
    )
    assert anatomy.residual == pytest.approx(0.0, abs=1e-12)
    assert anatomy.agent.uncertainty == anatomy.market.uncertainty
    *_, delta = bet_alphas(forecasts, prices, outcomes)
    assert anatomy.alpha == pytest.approx(float(delta.mean()), abs=1e-12)


def test_an_agent_sorting_outcomes_the_flat_market_cannot_gains_resolution() -> None:
    anatomy = alpha_anatomy([0.9, 0.9, 0.1, 0.1], [0.5] * 4, [1, 1, 0, 0])
    assert anatomy is not None
    assert anatomy.alpha == pytest.approx(0.25 - 0.01)
    assert anatomy.resolution_gain == pytest.approx(0.25)
    assert anatomy.reliability_gap == pytest.approx(-0.01)


def test_no_forecasts_give_none() -> None:
    assert murphy_decomposition([], []) is None
    assert alpha_anatomy([], [], []) is None


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="bins"):
        murphy_decomposition([0.5], [1], bins=0)
    with pytest.raises(ValueError, match="forecasts must be in"):
        murphy_decomposition([1.2], [1])
    with pytest.raises(ValueError, match="outcomes must be 0 or 1"):
        murphy_decomposition([0.5], [2])
    with pytest.raises(ValueError, match="differ in length"):
        murphy_decomposition([0.5, 0.5], [1])
    with pytest.raises(ValueError, match="differ in length"):
        alpha_anatomy([0.5], [0.5, 0.5], [1])
