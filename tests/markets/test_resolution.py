"""Resolution verdicts over the real recorded Gamma records (docs/resolution.md)."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from markets.parsing import parse_market
from markets.resolution import (
    RESOLUTION_GRACE,
    Verdict,
    resolution_verdict,
    terminal_winner,
    verdict_for_record,
)
from tests.markets.conftest import gamma_json

NOW = datetime(2026, 11, 22, tzinfo=UTC)
CLOSED_LIST = "markets_closed_order_volume_desc_offset0_limit100_2026-02-07.json"
OLD_EVENTS = "events_closed_2021_2022_limit10.json"


def verdict_of(name: str, *, now: datetime = NOW, **changes: Any) -> Verdict:
    record = dict(gamma_json(name))
    record.update(changes)
    return resolution_verdict(parse_market(record), now=now)


@pytest.mark.parametrize(
    ("name", "state", "winner", "index", "reason_has"),
    [
        ("market_resolved_yes.json", "resolved", "Yes", 0, "UMA status resolved"),
        ("market_resolved_no.json", "resolved", "No", 1, "UMA status resolved"),
        ("market_resolved_team_outcomes.json", "resolved", "Acend", 0, "winner 'Acend'"),
        ("market_closed_resolved_50_50.json", "cancelled", None, None, "50-50"),
        ("market_closed_uma_proposed.json", "open", None, None, "proposed, not final"),
        (
            "market_open_uma_disputed.json",
            "open",
            None,
            None,
            "UMA status 'disputed'; nothing is final",
        ),
        ("market_open.json", "open", None, None, "still open"),
        ("market_open_past_end_date_unresolved.json", "open", None, None, "still open"),
        ("market_closed_zero_prices_no_uma_status.json", "cancelled", None, None, "zero"),
        (
            "market_closed_nonterminal_prices_no_uma_status.json",
            "cancelled",
            None,
            None,
            "not terminal",
        ),
    ],
)
def test_each_recorded_case_gets_its_verdict(
    name: str, state: str, winner: str | None, index: int | None, reason_has: str
) -> None:
    verdict = verdict_of(name)
    assert verdict.state == state
    assert verdict.winning_outcome == winner
    assert verdict.winning_index == index
    assert reason_has in verdict.reason


def test_the_winner_name_is_exactly_an_outcome_of_the_market() -> None:
    market = parse_market(gamma_json("market_resolved_team_outcomes.json"))
    verdict = resolution_verdict(market, now=NOW)
    assert verdict.winning_index is not None
    assert market.outcomes[verdict.winning_index] == verdict.winning_outcome


def test_cancelled_reasons_name_what_was_seen() -> None:
    fifty = verdict_of("market_closed_resolved_50_50.json")
    assert "Pakistan 0.500000" in fifty.reason
    assert "Afghanistan 0.500000" in fifty.reason
    zero = verdict_of("market_closed_zero_prices_no_uma_status.json")
    # endDate 2020-11-04, closedTime 2020-11-02: the later one starts the wait.
    days = (NOW - datetime(2020, 11, 4, tzinfo=UTC)).days
    assert f"closed {days} days ago with no resolution and no determinable winner" in zero.reason


def test_an_unresolved_closed_amm_market_waits_before_it_is_refunded() -> None:
    name = "market_closed_nonterminal_prices_no_uma_status.json"
    market = parse_market(gamma_json(name))
    assert market.close_date is not None
    soon = resolution_verdict(market, now=market.close_date + timedelta(days=1))
    assert soon.state == "open"
    assert "waiting up to 30 days" in soon.reason
    # closedTime (2021-07-27 03:01:42) is later than endDate, so the wait runs from it.
    closed_time = datetime(2021, 7, 27, 3, 1, 42, tzinfo=UTC)
    assert resolution_verdict(market, now=closed_time + RESOLUTION_GRACE).state == "open"
    late = closed_time + RESOLUTION_GRACE + timedelta(seconds=1)
    assert resolution_verdict(market, now=late).state == "cancelled"


def test_closed_without_status_or_dates_keeps_waiting() -> None:
    verdict = verdict_of(
        "market_closed_zero_prices_no_uma_status.json",
        endDate=None,
        endDateIso=None,
        closedTime=None,
    )
    assert verdict.state == "open"
    assert "no close date" in verdict.reason


def test_the_placeholder_record_without_prices_decides_nothing() -> None:
    verdict = verdict_for_record(gamma_json("market_open_placeholder_missing_prices.json"), now=NOW)
    assert verdict == Verdict(
        "open",
        None,
        None,
        "record cannot be read, nothing decided: market 502517: outcomePrices is missing",
    )


def test_an_unreadable_closed_record_decides_nothing() -> None:
    record = dict(gamma_json("market_resolved_yes.json"))
    del record["outcomePrices"]
    assert verdict_for_record(record, now=NOW).state == "open"
    assert verdict_for_record(["not", "a", "record"], now=NOW).state == "open"


def test_verdict_for_a_readable_record_is_the_market_verdict() -> None:
    record = gamma_json("market_resolved_no.json")
    assert verdict_for_record(record, now=NOW) == resolution_verdict(parse_market(record), now=NOW)


@pytest.mark.parametrize(
    ("name", "changes"),
    [
        ("market_open_uma_disputed.json", {}),
        ("market_open_uma_disputed.json", {"umaResolutionStatus": "proposed"}),
        ("market_open_uma_disputed.json", {"umaResolutionStatus": "resolved"}),
        ("market_open.json", {"outcomePrices": '["1", "0"]'}),
        ("market_open_past_end_date_unresolved.json", {"outcomePrices": '["0", "0"]'}),
    ],
)
def test_a_market_not_closed_is_always_open(name: str, changes: dict[str, Any]) -> None:
    assert verdict_of(name, **changes).state == "open"


@pytest.mark.parametrize(
    ("prices", "seen"),
    [
        ('["0", "0"]', "all prices are zero"),
        ('["0.5", "0.5"]', "50-50"),
        ('["1", "1"]', "2 outcomes are priced at or above 0.99"),
        ('["0.98", "0.02"]', "not terminal"),
        ('["0.995", "0.011"]', "not terminal"),
    ],
)
def test_resolved_upstream_without_a_reliable_winner_is_cancelled(prices: str, seen: str) -> None:
    verdict = verdict_of("market_resolved_yes.json", outcomePrices=prices)
    assert verdict.state == "cancelled"
    assert seen in verdict.reason
    assert "refunded" in verdict.reason


def test_multi_outcome_winner_and_three_way_split() -> None:
    three = '["A", "B", "C"]'
    won = verdict_of("market_resolved_yes.json", outcomes=three, outcomePrices='["0", "0", "1"]')
    assert (won.state, won.winning_outcome, won.winning_index) == ("resolved", "C", 2)
    split = verdict_of(
        "market_resolved_yes.json", outcomes=three, outcomePrices='["0.3", "0.3", "0.3"]'
    )
    assert split.state == "cancelled"
    assert "even 3-way split" in split.reason


def test_near_terminal_forty_digit_prices_count_as_terminal() -> None:
    verdict = verdict_of(
        "market_closed_nonterminal_prices_no_uma_status.json",
        outcomePrices='["0.99999999", "0.00000001"]',
    )
    assert (verdict.state, verdict.winning_outcome) == ("resolved", "Long")
    assert "no UMA status and terminal prices" in verdict.reason


def test_an_unknown_uma_status_on_a_closed_market_is_not_final() -> None:
    verdict = verdict_of("market_resolved_yes.json", umaResolutionStatus="challenged")
    assert verdict.state == "open"
    assert "unrecognised UMA status 'challenged'" in verdict.reason


def test_closed_proposed_with_terminal_prices_still_waits() -> None:
    verdict = verdict_of("market_closed_uma_proposed.json")
    assert verdict.state == "open"
    assert "No 1.000000" in verdict.reason


def test_now_must_be_timezone_aware() -> None:
    market = parse_market(gamma_json("market_resolved_yes.json"))
    with pytest.raises(ValueError, match="timezone-aware"):
        resolution_verdict(market, now=datetime(2026, 11, 22))  # noqa: DTZ001


def test_a_verdict_cannot_contradict_itself() -> None:
    with pytest.raises(ValueError, match="inconsistent"):
        Verdict("resolved", None, None, "x")
    with pytest.raises(ValueError, match="inconsistent"):
        Verdict("cancelled", "Yes", 0, "x")


def expected_index(record: dict[str, Any]) -> int:
    raw = json.loads(record["outcomePrices"])
    return max(range(len(raw)), key=lambda i: float(raw[i]))


def test_every_closed_market_of_the_real_closed_listing_gets_a_verdict() -> None:
    records: list[dict[str, Any]] = gamma_json(CLOSED_LIST)
    assert len(records) == 100
    assert all(r["closed"] for r in records)
    statuses = Counter(r.get("umaResolutionStatus") for r in records)
    assert statuses == {"resolved": 99, None: 1}  # as the README counts them
    verdicts = [verdict_for_record(r, now=NOW) for r in records]
    # All 99 "resolved" records end at 1/0, 0/1 or 40-digit near-terminal prices, and the
    # one old AMM market without a status ended at near-terminal prices: all resolve.
    assert Counter(v.state for v in verdicts) == {"resolved": 100}
    for record, verdict in zip(records, verdicts, strict=True):
        assert verdict.winning_index == expected_index(record)
        assert verdict.winning_outcome == json.loads(record["outcomes"])[verdict.winning_index]
    assert Counter(v.winning_index for v in verdicts) == {0: 34, 1: 66}
    no_status = [
        v for r, v in zip(records, verdicts, strict=True) if "umaResolutionStatus" not in r
    ]
    assert len(no_status) == 1
    assert "no UMA status and terminal prices" in no_status[0].reason


def test_old_event_markets_with_forty_digit_prices_resolve() -> None:
    markets = [m for event in gamma_json(OLD_EVENTS) for m in event["markets"]]
    assert len(markets) == 10
    verdicts = [verdict_for_record(m, now=NOW) for m in markets]
    assert Counter(v.state for v in verdicts) == {"resolved": 10}
    for record, verdict in zip(markets, verdicts, strict=True):
        assert len(json.loads(record["outcomePrices"])[0]) > 30  # really 40-digit decimals
        assert verdict.winning_index == expected_index(record)
    assert Counter(m.get("umaResolutionStatus") for m in markets) == {None: 8, "resolved": 2}


def test_terminal_winner_thresholds_are_inclusive() -> None:
    assert terminal_winner((Decimal("0.99"), Decimal("0.01"))) == 0
    assert terminal_winner((Decimal("0.010001"), Decimal("0.99"))) is None
    assert terminal_winner((Decimal("0"), Decimal("0.989999"))) is None
