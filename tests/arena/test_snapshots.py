"""Mark-to-market every 10 minutes (001 §2.2 and §2.4; 002 "Portfolio snapshots").

Valuation is checked on `position_mark` and through `snapshots_take` against figures worked
out by hand here. The closed-market fallback and the price refresh run on the real recorded
Gamma records, served by the replay server where the refresh goes over HTTP.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import ROUND_DOWN, Decimal
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from agents.models import BenchmarkModel
from arena.models import (
    STARTING_BALANCE,
    Agent,
    AgentSnapshotRollup,
    Cohort,
    PortfolioSnapshot,
    Position,
    SnapshotTick,
)
from arena.services.marking import snapshots_take
from arena.valuation import position_mark
from arena.weeks import snapshot_slot
from markets.models import Market
from markets.parsing import parse_market
from markets.services import markets_upsert
from tests.arena.factories import AgentFactory, CohortFactory
from tests.markets.conftest import by_id_handler, gamma_json
from tests.replay import ReplayServer, Reply, recording

NOW = datetime(2030, 6, 2, 12, 3, 41, tzinfo=UTC)
SLOT = datetime(2030, 6, 2, 12, 0, tzinfo=UTC)
OPENED = datetime(2030, 6, 1, tzinfo=UTC)
YES_NO = ["Yes", "No"]


def new_cohort(**kwargs: Any) -> Cohort:
    cohort: Cohort = CohortFactory.create(**kwargs)
    return cohort


def new_agent(**kwargs: Any) -> Agent:
    agent: Agent = AgentFactory.create(**kwargs)
    return agent


# ----------------------------------------------------------------------------- helpers


def market(
    pid: str,
    prices: list[str | None],
    *,
    outcomes: list[str] | None = None,
    closed: bool = False,
    last_open: list[str | None] | None = None,
) -> Market:
    return Market.objects.create(
        polymarket_id=pid,
        question=f"Question {pid}?",
        outcomes=outcomes or YES_NO,
        outcome_prices=prices,
        last_open_prices=last_open if last_open is not None else ([] if closed else prices),
        closed=closed,
    )


def hold(
    agent: Agent,
    in_market: Market,
    side: str,
    shares: str,
    *,
    cost: str = "100.00",
    last_price: str | None = None,
) -> Position:
    outcomes = [str(o) for o in in_market.outcomes]
    if in_market.is_binary:
        index = 0 if side == "YES" else 1
    else:
        index = outcomes.index(side)
    return Position.objects.create(
        agent=agent,
        market=in_market,
        side=side,
        outcome_index=index,
        shares=Decimal(shares),
        cost_basis=Decimal(cost),
        last_price=Decimal(last_price) if last_price is not None else None,
        opened_at=OPENED,
    )


def lineup(cohort: Cohort, count: int) -> list[Agent]:
    models = BenchmarkModel.objects.order_by("kind", "display_order")[:count]
    return [new_agent(cohort=cohort, model=m) for m in models]


def snapshot_of(agent: Agent, slot: datetime = SLOT) -> PortfolioSnapshot:
    return PortfolioSnapshot.objects.get(agent=agent, snapshot_timestamp=slot)


def mark(
    *,
    side: str,
    prices: list[Any],
    outcomes: list[str] | None = None,
    closed: bool = False,
    last_open: list[Any] | None = None,
    last_price: str | None = None,
    shares: str = "100",
    cost: str = "40",
) -> Decimal:
    return position_mark(
        side=side,
        outcomes=list(outcomes or YES_NO),
        prices=prices,
        last_open_prices=last_open or [],
        closed=closed,
        last_price=Decimal(last_price) if last_price is not None else None,
        shares=Decimal(shares),
        cost_basis=Decimal(cost),
    )


def open_copy(record: dict[str, Any], prices: list[str]) -> dict[str, Any]:
    """The real record as it stood while trading: open, not resolved, at `prices`."""
    return {
        **record,
        "closed": False,
        "umaResolutionStatus": None,
        "outcomePrices": json.dumps(prices),
    }


# ------------------------------------------------------------- valuation: position_mark


@pytest.mark.parametrize(
    ("side", "prices", "expected"),
    [
        ("YES", ["0.37", "0.63"], Decimal("0.37")),
        ("NO", ["0.37", "0.63"], Decimal("0.63")),
        # NO is 1 − YES (001 §2.2), not the stored NO price, even if upstream's do not sum to 1
        ("NO", ["0.37", "0.60"], Decimal("0.63")),
        ("YES", ["0.999", "0.001"], Decimal("0.999")),
        ("NO", ["0.000001", "0.999999"], Decimal("0.999999")),
    ],
)
def test_binary_position_is_marked_at_its_side_correct_price(
    side: str, prices: list[str], expected: Decimal
) -> None:
    assert mark(side=side, prices=prices) == expected


@pytest.mark.parametrize(("index", "expected"), [(0, "0.2"), (1, "0.5"), (2, "0.3")])
def test_multi_outcome_position_is_marked_at_its_own_outcomes_price(
    index: int, expected: str
) -> None:
    outcomes = ["Acend", "Bebop", "Draw"]
    price = mark(side=outcomes[index], outcomes=outcomes, prices=["0.2", "0.5", "0.3"])
    assert price == Decimal(expected)


@pytest.mark.parametrize(
    ("side", "outcomes", "prices", "expected"),
    [
        ("Acend", ["Bebop", "Draw", "Acend"], ["0.2", "0.5", "0.3"], Decimal("0.3")),
        # a yes / no pair listed the other way round: each side its own outcome's price
        ("YES", ["No", "Yes"], ["0.63", "0.37"], Decimal("0.37")),
        ("NO", ["No", "Yes"], ["0.63", "0.37"], Decimal("0.63")),
        ("YES", ["no", "YES"], ["0.63", "0.37"], Decimal("0.37")),
    ],
)
def test_a_position_is_marked_at_its_outcome_found_by_name_wherever_it_is_listed(
    side: str, outcomes: list[str], prices: list[str], expected: Decimal
) -> None:
    assert mark(side=side, outcomes=outcomes, prices=prices, last_price="0.42") == expected


@pytest.mark.parametrize(
    ("side", "outcomes"),
    [
        ("Acend", ["Acend Esports", "Bebop"]),  # renamed
        ("YES", ["Yes", "No", "Maybe"]),  # no longer a yes / no pair
        ("acend", ["Acend", "Bebop"]),  # a name is exact
    ],
)
def test_a_position_whose_outcome_is_no_longer_listed_keeps_its_last_trade_price(
    side: str, outcomes: list[str]
) -> None:
    prices = ["0.9"] + ["0.05"] * (len(outcomes) - 1)
    assert mark(side=side, outcomes=outcomes, prices=prices, last_price="0.42") == Decimal("0.42")


@pytest.mark.parametrize(
    ("side", "prices", "expected"),
    [
        ("YES", ["0", "1"], "0.3"),  # price 0 on a closed market: not a valuation
        ("YES", [], "0.3"),  # no prices at all
        ("YES", [None, None], "0.3"),  # prices missing
        ("NO", [None, None], "0.7"),
    ],
)
def test_closed_unresolved_binary_without_a_usable_price_keeps_its_last_open_price(
    side: str, prices: list[Any], expected: str
) -> None:
    price = mark(side=side, prices=prices, closed=True, last_open=["0.3", "0.7"])
    assert price == Decimal(expected)


def test_closed_unresolved_multi_outcome_with_zero_price_keeps_its_last_open_price() -> None:
    outcomes = ["Pakistan", "Afghanistan"]
    price = mark(
        side="Afghanistan",
        outcomes=outcomes,
        prices=["1", "0"],
        closed=True,
        last_open=["0.55", "0.45"],
    )
    assert price == Decimal("0.45")


def test_closed_unresolved_market_without_last_open_prices_falls_back_to_last_trade_price() -> None:
    price = mark(side="YES", prices=["0", "1"], closed=True, last_price="0.42")
    assert price == Decimal("0.42")


def test_closed_unresolved_market_without_any_price_is_kept_at_its_average_entry() -> None:
    price = mark(side="YES", prices=[], closed=True, shares="250", cost="100")
    assert price == Decimal("0.4")


def test_open_market_price_is_used_as_is_even_when_it_is_zero() -> None:
    """Only a *closed* unresolved market falls back: an open market's price is the market."""
    assert mark(side="YES", prices=["0", "1"], last_open=["0.3", "0.7"]) == 0


def test_closed_all_zero_prices_keep_a_no_position_at_its_last_open_price() -> None:
    """The recorded shape `["0", "0"]` (market 12, closed, no UMA status) carries no usable
    price for either side. The NO side must fall back like the YES side does (002), not be
    read as 1 − 0 = $1 a share."""
    price = mark(side="NO", prices=["0", "0"], closed=True, last_open=["0.3", "0.7"])
    assert price == Decimal("0.7")


# ---------------------------------------------------------- valuation through the tick


def test_snapshot_values_yes_no_and_multi_outcome_positions(db: None) -> None:
    agent = new_agent(cash=Decimal("6000.00"))
    binary = market("9100001", ["0.37", "0.63"])
    other = market("9100002", ["0.815", "0.185"])
    multi = market("9100003", ["0.2", "0.5", "0.3"], outcomes=["Acend", "Bebop", "Draw"])
    hold(agent, binary, "YES", "1000")  # 370.00
    hold(agent, other, "NO", "333.333333")  # 333.333333 × 0.185 = 61.666666…
    hold(agent, multi, "Bebop", "123.456789")  # × 0.5 = 61.7283945

    report = snapshots_take(now=NOW, refresh=False)

    assert report.written == 1
    snap = snapshot_of(agent)
    exact = (
        Decimal("1000") * Decimal("0.37")
        + Decimal("333.333333") * Decimal("0.185")
        + Decimal("123.456789") * Decimal("0.5")
    )
    assert snap.positions_value == Decimal("493.39")  # cents down, never in the agent's favour
    assert snap.positions_value == exact.quantize(Decimal("0.01"), rounding=ROUND_DOWN)
    assert snap.cash == Decimal("6000.00")
    assert snap.total_value == Decimal("6493.39")
    assert snap.total_pnl == Decimal("-3506.61")
    assert snap.total_pnl_percent == Decimal("-35.0661")
    assert snap.prices_stale is False
    assert snap.snapshot_timestamp == SLOT


# ------------------------------------------------------------------------- a windfall


def test_a_windfall_is_snapshotted_exactly_and_every_other_agent_with_it(db: None) -> None:
    """A winning $2,500 bet at 0.0002 pays $12,500,000: that agent's return is +124,975%.
    Another holds two windfalls still open, $5.4 M each. The tick writes every agent's
    snapshot in one statement, so one figure too wide for its column would cost every
    agent its snapshot: each must be written, to the cent and the ten-thousandth of a
    percent, and merged into the hourly and daily rollups."""
    paid, holding, ordinary = lineup(new_cohort(), 3)
    Agent.objects.filter(pk=paid.pk).update(cash=Decimal("12507500.00"))
    Agent.objects.filter(pk=holding.pk).update(cash=Decimal("7000.00"))
    Agent.objects.filter(pk=ordinary.pk).update(cash=Decimal("9600.00"))
    up, down, plain = (
        market("9100021", ["0.9", "0.1"]),
        market("9100022", ["0.1", "0.9"]),
        market("9100023", ["0.37", "0.63"]),
    )
    hold(holding, up, "YES", "6000000", cost="1200.00")  # 0.0002 a share when bought
    hold(holding, down, "NO", "6000000", cost="1200.00")
    hold(holding, plain, "YES", "1234.567891", cost="600.00")
    hold(ordinary, plain, "YES", "1000", cost="400.00")

    report = snapshots_take(now=NOW, refresh=False)

    assert report.written == 3
    expected = {
        # cash, positions value, total value, total P/L, total P/L %
        paid: ("12507500.00", "0.00", "12507500.00", "12497500.00", "124975.0000"),
        # 6,000,000 × 0.9 × 2 + 1,234.567891 × 0.37 = 10,800,456.79011967, cents down
        holding: ("7000.00", "10800456.79", "10807456.79", "10797456.79", "107974.5679"),
        ordinary: ("9600.00", "370.00", "9970.00", "-30.00", "-0.3000"),
    }
    for agent, figures in expected.items():
        snap = snapshot_of(agent)
        written = (
            snap.cash,
            snap.positions_value,
            snap.total_value,
            snap.total_pnl,
            snap.total_pnl_percent,
        )
        assert written == tuple(Decimal(f) for f in figures), agent
        rollups = AgentSnapshotRollup.objects.filter(agent=agent)
        assert rollups.count() == 2  # its hour and its day
        for rollup in rollups:
            assert rollup.total_value == snap.total_value
            assert rollup.total_pnl_percent == snap.total_pnl_percent


def test_worked_example_of_001_cash_7500_and_positions_3200_is_plus_700_or_7_percent(
    db: None,
) -> None:
    """001 §2.4: cash $7,500 + positions $3,200 = $10,700 → total P/L +$700 (+7.0%)."""
    agent = new_agent(cash=Decimal("7500.00"))
    yes_market = market("9100011", ["0.4", "0.6"])
    no_market = market("9100012", ["0.75", "0.25"])
    hold(agent, yes_market, "YES", "5000", cost="2000.00")  # 5000 × 0.40 = 2,000
    hold(agent, no_market, "NO", "4800", cost="500.00")  # 4800 × (1 − 0.75) = 1,200

    snapshots_take(now=NOW, refresh=False)

    snap = snapshot_of(agent)
    assert snap.cash == Decimal("7500.00")
    assert snap.positions_value == Decimal("3200.00")
    assert snap.total_value == Decimal("10700.00")
    assert snap.total_pnl == Decimal("700.00")
    assert snap.total_pnl_percent == Decimal("7.0")


def test_only_open_positions_count_towards_the_value(db: None) -> None:
    agent = new_agent(cash=Decimal("9000.00"))
    binary = market("9100021", ["0.5", "0.5"])
    hold(agent, binary, "YES", "100")
    sold = hold(agent, binary, "NO", "100")
    Position.objects.filter(pk=sold.pk).update(status=Position.Status.CLOSED)

    snapshots_take(now=NOW, refresh=False)

    assert snapshot_of(agent).positions_value == Decimal("50.00")


def test_closed_unresolved_real_market_keeps_its_last_open_valuation(db: None) -> None:
    """The real record of market 253898 (closed, UMA "proposed", prices ["0", "1"]) seen after
    it traded at 0.30: a YES position stays valued at 0.30, not at zero."""
    record = gamma_json("market_closed_uma_proposed.json")
    markets_upsert(markets=[parse_market(open_copy(record, ["0.3", "0.7"]))])
    markets_upsert(markets=[parse_market(record)])  # the recorded, closed state
    stored = Market.objects.get(polymarket_id=record["id"])
    assert stored.closed is True
    assert stored.outcome_prices == ["0.000000", "1.000000"]
    agent = new_agent(cash=Decimal("9700.00"))
    hold(agent, stored, "YES", "1000", cost="300.00")

    snapshots_take(now=NOW, refresh=False)

    snap = snapshot_of(agent)
    assert snap.positions_value == Decimal("300.00")
    assert snap.total_value == STARTING_BALANCE


def test_closed_all_zero_real_market_keeps_both_sides_at_their_last_open_valuation(
    db: None,
) -> None:
    """The real record of market 12 (closed, no UMA status, prices ["0", "0"]) seen after it
    traded at 0.30 / 0.70: neither side has a usable fresh price, so both keep their last
    open valuation — YES $300 and NO $700 for 1,000 shares each, $1,000 in all (a pair of
    YES + NO shares can never be worth more than $1)."""
    record = gamma_json("market_closed_zero_prices_no_uma_status.json")
    markets_upsert(markets=[parse_market(open_copy(record, ["0.3", "0.7"]))])
    markets_upsert(markets=[parse_market(record)])
    stored = Market.objects.get(polymarket_id=record["id"])
    yes_agent = new_agent(cash=Decimal("9700.00"))
    no_agent = new_agent(cash=Decimal("9300.00"))
    hold(yes_agent, stored, "YES", "1000", cost="300.00")
    hold(no_agent, stored, "NO", "1000", cost="700.00")

    snapshots_take(now=NOW, refresh=False)

    assert snapshot_of(yes_agent).positions_value == Decimal("300.00")
    assert snapshot_of(no_agent).positions_value == Decimal("700.00")


# ------------------------------------------------------------------- who gets a snapshot


def test_one_snapshot_per_agent_of_every_active_cohort_and_none_for_completed_ones(
    db: None,
) -> None:
    first, second = new_cohort(), new_cohort()
    done = new_cohort(status=Cohort.Status.COMPLETED, completed_at=NOW - timedelta(days=1))
    active_agents = lineup(first, 3) + lineup(second, 2)
    done_agents = lineup(done, 3)
    binary = market("9100031", ["0.4", "0.6"])
    hold(active_agents[0], binary, "YES", "100")
    llm = next(a for a in done_agents if not a.model.is_baseline)
    hold(llm, binary, "YES", "100")  # cannot happen, but must not be snapshotted

    report = snapshots_take(now=NOW, refresh=False)

    assert report.written == 5
    assert not report.skipped
    assert sorted(PortfolioSnapshot.objects.values_list("agent_id", flat=True)) == sorted(
        a.pk for a in active_agents
    )
    assert not PortfolioSnapshot.objects.filter(agent__cohort=done).exists()
    tick = SnapshotTick.objects.get(slot=SLOT)
    assert tick.snapshots_written == 5
    assert tick.refresh_error == ""


def test_a_baseline_still_holding_a_position_after_its_cohort_completed_is_marked(
    db: None,
) -> None:
    """Baselines never keep a cohort alive: a baseline's long-dated position stays open after
    completion, and every tick keeps marking it (and only it) in that cohort."""
    done = new_cohort(status=Cohort.Status.COMPLETED, completed_at=NOW - timedelta(days=1))
    baseline, other_baseline, llm = lineup(done, 3)
    assert baseline.model.is_baseline
    assert not llm.model.is_baseline
    binary = market("9100032", ["0.4", "0.6"])
    hold(baseline, binary, "NO", "100")

    report = snapshots_take(now=NOW, refresh=False)

    assert report.written == 1
    snapshot = snapshot_of(baseline)
    assert snapshot.positions_value == Decimal("60.00")  # 100 NO shares at 1 − 0.4


def test_a_baselines_position_settled_after_completion_gets_one_last_snapshot(
    db: None,
) -> None:
    """Its curve must end at the settled value the leaderboard ranks it by: the tick after
    the settlement marks it once more, and the ticks after that leave it alone."""
    done = new_cohort(status=Cohort.Status.COMPLETED, completed_at=NOW - timedelta(days=1))
    baseline, _, llm = lineup(done, 3)
    position = hold(baseline, market("9100033", ["0.4", "0.6"]), "NO", "100")
    snapshots_take(now=NOW, refresh=False)
    assert snapshot_of(baseline).positions_value == Decimal("60.00")

    settled_at = NOW + timedelta(minutes=20)
    Position.objects.filter(pk=position.pk).update(
        status=Position.Status.SETTLED, closed_at=settled_at, settlement_value=Decimal("100")
    )
    Agent.objects.filter(pk=baseline.pk).update(cash=baseline.cash + Decimal("100"))
    # A snapshot is stamped with its slot's start, so the one of the settlement's own slot
    # may have been read before it: ticks go on until one is stamped after the settlement.
    written = [
        snapshots_take(now=settled_at + timedelta(minutes=m), refresh=False).written
        for m in (5, 15, 25)
    ]
    assert written == [1, 1, 0]
    final = PortfolioSnapshot.objects.filter(agent=baseline).latest("snapshot_timestamp")
    assert final.snapshot_timestamp > settled_at
    assert (final.positions_value, final.total_value) == (
        Decimal("0.00"),
        baseline.cash + Decimal("100"),
    )
    assert not PortfolioSnapshot.objects.filter(agent=llm).exists()


def test_a_tick_with_no_active_cohort_writes_no_snapshot(db: None) -> None:
    report = snapshots_take(now=NOW, refresh=False)
    assert report.written == 0
    assert not PortfolioSnapshot.objects.exists()


def test_snapshot_records_the_cumulative_brier_and_resolved_bets(db: None) -> None:
    from arena.models import Decision, Trade

    agent = new_agent()
    decision = Decision.objects.create(
        agent=agent, cohort=agent.cohort, week_start=agent.cohort.week_start
    )
    binary = market("9100041", ["0.5", "0.5"])
    for i, (score, status) in enumerate(
        [(0.04, "executed"), (0.64, "executed"), (None, "executed"), (0.5, "rejected")]
    ):
        Trade.objects.create(
            decision=decision,
            agent=agent,
            order_index=i,
            kind=Trade.Kind.BUY,
            status=status,
            market=binary,
            shares=Decimal("10") if status == "executed" else None,
            brier_score=score,
            created_at=OPENED,
        )

    snapshots_take(now=NOW, refresh=False)

    snap = snapshot_of(agent)
    assert snap.resolved_bets == 2
    assert snap.brier_score == pytest.approx(0.34)


# ---------------------------------------------------------------------- one per 10 minutes


def test_snapshot_slot_floors_to_ten_minutes_in_utc() -> None:
    assert snapshot_slot(datetime(2030, 6, 2, 12, 9, 59, 999999, tzinfo=UTC)) == SLOT
    assert snapshot_slot(datetime(2030, 6, 2, 12, 10, tzinfo=UTC)) == SLOT + timedelta(minutes=10)
    later = datetime(2030, 6, 2, 23, 59, 59, tzinfo=UTC)
    assert snapshot_slot(later) == datetime(2030, 6, 2, 23, 50, tzinfo=UTC)


def test_a_repeated_tick_for_the_same_slot_writes_nothing_twice(db: None) -> None:
    agents = lineup(new_cohort(), 3)
    first = snapshots_take(now=NOW, refresh=False)
    Agent.objects.filter(pk=agents[0].pk).update(cash=Decimal("1.00"))

    again = snapshots_take(now=NOW + timedelta(minutes=5), refresh=False)
    same_moment = snapshots_take(now=NOW, refresh=False)

    assert first.written == 3
    assert again.skipped
    assert again.written == 0
    assert same_moment.skipped
    assert same_moment.written == 0
    assert "already snapshotted" in again.summary()
    assert PortfolioSnapshot.objects.count() == 3
    assert SnapshotTick.objects.count() == 1
    assert snapshot_of(agents[0]).cash == STARTING_BALANCE  # the first write stands

    nxt = snapshots_take(now=NOW + timedelta(minutes=7), refresh=False)  # 12:10
    assert nxt.written == 3
    assert PortfolioSnapshot.objects.count() == 6
    assert snapshot_of(agents[0], SLOT + timedelta(minutes=10)).cash == Decimal("1.00")


def test_a_tick_whose_slot_row_is_lost_still_never_duplicates_a_snapshot(db: None) -> None:
    """The unique (agent, snapshot_timestamp) constraint backs the tick row: even a second
    writer that got past the tick check cannot store a second snapshot for the slot."""
    agents = lineup(new_cohort(), 2)
    snapshots_take(now=NOW, refresh=False)
    SnapshotTick.objects.all().delete()

    snapshots_take(now=NOW, refresh=False)

    assert PortfolioSnapshot.objects.count() == 2
    for agent in agents:
        assert PortfolioSnapshot.objects.filter(agent=agent).count() == 1


def test_the_database_refuses_a_second_snapshot_or_tick_for_a_slot(db: None) -> None:
    (agent,) = lineup(new_cohort(), 1)
    snapshots_take(now=NOW, refresh=False)
    with pytest.raises(IntegrityError), transaction.atomic():
        PortfolioSnapshot.objects.create(
            agent=agent,
            snapshot_timestamp=SLOT,
            cash=1,
            positions_value=0,
            total_value=1,
            total_pnl=0,
            total_pnl_percent=0,
        )
    with pytest.raises(IntegrityError), transaction.atomic():
        SnapshotTick.objects.create(slot=SLOT)


# ---------------------------------------------------------------------- the price refresh


@pytest.fixture
def held_real_market(db: None) -> tuple[Agent, Market]:
    """An agent holding 1,000 YES shares of the real open market 1303407, stored at 0.03."""
    record = gamma_json("market_open.json")
    markets_upsert(markets=[parse_market(record)])
    stored = Market.objects.get(polymarket_id=record["id"])
    agent = new_agent(cash=Decimal("9970.00"))
    hold(agent, stored, "YES", "1000", cost="30.00")
    return agent, stored


def test_a_tick_refreshes_held_markets_by_id_and_values_at_the_fresh_price(
    held_real_market: tuple[Agent, Market], gamma_server: ReplayServer
) -> None:
    agent, stored = held_real_market
    fresh = {**gamma_json("market_open.json"), "outcomePrices": '["0.045", "0.955"]'}
    gamma_server.route("GET", "/markets", by_id_handler([fresh]))

    report = snapshots_take(now=NOW)

    assert report.refreshed == 1
    assert report.refresh_error == ""
    asked = gamma_server.requests_to("/markets")
    assert [r.query.get("id") for r in asked] == [[stored.polymarket_id]]
    snap = snapshot_of(agent)
    assert snap.positions_value == Decimal("45.00")
    assert snap.prices_stale is False
    stored.refresh_from_db()
    assert stored.outcome_prices == ["0.045000", "0.955000"]


def test_a_tick_records_how_many_markets_it_refreshed(
    held_real_market: tuple[Agent, Market], gamma_server: ReplayServer
) -> None:
    """SnapshotTick keeps "what it refreshed" (its `markets_refreshed` field)."""
    gamma_server.route("GET", "/markets", by_id_handler([gamma_json("market_open.json")]))

    report = snapshots_take(now=NOW)

    assert report.refreshed == 1
    assert SnapshotTick.objects.get(slot=SLOT).markets_refreshed == 1


def test_a_failed_price_refresh_still_snapshots_at_the_last_known_prices(
    held_real_market: tuple[Agent, Market], gamma_server: ReplayServer, settings: Any
) -> None:
    settings.HTTP_MAX_RETRIES = 0
    agent, stored = held_real_market
    gamma_server.route(
        "GET",
        "/markets",
        Reply(status=500, body=recording("markets/recordings/gamma/error_500_internal_error.json")),
    )

    report = snapshots_take(now=NOW)

    assert gamma_server.requests_to("/markets"), "the refresh must have been tried"
    assert report.written == 1
    assert "500" in report.refresh_error
    assert "price refresh failed" in report.summary()
    snap = snapshot_of(agent)
    assert snap.prices_stale is True
    assert snap.positions_value == Decimal("30.00")  # 1,000 × the stored 0.03
    assert snap.total_value == STARTING_BALANCE
    tick = SnapshotTick.objects.get(slot=SLOT)
    assert tick.refresh_error == report.refresh_error
    assert tick.snapshots_written == 1
    # … and the operations record keeps the failure
    from arena.models import SystemEvent

    event = SystemEvent.objects.get(kind=SystemEvent.Kind.SYNC_FAILED)
    assert event.level == SystemEvent.Level.WARNING
    assert "refresh" in event.message
    assert "500" in event.message
    stored.refresh_from_db()
    assert stored.outcome_prices == ["0.030000", "0.970000"]


def test_a_refresh_that_finds_the_market_closed_keeps_its_last_open_valuation(
    db: None, gamma_server: ReplayServer
) -> None:
    """Market 253898 traded at 0.30, then the tick's refresh brings its real closed record
    (UMA "proposed", prices ["0", "1"]): the position is still worth $300, not $0."""
    record = gamma_json("market_closed_uma_proposed.json")
    markets_upsert(markets=[parse_market(open_copy(record, ["0.3", "0.7"]))])
    stored = Market.objects.get(polymarket_id=record["id"])
    agent = new_agent(cash=Decimal("9700.00"))
    hold(agent, stored, "YES", "1000", cost="300.00")
    gamma_server.route("GET", "/markets", by_id_handler([record]))

    report = snapshots_take(now=NOW)

    assert report.refreshed == 1
    assert report.refresh_error == ""
    stored.refresh_from_db()
    assert stored.closed is True
    assert stored.resolution == Market.Resolution.OPEN
    assert stored.last_open_prices == ["0.300000", "0.700000"]
    assert snapshot_of(agent).positions_value == Decimal("300.00")


# --------------------------------------------------------------------- query count


def _populate(cohorts: int, *, first_pid: int) -> None:
    pid = first_pid
    for _ in range(cohorts):
        for agent in lineup(new_cohort(), 3):
            for side in ("YES", "NO"):
                hold(agent, market(str(pid), ["0.4", "0.6"]), side, "100")
                pid += 1
        multi = market(str(pid), ["0.2", "0.8"], outcomes=["A", "B"])
        hold(agent, multi, "B", "50")
        pid += 1


def test_the_number_of_queries_of_a_tick_does_not_grow_with_agents_or_positions(
    db: None,
) -> None:
    _populate(1, first_pid=9200000)
    with CaptureQueriesContext(connection) as small:
        assert snapshots_take(now=NOW, refresh=False).written == 3
    _populate(3, first_pid=9300000)
    with CaptureQueriesContext(connection) as large:
        assert snapshots_take(now=NOW + timedelta(minutes=10), refresh=False).written == 12

    assert Position.objects.filter(status="open").count() == 28
    assert len(large.captured_queries) == len(small.captured_queries)
    assert len(small.captured_queries) <= 20
