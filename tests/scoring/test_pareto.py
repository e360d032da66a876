"""The Pareto set of forecasters on cost and Brier, both lower-is-better."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring.pareto import pareto_set


def test_a_point_beaten_on_both_is_off_the_set() -> None:
    # (cost, Brier): the cheap and the accurate are on it; the dear and worse one is not.
    cheap, accurate, beaten = (0.001, 0.20), (0.010, 0.12), (0.020, 0.21)
    assert pareto_set([cheap, accurate, beaten]) == [True, True, False]


def test_a_tie_on_one_and_better_on_the_other_dominates() -> None:
    assert pareto_set([(0.01, 0.20), (0.01, 0.18)]) == [False, True]


def test_equal_points_are_both_on_the_set() -> None:
    assert pareto_set([(0.01, 0.2), (0.01, 0.2)]) == [True, True]


def test_no_points_and_one_point() -> None:
    assert pareto_set([]) == []
    assert pareto_set([(1.0, 0.3)]) == [True]


def test_a_value_that_is_not_finite_is_refused() -> None:
    with pytest.raises(ValueError, match="finite"):
        pareto_set([(math.nan, 0.2)])


unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@given(st.lists(st.tuples(unit, unit), min_size=1, max_size=12))
def test_every_point_off_the_set_is_dominated_by_one_on_it(
    points: list[tuple[float, float]],
) -> None:
    on = pareto_set(points)
    front = [p for p, kept in zip(points, on, strict=True) if kept]
    assert front  # a finite set always has a point nobody beats
    for point, kept in zip(points, on, strict=True):
        if not kept:
            assert any(f[0] <= point[0] and f[1] <= point[1] and f != point for f in front)
