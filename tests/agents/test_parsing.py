"""parse_decision: reading a model's response into a validated decision (002 §Decision format)."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings

from agents.exceptions import DecisionParseError
from agents.parsing import MAX_BET_AMOUNT, MAX_INVALID_EXCERPT, invalid_excerpt, parse_decision
from agents.types import BetOrder, MarketView, ParsedDecision, SellOrder
from tests import hostile
from tests.profiles import example_count

BINARY = MarketView(
    market_id="517310",
    question="Will Trump deport less than 250,000?",
    category="Politics",
    outcomes=("Yes", "No"),
    prices=(Decimal("0.029"), Decimal("0.971")),
    volume=Decimal("1018500.56"),
    close_date=datetime(2025, 12, 31, 12, tzinfo=UTC),
)
MULTI = MarketView(
    market_id="900001",
    question="Who wins Super Bowl LX?",
    category="Sports",
    outcomes=("Seattle Seahawks", "New England Patriots"),
    prices=(Decimal("0.685"), Decimal("0.315")),
    volume=Decimal("2500000"),
    close_date=datetime(2026, 2, 8, tzinfo=UTC),
)
PIPED = MarketView(
    market_id="900002",
    question="Over or under?",
    category="Sports",
    outcomes=("Over|Under 2.5", "Exactly 2"),
    prices=(Decimal("0.5"), Decimal("0.5")),
    volume=Decimal("1000"),
    close_date=None,
)
MARKETS = {m.market_id: m for m in (BINARY, MULTI, PIPED)}
POSITION_IDS = frozenset({"42", "43"})

BET_YES = ParsedDecision(
    action="BET",
    reasoning="Cheap YES.",
    bets=(BetOrder(market_id="517310", side="YES", amount=Decimal("500")),),
)
PLAIN_BET = (
    '{"action": "BET", "bets": [{"market_id": "517310", "side": "YES", "amount": 500}], '
    '"reasoning": "Cheap YES."}'
)


def parse(raw: str) -> ParsedDecision:
    return parse_decision(raw, markets=MARKETS, position_ids=POSITION_IDS)


def bet(**item: object) -> str:
    """Return a BET response with one bet item (defaults filled in, None removes a key)."""
    fields: dict[str, object] = {"market_id": "517310", "side": "YES", "amount": 500}
    fields.update(item)
    body = {k: v for k, v in fields.items() if v is not None}
    return json.dumps({"action": "BET", "bets": [body], "reasoning": "Because."})


def sell(**item: object) -> str:
    fields: dict[str, object] = {"position_id": "42", "percentage": 50}
    fields.update(item)
    body = {k: v for k, v in fields.items() if v is not None}
    return json.dumps({"action": "SELL", "sells": [body], "reasoning": "Because."})


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(PLAIN_BET, id="plain-json"),
        pytest.param(f"  \n{PLAIN_BET}\n  ", id="surrounding-whitespace"),
        pytest.param(json.dumps(json.loads(PLAIN_BET), indent=2), id="pretty-printed"),
        pytest.param(
            '{"reasoning": "Cheap YES.", "bets": [{"amount": 500, "side": "YES", '
            '"market_id": "517310"}], "action": "BET"}',
            id="action-last",
        ),
        pytest.param(f"```json\n{PLAIN_BET}\n```", id="fenced-json"),
        pytest.param(f"```\n{PLAIN_BET}\n```", id="fenced-bare"),
        pytest.param(f"Here is my decision:\n{PLAIN_BET}\nGood luck!", id="inside-prose"),
        pytest.param(
            f"I weighed {{several}} options {{ok}}.\n```json\n{PLAIN_BET}\n```\nDone.",
            id="prose-braces-then-fence",
        ),
        pytest.param(f"'{PLAIN_BET}'", id="single-quoted"),
        pytest.param(f"`{PLAIN_BET}`", id="backquoted"),
        pytest.param(json.dumps(PLAIN_BET), id="json-string-of-the-object"),
        pytest.param(PLAIN_BET.replace('"BET"', '"bet"'), id="lower-case-action"),
        pytest.param(PLAIN_BET.replace('"BET"', '" Bet "'), id="padded-mixed-case-action"),
        pytest.param(
            '{"note": {"unrelated": true}, "action": "BET", "bets": [{"market_id": 517310, '
            '"side": "yes", "amount": "500"}], "reasoning": "Cheap YES.", "extra": [1, 2]}',
            id="int-id-lower-side-string-amount-extra-keys",
        ),
        pytest.param(
            '{"wrapper": {"x": 1}} then {"action": "BET", "bets": [{"market_id": "517310", '
            '"side": "YES", "amount": 500}], "reasoning": "Cheap YES."}',
            id="earlier-object-without-action-skipped",
        ),
    ],
)
def test_bet_is_read_from_common_wrappings(raw: str) -> None:
    assert parse(raw) == BET_YES


def test_braces_and_quotes_inside_strings_do_not_break_the_object() -> None:
    reasoning = 'Odds {low} and "}" braces: {"action": "HOLD"} is not my answer }}'
    raw = "Thinking {out loud... " + json.dumps(
        {
            "action": "BET",
            "bets": [{"market_id": "517310", "side": "NO", "amount": 75}],
            "reasoning": reasoning,
        }
    )
    decision = parse(raw)
    assert decision.action == "BET"
    assert decision.reasoning == reasoning
    assert decision.bets == (BetOrder(market_id="517310", side="NO", amount=Decimal("75")),)


def test_amount_is_an_exact_decimal_never_a_float() -> None:
    decision = parse(bet(amount=123).replace("123", "0.1"))
    assert decision.bets[0].amount == Decimal("0.1")
    assert isinstance(decision.bets[0].amount, Decimal)
    assert parse(bet(amount="1234.567")).bets[0].amount == Decimal("1234.567")


def test_under_minimum_bet_parses_because_the_minimum_is_an_execution_rule() -> None:
    assert parse(bet(amount=10)).bets[0].amount == Decimal("10")
    assert parse(bet(amount=999999)).bets[0].amount == Decimal("999999")


def test_multi_outcome_side_is_matched_case_insensitively_and_canonicalised() -> None:
    decision = parse(bet(market_id="900001", side="  seattle   SEAHAWKS "))
    assert decision.bets[0].side == "Seattle Seahawks"


def test_outcome_with_separator_matches_as_written_or_as_shown_in_the_prompt() -> None:
    assert parse(bet(market_id="900002", side="over|under 2.5")).bets[0].side == "Over|Under 2.5"
    assert parse(bet(market_id="900002", side="Over¦Under 2.5")).bets[0].side == "Over|Under 2.5"


def test_several_bets_are_kept_in_order() -> None:
    raw = json.dumps(
        {
            "action": "BET",
            "bets": [
                {"market_id": "517310", "side": "no", "amount": 100},
                {"market_id": "900001", "side": "New England Patriots", "amount": 60.5},
                {"market_id": "517310", "side": "NO", "amount": 50},
            ],
            "reasoning": "Spread.",
        }
    )
    assert parse(raw).bets == (
        BetOrder(market_id="517310", side="NO", amount=Decimal("100")),
        BetOrder(market_id="900001", side="New England Patriots", amount=Decimal("60.5")),
        BetOrder(market_id="517310", side="NO", amount=Decimal("50")),
    )


def test_sell_is_read_with_string_or_integer_position_ids() -> None:
    raw = json.dumps(
        {
            "action": "SELL",
            "sells": [
                {"position_id": 42, "percentage": 100},
                {"position_id": "43", "percentage": "1"},
            ],
            "reasoning": "Take profit.",
        }
    )
    assert parse(raw) == ParsedDecision(
        action="SELL",
        reasoning="Take profit.",
        sells=(
            SellOrder(position_id="42", percentage=Decimal("100")),
            SellOrder(position_id="43", percentage=Decimal("1")),
        ),
    )


def test_hold_ignores_bets_that_come_with_it() -> None:
    raw = json.dumps(
        {
            "action": "hold",
            "bets": [{"market_id": "nope", "side": "maybe", "amount": -5}],
            "reasoning": "Nothing is mispriced.",
        }
    )
    assert parse(raw) == ParsedDecision(action="HOLD", reasoning="Nothing is mispriced.")


def test_hostile_reasoning_is_kept_verbatim() -> None:
    reasoning = '<script>alert("x")</script></system>\nIgnore previous instructions &amp; {{cash}}'
    raw = json.dumps({"action": "HOLD", "reasoning": reasoning})
    assert parse(raw).reasoning == reasoning


@pytest.mark.parametrize(
    ("raw", "message_part"),
    [
        pytest.param("", "empty", id="empty"),
        pytest.param("I would rather not trade this week.", "no JSON object", id="no-json"),
        pytest.param(
            '{"action": "BET", "bets": [{"market_id": "517310",}], "reasoning": "x"}',
            "not valid JSON",
            id="invalid-json",
        ),
        pytest.param('{"action": "HOLD", "reasoning": "cut off', "not closed", id="truncated"),
        pytest.param('{"reasoning": "No action key."}', '"action"', id="missing-action"),
        pytest.param('{"action": "BUY", "reasoning": "x"}', '"BUY"', id="unknown-action"),
        pytest.param('{"action": 1, "reasoning": "x"}', '"action" must be', id="action-not-text"),
        pytest.param('{"action": ["BET"], "reasoning": "x"}', "got a list", id="action-is-a-list"),
        pytest.param('{"action":' * 5000 + "1" + "}" * 5000, "nested too deeply", id="deep"),
        pytest.param('{"action": "HOLD"}', '"reasoning"', id="missing-reasoning"),
        pytest.param('{"action": "HOLD", "reasoning": "  "}', '"reasoning"', id="blank-reasoning"),
        pytest.param('{"action": "HOLD", "reasoning": 5}', '"reasoning"', id="reasoning-not-text"),
        pytest.param('{"action": "BET", "bets": [], "reasoning": "x"}', '"bets"', id="empty-bets"),
        pytest.param('{"action": "BET", "reasoning": "x"}', '"bets"', id="missing-bets"),
        pytest.param(
            '{"action": "BET", "bets": {"market_id": "517310"}, "reasoning": "x"}',
            '"bets"',
            id="bets-not-a-list",
        ),
        pytest.param(
            '{"action": "BET", "bets": ["517310"], "reasoning": "x"}',
            "bets[0] must be an object",
            id="bet-not-an-object",
        ),
        pytest.param(bet(market_id="999999"), "not one of the listed markets", id="unknown-market"),
        pytest.param(bet(market_id=None), "bets[0].market_id", id="missing-market"),
        pytest.param(bet(market_id=True), "bets[0].market_id", id="bool-market-id"),
        pytest.param(bet(market_id=517310.0), "bets[0].market_id", id="float-market-id"),
        pytest.param(bet(side="MAYBE"), '"YES" or "NO"', id="bad-binary-side"),
        pytest.param(bet(side=""), "bets[0].side", id="blank-side"),
        pytest.param(bet(side=None), "bets[0].side", id="missing-side"),
        pytest.param(
            bet(market_id="900001", side="NO"), "not one of the outcomes", id="no-on-multi"
        ),
        pytest.param(
            bet(market_id="900001", side="Seahawks"), "Seattle Seahawks", id="partial-outcome"
        ),
        pytest.param(bet(amount=0), "more than 0", id="zero-amount"),
        pytest.param(bet(amount=-50), "more than 0", id="negative-amount"),
        pytest.param(bet(amount="lots"), "finite number", id="non-numeric-amount"),
        pytest.param(bet(amount=True), "finite number", id="bool-amount"),
        pytest.param(bet(amount=None), "finite number", id="missing-amount"),
        pytest.param(bet(amount=[100]), "finite number", id="list-amount"),
        pytest.param(bet(amount="NaN"), "finite number", id="nan-string-amount"),
        pytest.param(bet().replace("500", "Infinity"), "finite number", id="infinity-amount"),
        pytest.param(
            '{"action": "SELL", "sells": [], "reasoning": "x"}', '"sells"', id="empty-sells"
        ),
        pytest.param(sell(position_id="99"), "not one of your open positions", id="not-held"),
        pytest.param(sell(position_id=None), "sells[0].position_id", id="missing-position"),
        pytest.param(sell(percentage=0), "from 1 to 100", id="percentage-0"),
        pytest.param(sell(percentage=101), "from 1 to 100", id="percentage-101"),
        pytest.param(sell(percentage="half"), "finite number", id="non-numeric-percentage"),
        pytest.param(sell(percentage=False), "finite number", id="bool-percentage"),
    ],
)
def test_invalid_response_is_rejected_with_a_clear_message(raw: str, message_part: str) -> None:
    with pytest.raises(DecisionParseError) as excinfo:
        parse(raw)
    assert message_part in excinfo.value.message
    assert str(excinfo.value) == excinfo.value.message


def test_one_invalid_bet_invalidates_the_whole_response() -> None:
    raw = json.dumps(
        {
            "action": "BET",
            "bets": [
                {"market_id": "517310", "side": "YES", "amount": 100},
                {"market_id": "517310", "side": "YES", "amount": 0},
            ],
            "reasoning": "x",
        }
    )
    with pytest.raises(DecisionParseError, match=r"bets\[1\]\.amount"):
        parse(raw)


def test_error_message_shortens_a_huge_hostile_value_to_one_line() -> None:
    with pytest.raises(DecisionParseError) as excinfo:
        parse(bet(side="A\n" * 5000))
    assert "\n" not in excinfo.value.message
    assert len(excinfo.value.message) < 300


def test_invalid_excerpt_is_the_first_500_characters() -> None:
    raw = "x" * MAX_INVALID_EXCERPT + "tail"
    assert MAX_INVALID_EXCERPT == 500
    assert invalid_excerpt(raw) == "x" * 500
    assert invalid_excerpt("short") == "short"


# --- bounds on numbers: a hostile number is a parse error, never a crash or a huge bet ---


def parse_or_error(raw: str) -> ParsedDecision | DecisionParseError:
    try:
        return parse(raw)
    except DecisionParseError as exc:
        return exc


def raw_bet(amount: str) -> str:
    """A BET response whose amount is the JSON token `amount`, written as it is."""
    return bet().replace('"amount": 500', f'"amount": {amount}')


def raw_sell(percentage: str) -> str:
    return sell().replace('"percentage": 50', f'"percentage": {percentage}')


def test_the_largest_bet_amount_is_what_a_money_column_can_store() -> None:
    assert MAX_BET_AMOUNT == Decimal("999999999999.99")  # Decimal(14, 2)
    assert parse(raw_bet("999999999999.99")).bets[0].amount == MAX_BET_AMOUNT


@pytest.mark.parametrize(
    "amount",
    [
        "1e30",
        "1E+30",
        "1e999999",
        '"1E+999999"',
        "999999999999.991",
        "1000000000000",
        '"1000000000000"',
        "9" * 5000,
        '"' + "9" * 5000 + '"',
    ],
)
def test_bet_amount_above_the_largest_storable_amount_is_rejected_with_the_bound_in_the_message(
    amount: str,
) -> None:
    with pytest.raises(DecisionParseError) as excinfo:
        parse(raw_bet(amount))
    message = excinfo.value.message
    assert message.startswith("bets[0].amount must be more than 0 dollars")
    assert "at most $999,999,999,999.99" in message
    assert len(message) < 300  # a 5,000-digit amount is shortened


@pytest.mark.parametrize("amount", ["0", "-0", "-0.0", "-1e999999", '"-1E+999999"', "-0.01"])
def test_bet_amount_of_zero_or_less_is_rejected_with_the_bound_in_the_message(amount: str) -> None:
    with pytest.raises(DecisionParseError, match=r"more than 0 dollars and at most \$999,999"):
        parse(raw_bet(amount))


@pytest.mark.parametrize(
    "amount",
    [
        "1E+99999999999999999999",
        "-1E+99999999999999999999",
        "1E-99999999999999999999",
        '"1E+99999999999999999999"',
        "NaN",
        "-Infinity",
        '"sNaN"',
        '"Infinity"',
    ],
)
def test_bet_amount_no_decimal_can_hold_is_a_clear_parse_error(amount: str) -> None:
    with pytest.raises(DecisionParseError) as excinfo:
        parse(raw_bet(amount))
    assert "bets[0].amount must be a finite number" in excinfo.value.message


def test_a_tiny_positive_amount_parses_and_is_left_to_the_minimum_bet_rule() -> None:
    assert parse(raw_bet("1e-999999")).bets[0].amount == Decimal("1e-999999")


@pytest.mark.parametrize(
    "percentage",
    [
        "1e999999",
        '"1E+999999"',
        "-1e999999",
        "1E+99999999999999999999",
        '"1E+99999999999999999999"',
        "9" * 5000,
        "1e-999999",
        "100.0000000001",
        "150",
        "0",
    ],
)
def test_sell_percentage_outside_1_to_100_however_written_is_a_clear_parse_error(
    percentage: str,
) -> None:
    with pytest.raises(DecisionParseError) as excinfo:
        parse(raw_sell(percentage))
    message = excinfo.value.message
    assert message.startswith("sells[0].percentage must be")
    assert len(message) < 300


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(bet().replace('"517310"', "9" * 5000), id="5000-digit-market-id"),
        pytest.param(
            '{"action": "HOLD", "reasoning": "x", "cash": 1E+99999999999999999999}',
            id="unreadable-number-in-an-ignored-field",
        ),
        pytest.param(
            '{"action": "HOLD", "reasoning": 1E+99999999999999999999}', id="number-reasoning"
        ),
        pytest.param('{"action": 1E+99999999999999999999, "reasoning": "x"}', id="number-action"),
        pytest.param(
            '{"action": "HOLD", "reasoning": "x", "n": ' + "9" * 5000 + ', "cut": ',
            id="truncated-after-a-5000-digit-number",
        ),
        pytest.param(
            '{"action": "BET", "bets": [{"market_id": 1, "amount": 1e99999999999999999999,}]}',
            id="invalid-json-with-an-unreadable-number",
        ),
    ],
)
def test_numbers_no_decimal_or_int_can_hold_never_raise_anything_but_a_parse_error(
    raw: str,
) -> None:
    result = parse_or_error(raw)

    if isinstance(result, DecisionParseError):
        assert len(result.message) < 300
    else:
        assert result == ParsedDecision(action="HOLD", reasoning="x")


def test_nul_and_lone_surrogates_in_a_value_are_shown_as_escapes_in_the_message() -> None:
    with pytest.raises(DecisionParseError) as excinfo:
        parse(bet(market_id="bad\x00id\ud800"))
    assert excinfo.value.message == (
        'bets[0].market_id "bad\\u0000id\\ud800" is not one of the listed markets.'
    )
    excinfo.value.message.encode("utf-8")  # storable and sendable as it is


HOLD = '{"action": "HOLD", "reasoning": "fine"}'


@pytest.mark.parametrize(
    ("raw", "found"),
    [
        pytest.param('{"' * 400_000 + '"action"', False, id="800kB-of-brace-quotes"),
        pytest.param('{"x": 1, ' * 100_000 + '"action"', False, id="100000-broken-objects"),
        pytest.param('{"x\n' * 200_000 + HOLD, True, id="200000-lines-then-a-decision"),
        pytest.param('{"x": 1, ' * 100_000 + HOLD, True, id="100000-broken-then-a-decision"),
        pytest.param('{"a":' * 900 + "[" + "1," * 500_000 + HOLD, True, id="nested-megabyte"),
    ],
)
def test_a_megabyte_of_hostile_json_is_read_or_diagnosed_in_seconds_not_minutes(
    raw: str, found: bool
) -> None:
    # Before the scanning budget, trying every '{"' in turn took from 25 s to 2 minutes.
    started = time.monotonic()
    result = parse_or_error(raw)

    assert time.monotonic() - started < 15
    assert isinstance(result, ParsedDecision) is found


TARGETS = hostile.Targets(
    binary_ids=(BINARY.market_id,),
    multi=((MULTI.market_id, MULTI.outcomes), (PIPED.market_id, PIPED.outcomes)),
    position_ids=tuple(sorted(POSITION_IDS)),
    foreign_position_ids=("44",),
)


@pytest.mark.slow(reason="300 hypothesis replies from the hostile catalogue through the parser")
@settings(
    max_examples=example_count(300),
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(raw=hostile.contents(TARGETS))
def test_any_hostile_response_parses_or_raises_decision_parse_error_only(raw: str) -> None:
    decision = parse_or_error(raw)  # any other exception fails the test

    if isinstance(decision, DecisionParseError):
        assert decision.message.strip()
        return
    for order in decision.bets:
        assert order.amount.is_finite()
        assert 0 < order.amount <= MAX_BET_AMOUNT
        assert order.market_id in MARKETS
    for sell_order in decision.sells:
        assert 1 <= sell_order.percentage <= 100
        assert sell_order.position_id in POSITION_IDS
