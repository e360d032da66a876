"""Methodology v2's panel scores (scoring/panel.py), against 003's worked example and the rules
of imputation and coverage: one forecast per model per question, and no gain from omission."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.panel import (
    MIN_COVERAGE,
    log_score,
    panel_scores,
    question_forecast,
    question_spread,
)
from tests.profiles import example_count


def test_003s_worked_example_an_agent_at_080_against_a_market_at_060_that_resolved_yes() -> None:
    # 003 Figure 2(a): Brier 0.04 against the market's 0.16, Alpha +0.12.
    scores = panel_scores([[0.8]], prices=[0.6], outcomes=[1])
    assert scores is not None
    assert scores.brier == pytest.approx(0.04)
    assert scores.alpha == pytest.approx(0.12)
    assert scores.log_score == pytest.approx(-math.log(0.8))
    assert (scores.questions, scores.stated, scores.coverage, scores.ranked) == (1, 1, 1.0, True)


def test_the_log_score_is_the_negative_log_likelihood_of_what_happened() -> None:
    assert log_score(forecast=0.8, outcome=1) == pytest.approx(0.2231435513)
    assert log_score(forecast=0.8, outcome=0) == pytest.approx(1.6094379124)
    assert log_score(forecast=0.5, outcome=0) == pytest.approx(math.log(2))


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5, math.nan, math.inf])
def test_a_forecast_must_lie_strictly_between_0_and_1(bad: float) -> None:
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        log_score(forecast=bad, outcome=1)
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        panel_scores([[bad]], prices=[0.5], outcomes=[1])
    with pytest.raises(ValueError, match="reference price"):
        panel_scores([[0.5]], prices=[bad], outcomes=[1])


def test_an_outcome_is_0_or_1_and_the_columns_are_the_same_length() -> None:
    with pytest.raises(ValueError, match="0 or 1"):
        panel_scores([[0.5]], prices=[0.5], outcomes=[2])
    with pytest.raises(ValueError, match="same length"):
        panel_scores([[0.5], [0.5]], prices=[0.5], outcomes=[1, 0])
    assert panel_scores([], prices=[], outcomes=[]) is None


def test_a_model_forecasts_a_question_once_the_mean_of_its_agents() -> None:
    assert question_forecast([0.6, None, 0.8]) == pytest.approx(0.7)
    assert question_forecast([None, None]) is None
    assert question_spread([0.6, None, 0.8]) == pytest.approx(0.2)
    assert question_spread([0.6, None]) is None
    scores = panel_scores([[0.6, 0.8], [0.3]], prices=[0.5, 0.5], outcomes=[1, 0])
    assert scores is not None
    assert scores.brier == pytest.approx(((0.7 - 1) ** 2 + 0.3**2) / 2)
    assert scores.consistency == pytest.approx(0.2)  # only the question two agents stated


def test_a_question_left_unforecast_is_imputed_at_the_price_and_adds_no_alpha() -> None:
    scores = panel_scores([[None], [0.9]], prices=[0.3, 0.6], outcomes=[1, 1])
    assert scores is not None
    assert scores.alpha == pytest.approx(((0.6 - 1) ** 2 - (0.9 - 1) ** 2) / 2)
    assert scores.brier == pytest.approx(((0.3 - 1) ** 2 + (0.9 - 1) ** 2) / 2)
    assert (scores.stated, scores.coverage) == (1, 0.5)
    assert not scores.ranked  # below MIN_COVERAGE: shown, not ranked


def test_a_row_that_echoes_the_market_scores_an_alpha_of_0() -> None:
    scores = panel_scores([[0.2], [0.7], [0.55]], prices=[0.2, 0.7, 0.55], outcomes=[0, 1, 0])
    assert scores is not None
    assert scores.alpha == pytest.approx(0.0)


def test_ranked_from_the_stated_coverage_upward() -> None:
    stated = round(MIN_COVERAGE * 10)
    forecasts = [[0.5]] * stated + [[None]] * (10 - stated)
    at = panel_scores(forecasts, prices=[0.5] * 10, outcomes=[1] * 10)
    below = panel_scores(
        [[0.5]] * (stated - 1) + [[None]] * (11 - stated), prices=[0.5] * 10, outcomes=[1] * 10
    )
    assert at is not None
    assert at.ranked
    assert below is not None
    assert not below.ranked


FORECAST = st.floats(min_value=0.01, max_value=0.99)


@settings(max_examples=example_count(200), deadline=None)
@given(
    questions=st.lists(
        st.tuples(
            st.lists(st.none() | FORECAST, min_size=1, max_size=4),
            FORECAST,
            st.sampled_from([0, 1]),
        ),
        min_size=1,
        max_size=30,
    ),
    left_out=st.data(),
)
def test_leaving_a_question_out_never_raises_the_alpha_of_a_row_that_forecast_it_at_the_price(
    questions: list[tuple[list[float | None], float, int]], left_out: st.DataObject
) -> None:
    """Gaming by omission: a row that omits a question scores as one that forecast the market
    price there, exactly; omitting never beats stating the price."""
    forecasts: list[list[float | None]] = [agents for agents, _, _ in questions]
    prices = [price for _, price, _ in questions]
    outcomes = [outcome for _, _, outcome in questions]
    k = left_out.draw(st.integers(min_value=0, max_value=len(questions) - 1))
    omitted: list[list[float | None]] = [*forecasts[:k], [None], *forecasts[k + 1 :]]
    at_price: list[list[float | None]] = [*forecasts[:k], [prices[k]], *forecasts[k + 1 :]]
    a = panel_scores(omitted, prices=prices, outcomes=outcomes)
    b = panel_scores(at_price, prices=prices, outcomes=outcomes)
    assert a is not None
    assert b is not None
    assert a.alpha == pytest.approx(b.alpha)
    assert a.brier == pytest.approx(b.brier)
    assert a.stated <= b.stated
