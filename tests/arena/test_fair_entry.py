"""Fair entry for outside agents: no free option on the snapshot's prices.

The lineup answers minutes after the week's snapshot froze; an outside agent may submit most
of an hour later. Its orders are priced again at submission: the ordered markets are re-read
from Polymarket (here a replay server standing in for Gamma, through the real client), and
each order executes at the worse, for the agent, of the frozen and the live side-correct
price, and never in a market that has closed since the snapshot. Every trade keeps both
prices; every figure uses the one it executed at."""

from __future__ import annotations

import copy
import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from agents.models import BenchmarkModel
from arena.models import Agent, Decision, DecisionRun, Position, Trade
from arena.services.cohorts import cohort_start
from arena.services.decisions.outside import outside_decision_submit
from arena.services.decisions.run import decisions_run_all
from markets.models import Market
from markets.sources import RecordedSource, demo_records
from tests.arena.conftest import COHORT_AT, OFFLINE, RUN_AT, WEEK
from tests.replay import ReplayServer, Reply, Request
from tests.worlds import ModuleWorld, module_world

pytestmark = pytest.mark.django_db

# 50 minutes after the lineup answered: the window is open until 01:00.
SUBMITTED_AT = datetime(2026, 3, 8, 0, 55, tzinfo=UTC)


@dataclass(frozen=True)
class WeekIds:
    agent_id: int
    market_id: str  # a binary market of the snapshot, NO priced 0.05–0.95


@module_world(settings=OFFLINE)
def fair_week() -> WeekIds:
    team = BenchmarkModel.objects.create(
        internal_id="team-fair",
        display_name="Team Fair",
        kind=BenchmarkModel.Kind.OUTSIDE,
        owner="The Fair Lab",
        contact="fair@example.org",
        method_description="Reads the site before it submits.",
    )
    cohort, _ = cohort_start(week_start=WEEK, now=COHORT_AT)
    decisions_run_all(now=RUN_AT, source=RecordedSource())
    run = DecisionRun.objects.filter(week_start=WEEK).order_by("pk").first()
    assert run is not None
    market_id = next(
        row.polymarket_id
        for row in run.markets.filter(rank__isnull=False).order_by("rank")
        if [o.lower() for o in row.outcomes] == ["yes", "no"]
        and row.outcome_prices
        and 0.05 < float(row.outcome_prices[0]) < 0.95
        and not row.closed
    )
    agent = Agent.objects.get(cohort=cohort, model=team)
    return WeekIds(agent_id=agent.pk, market_id=market_id)


@pytest.fixture
def week(db: None, fair_week: ModuleWorld[WeekIds]) -> WeekIds:
    return fair_week.value


def frozen_no_price(week: WeekIds) -> Decimal:
    run = DecisionRun.objects.filter(week_start=WEEK).order_by("pk").first()
    assert run is not None
    yes = Decimal(str(run.markets.get(polymarket_id=week.market_id).outcome_prices[0]))
    return Decimal(1) - yes


def gamma_answers(server: ReplayServer, market_id: str, **changes: Any) -> None:
    """Gamma's /markets answers with the recorded market, changed as given (its YES price as
    `yes`, or any record field)."""
    record = copy.deepcopy(demo_records()[market_id])
    yes = changes.pop("yes", None)
    if yes is not None:
        record["outcomePrices"] = json.dumps([str(yes), str(Decimal(1) - Decimal(str(yes)))])
    record.update(changes)

    def answer(request: Request) -> Reply:
        wanted = request.query.get("id", [])
        return Reply.json([record] if market_id in wanted else [])

    server.route("GET", "/markets", answer)


def bet_no(week: WeekIds, amount: int = 500) -> str:
    return json.dumps(
        {
            "action": "BET",
            "bets": [{"market_id": week.market_id, "side": "NO", "amount": amount}],
            "reasoning": "The news since the snapshot says NO.",
        }
    )


def submit(week: WeekIds, body: str) -> Decision:
    agent = Agent.objects.get(pk=week.agent_id)
    return outside_decision_submit(agent=agent, body=body, now=SUBMITTED_AT).decision


def test_a_bet_after_the_price_moved_against_the_agent_executes_at_the_live_price(
    week: WeekIds, gamma_server: ReplayServer
) -> None:
    frozen = frozen_no_price(week)
    live_no = Decimal("0.97")  # the event as good as decided since 00:05
    gamma_answers(gamma_server, week.market_id, yes=Decimal(1) - live_no)
    decision = submit(week, bet_no(week))
    trade = decision.trades.get()
    assert trade.status == Trade.Status.EXECUTED
    assert trade.snapshot_price == frozen
    assert trade.live_price == live_no
    assert trade.price == live_no  # the worse for the agent: the higher, for a buy
    assert trade.shares == (Decimal(500) / live_no).quantize(Decimal("0.000001"), "ROUND_DOWN")
    asked = [r for r in gamma_server.requests if r.path == "/markets"]
    assert asked
    assert asked[0].query["id"] == [week.market_id]


def test_a_bet_after_the_price_moved_for_the_agent_executes_at_the_snapshot_price(
    week: WeekIds, gamma_server: ReplayServer
) -> None:
    frozen = frozen_no_price(week)
    live_no = (frozen - Decimal("0.03")).quantize(Decimal("0.001"))
    gamma_answers(gamma_server, week.market_id, yes=Decimal(1) - live_no)
    trade = submit(week, bet_no(week)).trades.get()
    assert trade.price == frozen  # never better than the lineup could have had
    assert trade.live_price == live_no


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"closed": True}, "closed since the snapshot"),
        ({"active": False}, "closed since the snapshot"),
    ],
)
def test_no_bet_executes_in_a_market_that_closed_since_the_snapshot(
    week: WeekIds, gamma_server: ReplayServer, changes: dict[str, Any], reason: str
) -> None:
    gamma_answers(gamma_server, week.market_id, yes=Decimal("0.01"), **changes)
    decision = submit(week, bet_no(week))
    trade = decision.trades.get()
    assert trade.status == Trade.Status.REJECTED
    assert reason in trade.reject_reason
    assert decision.status == Decision.Status.RETRYABLE  # as any BET of which nothing executed
    assert Agent.objects.get(pk=week.agent_id).cash == 10_000
    assert Market.objects.get(polymarket_id=week.market_id).closed == changes.get("closed", False)


def test_a_market_gamma_no_longer_returns_takes_no_bet(
    week: WeekIds, gamma_server: ReplayServer
) -> None:
    gamma_server.route("GET", "/markets", Reply.json([]))
    trade = submit(week, bet_no(week)).trades.get()
    assert trade.status == Trade.Status.REJECTED
    assert "did not return a readable record" in trade.reject_reason


def test_without_a_live_price_nothing_executes_at_the_snapshot_price_alone(
    week: WeekIds, gamma_server: ReplayServer, settings: Any
) -> None:
    settings.HTTP_MAX_RETRIES = 0
    gamma_server.route("GET", "/markets", Reply.json({"error": "upstream"}, status=503))
    decision = submit(week, bet_no(week))
    trade = decision.trades.get()
    assert trade.status == Trade.Status.REJECTED
    assert "the live price could not be read" in trade.reject_reason
    assert decision.status == Decision.Status.RETRYABLE
    assert Agent.objects.get(pk=week.agent_id).cash == 10_000


def test_the_live_read_a_submission_waits_on_tries_twice_at_most_and_waits_little(
    week: WeekIds, gamma_server: ReplayServer, settings: Any
) -> None:
    """The team's submission holds its claim while Polymarket is read: the read gives up
    after one retry and a short Retry-After, whatever the settings allow a background sync."""
    settings.HTTP_MAX_RETRIES = 5
    settings.HTTP_RETRY_AFTER_CAP_SECONDS = 60
    busy = Reply.json({"error": "slow down"}, status=429, headers={"Retry-After": "1"})
    gamma_server.route("GET", "/markets", busy)
    began = time.monotonic()

    decision = submit(week, bet_no(week))

    assert len(gamma_server.requests_to("/markets")) == 2
    assert time.monotonic() - began < 10
    assert "the live price could not be read" in decision.trades.get().reject_reason


def test_a_sale_after_the_price_fell_executes_at_the_live_price(
    week: WeekIds, gamma_server: ReplayServer
) -> None:
    frozen = frozen_no_price(week)
    agent = Agent.objects.get(pk=week.agent_id)
    market = Market.objects.get(polymarket_id=week.market_id)
    held = Position.objects.create(
        agent=agent,
        market=market,
        side="NO",
        outcome_index=1,
        shares=Decimal(1000),
        cost_basis=Decimal(400),
        opened_at=COHORT_AT,
    )
    live_no = (frozen / 2).quantize(Decimal("0.001"))
    gamma_answers(gamma_server, week.market_id, yes=Decimal(1) - live_no)
    body = json.dumps(
        {
            "action": "SELL",
            "sells": [{"position_id": str(held.pk), "percentage": 100}],
            "reasoning": "Out before the news.",
        }
    )
    trade = submit(week, body).trades.get()
    assert trade.status == Trade.Status.EXECUTED
    assert (trade.snapshot_price, trade.live_price) == (frozen, live_no)
    assert trade.price == live_no  # the worse for the agent: the lower, for a sale
    assert trade.amount == Decimal(1000) * live_no


def test_the_lineup_executes_at_the_snapshot_and_its_trades_say_so(week: WeekIds) -> None:
    lineup = Trade.objects.filter(status=Trade.Status.EXECUTED).exclude(agent_id=week.agent_id)
    assert lineup.exists()
    for trade in lineup:
        assert trade.snapshot_price == trade.price
        assert trade.live_price is None


def test_a_hold_reads_nothing_from_polymarket(week: WeekIds, gamma_server: ReplayServer) -> None:
    decision = submit(week, json.dumps({"action": "HOLD", "reasoning": "Nothing to add."}))
    assert decision.status == Decision.Status.DONE
    assert gamma_server.requests == []
