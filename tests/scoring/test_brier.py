"""Brier scores and implied confidence, table-tested against 001 §1.2, §1.3 and Appendix A."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring.brier import (
    bet_brier,
    bet_brier_for_outcome,
    brier_score,
    forecast_yes_probability,
    implied_confidence,
)
from scoring.portfolio import MAX_BET_FRACTION


@pytest.mark.parametrize(
    ("cash_before", "amount", "expected"),
    [
        (10_000.0, 2_500.0, 1.0),
        (10_000.0, 1_250.0, 0.5),
        (10_000.0, 500.0, 0.2),
        (10_000.0, 50.0, 0.02),
        (8_000.0, 2_000.0, 1.0),
        (8_000.0, 500.0, 0.25),
    ],
)
def test_implied_confidence_is_bet_over_max_possible_bet(
    cash_before: float, amount: float, expected: float
) -> None:
    assert implied_confidence(amount=amount, cash_before=cash_before) == pytest.approx(expected)


def test_maximum_bet_implies_full_confidence() -> None:
    assert implied_confidence(amount=2_500.0, cash_before=10_000.0) == 1.0


def test_bet_above_maximum_is_capped_at_full_confidence() -> None:
    assert implied_confidence(amount=4_000.0, cash_before=10_000.0) == 1.0


@pytest.mark.parametrize(
    ("amount", "cash_before"),
    [
        (0.0, 10_000.0),
        (-50.0, 10_000.0),
        (500.0, 0.0),
        (500.0, -10_000.0),
        (math.nan, 10_000.0),
        (500.0, math.inf),
    ],
)
def test_implied_confidence_rejects_non_positive_amount_or_cash(
    amount: float, cash_before: float
) -> None:
    with pytest.raises(ValueError, match="must be positive"):
        implied_confidence(amount=amount, cash_before=cash_before)


@pytest.mark.parametrize(
    ("side", "confidence", "yes_won", "expected"),
    [
        ("YES", 0.80, True, 0.04),
        ("YES", 0.80, False, 0.64),
        ("NO", 0.80, True, 0.64),
        ("NO", 0.80, False, 0.04),
    ],
)
def test_brier_score_of_yes_and_no_bets(
    side: str, confidence: float, yes_won: bool, expected: float
) -> None:
    assert bet_brier(side=side, confidence=confidence, yes_won=yes_won) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("side", "expected"),
    [("YES", 0.80), ("NO", 0.20)],
)
def test_betting_no_with_80_percent_confidence_gives_yes_20_percent(
    side: str, expected: float
) -> None:
    assert forecast_yes_probability(side=side, confidence=0.80) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("forecast", "outcome", "expected"),
    [(0.8, 1, 0.04), (0.8, 0, 0.64), (0.5, 1, 0.25), (1.0, 1, 0.0), (1.0, 0, 1.0)],
)
def test_brier_score_is_squared_distance_from_outcome(
    forecast: float, outcome: int, expected: float
) -> None:
    assert brier_score(forecast=forecast, outcome=outcome) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("side_won", "expected"),
    [(True, 0.04), (False, 0.64)],
)
def test_multi_outcome_bet_is_scored_on_whether_its_outcome_won(
    side_won: bool, expected: float
) -> None:
    assert bet_brier_for_outcome(confidence=0.80, side_won=side_won) == pytest.approx(expected)


@pytest.mark.parametrize("forecast", [-0.01, 1.01, math.nan])
def test_brier_score_rejects_forecast_outside_unit_interval(forecast: float) -> None:
    with pytest.raises(ValueError, match="forecast"):
        brier_score(forecast=forecast, outcome=1)


@pytest.mark.parametrize("outcome", [-1, 2])
def test_brier_score_rejects_outcome_other_than_0_or_1(outcome: int) -> None:
    with pytest.raises(ValueError, match="outcome"):
        brier_score(forecast=0.5, outcome=outcome)


def test_bet_brier_rejects_unknown_side() -> None:
    with pytest.raises(ValueError, match="side"):
        bet_brier(side="MAYBE", confidence=0.5, yes_won=True)


@pytest.mark.parametrize("confidence", [-0.1, 1.1])
def test_bet_brier_rejects_confidence_outside_unit_interval(confidence: float) -> None:
    with pytest.raises(ValueError, match="confidence"):
        bet_brier(side="YES", confidence=confidence, yes_won=True)
    with pytest.raises(ValueError, match="confidence"):
        bet_brier_for_outcome(confidence=confidence, side_won=True)


@given(
    cash_before=st.floats(min_value=50.0, max_value=1e9),
    share_of_max_bet=st.floats(min_value=1e-6, max_value=1.0),
    side=st.sampled_from(["YES", "NO"]),
    yes_won=st.booleans(),
)
def test_bet_within_25_percent_of_cash_gives_confidence_and_brier_in_range(
    cash_before: float, share_of_max_bet: float, side: str, yes_won: bool
) -> None:
    amount = share_of_max_bet * MAX_BET_FRACTION * cash_before
    confidence = implied_confidence(amount=amount, cash_before=cash_before)
    assert 0.0 < confidence <= 1.0
    brier = bet_brier(side=side, confidence=confidence, yes_won=yes_won)
    assert 0.0 <= brier <= 1.0
    # 001's YES-probability reading and 002's traded-side reading agree.
    side_won = yes_won if side == "YES" else not yes_won
    assert brier == pytest.approx(bet_brier_for_outcome(confidence=confidence, side_won=side_won))
