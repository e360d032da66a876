# factory_boy's declarations are untyped; the factories' create()/build() return typed objects.
# mypy: allow-untyped-calls
"""factory_boy factories of the arena: cohorts and agents, and the orders a decision carries."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal

from factory.base import Factory
from factory.declarations import LazyAttribute, LazyFunction, Sequence, SubFactory
from factory.django import DjangoModelFactory

from agents.models import BenchmarkModel
from agents.types import BetOrder, ParsedDecision, SellOrder
from arena.models import STARTING_BALANCE, Agent, Cohort

# A Sunday far from the weeks the other tests use, so factory cohorts never collide with them.
FACTORY_FIRST_WEEK = date(2030, 1, 6)


def _week(n: int) -> date:
    return FACTORY_FIRST_WEEK + timedelta(weeks=n)


class CohortFactory(DjangoModelFactory[Cohort]):
    class Meta:
        model = Cohort

    number = Sequence(lambda n: 1000 + n)
    week_start = Sequence(_week)
    started_at = LazyAttribute(lambda o: datetime.combine(o.week_start, time(), UTC))


class AgentFactory(DjangoModelFactory[Agent]):
    """An agent of the lineup model `gpt-5.1` (seeded by agents/0002) in a new cohort."""

    class Meta:
        model = Agent

    cohort = SubFactory(CohortFactory)
    model = LazyFunction(lambda: BenchmarkModel.objects.get(internal_id="gpt-5.1"))
    cash = STARTING_BALANCE


class BetOrderFactory(Factory[BetOrder]):
    class Meta:
        model = BetOrder

    market_id = "0"
    side = "YES"
    amount = Decimal("500")


class SellOrderFactory(Factory[SellOrder]):
    class Meta:
        model = SellOrder

    position_id = "0"
    percentage = Decimal("100")


def bet_decision(*bets: BetOrder) -> ParsedDecision:
    return ParsedDecision(action="BET", reasoning="test bets", bets=tuple(bets))


def sell_decision(*sells: SellOrder) -> ParsedDecision:
    return ParsedDecision(action="SELL", reasoning="test sells", sells=tuple(sells))
