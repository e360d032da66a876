"""Crowd aggregates: the median and the geometric mean of odds (ForecastBench 004, App. E)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring.crowd import (
    crowd_geometric_mean_odds,
    crowd_median,
    grouped_geometric_mean_odds,
    grouped_median,
)


def test_median() -> None:
    assert crowd_median([0.2, 0.9, 0.4]) == pytest.approx(0.4)
    assert crowd_median([0.2, 0.9, 0.4, 0.6]) == pytest.approx(0.5)
    assert isinstance(crowd_median([0.3]), float)


def test_geometric_mean_of_odds_by_hand() -> None:
    # Odds 1/4 and 4 have geometric mean 1: probability 0.5.
    assert crowd_geometric_mean_odds([0.2, 0.8]) == pytest.approx(0.5, abs=1e-15)
    # Odds 1 and 9: geometric mean 3, probability 0.75.
    assert crowd_geometric_mean_odds([0.5, 0.9]) == pytest.approx(0.75, abs=1e-12)


def test_certain_forecasts_are_clipped_not_decisive() -> None:
    clipped = crowd_geometric_mean_odds([1.0, 0.2, 0.3])
    assert clipped < 0.9
    logit = math.log(0.999 / 0.001) + math.log(0.2 / 0.8) + math.log(0.3 / 0.7)
    assert clipped == pytest.approx(1 / (1 + math.exp(-logit / 3)), abs=1e-12)
    assert crowd_geometric_mean_odds([1.0, 1.0]) == pytest.approx(0.999)
    assert crowd_geometric_mean_odds([0.0], clip=0.01) == pytest.approx(0.01)


@given(st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=20))
def test_aggregates_lie_within_the_forecasts(forecasts: list[float]) -> None:
    clipped = [min(max(p, 0.001), 0.999) for p in forecasts]
    assert min(forecasts) <= crowd_median(forecasts) <= max(forecasts)
    geometric = crowd_geometric_mean_odds(forecasts)
    assert min(clipped) - 1e-12 <= geometric <= max(clipped) + 1e-12


@given(st.lists(st.floats(min_value=0.01, max_value=0.99), min_size=1, max_size=20))
def test_geometric_mean_of_odds_is_symmetric_in_yes_and_no(forecasts: list[float]) -> None:
    flipped = crowd_geometric_mean_odds([1 - p for p in forecasts])
    assert flipped == pytest.approx(1 - crowd_geometric_mean_odds(forecasts), abs=1e-12)


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        crowd_median([])
    with pytest.raises(ValueError, match="empty"):
        crowd_geometric_mean_odds([])
    with pytest.raises(ValueError, match="must be in"):
        crowd_median([1.5])
    with pytest.raises(ValueError, match="must be in"):
        crowd_geometric_mean_odds([math.nan])
    with pytest.raises(ValueError, match="clip"):
        crowd_geometric_mean_odds([0.5], clip=0.5)


@given(
    st.lists(
        st.tuples(st.integers(min_value=0, max_value=5), st.floats(min_value=0.0, max_value=1.0)),
        min_size=1,
        max_size=40,
    )
)
def test_grouped_aggregates_equal_each_groups_own(pairs: list[tuple[int, float]]) -> None:
    groups = [g for g, _ in pairs]
    forecasts = [p for _, p in pairs]
    medians = grouped_median(forecasts, groups)
    geometric = grouped_geometric_mean_odds(forecasts, groups)
    for code in range(max(groups) + 1):
        members = [p for g, p in pairs if g == code]
        if not members:
            assert math.isnan(medians[code])
            assert math.isnan(geometric[code])
            continue
        assert medians[code] == pytest.approx(crowd_median(members), abs=1e-12)
        assert geometric[code] == pytest.approx(crowd_geometric_mean_odds(members), abs=1e-12)


def test_grouped_aggregates_refuse_mismatched_groups() -> None:
    with pytest.raises(ValueError, match="length"):
        grouped_median([0.5, 0.6], [0])
    with pytest.raises(ValueError, match="negative"):
        grouped_geometric_mean_odds([0.5], [-1])
