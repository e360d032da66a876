"""A position holds an outcome by its name, never by its place in Gamma's list (001 §2.3;
002 "Resolution and settlement", "Portfolio snapshots").

Each test trades a real recorded market as it stood while it traded, then serves a real
recording of the same market with its outcomes listed in another order, or renamed: the
settlement pays the outcome that won by name, the snapshots mark each position at its own
outcome's price, and a market whose outcomes no longer name what the agents bought is not
settled at all, but reported to staff.
"""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from arena.models import Agent, Cohort, PortfolioSnapshot, Position, SystemEvent
from arena.selectors.standings import agent_positions
from arena.services.marking import snapshots_take
from arena.services.operations import market_resolution_check
from arena.services.settlement import resolutions_check
from markets.models import Market
from tests.arena.test_settlement import (
    RESOLVED_YES,
    SETTLE_AT,
    TEAMS,
    Gamma,
    agent_named,
    bet,
    cash,
    decision_for,
    fresh,
    list_and_freeze,
    position,
    trading,
)
from tests.markets.conftest import gamma_json
from tests.replay import ReplayServer


@pytest.fixture
def gamma(gamma_server: ReplayServer) -> Gamma:
    return Gamma(gamma_server)


@pytest.fixture
def two_agents(cohort: Cohort) -> tuple[Agent, Agent]:
    return agent_named(cohort, "gpt-5.1"), agent_named(cohort, "claude-opus-4.5")


def relisted(record: dict[str, Any], outcomes: list[str], prices: list[str]) -> dict[str, Any]:
    """The real record with its outcomes (and their prices) listed as `outcomes`."""
    return {**record, "outcomes": json.dumps(outcomes), "outcomePrices": json.dumps(prices)}


def reversed_record(name: str) -> dict[str, Any]:
    """The real final record of `name` with its outcomes, and their prices, listed in
    reverse: the same market, the same winner, another order."""
    record = gamma_json(name)
    outcomes = json.loads(record["outcomes"])[::-1]
    prices = json.loads(record["outcomePrices"])[::-1]
    return relisted(record, outcomes, prices)


# ------------------------------------------------------------ settled by the winner's name


def test_a_final_record_listing_the_outcomes_in_another_order_pays_the_winner_by_name(
    gamma: Gamma, two_agents: tuple[Agent, Agent]
) -> None:
    """Market 1237864 traded as [Acend, Bebop]; its final record, reversed, lists
    [Bebop, Acend] at [0, 1]: Acend still won, and Acend's holder is paid."""
    acend_fan, bebop_fan = two_agents
    frozen = list_and_freeze(gamma, trading(TEAMS, ["0.55", "0.45"]))
    pid = "1237864"
    acend = bet(decision_for(acend_fan), frozen, pid, "Acend", "2000.00")
    bebop = bet(decision_for(bebop_fan), frozen, pid, "Bebop", "2000.00")
    assert position(acend).outcome_index == 0

    gamma.serve(reversed_record(TEAMS))
    report = resolutions_check(now=SETTLE_AT)

    assert report.resolved == [pid]
    assert Market.objects.get(polymarket_id=pid).winning_outcome == "Acend"
    assert position(acend).settlement_value == Decimal("3636.36")  # 3,636.363636 shares × $1
    assert position(bebop).settlement_value == Decimal("0.00")
    assert cash(acend_fan) == Decimal("8000.00") + Decimal("3636.36")
    assert cash(bebop_fan) == Decimal("8000.00")
    assert fresh(acend).side_won is True
    assert fresh(acend).brier_score == pytest.approx(0.04)  # confidence 0.80, won
    assert fresh(bebop).side_won is False
    assert fresh(bebop).brier_score == pytest.approx(0.64)


def test_a_yes_no_market_relisted_as_no_yes_pays_yes_when_yes_won(
    gamma: Gamma, two_agents: tuple[Agent, Agent]
) -> None:
    """Market 522900 traded as [Yes, No] and resolved Yes; its final record listed as
    [No, Yes] at [0, 1] pays the YES position, not the NO one now in first place's index."""
    yes_agent, no_agent = two_agents
    frozen = list_and_freeze(gamma, trading(RESOLVED_YES, ["0.4", "0.6"]))
    pid = "522900"
    yes_bet = bet(decision_for(yes_agent), frozen, pid, "YES", "2000.00")
    no_bet = bet(decision_for(no_agent), frozen, pid, "NO", "2000.00")

    gamma.serve(reversed_record(RESOLVED_YES))
    report = resolutions_check(now=SETTLE_AT)

    assert report.resolved == [pid]
    assert Market.objects.get(polymarket_id=pid).winning_outcome == "Yes"
    assert position(yes_bet).settlement_value == Decimal("5000.00")  # 2,000 / 0.40 shares
    assert position(no_bet).settlement_value == Decimal("0.00")
    assert cash(yes_agent) == Decimal("13000.00")
    assert cash(no_agent) == Decimal("8000.00")
    assert fresh(yes_bet).side_won is True
    assert fresh(no_bet).side_won is False


# -------------------------------------------------- outcomes renamed: refused, staff told


def test_a_market_whose_outcomes_no_longer_name_what_was_bought_is_not_settled(
    gamma: Gamma, two_agents: tuple[Agent, Agent]
) -> None:
    """The final record of 1237864 names [Acend Esports, Bebop]: the Acend position's
    outcome is gone, so nothing settles, the market stays open, and one event tells staff
    (a later check that finds the same list records no second one)."""
    acend_fan, bebop_fan = two_agents
    frozen = list_and_freeze(gamma, trading(TEAMS, ["0.55", "0.45"]))
    pid = "1237864"
    acend = bet(decision_for(acend_fan), frozen, pid, "Acend", "2000.00")
    bebop = bet(decision_for(bebop_fan), frozen, pid, "Bebop", "2000.00")
    gamma.serve(relisted(gamma_json(TEAMS), ["Acend Esports", "Bebop"], ["1", "0"]))

    report = resolutions_check(now=SETTLE_AT)

    assert report.resolved == []
    assert report.failed == [pid]
    market = Market.objects.get(polymarket_id=pid)
    assert market.resolution == Market.Resolution.OPEN
    assert market.winning_outcome == ""
    for trade in (acend, bebop):
        assert position(trade).status == Position.Status.OPEN
        assert position(trade).settlement_value is None
        assert fresh(trade).brier_score is None
        assert fresh(trade).side_won is None
    assert cash(acend_fan) == cash(bebop_fan) == Decimal("8000.00")
    event = SystemEvent.objects.get(kind=SystemEvent.Kind.OUTCOMES_CHANGED)
    assert event.market_id == market.pk
    assert event.level == SystemEvent.Level.ERROR
    assert event.data["outcomes"] == ["Acend Esports", "Bebop"]
    assert event.data["unlisted_sides"] == ["Acend"]
    assert "Acend" in event.message
    assert "not settled" in event.message
    assert not SystemEvent.objects.filter(kind=SystemEvent.Kind.MARKET_SETTLED).exists()

    again = resolutions_check(now=SETTLE_AT + timedelta(minutes=30))

    assert again.failed == [pid]
    assert SystemEvent.objects.filter(kind=SystemEvent.Kind.OUTCOMES_CHANGED).count() == 1
    assert position(acend).status == Position.Status.OPEN


def test_staff_checking_a_renamed_market_by_hand_are_told_why_it_is_not_settled(
    gamma: Gamma, two_agents: tuple[Agent, Agent]
) -> None:
    acend_fan, _ = two_agents
    frozen = list_and_freeze(gamma, trading(TEAMS, ["0.55", "0.45"]))
    acend = bet(decision_for(acend_fan), frozen, "1237864", "Acend", "2000.00")
    gamma.serve(relisted(gamma_json(TEAMS), ["Acend Esports", "Bebop"], ["1", "0"]))

    report = market_resolution_check(polymarket_id="1237864")

    assert report.done == []
    assert len(report.failed) == 1
    assert "Acend" in report.failed[0]
    assert "not settled" in report.failed[0]
    assert position(acend).status == Position.Status.OPEN
    assert SystemEvent.objects.filter(kind=SystemEvent.Kind.OUTCOMES_CHANGED).count() == 1


# ------------------------------------------------------ marked at its own outcome's price


def test_a_relisted_open_market_marks_each_position_at_its_own_outcomes_price(
    gamma: Gamma, two_agents: tuple[Agent, Agent]
) -> None:
    """Bought as [Acend, Bebop] at 0.55 / 0.45; the next refresh lists [Bebop, Acend] at
    0.30 / 0.70: Acend is worth 0.70 a share, Bebop 0.30, in the snapshot and on the page."""
    acend_fan, bebop_fan = two_agents
    frozen = list_and_freeze(gamma, trading(TEAMS, ["0.55", "0.45"]))
    pid = "1237864"
    bet(decision_for(acend_fan), frozen, pid, "Acend", "2000.00")  # 3,636.363636 shares
    bet(decision_for(bebop_fan), frozen, pid, "Bebop", "2000.00")  # 4,444.444444 shares
    gamma.serve(relisted(trading(TEAMS, ["0.3", "0.7"]), ["Bebop", "Acend"], ["0.3", "0.7"]))

    tick = snapshots_take(now=SETTLE_AT)

    assert tick.refresh_error == ""
    assert Market.objects.get(polymarket_id=pid).outcomes == ["Bebop", "Acend"]
    acend_value = PortfolioSnapshot.objects.get(agent=acend_fan).positions_value
    bebop_value = PortfolioSnapshot.objects.get(agent=bebop_fan).positions_value
    assert acend_value == Decimal("2545.45")  # 3,636.363636 × 0.70, cents down
    assert bebop_value == Decimal("1333.33")  # 4,444.444444 × 0.30
    (row,) = agent_positions(agent=acend_fan)
    assert row.price_now == Decimal("0.7")


def test_a_market_relisted_as_it_closes_keeps_each_position_at_its_own_last_open_price(
    gamma: Gamma, two_agents: tuple[Agent, Agent]
) -> None:
    """Last seen open as [Acend, Bebop] at 0.55 / 0.45, the market closes, unresolved, as
    [Bebop, Acend] at [0, 1]: no usable price, so each position keeps its own outcome's
    last open price (the prices when last open follow the names)."""
    acend_fan, bebop_fan = two_agents
    frozen = list_and_freeze(gamma, trading(TEAMS, ["0.55", "0.45"]))
    pid = "1237864"
    bet(decision_for(acend_fan), frozen, pid, "Acend", "2000.00")
    bet(decision_for(bebop_fan), frozen, pid, "Bebop", "2000.00")
    proposed = {**reversed_record(TEAMS), "umaResolutionStatus": "proposed"}
    gamma.serve(relisted(proposed, ["Bebop", "Acend"], ["0", "1"]))

    assert resolutions_check(now=SETTLE_AT).resolved == []  # proposed: not final
    snapshots_take(now=SETTLE_AT, refresh=False)

    market = Market.objects.get(polymarket_id=pid)
    assert market.closed is True
    assert market.last_open_prices == ["0.450000", "0.550000"]  # Bebop, Acend
    acend_value = PortfolioSnapshot.objects.get(agent=acend_fan).positions_value
    bebop_value = PortfolioSnapshot.objects.get(agent=bebop_fan).positions_value
    assert acend_value == Decimal("1999.99")  # 3,636.363636 × 0.55, cents down
    assert bebop_value == Decimal("1999.99")  # 4,444.444444 × 0.45
