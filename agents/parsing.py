"""Turn a model's raw response into a validated ParsedDecision, or say what is wrong with it.

Parsing checks the shape of a decision (002: BET, SELL or HOLD) and that every bet names a
market of the run's snapshot and one of its sides, and every sell one of the agent's open
positions. The $50 minimum and the 25%-of-cash maximum are execution rules, checked by the
engine when each trade runs: a $10 bet parses, and is recorded as a rejected trade rather than
retried.

Methodology v2 (`probabilities=True`) reads stated probabilities too:

- every bet carries `"probability"`, the probability that the side it backs happens: a JSON
  number strictly between 0 and 1. A bet without one, or with another value (a string such as
  "0.7", a boolean, 0, 1, NaN), is a parse error like any invalid bet;
- every answer, BET, SELL or HOLD, carries `"forecasts"`: `[{"market_id": ..., "probability":
  p}, ...]`, p the probability of the first outcome (YES) of each question of the week's panel.
  A missing or invalid forecast never invalidates the decision: it is recorded as missing,
  with what was wrong (`PanelForecast.problem`). A forecast of a market outside the panel is
  ignored (it stays in the raw response), and so is one given twice: both are then invalid.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any, cast

from agents.exceptions import DecisionParseError
from agents.types import Action, BetOrder, MarketView, PanelForecast, ParsedDecision, SellOrder

MAX_INVALID_EXCERPT = 500
"""How many characters of an invalid response are shown back to the model and stored."""

COLUMN_SEPARATOR = "|"
SEPARATOR_STAND_IN = "¦"
"""What a COLUMN_SEPARATOR inside market text is shown as in the prompt (see flatten_text)."""

ACTIONS: tuple[Action, ...] = ("BET", "SELL", "HOLD")
MIN_PERCENTAGE = Decimal("1")
MAX_PERCENTAGE = Decimal("100")
MAX_BET_AMOUNT = Decimal("999999999999.99")
"""The largest bet, in USD, that parses: the most a money column (14 digits, 2 places) can
store, as arena's MAX_STORABLE. A larger amount could never execute (the 25%-of-cash rule
refuses it), and the engine could not even round it to the cent (1e30 is past the decimal
context's 28 digits) or store it, so it is a parse error, stated to the model."""
_SHOWN_VALUE_CHARS = 60
_SHOWN_OUTCOMES = 20
_OBJECT_START = re.compile(r'\{\s*"')
_SCAN_BUDGET_TIMES = 8
_SCAN_BUDGET_MINIMUM = 2_000_000  # characters
_STARTS_AFTER_BUDGET = 5


class _UnreadableNumber:
    """A JSON number no Decimal can hold (an exponent past Decimal's limits, such as
    1E+99999999999999999999); what it was written as is kept for the message."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def _json_decimal(text: str) -> Decimal | _UnreadableNumber:
    try:
        return Decimal(text)
    except InvalidOperation:  # e.g. 1E+99999999999999999999: past Decimal's exponent limit
        return _UnreadableNumber(text)


def _json_int(text: str) -> int | Decimal | _UnreadableNumber:
    try:
        return int(text)
    except ValueError:  # more digits than sys.get_int_max_str_digits(): a Decimal holds it
        return _json_decimal(text)


def _decoder() -> json.JSONDecoder:
    """Return the decoder of responses: exact Decimals, and no number can make it raise."""
    return json.JSONDecoder(parse_float=_json_decimal, parse_int=_json_int, strict=False)


def invalid_excerpt(raw: str) -> str:
    """Return the first MAX_INVALID_EXCERPT characters of an invalid response, verbatim."""
    return raw[:MAX_INVALID_EXCERPT]


def flatten_text(text: str) -> str:
    """Return `text` as one prompt cell: whitespace runs become one space, "|" becomes "¦".

    Market text is hostile input: without this a question could forge extra lines or columns.
    Nothing else is dropped, and outcome matching (outcome_key) undoes the substitution.
    """
    return " ".join(text.replace(COLUMN_SEPARATOR, SEPARATOR_STAND_IN).split())


def outcome_key(name: str) -> str:
    """Return the form in which a side and an outcome name are compared.

    Case-insensitive, whitespace-trimmed and -collapsed, and blind to the "|" → "¦" substitution
    of flatten_text, so a side copied from the prompt matches the canonical outcome name.
    """
    return " ".join(name.replace(SEPARATOR_STAND_IN, COLUMN_SEPARATOR).split()).casefold()


def parse_decision(
    raw: str,
    *,
    markets: Mapping[str, MarketView],
    position_ids: Collection[str],
    probabilities: bool = False,
    panel: Sequence[str] = (),
) -> ParsedDecision:
    """Return the decision in a model's raw response.

    With `probabilities` (methodology v2), each bet must state its probability, and the
    answer's forecasts of the `panel` (market ids, in the panel's order) are read too.

    `markets` is the run's snapshot keyed by market id; `position_ids` are the agent's open
    positions. The JSON object may be wrapped in code fences, quotes or prose. Amounts and
    percentages come back as exact Decimals: an amount is more than 0 and at most
    MAX_BET_AMOUNT, a percentage from 1 to 100. Reasoning is kept verbatim (it is hostile
    text: escape it wherever it is shown). Raise DecisionParseError, whose message says what
    is wrong, when the response is not one valid decision; one invalid item invalidates it
    all. No other exception escapes, whatever the text (huge numbers, deep nesting, NULs).
    """
    payload = _decision_object(raw)
    action = payload["action"]
    if not isinstance(action, str) or action.strip().upper() not in ACTIONS:
        raise DecisionParseError(
            f'"action" must be one of "BET", "SELL" or "HOLD", got {_show(action)}.'
        )
    action = cast(Action, action.strip().upper())
    reasoning = payload.get("reasoning")
    if not isinstance(reasoning, str) or not reasoning.strip():
        raise DecisionParseError('"reasoning" must be a non-empty string explaining the decision.')

    forecasts = _forecasts(payload.get("forecasts"), panel) if probabilities else ()
    if action == "BET":
        bets = _items(payload, "bets", action="BET")
        return ParsedDecision(
            action="BET",
            reasoning=reasoning,
            bets=tuple(_bet(i, item, markets, probabilities) for i, item in enumerate(bets)),
            forecasts=forecasts,
        )
    if action == "SELL":
        sells = _items(payload, "sells", action="SELL")
        return ParsedDecision(
            action="SELL",
            reasoning=reasoning,
            sells=tuple(_sell(i, item, position_ids) for i, item in enumerate(sells)),
            forecasts=forecasts,
        )
    # Any bets or sells of a HOLD are ignored.
    return ParsedDecision(action="HOLD", reasoning=reasoning, forecasts=forecasts)


def forecasts_in(raw: str, panel: Sequence[str]) -> tuple[PanelForecast, ...]:
    """The panel forecasts of a raw response whatever became of its decision (one that does not
    parse still states them): each missing when no decision object can be read at all."""
    try:
        payload = _decision_object(raw)
    except DecisionParseError:
        return tuple(PanelForecast(market_id, None, "missing") for market_id in panel)
    return _forecasts(payload.get("forecasts"), panel)


def _decision_object(raw: str) -> dict[str, Any]:
    """Return the first JSON object in `raw` that has an "action" key."""
    text = _unwrap(raw)
    # raw_decode parses one value from an offset and ignores what follows, so trying each
    # possible start in turn finds the first object with "action" even inside prose, and braces
    # inside JSON strings are left to the JSON parser. Only a '{"' before the last '"action"'
    # can start that object, which keeps the attempts few on prose full of braces.
    decoder = _decoder()
    last_action = text.rfind('"action"')
    starts = [m.start() for m in _OBJECT_START.finditer(text, 0, last_action + 1)]
    # A start can cost up to the whole text: the scan to where the JSON breaks, and the error,
    # which counts the lines before that point. A megabyte of hostile text with thousands of
    # starts would take minutes, so the attempts share a budget, many times what a decision in
    # prose needs. Past it, only the starts nearest the last "action" are tried.
    budget = max(_SCAN_BUDGET_MINIMUM, _SCAN_BUDGET_TIMES * len(text))
    for index, start in enumerate(starts):
        if budget < 0:
            starts = starts[index:][-_STARTS_AFTER_BUDGET:][::-1]
            break
        value, cost = _decoded_at(decoder, text, start)
        budget -= cost
        if isinstance(value, dict) and "action" in value:
            return value
    else:
        starts = []
    for start in starts:
        value, _ = _decoded_at(decoder, text, start)
        if isinstance(value, dict) and "action" in value:
            return value
    raise DecisionParseError(_diagnose(text))


def _decoded_at(decoder: json.JSONDecoder, text: str, start: int) -> tuple[Any, int]:
    """Return the JSON value starting at `start` (None if there is none) and the characters
    its reading cost; raise DecisionParseError on nesting too deep to read."""
    try:
        value, end = decoder.raw_decode(text, start)
    except json.JSONDecodeError as exc:  # not JSON from here
        return None, exc.pos + 1  # building the error counted the lines up to exc.pos
    except RecursionError:  # nesting no decision needs; trying further starts is costly
        raise DecisionParseError("The response's JSON is nested too deeply.") from None
    return value, end - start


def _unwrap(raw: str) -> str:
    """Return `raw` trimmed, without surrounding markdown code fences or quotes."""
    text = raw.strip()
    if text.startswith("```"):
        newline = text.find("\n")
        text = text[newline + 1 :] if newline != -1 else text[3:]
        text = text.strip()
        if text.endswith("```"):
            text = text[:-3].strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'`":
        if text[0] == '"':
            try:  # a JSON string holding the object, with its quotes escaped
                inner = json.loads(text)
            except ValueError:
                inner = None
            if isinstance(inner, str):
                return inner.strip()
        text = text[1:-1].strip()
    return text


def _diagnose(text: str) -> str:
    """Return why no decision object could be read from `text`."""
    if not text:
        return 'The response is empty; expected one JSON object with an "action" field.'
    where = text.find('"action"')
    if where == -1:
        if "{" not in text:
            return 'The response contains no JSON object; expected one with an "action" field.'
        return 'No JSON object with an "action" field was found in the response.'
    start = text.rfind("{", 0, where)
    if start == -1:
        return '"action" appears in the response, but not inside a JSON object {...}.'
    end = _balanced_end(text, start)
    if end is None:
        return 'The JSON object with "action" is not closed: a "}" is missing (truncated?).'
    try:
        _decoder().decode(text[start:end])
    except json.JSONDecodeError as exc:
        return (
            f"The response is not valid JSON: {exc.msg} at line {exc.lineno}, "
            f'column {exc.colno} of the object with "action".'
        )
    except ValueError:
        return 'The JSON object with "action" is not valid JSON.'
    except RecursionError:
        return 'The JSON object with "action" is nested too deeply.'
    return 'The JSON object has no top-level "action" field.'


def _balanced_end(text: str, start: int) -> int | None:
    """Return the index just past the "}" closing the "{" at `start`, or None if unclosed.

    Braces inside JSON strings do not count.
    """
    depth = 0
    in_string = False
    escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index + 1
    return None


def _items(payload: dict[str, Any], key: str, *, action: str) -> list[Any]:
    items = payload.get(key)
    if not isinstance(items, list) or not items:
        raise DecisionParseError(f'A {action} decision needs a non-empty "{key}" list.')
    return items


def _bet(index: int, item: Any, markets: Mapping[str, MarketView], probabilities: bool) -> BetOrder:
    where = f"bets[{index}]"
    if not isinstance(item, dict):
        fields = (
            '"market_id", "side", "amount" and "probability"'
            if probabilities
            else ('"market_id", "side" and "amount"')
        )
        raise DecisionParseError(f"{where} must be an object with {fields}.")
    market_id = _identifier(item.get("market_id"), f"{where}.market_id")
    market = markets.get(market_id)
    if market is None:
        raise DecisionParseError(
            f"{where}.market_id {_show(market_id)} is not one of the listed markets."
        )
    side = _side(item.get("side"), market, where)
    amount = _number(item.get("amount"), f"{where}.amount")
    if not 0 < amount <= MAX_BET_AMOUNT:
        raise DecisionParseError(
            f"{where}.amount must be more than 0 dollars and at most ${MAX_BET_AMOUNT:,} "
            f"(the largest amount that can be stored), got {_show(amount)}."
        )
    if not probabilities:
        return BetOrder(market_id=market_id, side=side, amount=amount)
    if "probability" not in item:
        raise DecisionParseError(
            f'{where} needs "probability": the probability, strictly between 0 and 1, that '
            f"the side it backs happens."
        )
    probability, problem = _probability(item["probability"], f"{where}.probability")
    if probability is None:
        raise DecisionParseError(problem)
    return BetOrder(market_id=market_id, side=side, amount=amount, probability=probability)


def _probability(value: Any, where: str) -> tuple[Decimal | None, str]:
    """A stated probability: a JSON number strictly between 0 and 1; else None and why."""
    if isinstance(value, Decimal) and value.is_finite() and 0 < value < 1:
        return value, ""
    if isinstance(value, str):
        return None, (
            f"{where} must be a number strictly between 0 and 1, written without quotes, "
            f"got the string {_show(value)}."
        )
    return None, f"{where} must be a number strictly between 0 and 1, got {_show(value)}."


def _forecasts(value: Any, panel: Sequence[str]) -> tuple[PanelForecast, ...]:
    """The answer's forecast of each panel question, in the panel's order (never raises)."""
    if value is None:
        return tuple(PanelForecast(market_id, None, "missing") for market_id in panel)
    if not isinstance(value, list):
        problem = f'"forecasts" must be a list, got {_show(value)}.'
        return tuple(PanelForecast(market_id, None, problem) for market_id in panel)
    questions = set(panel)
    given: dict[str, list[tuple[Decimal | None, str]]] = {}
    for index, item in enumerate(value):
        where = f"forecasts[{index}]"
        if not isinstance(item, dict):
            continue  # names no question: nothing to record against one
        market_id = item.get("market_id")
        key = str(market_id) if isinstance(market_id, (str, int, Decimal)) else None
        if key is None or isinstance(market_id, bool) or key.strip() not in questions:
            continue  # outside the panel: ignored, kept in the raw response
        if "probability" not in item:
            given.setdefault(key.strip(), []).append((None, f'{where} has no "probability".'))
            continue
        given.setdefault(key.strip(), []).append(
            _probability(item["probability"], f"{where}.probability")
        )
    forecasts = []
    for market_id in panel:
        stated = given.get(market_id, [])
        if not stated:
            forecasts.append(PanelForecast(market_id, None, "missing"))
        elif len(stated) > 1:
            forecasts.append(PanelForecast(market_id, None, "given more than once"))
        else:
            probability, problem = stated[0]
            forecasts.append(PanelForecast(market_id, probability, problem))
    return tuple(forecasts)


def _sell(index: int, item: Any, position_ids: Collection[str]) -> SellOrder:
    where = f"sells[{index}]"
    if not isinstance(item, dict):
        raise DecisionParseError(f'{where} must be an object with "position_id" and "percentage".')
    position_id = _identifier(item.get("position_id"), f"{where}.position_id")
    if position_id not in position_ids:
        raise DecisionParseError(
            f"{where}.position_id {_show(position_id)} is not one of your open positions."
        )
    percentage = _number(item.get("percentage"), f"{where}.percentage")
    if not MIN_PERCENTAGE <= percentage <= MAX_PERCENTAGE:
        raise DecisionParseError(
            f"{where}.percentage must be from 1 to 100, got {_show(percentage)}."
        )
    return SellOrder(position_id=position_id, percentage=percentage)


def _identifier(value: Any, where: str) -> str:
    """Return an id given as a string or an integer, as a trimmed string."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, Decimal) and value.is_finite() and value.as_tuple().exponent == 0:
        return str(value)  # an integer of more digits than an int is read with
    if isinstance(value, str) and value.strip():
        return value.strip()
    raise DecisionParseError(
        f"{where} must be a non-empty string or an integer, got {_show(value)}."
    )


def _side(value: Any, market: MarketView, where: str) -> str:
    """Return the canonical side: "YES"/"NO" on a binary market, else the outcome's own name."""
    if not isinstance(value, str) or not value.strip():
        raise DecisionParseError(f"{where}.side must be a non-empty string, got {_show(value)}.")
    if market.is_binary:
        side = value.strip().upper()
        if side in ("YES", "NO"):
            return side
        raise DecisionParseError(
            f'{where}.side must be "YES" or "NO" on binary market {_show(market.market_id)}, '
            f"got {_show(value)}."
        )
    key = outcome_key(value)
    matches = [name for name in market.outcomes if outcome_key(name) == key]
    if len(matches) == 1:
        return matches[0]
    exact = [name for name in matches if name == value]
    if len(exact) == 1:
        return exact[0]
    names = ", ".join(_show(name) for name in market.outcomes[:_SHOWN_OUTCOMES])
    if len(market.outcomes) > _SHOWN_OUTCOMES:
        names += ", ..."
    problem = "matches more than one" if matches else "is not one"
    raise DecisionParseError(
        f"{where}.side {_show(value)} {problem} of the outcomes of market "
        f"{_show(market.market_id)}; use the exact name of one of: {names}."
    )


def _number(value: Any, where: str) -> Decimal:
    """Return a finite number given as a JSON number or a numeric string, as a Decimal."""
    if isinstance(value, _UnreadableNumber):
        raise DecisionParseError(
            f"{where} must be a finite number of ordinary size, got {_show(value)}."
        )
    number: Decimal | None = None
    if isinstance(value, Decimal):
        number = value
    elif isinstance(value, int) and not isinstance(value, bool):
        number = Decimal(value)
    elif isinstance(value, str):
        try:
            number = Decimal(value.strip())
        except InvalidOperation:
            number = None
    # Floats only arrive as NaN or Infinity (parse_float makes every other number a Decimal).
    if number is None or not number.is_finite():
        raise DecisionParseError(f"{where} must be a finite number, got {_show(value)}.")
    return number


def _show(value: Any) -> str:
    """Return a short, one-line rendering of a (possibly hostile) value for an error message."""
    if isinstance(value, str):
        text = " ".join(value.split())
        if len(text) > _SHOWN_VALUE_CHARS:
            text = text[: _SHOWN_VALUE_CHARS - 3] + "..."
        # NUL, lone surrogates and other unprintable characters are shown as escapes, so the
        # message can be stored and sent back as it is.
        text = "".join(c if c.isprintable() else _escaped(c) for c in text)
        return f'"{text}"'
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return _show(str(value)).strip('"')  # a number


def _escaped(char: str) -> str:
    """Return an unprintable character as its escape: \\u0000, \\ud800, \\U0010ffff."""
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
