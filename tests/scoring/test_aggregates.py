"""Aggregate Brier, win rate and Brier skill score (001 §1.4, §1.5, §3)."""

from __future__ import annotations

import math

import pytest

from scoring.aggregates import brier_skill_score, mean_brier, win_rate


def test_aggregate_brier_is_the_mean_of_resolved_bets() -> None:
    assert mean_brier(scores=[0.04, 0.64, 0.64, 0.04]) == pytest.approx(0.34)


def test_aggregate_brier_pools_bets_across_cohorts_not_cohort_means() -> None:
    cohort_1 = [0.04]
    cohort_2 = [0.64, 0.64, 0.64]
    assert mean_brier(scores=cohort_1 + cohort_2) == pytest.approx(0.49)


def test_aggregate_brier_with_no_resolved_bets_is_none() -> None:
    assert mean_brier(scores=[]) is None


@pytest.mark.parametrize("score", [-0.1, 1.5, math.nan])
def test_aggregate_brier_rejects_score_outside_unit_interval(score: float) -> None:
    with pytest.raises(ValueError, match="Brier"):
        mean_brier(scores=[0.04, score])


def test_win_rate_is_winning_bets_over_resolved_bets() -> None:
    assert win_rate(wins=3, resolved=4) == pytest.approx(0.75)


def test_win_rate_with_no_resolved_bets_is_none() -> None:
    assert win_rate(wins=0, resolved=0) is None


@pytest.mark.parametrize(("wins", "resolved"), [(-1, 4), (1, -1), (5, 4)])
def test_win_rate_rejects_impossible_counts(wins: int, resolved: int) -> None:
    with pytest.raises(ValueError, match="wins|counts"):
        win_rate(wins=wins, resolved=resolved)


def test_brier_015_against_random_025_is_40_percent_better() -> None:
    assert brier_skill_score(brier=0.15) == pytest.approx(0.40)


@pytest.mark.parametrize(
    ("brier", "reference", "expected"),
    [(0.25, 0.25, 0.0), (0.30, 0.25, -0.2), (0.10, 0.20, 0.5), (0.0, 0.25, 1.0)],
)
def test_brier_skill_score_sign_shows_better_or_worse_than_reference(
    brier: float, reference: float, expected: float
) -> None:
    assert brier_skill_score(brier=brier, reference=reference) == pytest.approx(expected)


@pytest.mark.parametrize(("brier", "reference"), [(0.1, 0.0), (0.1, -0.25), (1.5, 0.25)])
def test_brier_skill_score_rejects_zero_reference_or_bad_brier(
    brier: float, reference: float
) -> None:
    with pytest.raises(ValueError, match="brier|reference"):
        brier_skill_score(brier=brier, reference=reference)
