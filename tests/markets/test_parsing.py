"""A Gamma record becomes a typed market, or is refused with its reason."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from markets.exceptions import OddRecord
from markets.parsing import derive_category, parse_market, parse_markets
from tests.markets.conftest import TOP_500, gamma_json


def record(**changes: Any) -> dict[str, Any]:
    base = dict(gamma_json("market_open.json"))
    base.update(changes)
    return {k: v for k, v in base.items() if v is not ...}


def test_every_record_of_the_real_top_500_listing_parses() -> None:
    batch = parse_markets(gamma_json(TOP_500))
    assert len(batch.markets) == 500
    assert batch.rejections == ()


def test_outcomes_and_prices_arrive_as_json_encoded_strings() -> None:
    market = parse_market(gamma_json("market_open.json"))
    assert market.polymarket_id == "1303407"
    assert market.outcomes == ("Yes", "No")
    assert market.is_binary
    assert market.yes_price == Decimal(json.loads(record()["outcomePrices"])[0]).quantize(
        Decimal("0.000001")
    )
    assert market.close_date is not None
    assert market.close_date.tzinfo is not None


def test_team_outcomes_make_a_multi_outcome_market() -> None:
    market = parse_market(gamma_json("market_resolved_team_outcomes.json"))
    assert market.outcomes == ("Acend", "Bebop")
    assert not market.is_binary
    assert market.yes_price is None
    assert market.prices == (Decimal("1.000000"), Decimal("0.000000"))


def test_forty_digit_prices_are_quantized_to_six_places() -> None:
    market = parse_market(gamma_json("market_closed_nonterminal_prices_no_uma_status.json"))
    assert all(p == p.quantize(Decimal("0.000001")) for p in market.prices)


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"outcomePrices": ...}, "outcomePrices is missing"),
        ({"outcomePrices": None}, "outcomePrices is missing"),
        ({"outcomePrices": '["0.4", null]'}, "outcome price is None"),
        ({"outcomePrices": '["1.2", "-0.2"]'}, "outside [0, 1]"),
        ({"outcomePrices": '["0.5"]'}, "1 prices for 2 outcomes"),
        ({"outcomePrices": '["0.5", "0.5", "0"]'}, "3 prices for 2 outcomes"),
        ({"outcomePrices": "not json"}, "not valid JSON"),
        ({"outcomePrices": '["NaN", "0.5"]'}, "not finite"),
        ({"outcomes": '["Yes"]', "outcomePrices": '["1"]'}, "fewer than two outcomes"),
        ({"volume": "lots"}, "volume 'lots' is not a number"),
        ({"volume": "-5"}, "negative volume"),
        ({"endDate": "next Tuesday"}, "not an ISO date"),
        ({"question": ""}, "no question"),
        ({"id": None}, "without an id"),
    ],
)
def test_odd_record_is_refused_with_its_reason(changes: dict[str, Any], reason: str) -> None:
    with pytest.raises(OddRecord, match=reason.replace("[", r"\[").replace("]", r"\]")):
        parse_market(record(**changes))


def test_placeholder_market_without_prices_is_refused() -> None:
    with pytest.raises(OddRecord, match="outcomePrices is missing"):
        parse_market(gamma_json("market_open_placeholder_missing_prices.json"))


def test_question_holding_html_is_kept_verbatim() -> None:
    hostile = '<script>alert("x")</script> Will <b>it</b> happen?'
    assert parse_market(record(question=hostile)).question == hostile


def test_a_repeated_id_in_one_response_is_refused() -> None:
    first = gamma_json("market_open.json")
    batch = parse_markets([first, dict(first), "junk"])
    assert len(batch.markets) == 1
    assert batch.rejections == (
        ("1303407", "market 1303407: duplicate id"),
        ("?", "record 'junk': not a JSON object"),
    )


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"category": "Crypto", "events": [{"category": "Sports"}]}, "Crypto"),
        ({"events": [{"category": "Sports"}]}, "Sports"),
        ({"events": [{"electionType": "Presidential"}]}, "Elections"),
        (
            {
                "events": [
                    {
                        "tags": [
                            {"label": "All"},
                            {"label": "Fed", "forceShow": False},
                            {"label": "Fed Rates", "forceShow": True},
                        ]
                    }
                ]
            },
            "Fed Rates",
        ),
        ({"events": [{"tags": [{"label": "Featured"}]}]}, "General"),
        # A game's market with no tag: a recorded Counter-Strike match, a Dota 2 map.
        ({"sportsMarketType": "moneyline", "gameId": "1324191", "events": [{}]}, "Sports"),
        ({"sportsMarketType": "kill_most_2_way_match"}, "Sports"),
        ({"sportsMarketType": "moneyline", "events": [{"tags": [{"label": "NBA"}]}]}, "NBA"),
        ({"sportsMarketType": "  "}, "General"),
        ({"gameStartTime": "2025-11-25 18:00:00+00"}, "General"),  # not only games carry it
        ({}, "General"),
    ],
)
def test_category_comes_from_the_record_then_its_event_else_general(
    raw: dict[str, Any], expected: str
) -> None:
    assert derive_category(raw) == expected
