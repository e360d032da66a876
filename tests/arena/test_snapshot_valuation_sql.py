"""The snapshot write values positions in the database: its SQL valuation is
`arena.valuation.position_mark`'s, checked on an exhaustive table of cases — binary and
multi-outcome markets, a yes / no pair listed the other way round, each side found by its name
(and sides the market no longer lists), prices missing, null, zero, short or numeric, open or
closed, with and without prices when last open, with and without a last trade price — and the
snapshots it writes are those the Python reference (`portfolio_snapshots_build`) builds.

PostgreSQL computes in numeric, exactly; SQLite, which stores decimals as floating point,
agrees to within a ten-millionth of a dollar per position, and to the cent on the snapshot.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection

from agents.models import BenchmarkModel
from arena.models import Agent, Cohort, PortfolioSnapshot, Position
from arena.services.marking import (
    portfolio_snapshots_build,
    position_values_sql,
    snapshots_take,
)
from arena.valuation import position_value
from markets.models import Market
from tests.arena.factories import AgentFactory, CohortFactory

pytestmark = pytest.mark.django_db

NOW = datetime(2030, 6, 2, 12, 3, 41, tzinfo=UTC)
OPENED = datetime(2030, 6, 1, tzinfo=UTC)
YES_NO = ["Yes", "No"]
NO_YES = ["No", "Yes"]  # a yes / no pair listed the other way round: not binary, own prices
THREE = ["Red", "Green", "Blue"]
# The sides held in each kind of market: its outcomes by name, and sides it does not list
# (a record whose outcomes changed after the bet; YES outside a yes / no pair).
SIDES: dict[tuple[str, ...], list[str]] = {
    tuple(YES_NO): ["YES", "NO", "Maybe"],
    tuple(NO_YES): ["YES", "NO", "Maybe"],
    tuple(THREE): ["Red", "Green", "Blue", "Purple", "YES"],
}

# Every shape of price list position_mark tells apart, per kind of market.
PRICES: dict[tuple[str, ...], list[list[Any]]] = {
    tuple(YES_NO): [
        [],
        ["0.62", "0.38"],
        [0.62, 0.38],  # numbers rather than Gamma's strings
        ["0.62", None],
        [None, None],
        ["0", "1"],
        ["0", "0"],
        ["0.000001", "0.999999"],
    ],
    tuple(NO_YES): [[], ["0.38", "0.62"], [None, "0.62"], ["1", "0"], ["0", "0"]],
    tuple(THREE): [
        [],
        ["0.2", "0.5", "0.3"],
        ["0.2", None, "0.3"],
        ["0", "0.7", "0.3"],
        ["0.2", "0.5"],  # shorter than the outcomes
        ["0", "0", "0"],
    ],
}
LAST_OPEN: dict[tuple[str, ...], list[list[Any]]] = {
    tuple(YES_NO): [[], ["0.55", "0.45"], [None, "0.45"]],
    tuple(NO_YES): [[], ["0.45", "0.55"]],
    tuple(THREE): [[], ["0.1", "0.6", "0.3"], ["0.1", None]],
}
LAST_PRICES = [None, Decimal("0.42"), Decimal("0")]
HOLDINGS = [(Decimal("100"), Decimal("40.00")), (Decimal("3.333333"), Decimal("2.00"))]


def exhaustive_positions(agent: Agent) -> list[Position]:
    """One market per (outcomes, prices, closed, last-open prices), and in each a position
    per (side, last trade price, holding), including sides the market does not list (a
    record whose outcomes changed after the bet): those have no mark of their own and fall
    to their last trade price, then their entry. One position per market and side is open
    (which one varies); the others are closed, and valued alike."""
    positions = []
    combos = [
        (outcomes, prices, closed, last_open)
        for outcomes in PRICES
        for prices in PRICES[outcomes]
        for closed in (False, True)
        for last_open in LAST_OPEN[outcomes]
    ]
    holdings = list(itertools.product(LAST_PRICES, HOLDINGS))
    for n, (outcomes, prices, closed, last_open) in enumerate(combos):
        market = Market.objects.create(
            polymarket_id=f"case-{agent.pk}-{n}",
            question=f"Case {n}?",
            outcomes=list(outcomes),
            outcome_prices=prices,
            last_open_prices=last_open,
            closed=closed,
        )
        for s, side in enumerate(SIDES[outcomes]):
            for k, (last_price, (shares, cost)) in enumerate(holdings):
                is_open = k == (n + s) % len(holdings)
                positions.append(
                    Position(
                        agent=agent,
                        market=market,
                        side=side,
                        outcome_index=0,  # where it was listed when bought: never read
                        status=Position.Status.OPEN if is_open else Position.Status.CLOSED,
                        shares=shares,
                        cost_basis=cost,
                        last_price=last_price,
                        opened_at=OPENED,
                    )
                )
    return Position.objects.bulk_create(positions)


def reference_value(position: Position) -> Decimal:
    market = position.market
    return position_value(
        side=position.side,
        outcomes=market.outcomes,
        prices=market.outcome_prices,
        last_open_prices=market.last_open_prices,
        closed=market.closed,
        last_price=position.last_price,
        shares=position.shares,
        cost_basis=position.cost_basis,
    )


def test_the_sql_valuation_is_position_marks_on_every_case() -> None:
    """Each position's value in SQL is shares × `position_mark` (its cost basis at its
    average entry), case by case."""
    agent: Agent = AgentFactory.create()
    exhaustive_positions(agent)
    positions = Position.objects.filter(agent=agent).select_related("market")
    in_sql = position_values_sql(positions)
    assert len(in_sql) == positions.count() > 500
    exact = connection.vendor == "postgresql"
    for position in positions:
        expected, got = reference_value(position), in_sql[position.pk]
        case = (
            position.market.outcomes,
            position.market.outcome_prices,
            position.market.closed,
            position.market.last_open_prices,
            position.side,
            position.last_price,
            position.shares,
        )
        if exact:
            assert got == expected, (case, got, expected)
        else:
            assert abs(got - expected) < Decimal("1e-7"), (case, got, expected)


def test_a_position_on_an_outcome_its_market_no_longer_lists_is_worth_its_last_price() -> None:
    """Both sides agree (above); and what they agree on: the last trade price, then the
    entry, never a price read from another outcome (a binary market's 1 - YES)."""

    def value(last_price: Decimal | None) -> Decimal:
        return position_value(
            side="Green", outcomes=YES_NO, prices=["0.62", "0.38"],
            last_open_prices=[], closed=False, last_price=last_price,
            shares=Decimal("100"), cost_basis=Decimal("40.00"),
        )  # fmt: skip

    assert value(Decimal("0.42")) == Decimal("42.00")
    assert value(None) == Decimal("40.00")


def test_the_tick_writes_the_snapshots_the_python_reference_builds() -> None:
    """Agents holding every case (open positions only count; a closed one does not), with
    Brier-scored trades left to the other tests: the tick's INSERT … SELECT writes the
    figures `portfolio_snapshots_build` computes with `position_mark`."""
    cohort: Cohort = CohortFactory.create()
    agents = [
        AgentFactory.create(cohort=cohort, model=model)
        for model in BenchmarkModel.objects.order_by("kind", "display_order")[:3]
    ]
    exhaustive_positions(agents[0])
    for agent, step in zip(agents[1:], (3, 7), strict=True):
        mine = exhaustive_positions(agent)[::step]  # a different subset each
        Position.objects.filter(agent=agent).exclude(pk__in=[p.pk for p in mine]).update(
            status=Position.Status.CLOSED
        )
    expected = {
        s.agent_id: s
        for s in portfolio_snapshots_build(
            agents=Agent.objects.filter(pk__in=[a.pk for a in agents]), at=NOW
        )
    }

    report = snapshots_take(now=NOW, refresh=False)

    assert report.written == len(agents)
    for snapshot in PortfolioSnapshot.objects.filter(agent__in=agents):
        want = expected[snapshot.agent_id]
        assert want.positions_value > 0
        for field in (
            "cash",
            "positions_value",
            "total_value",
            "total_pnl",
            "total_pnl_percent",
            "resolved_bets",
            "brier_score",
            "prices_stale",
        ):
            assert getattr(snapshot, field) == getattr(want, field), field
