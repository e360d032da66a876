"""Money invariants (STYLE §8): for any sequence of bets and sells, valid or not, cash
never goes negative, the ledger reconciles to the cent with the starting $10,000, and rounding
never creates cash.

Every example gets a fresh agent in a fresh cohort (pytest-django does not roll the database
back between hypothesis examples); all examples share one run frozen from the recordings.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

from agents.types import BetOrder, MarketView, ParsedDecision, SellOrder
from arena.models import STARTING_BALANCE, Agent, Decision, Position, Trade
from arena.services.decisions.lifecycle import decision_claim, decision_execute
from arena.services.frozen import FrozenMarkets
from markets.models import Market
from tests.arena.conftest import RUN_AT, shared_week
from tests.arena.factories import AgentFactory, bet_decision, sell_decision
from tests.profiles import example_count

EXAMPLES = settings(
    max_examples=example_count(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],  # no explain
)
UNKNOWN_MARKET = "999999999"


cohort, run = shared_week()


class Universe:
    """What every example trades against. A plain class with a short repr: hypothesis prints
    the test's arguments when an example fails, and a whole snapshot is 350 kB."""

    def __init__(self, frozen: FrozenMarkets, markets: list[MarketView], foreign: Position) -> None:
        self.frozen = frozen
        self.markets = markets
        self.foreign = foreign

    def __repr__(self) -> str:
        return f"Universe({[m.market_id for m in self.markets]})"


@pytest.fixture
def universe(frozen: FrozenMarkets) -> Universe:
    """Real markets of the snapshot — binaries at middling, tiny and huge YES prices, and the
    multi-outcome ones — and an open position held by an agent of another cohort."""
    binaries = [v for v in frozen.universe if v.is_binary and v.yes_price is not None]
    by_price = sorted(binaries, key=lambda v: v.yes_price or 0)
    middling = [v for v in binaries if Decimal("0.2") < (v.yes_price or 0) < Decimal("0.8")]
    multis = [v for v in frozen.universe if not v.is_binary]
    markets = [*middling[:3], by_price[0], by_price[1], by_price[-1], *multis]
    assert multis
    assert len(markets) >= 6
    foreign = Position.objects.create(
        agent=AgentFactory.create(),
        market=Market.objects.get(polymarket_id=markets[0].market_id),
        side="YES",
        outcome_index=0,
        shares=Decimal("100"),
        cost_basis=Decimal("50.00"),
        opened_at=RUN_AT,
    )
    return Universe(frozen, markets, foreign)


# ---------------------------------------------------------------------------- the orders


@dataclass(frozen=True)
class Bet:
    market: int  # index into the universe's markets, or -1 for a market not in the snapshot
    side: int  # 0 YES, 1 NO, 2/3 the market's outcome names, 4+ sides no market has
    amount: Decimal | None  # dollars, or None to take `fraction` of the cash at that moment
    fraction: Decimal


@dataclass(frozen=True)
class Sell:
    position: int  # index into this agent's positions (open or closed); -1 another agent's;
    # -2 an id that does not exist
    percentage: Decimal


@dataclass(frozen=True)
class Reprice:
    """The next run's price: a new snapshot price of one market (0, 1 or none included)."""

    market: int
    price: Decimal | None


@dataclass(frozen=True)
class Close:
    market: int


Order = Bet | Sell | Reprice | Close

market_indexes = st.integers(min_value=-1, max_value=7)
sides = st.one_of(st.integers(0, 1), st.integers(0, 1), st.integers(0, 6))
amounts = st.one_of(
    st.none(),
    st.none(),
    st.decimals(min_value=Decimal("0.001"), max_value=Decimal("6000"), places=3),
    st.sampled_from([Decimal(v) for v in ("49.99", "50", "2500", "2500.01", "1e9")]),
)
fractions = st.decimals(min_value=Decimal("0.001"), max_value=Decimal("0.3"), places=4)
percentages = st.one_of(
    st.sampled_from([Decimal(100), Decimal(50)]),
    st.integers(min_value=1, max_value=100).map(Decimal),
    st.decimals(min_value=Decimal("1"), max_value=Decimal("100"), places=4),
)
prices = st.one_of(
    st.decimals(min_value=Decimal("0"), max_value=Decimal("1"), places=6),
    st.sampled_from([Decimal("0"), Decimal("1"), None]),
)
orders = st.lists(
    st.one_of(
        st.builds(Bet, market_indexes, sides, amounts, fractions),
        st.builds(Bet, market_indexes, sides, amounts, fractions),  # bets twice as often
        st.builds(Sell, st.integers(-2, 6), percentages),
        st.builds(Sell, st.integers(0, 3), percentages),
        st.builds(Reprice, st.integers(0, 7), prices),
        st.builds(Close, st.integers(0, 7)),
    ),
    min_size=1,
    max_size=20,
)


# --------------------------------------------------------------------------- the executor


class Ledger:
    """A fresh agent, in a fresh cohort, trading against the universe's snapshot, whose
    prices the orders may move."""

    def __init__(self, universe: Universe):
        self.agent: Agent = AgentFactory.create()
        decision = decision_claim(
            agent=self.agent, week_start=self.agent.cohort.week_start, now=RUN_AT
        )
        assert decision is not None
        self.decision: Decision = decision
        self.frozen = dataclasses.replace(universe.frozen, views=dict(universe.frozen.views))
        self.markets = universe.markets
        self.foreign = universe.foreign
        Market.objects.filter(polymarket_id__in=[m.market_id for m in self.markets]).update(
            closed=False
        )

    def market_id(self, index: int) -> str:
        if index < 0 or index >= len(self.markets):
            return UNKNOWN_MARKET
        return self.markets[index].market_id

    def side(self, market_id: str, index: int) -> str:
        view = self.frozen.views.get(market_id)
        if index == 0:
            return "YES"
        if index == 1:
            return "NO"
        if view is not None and index - 2 < len(view.outcomes):
            return view.outcomes[index - 2]
        return ["Maybe", "", "yes"][index % 3]

    def apply(self, order: Order) -> None:
        if isinstance(order, Reprice):
            self.reprice(order)
        elif isinstance(order, Close):
            Market.objects.filter(polymarket_id=self.market_id(order.market)).update(closed=True)
        elif isinstance(order, Bet):
            self.execute(bet_decision(self.bet(order)))
        else:
            self.execute(sell_decision(self.sell(order)))

    def reprice(self, order: Reprice) -> None:
        market_id = self.market_id(order.market)
        view = self.frozen.views[market_id]
        if view.is_binary:
            no = None if order.price is None else 1 - order.price
            new: tuple[Decimal | None, ...] = (order.price, no)
        else:
            new = (order.price, *view.prices[1:])
        self.frozen.views[market_id] = dataclasses.replace(view, prices=new)

    def bet(self, order: Bet) -> BetOrder:
        market_id = self.market_id(order.market)
        amount = order.amount if order.amount is not None else self.cash() * order.fraction
        return BetOrder(market_id=market_id, side=self.side(market_id, order.side), amount=amount)

    def sell(self, order: Sell) -> SellOrder:
        if order.position == -1:
            return SellOrder(position_id=str(self.foreign.pk), percentage=order.percentage)
        positions = list(Position.objects.filter(agent=self.agent).order_by("pk"))
        if order.position < 0 or not positions:
            return SellOrder(position_id="987654321", percentage=order.percentage)
        position = positions[order.position % len(positions)]
        return SellOrder(position_id=str(position.pk), percentage=order.percentage)

    def execute(self, parsed: ParsedDecision) -> None:
        # Each call stands for a new try of the decision: an order executes once per try.
        self.tries = getattr(self, "tries", 0) + 1
        outcome = decision_execute(
            decision=self.decision, parsed=parsed, frozen=self.frozen, try_number=self.tries
        )
        verdict = "executed" if outcome.executed else outcome.notes[0].split(" ")[0]
        event(f"{parsed.action} {verdict}")  # shown by --hypothesis-show-statistics

    def cash(self) -> Decimal:
        cash: Decimal = Agent.objects.get(pk=self.agent.pk).cash
        return cash

    def assert_reconciles(self) -> None:
        cash = self.cash()
        positions = Position.objects.filter(agent=self.agent)
        open_cost = sum(
            (p.cost_basis for p in positions if p.status == Position.Status.OPEN), Decimal(0)
        )
        realized = sum((p.realized_pnl for p in positions), Decimal(0))
        assert cash >= 0
        assert cash + open_cost - realized == STARTING_BALANCE


@pytest.mark.django_db
@pytest.mark.slow(reason="60 hypothesis sequences of orders, each through the real trade services")
@EXAMPLES
@given(sequence=orders)
def test_cash_never_goes_negative_and_the_ledger_reconciles_to_the_cent(
    universe: Universe, sequence: list[Order]
) -> None:
    ledger = Ledger(universe)
    for order in sequence:
        ledger.apply(order)
        ledger.assert_reconciles()
    universe.foreign.refresh_from_db()
    assert universe.foreign.shares == Decimal("100")  # another agent's position is never sold


@pytest.mark.django_db
@pytest.mark.slow(reason="60 hypothesis orders, each through the real trade services")
@EXAMPLES
@given(
    market=st.integers(min_value=0, max_value=7),
    side=st.integers(min_value=0, max_value=1),
    amount=st.decimals(min_value=Decimal("50"), max_value=Decimal("2500"), places=2),
    price=st.decimals(min_value=Decimal("0.000001"), max_value=Decimal("0.999999"), places=6),
    pieces=st.lists(
        st.decimals(min_value=Decimal("1"), max_value=Decimal("100"), places=2), max_size=6
    ),
)
def test_rounding_never_creates_cash(
    universe: Universe,
    market: int,
    side: int,
    amount: Decimal,
    price: Decimal,
    pieces: list[Decimal],
) -> None:
    """Buy, then sell the position off in pieces and finally whole, all at the price it was
    bought at: the agent never ends with more than it started with."""
    ledger = Ledger(universe)
    binary = universe.markets[market].is_binary
    ledger.apply(Reprice(market, price))
    ledger.apply(Bet(market, side if binary else side + 2, amount, Decimal(0)))  # 2/3: outcomes
    assert Trade.objects.filter(agent=ledger.agent, status=Trade.Status.EXECUTED).exists()
    for percentage in [*pieces, Decimal(100)]:
        ledger.apply(Sell(0, percentage))
        ledger.assert_reconciles()
        assert ledger.cash() <= STARTING_BALANCE
    for trade in Trade.objects.filter(agent=ledger.agent, status=Trade.Status.EXECUTED):
        assert trade.shares is not None
        assert trade.price is not None
        assert trade.amount is not None
        if trade.kind == Trade.Kind.BUY:
            assert trade.shares * trade.price <= trade.amount  # never more shares than paid for
        else:
            assert trade.amount <= trade.shares * trade.price  # never more proceeds than due
