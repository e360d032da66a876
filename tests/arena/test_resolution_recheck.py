"""A market settled without UMA's word is read again (docs/resolution.md, "Read again").

Rule 6 settles a closed market with no UMA status on its terminal prices, and rule 7 refunds
one after the wait: both may come before UMA says anything. For RESOLUTION_RECHECK_DAYS after
such a settlement each resolution check reads the market again; a final verdict upstream
that differs is recorded once, as an error event naming both, and the settlement stands
(nothing is paid back or paid again) until staff correct it."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from arena.models import Cohort, Position, SystemEvent
from arena.services.settlement import resolutions_check
from markets.models import Market
from tests.arena.books import assert_books_balance
from tests.arena.test_settlement import (
    RESOLVED_YES,
    SETTLE_AT,
    Gamma,
    agent_named,
    bet,
    decision_for,
    list_and_freeze,
    trading,
)
from tests.markets.conftest import gamma_json
from tests.replay import ReplayServer

MARKET = "522900"


@pytest.fixture
def gamma(gamma_server: ReplayServer) -> Gamma:
    return Gamma(gamma_server)


def without_uma(record: dict[str, Any], prices: list[str]) -> dict[str, Any]:
    """The record closed at terminal `prices` with no UMA status: rule 6."""
    return {
        **record,
        "closed": True,
        "umaResolutionStatus": None,
        "outcomePrices": json.dumps(prices),
    }


@pytest.fixture
def settled_without_uma(gamma: Gamma, cohort: Cohort) -> Position:
    """An agent bet YES on 522900; it closed with no UMA status at Yes 1 / No 0, and the
    check settled it Yes by rule 6."""
    agent = agent_named(cohort, "gpt-5.1")
    frozen = list_and_freeze(gamma, trading(RESOLVED_YES, ["0.4", "0.6"]))
    trade = bet(decision_for(agent), frozen, MARKET, "YES", "400.00")
    gamma.serve(without_uma(gamma_json(RESOLVED_YES), ["1", "0"]))
    report = resolutions_check(now=SETTLE_AT)
    assert report.resolved == [MARKET]
    market = Market.objects.get(polymarket_id=MARKET)
    assert (market.resolution, market.winning_outcome) == ("resolved", "Yes")
    assert trade.position_id is not None
    return Position.objects.get(pk=trade.position_id)


def changed_events() -> list[SystemEvent]:
    return list(SystemEvent.objects.filter(kind="resolution_changed"))


def test_a_market_uma_later_resolves_the_other_way_is_recorded_once_and_stands(
    gamma: Gamma, settled_without_uma: Position
) -> None:
    position = settled_without_uma
    paid = position.settlement_value
    gamma.serve({**gamma_json(RESOLVED_YES), "outcomePrices": '["0", "1"]'})  # UMA: No
    report = resolutions_check(now=SETTLE_AT + timedelta(days=2))
    assert report.rechecked == 1
    assert report.changed == [MARKET]
    [event] = changed_events()
    assert event.level == "error"
    assert "settled as resolved 'Yes'" in event.message
    assert "upstream now says resolved 'No'" in event.message
    assert event.data == {"settled": ["resolved", "Yes"], "upstream": ["resolved", "No"]}
    # Told once: the next check finds it again and records nothing more.
    again = resolutions_check(now=SETTLE_AT + timedelta(days=3))
    assert again.changed == [MARKET]
    assert len(changed_events()) == 1
    # The settlement stands: nothing paid back or paid again.
    position.refresh_from_db()
    assert (position.status, position.settlement_value) == ("settled", paid)
    market = Market.objects.get(polymarket_id=MARKET)
    assert market.winning_outcome == "Yes"
    assert_books_balance()


def test_uma_resolving_the_same_way_records_nothing(
    gamma: Gamma, settled_without_uma: Position
) -> None:
    gamma.serve(gamma_json(RESOLVED_YES))  # UMA resolved, Yes: as settled
    report = resolutions_check(now=SETTLE_AT + timedelta(days=2))
    assert (report.rechecked, report.changed) == (1, [])
    assert changed_events() == []


def test_a_dispute_upstream_is_not_final_and_records_nothing(
    gamma: Gamma, settled_without_uma: Position
) -> None:
    gamma.serve({**gamma_json(RESOLVED_YES), "umaResolutionStatus": "disputed"})
    report = resolutions_check(now=SETTLE_AT + timedelta(days=2))
    assert (report.rechecked, report.changed) == (1, [])


def test_past_the_stated_period_a_settled_market_is_not_read_again(
    gamma: Gamma, settled_without_uma: Position, settings: Any
) -> None:
    gamma.serve({**gamma_json(RESOLVED_YES), "outcomePrices": '["0", "1"]'})
    later = SETTLE_AT + timedelta(days=settings.RESOLUTION_RECHECK_DAYS, minutes=1)
    report = resolutions_check(now=later)
    assert (report.rechecked, report.changed) == (0, [])
    assert changed_events() == []


def test_a_market_settled_on_umas_word_is_never_read_again(gamma: Gamma, cohort: Cohort) -> None:
    agent = agent_named(cohort, "gpt-5.1")
    frozen = list_and_freeze(gamma, trading(RESOLVED_YES, ["0.4", "0.6"]))
    bet(decision_for(agent), frozen, MARKET, "YES", "400.00")
    gamma.serve(gamma_json(RESOLVED_YES))  # closed, UMA resolved: rule 2
    assert resolutions_check(now=SETTLE_AT).resolved == [MARKET]
    report = resolutions_check(now=SETTLE_AT + timedelta(days=1))
    assert report.rechecked == 0
    assert changed_events() == []
