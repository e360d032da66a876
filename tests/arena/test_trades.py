"""Trade execution: one test per rule of 002 ("Bet constraints", "Trade execution", "Pricing"),
each broken once, and 001's worked examples as table tests.

Orders run against a real frozen snapshot (run_prepare over the project's Gamma recordings);
where a case needs a price of 0, 1 or none, the snapshot row's stored prices are edited.
"""

from __future__ import annotations

from decimal import ROUND_DOWN, Decimal

import pytest

from agents.types import BetOrder, MarketView, SellOrder
from arena.exceptions import TradeRejected
from arena.models import Agent, Decision, Position, Trade
from arena.services.decisions.lifecycle import DecisionOutcome, decision_execute
from arena.services.frozen import FrozenMarkets
from arena.services.trades import trade_buy, trade_sell
from markets.models import Market
from tests.arena.conftest import Reprice, shared_week
from tests.arena.factories import (
    BetOrderFactory,
    SellOrderFactory,
    bet_decision,
    sell_decision,
)

SHARE = Decimal("0.000001")


cohort, run = shared_week()


def bet(market: MarketView | str, side: str, amount: str | Decimal) -> BetOrder:
    market_id = market if isinstance(market, str) else market.market_id
    return BetOrderFactory.build(market_id=market_id, side=side, amount=Decimal(amount))


def sell(position: Position | str, percentage: str | int) -> SellOrder:
    position_id = position if isinstance(position, str) else str(position.pk)
    return SellOrderFactory.build(position_id=position_id, percentage=Decimal(percentage))


def run_bets(decision: Decision, frozen: FrozenMarkets, *orders: BetOrder) -> DecisionOutcome:
    return decision_execute(decision=decision, parsed=bet_decision(*orders), frozen=frozen)


def run_sells(decision: Decision, frozen: FrozenMarkets, *orders: SellOrder) -> DecisionOutcome:
    return decision_execute(decision=decision, parsed=sell_decision(*orders), frozen=frozen)


def cash_of(agent: Agent) -> Decimal:
    cash: Decimal = Agent.objects.get(pk=agent.pk).cash
    return cash


def only_trade(decision: Decision) -> Trade:
    trades = list(Trade.objects.filter(decision=decision))
    assert len(trades) == 1
    return trades[0]


def shares_for(amount: Decimal, price: Decimal) -> Decimal:
    return (amount / price).quantize(SHARE, rounding=ROUND_DOWN)


def assert_rejected(decision: Decision, outcome: DecisionOutcome, reason: str) -> Trade:
    """The single order was refused, stored with `reason`, and moved no money."""
    assert (outcome.executed, outcome.rejected) == (0, 1)
    trade = only_trade(decision)
    assert trade.status == Trade.Status.REJECTED
    assert reason in trade.reject_reason
    assert trade.shares is None
    assert trade.amount is None
    assert cash_of(decision.agent) == Decimal("10000.00")
    assert not Position.objects.filter(agent=decision.agent, status=Position.Status.OPEN).exists()
    return trade


# ------------------------------------------------------------------------ bet constraints


@pytest.mark.parametrize("amount", ["49.99", "10", "49.999", "0.01"])
def test_bet_under_the_50_dollar_minimum_is_rejected(
    decision: Decision, frozen: FrozenMarkets, binary: MarketView, amount: str
) -> None:
    outcome = run_bets(decision, frozen, bet(binary, "YES", amount))

    assert_rejected(decision, outcome, "minimum")


def test_bet_above_25_percent_of_cash_is_rejected(
    decision: Decision, frozen: FrozenMarkets, binary: MarketView
) -> None:
    outcome = run_bets(decision, frozen, bet(binary, "YES", "2500.01"))

    assert_rejected(decision, outcome, "over 25% of cash")


def test_bet_of_exactly_25_percent_of_cash_is_accepted_with_implied_confidence_1(
    decision: Decision, frozen: FrozenMarkets, binary: MarketView
) -> None:
    outcome = run_bets(decision, frozen, bet(binary, "YES", "2500"))

    assert outcome.executed == 1
    trade = only_trade(decision)
    assert trade.status == Trade.Status.EXECUTED
    assert trade.amount == Decimal("2500.00")
    assert trade.implied_confidence == 1.0
    assert (trade.cash_before, trade.cash_after) == (Decimal("10000.00"), Decimal("7500.00"))
    assert cash_of(decision.agent) == Decimal("7500.00")


def test_each_bet_is_checked_against_25_percent_of_the_cash_at_that_moment(
    decision: Decision, frozen: FrozenMarkets, binary: MarketView, second_binary: MarketView
) -> None:
    # 25% of 10,000 → 7,500 left; 25% of that → 5,625; → 4,218.75, whose 25% is 1,054.6875.
    outcome = run_bets(
        decision,
        frozen,
        bet(binary, "YES", "2500"),
        bet(binary, "NO", "1875"),
        bet(second_binary, "YES", "1406.25"),
        bet(second_binary, "NO", "1054.69"),  # a cent over 25% of the cash at that moment
    )

    assert (outcome.executed, outcome.rejected) == (3, 1)
    trades = list(Trade.objects.filter(decision=decision).order_by("order_index"))
    assert [t.status for t in trades] == ["executed"] * 3 + ["rejected"]
    assert [t.cash_before for t in trades[:3]] == [
        Decimal("10000.00"),
        Decimal("7500.00"),
        Decimal("5625.00"),
    ]
    assert [t.implied_confidence for t in trades[:3]] == [1.0, 1.0, 1.0]
    assert "over 25% of cash" in trades[3].reject_reason
    assert cash_of(decision.agent) == Decimal("4218.75")


def test_three_bets_of_25_percent_of_the_starting_cash_only_the_first_executes(
    decision: Decision, frozen: FrozenMarkets, binary: MarketView, second_binary: MarketView
) -> None:
    outcome = run_bets(
        decision,
        frozen,
        bet(binary, "YES", "2500"),
        bet(second_binary, "YES", "2500"),  # 25% of 7,500 is 1,875
        bet(second_binary, "NO", "2500"),
    )

    assert (outcome.executed, outcome.rejected) == (1, 2)
    statuses = list(
        Trade.objects.filter(decision=decision)
        .order_by("order_index")
        .values_list("status", flat=True)
    )
    assert statuses == ["executed", "rejected", "rejected"]
    assert cash_of(decision.agent) == Decimal("7500.00")


# ------------------------------------------------------------------------------ positions


def test_second_bet_on_the_same_market_and_side_adds_to_the_open_position(
    decision: Decision, frozen: FrozenMarkets, binary: MarketView
) -> None:
    price = binary.yes_price
    assert price is not None
    run_bets(decision, frozen, bet(binary, "YES", "500"), bet(binary, "YES", "300"))

    positions = list(Position.objects.filter(agent=decision.agent))
    assert len(positions) == 1
    position = positions[0]
    assert position.status == Position.Status.OPEN
    assert position.shares == shares_for(Decimal("500"), price) + shares_for(Decimal("300"), price)
    assert position.cost_basis == Decimal("800.00")
    assert set(Trade.objects.filter(decision=decision).values_list("position", flat=True)) == {
        position.pk
    }


def test_bets_on_the_two_sides_of_a_market_are_two_positions(
    decision: Decision, frozen: FrozenMarkets, binary: MarketView
) -> None:
    run_bets(decision, frozen, bet(binary, "YES", "500"), bet(binary, "NO", "300"))

    positions = Position.objects.filter(agent=decision.agent).order_by("pk")
    assert [(p.side, p.cost_basis) for p in positions] == [
        ("YES", Decimal("500.00")),
        ("NO", Decimal("300.00")),
    ]


# -------------------------------------------------------------------------------- pricing


def test_yes_bet_executes_at_the_stored_price(
    decision: Decision, frozen: FrozenMarkets, binary: MarketView
) -> None:
    stored = Decimal(frozen.rows[binary.market_id].outcome_prices[0])

    trade = trade_buy(decision=decision, order=bet(binary, "YES", "500"), frozen=frozen, index=0)

    assert trade.price == stored
    assert trade.shares == shares_for(Decimal("500"), stored)
    position = Position.objects.get(agent=decision.agent)
    assert (position.side, position.outcome_index) == ("YES", 0)
    assert position.shares == trade.shares
    assert position.cost_basis == Decimal("500.00")


def test_no_bet_executes_at_one_minus_the_stored_price(
    decision: Decision, frozen: FrozenMarkets, binary: MarketView
) -> None:
    stored = Decimal(frozen.rows[binary.market_id].outcome_prices[0])

    trade = trade_buy(decision=decision, order=bet(binary, "NO", "500"), frozen=frozen, index=0)

    assert trade.price == 1 - stored
    assert trade.shares == shares_for(Decimal("500"), 1 - stored)
    position = Position.objects.get(agent=decision.agent)
    assert (position.side, position.outcome_index) == ("NO", 1)


def test_multi_outcome_bet_executes_at_that_outcomes_price(
    decision: Decision, frozen: FrozenMarkets, multi: MarketView
) -> None:
    outcome_name = multi.outcomes[1]
    stored = Decimal(frozen.rows[multi.market_id].outcome_prices[1])

    trade = trade_buy(
        decision=decision, order=bet(multi, outcome_name, "500"), frozen=frozen, index=0
    )

    assert trade.side == outcome_name
    assert trade.price == stored
    assert trade.shares == shares_for(Decimal("500"), stored)
    position = Position.objects.get(agent=decision.agent)
    assert (position.side, position.outcome_index) == (outcome_name, 1)


@pytest.mark.parametrize(
    ("prices", "side"),
    [
        (["0", "1"], "YES"),
        (["1", "0"], "YES"),
        (["1", "0"], "NO"),
        (["0", "1"], "NO"),
    ],
)
def test_binary_bet_at_a_price_of_0_or_1_is_rejected(
    decision: Decision, binary: MarketView, reprice: Reprice, prices: list[str], side: str
) -> None:
    frozen = reprice(binary.market_id, prices)

    outcome = run_bets(decision, frozen, bet(binary, side, "500"))

    assert_rejected(decision, outcome, "(0 or 1)")


@pytest.mark.parametrize("price", ["0", "1"])
def test_multi_outcome_bet_at_a_price_of_0_or_1_is_rejected(
    decision: Decision, multi: MarketView, reprice: Reprice, price: str
) -> None:
    frozen = reprice(multi.market_id, [price, "0.5"])

    outcome = run_bets(decision, frozen, bet(multi, multi.outcomes[0], "500"))

    assert_rejected(decision, outcome, "(0 or 1)")


@pytest.mark.parametrize(
    ("prices", "side"), [([None, None], "YES"), ([None, None], "NO"), ([], "YES")]
)
def test_binary_bet_without_a_price_is_rejected(
    decision: Decision, binary: MarketView, reprice: Reprice, prices: list[None], side: str
) -> None:
    frozen = reprice(binary.market_id, prices)

    outcome = run_bets(decision, frozen, bet(binary, side, "500"))

    assert_rejected(decision, outcome, "no price")


def test_multi_outcome_bet_without_that_outcomes_price_is_rejected(
    decision: Decision, multi: MarketView, reprice: Reprice
) -> None:
    frozen = reprice(multi.market_id, [None, "0.5"])

    outcome = run_bets(decision, frozen, bet(multi, multi.outcomes[0], "500"))

    assert_rejected(decision, outcome, "no price")


def test_multi_outcome_bet_on_an_outcome_the_market_does_not_have_is_rejected(
    decision: Decision, frozen: FrozenMarkets, multi: MarketView
) -> None:
    outcome = run_bets(decision, frozen, bet(multi, "Nobody", "500"))

    assert_rejected(decision, outcome, "no price")


@pytest.mark.parametrize("side", ["Maybe", "Yes", "no", ""])
def test_binary_bet_on_a_side_other_than_yes_or_no_is_rejected(
    decision: Decision, frozen: FrozenMarkets, binary: MarketView, side: str
) -> None:
    # A binary market has two sides, "YES" and "NO" (the parser's canonical names); anything
    # else must not be priced as NO and opened as a position of a side that cannot settle.
    outcome = run_bets(decision, frozen, bet(binary, side, "500"))

    assert_rejected(decision, outcome, side)


def test_bet_on_a_closed_market_is_rejected(
    decision: Decision, frozen: FrozenMarkets, binary: MarketView
) -> None:
    Market.objects.filter(polymarket_id=binary.market_id).update(closed=True)

    outcome = run_bets(decision, frozen, bet(binary, "YES", "500"))

    assert_rejected(decision, outcome, "closed")


def test_bet_on_a_market_outside_the_snapshot_is_rejected(
    decision: Decision, frozen: FrozenMarkets
) -> None:
    outcome = run_bets(decision, frozen, bet("999999999", "YES", "500"))

    trade = assert_rejected(decision, outcome, "not in this run's snapshot")
    assert trade.requested_market_id == "999999999"


# ---------------------------------------------------------------------------------- sells


def test_sell_of_a_position_that_does_not_exist_is_rejected(
    decision: Decision, frozen: FrozenMarkets
) -> None:
    outcome = run_sells(decision, frozen, sell("987654", 50))

    trade = assert_rejected(decision, outcome, "not held by this agent")
    assert trade.kind == Trade.Kind.SELL
    assert trade.requested_position_id == "987654"


def test_sell_of_a_position_held_by_another_agent_is_rejected(
    decision: Decision, other_decision: Decision, frozen: FrozenMarkets, binary: MarketView
) -> None:
    theirs = trade_buy(
        decision=other_decision, order=bet(binary, "YES", "500"), frozen=frozen, index=0
    ).position
    assert theirs is not None

    outcome = run_sells(decision, frozen, sell(theirs, 100))

    assert_rejected(decision, outcome, "not held by this agent")
    theirs.refresh_from_db()
    assert theirs.status == Position.Status.OPEN
    assert theirs.cost_basis == Decimal("500.00")
    assert cash_of(other_decision.agent) == Decimal("9500.00")


def test_partial_sell_returns_proceeds_to_cash_and_reduces_cost_basis_proportionally(
    decision: Decision, binary: MarketView, reprice: Reprice
) -> None:
    # 001 §2.1: $500 on YES at 0.40 → 1,250 shares. The price then rises to 0.50.
    frozen = reprice(binary.market_id, ["0.4", "0.6"])
    position = trade_buy(
        decision=decision, order=bet(binary, "YES", "500"), frozen=frozen, index=0
    ).position
    assert position is not None
    frozen = reprice(binary.market_id, ["0.5", "0.5"])

    trade = trade_sell(decision=decision, order=sell(position, 50), frozen=frozen, index=1)

    assert trade.shares == Decimal("625")
    assert trade.price == Decimal("0.5")
    assert trade.amount == Decimal("312.50")  # proceeds
    assert trade.cost_basis_released == Decimal("250.00")
    assert trade.realized_pnl == Decimal("62.50")
    assert cash_of(decision.agent) == Decimal("9812.50")
    position.refresh_from_db()
    assert position.status == Position.Status.OPEN
    assert position.shares == Decimal("625")
    assert position.cost_basis == Decimal("250.00")
    assert position.realized_pnl == Decimal("62.50")


def test_partial_sell_rounds_against_the_agent(
    decision: Decision, binary: MarketView, reprice: Reprice
) -> None:
    # $100 at 0.30 → 333.333333 shares; 33% of them → 109.999999 shares, worth 32.9999997:
    # the agent receives 32.99 and 33.00 of cost basis is released (proportion rounded up).
    frozen = reprice(binary.market_id, ["0.3", "0.7"])
    position = trade_buy(
        decision=decision, order=bet(binary, "YES", "100"), frozen=frozen, index=0
    ).position
    assert position is not None

    trade = trade_sell(decision=decision, order=sell(position, 33), frozen=frozen, index=1)

    assert trade.shares == Decimal("109.999999")
    assert trade.amount == Decimal("32.99")
    assert trade.cost_basis_released == Decimal("33.00")
    assert trade.realized_pnl == Decimal("-0.01")
    position.refresh_from_db()
    assert position.shares == Decimal("223.333334")
    assert position.cost_basis == Decimal("67.00")


def test_selling_100_percent_closes_the_position(
    decision: Decision, binary: MarketView, reprice: Reprice
) -> None:
    frozen = reprice(binary.market_id, ["0.4", "0.6"])
    position = trade_buy(
        decision=decision, order=bet(binary, "YES", "500"), frozen=frozen, index=0
    ).position
    assert position is not None
    frozen = reprice(binary.market_id, ["0.3", "0.7"])

    trade = trade_sell(decision=decision, order=sell(position, 100), frozen=frozen, index=1)

    assert trade.shares == Decimal("1250")
    assert trade.amount == Decimal("375.00")
    assert trade.realized_pnl == Decimal("-125.00")
    position.refresh_from_db()
    assert position.status == Position.Status.CLOSED
    assert position.closed_at is not None
    assert position.shares == 0
    assert position.cost_basis == 0
    assert position.realized_pnl == Decimal("-125.00")
    assert cash_of(decision.agent) == Decimal("9875.00")


def test_selling_the_rest_of_a_partly_sold_position_closes_it(
    decision: Decision, binary: MarketView, reprice: Reprice
) -> None:
    # $50 at 0.50 → 100 shares. Selling 95.75% releases 47.88 of cost basis (rounded up) for
    # 47.87 of proceeds; the rest, 4.25 shares and 2.12 of cost basis, is then sold whole.
    frozen = reprice(binary.market_id, ["0.5", "0.5"])
    position = trade_buy(
        decision=decision, order=bet(binary, "YES", "50"), frozen=frozen, index=0
    ).position
    assert position is not None
    trade_sell(decision=decision, order=sell(position, "95.75"), frozen=frozen, index=1)

    rest = trade_sell(decision=decision, order=sell(position, 100), frozen=frozen, index=2)

    assert rest.shares == Decimal("4.25")
    assert rest.amount == Decimal("2.12")
    assert rest.cost_basis_released == Decimal("2.12")
    position.refresh_from_db()
    assert position.status == Position.Status.CLOSED
    assert position.cost_basis == Decimal("0")
    assert position.realized_pnl == Decimal("-0.01")
    assert cash_of(decision.agent) == Decimal("9999.99")


def test_a_bet_after_a_full_sell_opens_a_new_position(
    decision: Decision, frozen: FrozenMarkets, binary: MarketView
) -> None:
    first = trade_buy(decision=decision, order=bet(binary, "YES", "500"), frozen=frozen, index=0)
    assert first.position is not None
    trade_sell(decision=decision, order=sell(first.position, 100), frozen=frozen, index=1)

    again = trade_buy(decision=decision, order=bet(binary, "YES", "300"), frozen=frozen, index=2)

    assert again.position is not None
    assert again.position.pk != first.position.pk
    positions = Position.objects.filter(agent=decision.agent).order_by("pk")
    assert [(p.status, p.cost_basis) for p in positions] == [
        (Position.Status.CLOSED, Decimal("0.00")),
        (Position.Status.OPEN, Decimal("300.00")),
    ]


def test_sell_of_a_position_already_closed_is_rejected(
    decision: Decision, frozen: FrozenMarkets, binary: MarketView
) -> None:
    position = trade_buy(
        decision=decision, order=bet(binary, "YES", "500"), frozen=frozen, index=0
    ).position
    assert position is not None
    trade_sell(decision=decision, order=sell(position, 100), frozen=frozen, index=1)
    cash_after_sale = cash_of(decision.agent)

    with pytest.raises(TradeRejected, match="not held by this agent"):
        trade_sell(decision=decision, order=sell(position, 100), frozen=frozen, index=2)
    assert cash_of(decision.agent) == cash_after_sale


# ---------------------------------------------------------------------- rejection records


def test_every_rejected_trade_is_stored_with_its_reason(
    decision: Decision, frozen: FrozenMarkets, binary: MarketView, multi: MarketView
) -> None:
    Market.objects.filter(polymarket_id=multi.market_id).update(closed=True)

    outcome = run_bets(
        decision,
        frozen,
        bet(binary, "YES", "20"),  # under the minimum
        bet(binary, "NO", "3000"),  # over 25%
        bet("424242", "YES", "100"),  # not in the snapshot
        bet(multi, multi.outcomes[0], "100"),  # closed
        bet(binary, "YES", "100"),  # fine
    )

    assert (outcome.executed, outcome.rejected) == (1, 4)
    rejected = list(
        Trade.objects.filter(decision=decision, status=Trade.Status.REJECTED).order_by(
            "order_index"
        )
    )
    assert [t.order_index for t in rejected] == [0, 1, 2, 3]
    assert [t.requested_market_id for t in rejected] == [
        binary.market_id,
        binary.market_id,
        "424242",
        multi.market_id,
    ]
    assert [t.side for t in rejected] == ["YES", "NO", "YES", multi.outcomes[0]]
    assert [t.requested_amount for t in rejected] == [
        Decimal("20.00"),
        Decimal("3000.00"),
        Decimal("100.00"),
        Decimal("100.00"),
    ]
    reasons = [t.reject_reason for t in rejected]
    expected = ["minimum", "over 25% of cash", "not in this run's snapshot", "closed"]
    for reason, words in zip(reasons, expected, strict=True):
        assert words in reason
    assert outcome.notes == reasons
    assert all(t.try_number == decision.tries == 1 for t in rejected)


# ------------------------------------------------------------------ 001's worked examples


@pytest.mark.parametrize(
    ("cash", "amount", "confidence"),
    [
        ("10000", "2500", 1.0),
        ("10000", "1250", 0.5),
        ("10000", "500", 0.2),
        ("10000", "50", 0.02),
        ("8000", "2000", 1.0),
        ("8000", "500", 0.25),
    ],
)
def test_implied_confidence_is_the_bet_over_25_percent_of_cash(
    decision: Decision,
    frozen: FrozenMarkets,
    binary: MarketView,
    cash: str,
    amount: str,
    confidence: float,
) -> None:
    Agent.objects.filter(pk=decision.agent_id).update(cash=Decimal(cash))

    trade = trade_buy(decision=decision, order=bet(binary, "YES", amount), frozen=frozen, index=0)

    assert trade.cash_before == Decimal(cash)
    assert trade.implied_confidence == pytest.approx(confidence)


@pytest.mark.parametrize(
    ("prices", "side", "amount", "price", "shares"),
    [
        (["0.4", "0.6"], "YES", "500", "0.4", "1250"),  # 001 §2.1
        (["0.6", "0.4"], "NO", "500", "0.4", "1250"),  # NO at 1 − 0.60
        (["0.25", "0.75"], "NO", "300", "0.75", "400"),
        (["0.3", "0.7"], "YES", "100", "0.3", "333.333333"),  # rounded down to 6 places
    ],
)
def test_shares_are_the_amount_over_the_side_correct_price(
    decision: Decision,
    binary: MarketView,
    reprice: Reprice,
    prices: list[str],
    side: str,
    amount: str,
    price: str,
    shares: str,
) -> None:
    frozen = reprice(binary.market_id, prices)

    trade = trade_buy(decision=decision, order=bet(binary, side, amount), frozen=frozen, index=0)

    assert trade.price == Decimal(price)
    assert trade.shares == Decimal(shares)
    assert trade.amount == Decimal(amount)
