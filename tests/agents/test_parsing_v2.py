"""Methodology v2's answers (agents/parsing.py): a probability on every bet, and forecasts of the
week's panel on every answer. A bet without a valid probability invalidates the decision; a
missing or invalid panel forecast never does, it is recorded as missing and why."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.exceptions import DecisionParseError
from agents.parsing import forecasts_in, parse_decision
from agents.types import PanelForecast, ParsedDecision
from tests.agents.test_parsing import MARKETS, POSITION_IDS
from tests.profiles import example_count

PANEL = ("517310", "900001", "777")


def v2(answer: dict[str, Any] | str, panel: tuple[str, ...] = PANEL) -> ParsedDecision:
    raw = answer if isinstance(answer, str) else json.dumps(answer)
    return parse_decision(
        raw, markets=MARKETS, position_ids=POSITION_IDS, probabilities=True, panel=panel
    )


def bet(probability: Any = 0.7, **fields: Any) -> dict[str, Any]:
    order: dict[str, Any] = {"market_id": "517310", "side": "YES", "amount": 500}
    if probability is not ...:
        order["probability"] = probability
    return {"action": "BET", "bets": [{**order, **fields}], "reasoning": "Cheap YES."}


# ------------------------------------------------------------------ a probability per bet


def test_a_bet_states_the_probability_that_its_side_happens() -> None:
    parsed = v2(bet(0.7))
    assert parsed.bets[0].probability == Decimal("0.7")
    assert parsed.bets[0].amount == Decimal(500)


def test_a_probability_keeps_every_digit_it_was_written_with() -> None:
    raw = json.dumps(bet(0.5)).replace("0.5", "0.333333333333333333333333")
    assert v2(raw).bets[0].probability == Decimal("0.333333333333333333333333")


@pytest.mark.parametrize(
    ("probability", "says"),
    [
        (..., 'needs "probability"'),
        ("0.7", "written without quotes, got the string"),
        (True, "strictly between 0 and 1, got true"),
        (0, "strictly between 0 and 1, got 0"),
        (1, "strictly between 0 and 1, got 1"),
        (1.0, "strictly between 0 and 1, got 1.0"),
        (-0.2, "got -0.2"),
        (1.5, "got 1.5"),
        (None, "got nothing"),
        ([0.7], "strictly between 0 and 1"),
    ],
    ids=repr,
)
def test_a_bet_without_a_valid_probability_is_a_parse_error_that_says_why(
    probability: Any, says: str
) -> None:
    with pytest.raises(DecisionParseError) as error:
        v2(bet(probability))
    assert "bets[0]" in str(error.value)
    assert says in str(error.value)


@pytest.mark.parametrize("written", ["NaN", "Infinity", "-Infinity", "1E+99999999999999999999"])
def test_a_probability_that_is_no_finite_number_is_a_parse_error(written: str) -> None:
    raw = json.dumps(bet(0.5)).replace("0.5", written)
    with pytest.raises(DecisionParseError, match=r"bets\[0\]\.probability must be a number"):
        v2(raw)


def test_v1_reads_no_probability_and_no_forecasts() -> None:
    raw = json.dumps(bet(...))
    parsed = parse_decision(raw, markets=MARKETS, position_ids=POSITION_IDS)
    assert parsed.bets[0].probability is None
    assert parsed.forecasts == ()
    stated = json.dumps(bet("not even a number"))
    assert parse_decision(stated, markets=MARKETS, position_ids=POSITION_IDS).bets


# ------------------------------------------------------------------ forecasts of the panel


def test_every_action_carries_the_panels_forecasts_in_the_panels_order() -> None:
    forecasts = [
        {"market_id": "777", "probability": 0.2},
        {"market_id": 517310, "probability": 0.05},
        {"market_id": "900001", "probability": 0.6},
    ]
    for answer in (
        {**bet(0.7), "forecasts": forecasts},
        {"action": "HOLD", "reasoning": "Fair.", "forecasts": forecasts},
        {
            "action": "SELL",
            "sells": [{"position_id": "42", "percentage": 50}],
            "reasoning": "Taking profit.",
            "forecasts": forecasts,
        },
    ):
        assert v2(answer).forecasts == (
            PanelForecast("517310", Decimal("0.05")),
            PanelForecast("900001", Decimal("0.6")),
            PanelForecast("777", Decimal("0.2")),
        )


def test_a_missing_or_invalid_forecast_is_recorded_as_missing_and_the_decision_stands() -> None:
    answer = {
        "action": "HOLD",
        "reasoning": "Fair.",
        "forecasts": [
            {"market_id": "517310", "probability": "0.4"},
            {"market_id": "900001"},
            {"market_id": "not-in-the-panel", "probability": 0.9},
            "a stray string",
        ],
    }
    parsed = v2(answer)
    assert parsed.action == "HOLD"
    first, second, third = parsed.forecasts
    assert first.probability is None
    assert "written without quotes" in first.problem
    assert (second.probability, second.problem) == (None, 'forecasts[1] has no "probability".')
    assert third == PanelForecast("777", None, "missing")


def test_a_question_forecast_twice_counts_as_not_forecast() -> None:
    answer = {
        "action": "HOLD",
        "reasoning": "Fair.",
        "forecasts": [
            {"market_id": "777", "probability": 0.2},
            {"market_id": "777", "probability": 0.3},
        ],
    }
    assert v2(answer).forecasts[2] == PanelForecast("777", None, "given more than once")


@pytest.mark.parametrize("forecasts", [None, {"777": 0.2}, "0.2", 7])
def test_forecasts_that_are_not_a_list_leave_every_question_missing(forecasts: Any) -> None:
    answer: dict[str, Any] = {"action": "HOLD", "reasoning": "Fair."}
    if forecasts is not None:
        answer["forecasts"] = forecasts
    parsed = v2(answer)
    assert [f.probability for f in parsed.forecasts] == [None, None, None]
    assert all(f.problem for f in parsed.forecasts)


def test_an_answer_that_does_not_parse_still_gives_the_forecasts_it_states() -> None:
    raw = json.dumps({**bet(...), "forecasts": [{"market_id": "900001", "probability": 0.61}]})
    with pytest.raises(DecisionParseError):
        v2(raw)
    assert forecasts_in(raw, PANEL)[1] == PanelForecast("900001", Decimal("0.61"))
    assert forecasts_in("no JSON here at all", PANEL) == tuple(
        PanelForecast(market_id, None, "missing") for market_id in PANEL
    )


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)


@settings(max_examples=example_count(200), deadline=None)
@given(
    forecasts=st.lists(
        st.fixed_dictionaries(
            {"market_id": st.sampled_from([*PANEL, "x", 517310]) | JSON_VALUES},
            optional={"probability": JSON_VALUES | st.decimals(allow_nan=True)},
        )
        | JSON_VALUES,
        max_size=8,
    )
)
def test_whatever_the_forecasts_hold_the_decision_parses_with_one_row_per_question(
    forecasts: list[Any],
) -> None:
    raw = json.dumps({"action": "HOLD", "reasoning": "Fair.", "forecasts": forecasts}, default=str)
    parsed = v2(raw)
    assert [f.market_id for f in parsed.forecasts] == list(PANEL)
    for forecast in parsed.forecasts:
        if forecast.probability is None:
            assert forecast.problem
        else:
            assert 0 < forecast.probability < 1
            assert not forecast.problem
