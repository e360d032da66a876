"""A property across whole cohorts (001 §2.4): whatever the agents bet and sell,
however prices move and markets resolve or are cancelled,

- at every snapshot, total value = cash + positions value, and the positions value is the
  sum of the open positions marked at side-correct prices, recomputed here independently;
- once every market has settled, each agent's cash is exactly $10,000 + Σ realized P/L.

Trades run through `trade_buy` / `trade_sell` on a run's frozen snapshot of the recorded
markets (RecordedSource); price moves go through `markets_upsert` of the market's own raw
record, as a sync would write them; resolutions and refunds through `market_settle`.

pytest-django does not roll the database back between hypothesis examples: every example
gets a fresh cohort, its own 10-minute slots, and resets the shared markets it trades in.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import ROUND_DOWN, Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from agents.models import BenchmarkModel
from agents.types import BetOrder, MarketView, SellOrder
from arena import money
from arena.exceptions import TradeRejected
from arena.models import (
    STARTING_BALANCE,
    Agent,
    Cohort,
    Decision,
    PortfolioSnapshot,
    Position,
    Trade,
)
from arena.services.cohorts import cohorts_complete
from arena.services.frozen import FrozenMarkets
from arena.services.marking import snapshots_take
from arena.services.settlement import market_settle
from arena.services.trades import trade_buy, trade_sell
from markets.models import Market
from markets.parsing import parse_market
from markets.resolution import Verdict
from markets.services import markets_upsert
from tests.arena.factories import AgentFactory, CohortFactory
from tests.profiles import example_count

EXAMPLES = settings(
    max_examples=example_count(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
)
AGENTS = 3
FIRST_SLOT = datetime(2031, 1, 5, tzinfo=UTC)
_slots = itertools.count()


def new_cohort(**kwargs: Any) -> Cohort:
    cohort: Cohort = CohortFactory.create(**kwargs)
    return cohort


def new_agent(**kwargs: Any) -> Agent:
    agent: Agent = AgentFactory.create(**kwargs)
    return agent


class World:
    """The markets every example trades in: three real binaries at middling prices and a
    real multi-outcome market of the snapshot, with their prices as frozen. Short repr:
    hypothesis prints it when an example fails."""

    def __init__(self, frozen: FrozenMarkets, markets: list[MarketView]) -> None:
        self.frozen = frozen
        self.markets = markets
        self.rows = {m.market_id: Market.objects.get(polymarket_id=m.market_id) for m in markets}

    def __repr__(self) -> str:
        return f"World({[m.market_id for m in self.markets]})"

    def reset(self) -> None:
        """Put every market back open at its frozen prices (an earlier example settled it)."""
        for view in self.markets:
            row = self.rows[view.market_id]
            Market.objects.filter(pk=row.pk).update(
                resolution=Market.Resolution.OPEN,
                winning_outcome="",
                resolved_at=None,
                resolution_note="",
                closed=False,
                outcome_prices=row.outcome_prices,
                last_open_prices=row.outcome_prices,
            )


@pytest.fixture
def world(frozen: FrozenMarkets) -> World:
    binaries = [
        v
        for v in frozen.universe
        if v.is_binary and v.yes_price is not None and Decimal("0.2") < v.yes_price < Decimal("0.8")
    ]
    multis = [v for v in frozen.universe if not v.is_binary and all(p for p in v.prices)]
    assert len(binaries) >= 3
    assert multis
    return World(frozen, [*binaries[:3], multis[0]])


# ------------------------------------------------------------------------------ the steps


@dataclass(frozen=True)
class Bet:
    agent: int
    market: int
    side: int  # binary: 0 YES, 1 NO; multi-outcome: the outcome at this index (mod count)
    fraction: Decimal  # of the maximum bet (25% of cash now)


@dataclass(frozen=True)
class Sell:
    agent: int
    position: int  # index into the agent's open positions (mod count)
    percentage: Decimal


@dataclass(frozen=True)
class Move:
    market: int
    price: Decimal  # the new YES price, or the first outcome's price


@dataclass(frozen=True)
class Settle:
    market: int
    cancel: bool
    winner: int  # outcome index (mod count)


Step = Bet | Sell | Move | Settle

agent_ix = st.integers(0, AGENTS - 1)
market_ix = st.integers(0, 3)
new_price = st.decimals(min_value=Decimal("0.01"), max_value=Decimal("0.99"), places=4)
bets = st.builds(
    Bet,
    agent_ix,
    market_ix,
    st.integers(0, 3),
    st.decimals(min_value=Decimal("0.05"), max_value=Decimal("1"), places=2),
)
sells = st.builds(
    Sell,
    agent_ix,
    st.integers(0, 5),
    st.one_of(
        st.just(Decimal(100)), st.decimals(min_value=Decimal(1), max_value=Decimal(100), places=2)
    ),
)
steps = st.lists(
    st.one_of(
        bets,
        bets,
        bets,
        bets,
        bets,
        bets,
        sells,
        sells,
        st.builds(Move, market_ix, new_price),
        st.builds(Move, market_ix, new_price),
        st.builds(Settle, market_ix, st.sampled_from([False, False, True]), st.integers(0, 3)),
    ),
    min_size=6,
    max_size=12,
)
endings = st.lists(
    st.tuples(st.sampled_from([False, False, True]), st.integers(0, 3)), min_size=4, max_size=4
)


# ---------------------------------------------------------------------------- the cohort


class Play:
    """One example's cohort: fresh agents of different lineup models, each with a decision
    of the week to hang its trades on, trading on a copy of the frozen snapshot."""

    def __init__(self, world: World) -> None:
        world.reset()
        self.world = world
        self.cohort = new_cohort()
        models = BenchmarkModel.objects.order_by("kind", "display_order")[:AGENTS]
        self.agents: list[Agent] = [new_agent(cohort=self.cohort, model=m) for m in models]
        self.decisions = [
            Decision.objects.create(
                agent=a,
                cohort=self.cohort,
                week_start=self.cohort.week_start,
                # Orders execute only under a live claim; the decisions finish at the end.
                status=Decision.Status.RUNNING,
            )
            for a in self.agents
        ]
        self.frozen = dataclasses.replace(world.frozen, views=dict(world.frozen.views))
        self.orders = 0
        self.snapshots = 0

    def view(self, index: int) -> MarketView:
        market_id = self.world.markets[index].market_id
        return self.frozen.views[market_id]

    def market(self, index: int) -> Market:
        return Market.objects.defer("raw").get(polymarket_id=self.world.markets[index].market_id)

    def apply(self, step: Step) -> None:
        if isinstance(step, Bet):
            self.bet(step)
        elif isinstance(step, Sell):
            self.sell(step)
        elif isinstance(step, Move):
            self.move(step)
        else:
            self.settle(step.market, cancel=step.cancel, winner=step.winner)

    def bet(self, step: Bet) -> None:
        view = self.view(step.market)
        side = (
            ("YES", "NO")[step.side % 2]
            if view.is_binary
            else view.outcomes[step.side % len(view.outcomes)]
        )
        cash = Agent.objects.get(pk=self.agents[step.agent].pk).cash
        amount = money.cents_down(cash * money.MAX_BET_FRACTION * step.fraction)
        order = BetOrder(market_id=view.market_id, side=side, amount=amount)
        self.orders += 1
        try:
            # Each order of a decision has its own index (executed at most once).
            trade_buy(
                decision=self.decisions[step.agent],
                order=order,
                frozen=self.frozen,
                index=self.orders,
            )
        except TradeRejected:
            rejected = True
        else:
            rejected = False
        if rejected:
            assert amount < money.MIN_BET or self.market(step.market).resolution != "open"

    def sell(self, step: Sell) -> None:
        agent = self.agents[step.agent]
        held = list(agent.positions.filter(status=Position.Status.OPEN).order_by("pk"))
        if not held:
            return
        position = held[step.position % len(held)]
        order = SellOrder(position_id=str(position.pk), percentage=step.percentage)
        self.orders += 1
        try:
            trade_sell(
                decision=self.decisions[step.agent],
                order=order,
                frozen=self.frozen,
                index=self.orders,
            )
        except TradeRejected as exc:
            reason = str(exc)
        else:
            return
        assert "0 shares" in reason  # only a sliver of a tiny position can round to nothing

    def move(self, step: Move) -> None:
        """A price move, written as a sync writes it, and seen by the next trades."""
        view = self.view(step.market)
        if view.is_binary:
            prices = [step.price, 1 - step.price]
        else:
            rest = len(view.outcomes) - 1
            other = ((1 - step.price) / rest).quantize(Decimal("0.000001"), rounding=ROUND_DOWN)
            prices = [step.price] + [other] * rest
        market = Market.objects.get(polymarket_id=view.market_id)
        if market.resolution != Market.Resolution.OPEN:
            return
        record = {**market.raw, "outcomePrices": json.dumps([str(p) for p in prices])}
        markets_upsert(markets=[parse_market(record)], include_raw=False)
        self.frozen.views[view.market_id] = dataclasses.replace(view, prices=tuple(prices))

    def settle(self, index: int, *, cancel: bool, winner: int) -> None:
        market = self.market(index)
        outcomes = [str(o) for o in market.outcomes]
        if cancel:
            verdict = Verdict("cancelled", None, None, "property: refunded")
        else:
            won = winner % len(outcomes)
            verdict = Verdict("resolved", outcomes[won], won, "property: resolved")
        market_settle(polymarket_id=market.polymarket_id, verdict=verdict)

    # ------------------------------------------------------------------------- checks

    def snapshot_and_check(self) -> None:
        slot = FIRST_SLOT + timedelta(minutes=10 * next(_slots))
        report = snapshots_take(now=slot, refresh=False)
        assert not report.skipped
        ids = [a.pk for a in self.agents]
        cash = dict(Agent.objects.filter(pk__in=ids).values_list("pk", "cash"))
        values = independent_values(ids)
        snapshots = PortfolioSnapshot.objects.filter(agent_id__in=ids, snapshot_timestamp=slot)
        assert len(snapshots) == len(ids)
        for snap in snapshots:
            assert snap.cash == cash[snap.agent_id]
            assert snap.total_value == snap.cash + snap.positions_value
            assert snap.positions_value == values[snap.agent_id]
            assert snap.total_pnl == snap.total_value - STARTING_BALANCE

    def settle_the_rest(self, endings: list[tuple[bool, int]]) -> None:
        for index, (cancel, winner) in enumerate(endings):
            if self.market(index).resolution == Market.Resolution.OPEN:
                self.settle(index, cancel=cancel, winner=winner)

    def check_final_ledger(self) -> None:
        for agent in Agent.objects.filter(pk__in=[a.pk for a in self.agents]):
            positions = list(agent.positions.all())
            assert not [p for p in positions if p.status == Position.Status.OPEN]
            realized = sum((p.realized_pnl for p in positions), Decimal(0))
            assert agent.cash == STARTING_BALANCE + realized
        for trade in Trade.objects.filter(agent__in=self.agents, kind=Trade.Kind.BUY):
            assert trade.market is not None
            assert trade.position is not None
            if trade.market.resolution == Market.Resolution.CANCELLED:
                assert trade.brier_score is None
                continue
            won = trade.position.outcome_index == [str(o) for o in trade.market.outcomes].index(
                trade.market.winning_outcome
            )
            assert trade.side_won is won
            assert trade.implied_confidence is not None
            assert trade.brier_score == pytest.approx((trade.implied_confidence - won) ** 2)


def independent_values(agent_ids: list[int]) -> dict[int, Decimal]:
    """Σ shares × side-correct price over each agent's open positions (001 §2.2), from the
    stored market prices: YES the YES price, NO 1 − it, an outcome its own; cents down."""
    totals = {agent_id: Decimal(0) for agent_id in agent_ids}
    for agent_id, side, shares, outcomes, prices in Position.objects.filter(
        agent_id__in=agent_ids, status=Position.Status.OPEN
    ).values_list("agent_id", "side", "shares", "market__outcomes", "market__outcome_prices"):
        names = [str(o) for o in outcomes]
        price_of = dict(zip(names, (Decimal(str(p)) for p in prices), strict=True))
        if [n.lower() for n in names] == ["yes", "no"]:
            yes = price_of[names[0]]
            price = yes if side == "YES" else 1 - yes
        else:
            price = price_of[side]
        totals[agent_id] += shares * price
    return {a: total.quantize(Decimal("0.01"), rounding=ROUND_DOWN) for a, total in totals.items()}


@pytest.mark.django_db
@pytest.mark.slow(reason="25 hypothesis cohorts, each traded, ticked and settled week by week")
@EXAMPLES
@given(plan=steps, ending=endings)
def test_snapshots_add_up_and_settled_cash_is_the_start_plus_realized_pnl(
    world: World, plan: list[Step], ending: list[tuple[bool, int]]
) -> None:
    cohort = Play(world)
    cohort.snapshot_and_check()
    for step in plan:
        cohort.apply(step)
        cohort.snapshot_and_check()
    cohort.settle_the_rest(ending)
    cohort.snapshot_and_check()
    cohort.check_final_ledger()
    Decision.objects.filter(cohort=cohort.cohort).update(status=Decision.Status.DONE)
    assert cohort.cohort.number in cohorts_complete()
    later = FIRST_SLOT + timedelta(minutes=10 * next(_slots))
    snapshots_take(now=later, refresh=False)
    assert not PortfolioSnapshot.objects.filter(
        agent__cohort=cohort.cohort, snapshot_timestamp=later
    ).exists()
