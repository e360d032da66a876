"""The prompt tells the truth (002 "What agents see", "Starting balance and constraints",
"Implied confidence", "Portfolio snapshots"): the maximum bet it shows is the one execution
enforces and the one implied confidence is measured against, and a position is valued in it
by the same rule as in snapshots and pages.

The prompt is built exactly as the decision run builds it (`portfolio_view`, then
`build_messages`), from a run frozen from the project's real recordings.
"""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.prompts import build_messages
from agents.types import BetOrder, DecisionContext, MarketView
from arena.exceptions import TradeRejected
from arena.models import Agent, Cohort, Decision, PortfolioSnapshot, Trade
from arena.money import MIN_BET, cents_down
from arena.services.decisions.context import portfolio_view
from arena.services.decisions.lifecycle import decision_claim
from arena.services.frozen import FrozenMarkets
from arena.services.marking import snapshots_take
from arena.services.trades import trade_buy
from markets.models import Market
from scoring.portfolio import max_bet
from tests.arena.conftest import RUN_AT, WEEK, Reprice, shared_week
from tests.profiles import example_count

SHOWN_MAX = re.compile(
    r"^Maximum bet \(25% of cash\): \$([0-9,]+\.[0-9]{2})(, under the \$50\.00 minimum bet: "
    r"no bet can execute, so reply SELL or HOLD)?$",
    re.MULTILINE,
)


cohort, run = shared_week()


def prompt_for(agent: Agent, frozen: FrozenMarkets) -> str:
    """The user prompt the agent's decision would send now (as `decision_run` builds it)."""
    agent = Agent.objects.select_related("cohort", "model").get(pk=agent.pk)
    context = DecisionContext(
        as_of=RUN_AT,
        week_start=WEEK,
        cohort_number=agent.cohort.number,
        portfolio=portfolio_view(agent=agent, frozen=frozen),
        markets=frozen.universe,
    )
    return build_messages(context)[1]["content"]


def shown_max(prompt: str) -> Decimal:
    """The maximum bet the prompt shows; when it is under the minimum, the prompt says so."""
    [(shown, warned)] = SHOWN_MAX.findall(prompt)
    amount = Decimal(shown.replace(",", ""))
    assert bool(warned) == (amount < MIN_BET)
    return amount


def bet(decision: Decision, frozen: FrozenMarkets, market: MarketView, amount: Decimal) -> Trade:
    order = BetOrder(market_id=market.market_id, side="YES", amount=amount)
    return trade_buy(decision=decision, order=order, frozen=frozen, index=0)


def set_cash(agent: Agent, cash: Decimal) -> None:
    Agent.objects.filter(pk=agent.pk).update(cash=cash)


# ----------------------------------------------------------------------- maximum bet


def test_the_prompts_maximum_bet_is_what_executes(
    agent: Agent, decision: Decision, frozen: FrozenMarkets, binary: MarketView
) -> None:
    """25% of $1,000.06 is $250.015. Rounded half-even the prompt would show $250.02, a bet
    the engine rejects; the one rule floors it: the prompt shows $250.01, a bet of exactly
    that executes and implies full confidence, and a cent more is over the maximum."""
    set_cash(agent, Decimal("1000.06"))

    prompt = prompt_for(agent, frozen)

    assert "Cash: $1,000.06" in prompt
    assert shown_max(prompt) == Decimal("250.01") == max_bet(Decimal("1000.06"))
    with pytest.raises(TradeRejected, match=r"over 25% of cash \(max \$250\.01\)"):
        bet(decision, frozen, binary, Decimal("250.02"))
    trade = bet(decision, frozen, binary, Decimal("250.01"))
    assert trade.status == Trade.Status.EXECUTED
    assert trade.amount == Decimal("250.01")
    assert trade.cash_after == Decimal("750.05")
    assert trade.implied_confidence == 1.0


@settings(
    max_examples=example_count(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(cents=st.integers(min_value=50_00, max_value=100_000_00))
def test_the_prompts_maximum_bet_always_executes(
    agent: Agent, decision: Decision, frozen: FrozenMarkets, binary: MarketView, cents: int
) -> None:
    """For any cash from $50 to $100,000: the prompt shows `max_bet(cash)`; a bet of exactly
    it executes with implied confidence 1 (when it reaches the $50 minimum), and a bet one
    cent over it is rejected. Each example is rolled back."""
    cash = Decimal(cents) / 100
    with transaction.atomic():
        set_cash(agent, cash)

        shown = shown_max(prompt_for(agent, frozen))

        assert shown == max_bet(cash)
        over = shown + Decimal("0.01")
        reason = "over 25% of cash" if over >= MIN_BET else "minimum"
        with pytest.raises(TradeRejected, match=reason):
            bet(decision, frozen, binary, over)
        if shown >= MIN_BET:
            trade = bet(decision, frozen, binary, shown)
            assert trade.status == Trade.Status.EXECUTED
            assert trade.amount == shown
            assert trade.cash_after == cash - shown
            assert trade.implied_confidence == 1.0
        else:
            with pytest.raises(TradeRejected, match="minimum"):
                bet(decision, frozen, binary, shown)
        transaction.set_rollback(True)


# ----------------------------------------------------------------- one valuation rule


def test_a_closed_unresolved_market_at_price_0_is_valued_in_the_prompt_at_its_last_open_price(
    cohort: Cohort,
    agent: Agent,
    other_agent: Agent,
    frozen: FrozenMarkets,
    binary: MarketView,
    reprice: Reprice,
) -> None:
    """Two agents bought YES and NO of a binary market; it moved to YES 0.61 and then closed
    without a resolution, its prices reported as 0 (as closed, unresolved Gamma records are).
    The next prompt must value both positions at the last open price — YES 0.61, NO 0.39 —
    exactly as the snapshot does, not at $0 (002: a closed, unresolved market's position is
    not collapsed to zero)."""
    yes = trade_buy(
        decision=claimed(agent),
        order=BetOrder(market_id=binary.market_id, side="YES", amount=Decimal("1000.00")),
        frozen=frozen,
        index=0,
    )
    no = trade_buy(
        decision=claimed(other_agent),
        order=BetOrder(market_id=binary.market_id, side="NO", amount=Decimal("1000.00")),
        frozen=frozen,
        index=0,
    )
    Market.objects.filter(polymarket_id=binary.market_id).update(
        closed=True, outcome_prices=["0", "0"], last_open_prices=["0.61", "0.39"]
    )
    frozen.run.markets.filter(polymarket_id=binary.market_id).update(closed=True)
    closed = reprice(binary.market_id, ["0", "0"])
    assert closed.rows[binary.market_id].closed
    snapshots_take(now=RUN_AT, refresh=False)

    for trade, price in ((yes, Decimal("0.61")), (no, Decimal("0.39"))):
        held = Agent.objects.select_related("cohort").get(pk=trade.agent_id)
        [view] = portfolio_view(agent=held, frozen=closed).positions
        expected = cents_down(trade.shares * price)
        assert view.current_price == price
        assert view.current_value == expected > 0
        snapshot = PortfolioSnapshot.objects.get(agent_id=trade.agent_id)
        assert snapshot.positions_value == view.current_value  # one rule, one value
        prompt = prompt_for(held, closed)
        line = next(row for row in prompt.splitlines() if row.startswith(f"{view.position_id}|"))
        assert line.split("|")[6:8] == [f"{price * 100:.1f}%", f"${expected:,.2f}"]
        assert f"Positions value: ${expected:,.2f}" in prompt


def claimed(agent: Agent) -> Decision:
    decision = decision_claim(agent=agent, week_start=WEEK, now=RUN_AT)
    assert decision is not None
    return decision
