"""Resolution and settlement against the replayed real Gamma records (001 §1, §2.3;
002 "Resolution and settlement").

Each test lists a real recorded market as it stood while it traded (the record itself, made
open at tradeable prices), freezes it in a decision run synced from the replay server, places
real bets through `trade_buy`, then serves the market's real recorded final record and runs
the resolution check. Nothing but HTTP is faked, and only by the replay server.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from agents.types import BetOrder, SellOrder
from arena.models import (
    STARTING_BALANCE,
    Agent,
    Cohort,
    Decision,
    DecisionAttempt,
    PortfolioSnapshot,
    Position,
    ResolutionCheck,
    Trade,
)
from arena.services.decisions.lifecycle import decision_claim
from arena.services.decisions.run import decision_run, decisions_run_all
from arena.services.frozen import FrozenMarkets, run_prepare
from arena.services.marking import snapshots_take
from arena.services.settlement import ResolutionReport, market_settle, resolutions_check
from arena.services.trades import trade_buy, trade_sell
from markets.models import Market
from markets.resolution import Verdict
from markets.sources import RecordedSource
from tests.arena.conftest import RUN_AT, WEEK
from tests.markets.conftest import gamma_json
from tests.replay import ReplayServer, Reply, Request

SETTLE_AT = datetime(2026, 3, 11, 9, 30, tzinfo=UTC)
NEXT_WEEK = WEEK + timedelta(weeks=1)
BANKRUPT = r'<span class="badge bankrupt"[^>]*>bankrupt</span>'

RESOLVED_YES = "market_resolved_yes.json"  # 522900, Yes/No, ["1", "0"]
RESOLVED_NO = "market_resolved_no.json"  # 537914, Yes/No, ["0", "1"]
AMBIGUOUS = "market_closed_resolved_50_50.json"  # 681413, Pakistan/Afghanistan, 50-50
PROPOSED = "market_closed_uma_proposed.json"  # 253898, closed, UMA "proposed"
TEAMS = "market_resolved_team_outcomes.json"  # 1237864, Acend/Bebop, Acend won


class Gamma:
    """The replay server answering GET /markets like Gamma: the listing (open records, by
    volume) without ids, the records asked for with `id=…`. Records can be swapped."""

    def __init__(self, server: ReplayServer) -> None:
        self.server = server
        self.records: dict[str, dict[str, Any]] = {}
        server.route("GET", "/markets", self.handle)

    def serve(self, record: dict[str, Any]) -> None:
        self.records[str(record["id"])] = record

    def handle(self, request: Request) -> Reply:
        ids = request.query.get("id")
        if ids:
            return Reply.json([self.records[i] for i in ids if i in self.records])
        listing = [r for r in self.records.values() if not r.get("closed")]
        return Reply.json(sorted(listing, key=lambda r: -float(r.get("volumeNum") or 0)))


@pytest.fixture
def gamma(gamma_server: ReplayServer) -> Gamma:
    return Gamma(gamma_server)


def trading(name: str, prices: list[str]) -> dict[str, Any]:
    """The real record of `name` as it stood while it traded: open, unresolved, at `prices`."""
    record = gamma_json(name)
    return {
        **record,
        "closed": False,
        "umaResolutionStatus": None,
        "closedTime": None,
        "outcomePrices": json.dumps(prices),
    }


def agent_named(cohort: Cohort, internal_id: str) -> Agent:
    return cohort.agents.select_related("model").get(model__internal_id=internal_id)


def decision_for(agent: Agent) -> Decision:
    claimed = decision_claim(agent=agent, week_start=WEEK, now=RUN_AT)
    assert claimed is not None
    return claimed


def list_and_freeze(gamma: Gamma, *records: dict[str, Any]) -> FrozenMarkets:
    """Serve the records as Gamma's listing and freeze them in a decision run (run_prepare
    syncs them over HTTP from the replay server: the Market rows come from the records)."""
    for record in records:
        gamma.serve(record)
    run = run_prepare(now=RUN_AT)
    frozen = FrozenMarkets.load(run)
    for record in records:
        assert str(record["id"]) in frozen.views
    return frozen


def bet(
    decision: Decision,
    frozen: FrozenMarkets,
    market_id: str,
    side: str,
    amount: str,
    index: int = 0,
) -> Trade:
    order = BetOrder(market_id=market_id, side=side, amount=Decimal(amount))
    return trade_buy(decision=decision, order=order, frozen=frozen, index=index)


def settle_with(gamma: Gamma, name: str, *, now: datetime = SETTLE_AT) -> ResolutionReport:
    """Serve the real recorded final record of `name` and run the resolution check."""
    gamma.serve(gamma_json(name))
    return resolutions_check(now=now)


def cash(agent: Agent) -> Decimal:
    value: Decimal = Agent.objects.get(pk=agent.pk).cash
    return value


def position(trade: Trade) -> Position:
    assert trade.position_id is not None
    return Position.objects.get(pk=trade.position_id)


def fresh(trade: Trade) -> Trade:
    return Trade.objects.get(pk=trade.pk)


@pytest.fixture
def yes_and_no(cohort: Cohort) -> tuple[Agent, Agent, Agent]:
    return (
        agent_named(cohort, "gpt-5.1"),
        agent_named(cohort, "claude-opus-4.5"),
        agent_named(cohort, "grok-4"),
    )


# ------------------------------------------------------------------------- resolved YES


def test_resolved_yes_settles_yes_at_one_dollar_no_at_zero_with_001_brier_scores(
    gamma: Gamma, yes_and_no: tuple[Agent, Agent, Agent]
) -> None:
    """Market 522900 (SAG award) trades at YES 0.40; it resolves YES (its real record).

    The YES bettor bets $2,000 of $10,000: 0.80 of the $2,500 maximum → confidence 0.80, and
    YES wins → Brier (0.80 − 1)² = 0.04. The NO bettor bets 0.80 too → f_YES = 0.20, YES wins
    → (0.20 − 1)² = 0.64 (001 §1.3). A second YES bet of $500 out of $8,000 cash (max $2,000)
    is confidence 0.25 → (0.25 − 1)² = 0.5625. A NO position bought then sold before the
    resolution still has its bet scored: confidence 0.40, lost → 0.16.
    """
    yes_agent, no_agent, seller = yes_and_no
    frozen = list_and_freeze(gamma, trading(RESOLVED_YES, ["0.4", "0.6"]))
    pid = "522900"
    yes_decision = decision_for(yes_agent)
    yes_bet = bet(yes_decision, frozen, pid, "YES", "2000.00")
    yes_again = bet(yes_decision, frozen, pid, "YES", "500.00", index=1)
    no_bet = bet(decision_for(no_agent), frozen, pid, "NO", "2000.00")
    seller_decision = decision_for(seller)
    sold_bet = bet(seller_decision, frozen, pid, "NO", "1000.00")
    trade_sell(
        decision=seller_decision,
        order=SellOrder(position_id=str(sold_bet.position_id), percentage=Decimal(100)),
        frozen=frozen,
        index=1,
    )
    assert yes_bet.implied_confidence == pytest.approx(0.80)
    assert yes_again.implied_confidence == pytest.approx(0.25)
    assert no_bet.implied_confidence == pytest.approx(0.80)
    seller_cash = cash(seller)

    report = settle_with(gamma, RESOLVED_YES)

    assert report.error == ""
    assert report.resolved == [pid]
    assert report.cancelled == []
    assert report.failed == []
    market = Market.objects.get(polymarket_id=pid)
    assert market.resolution == Market.Resolution.RESOLVED
    assert market.winning_outcome == "Yes"
    assert market.resolved_at == SETTLE_AT
    assert market.closed is True

    won = position(yes_bet)
    assert won.pk == yes_again.position_id
    assert won.status == Position.Status.SETTLED
    assert won.shares == Decimal("6250")  # 2,000 / 0.40 + 500 / 0.40
    assert won.settlement_value == Decimal("6250.00")  # $1 a share
    assert won.realized_pnl == Decimal("3750.00")  # 6,250 − 2,500
    assert won.closed_at == SETTLE_AT
    assert cash(yes_agent) == Decimal("7500.00") + Decimal("6250.00")

    lost = position(no_bet)
    assert lost.status == Position.Status.SETTLED
    assert lost.settlement_value == Decimal("0.00")  # $0 a share
    assert lost.realized_pnl == Decimal("-2000.00")
    assert cash(no_agent) == Decimal("8000.00")

    assert fresh(yes_bet).brier_score == pytest.approx(0.04)
    assert fresh(yes_bet).side_won is True
    assert fresh(yes_again).brier_score == pytest.approx(0.5625)
    assert fresh(no_bet).brier_score == pytest.approx(0.64)
    assert fresh(no_bet).side_won is False
    assert fresh(sold_bet).brier_score == pytest.approx(0.16)
    assert fresh(no_bet).scored_at == SETTLE_AT
    # sells are not bets: no Brier; a position closed by a sale is not paid again
    assert not Trade.objects.filter(kind=Trade.Kind.SELL, brier_score__isnull=False).exists()
    assert position(sold_bet).status == Position.Status.CLOSED
    assert position(sold_bet).settlement_value is None
    assert cash(seller) == seller_cash


def test_a_repeated_resolution_check_settles_nothing_twice(
    gamma: Gamma, yes_and_no: tuple[Agent, Agent, Agent]
) -> None:
    yes_agent, _, _ = yes_and_no
    frozen = list_and_freeze(gamma, trading(RESOLVED_YES, ["0.4", "0.6"]))
    bet(decision_for(yes_agent), frozen, "522900", "YES", "2000.00")
    settle_with(gamma, RESOLVED_YES)

    again = resolutions_check(now=SETTLE_AT + timedelta(hours=1))

    assert again.checked == 0
    assert again.resolved == []
    assert cash(yes_agent) == Decimal("13000.00")
    assert (
        market_settle(
            polymarket_id="522900",
            verdict=Verdict("resolved", "Yes", 0, "again"),
            now=SETTLE_AT,
        )
        is False
    )
    assert cash(yes_agent) == Decimal("13000.00")


# -------------------------------------------------------------------------- resolved NO


def test_resolved_no_settles_no_at_one_dollar_and_yes_at_zero(
    gamma: Gamma, yes_and_no: tuple[Agent, Agent, Agent]
) -> None:
    """Market 537914 (Joe Exotic pardon) trades at YES 0.40 and resolves NO."""
    yes_agent, no_agent, _ = yes_and_no
    frozen = list_and_freeze(gamma, trading(RESOLVED_NO, ["0.4", "0.6"]))
    pid = "537914"
    yes_bet = bet(decision_for(yes_agent), frozen, pid, "YES", "2000.00")
    no_bet = bet(decision_for(no_agent), frozen, pid, "NO", "2000.00")
    assert no_bet.shares == Decimal("3333.333333")  # 2,000 / 0.60, rounded down

    report = settle_with(gamma, RESOLVED_NO)

    assert report.resolved == [pid]
    market = Market.objects.get(polymarket_id=pid)
    assert market.resolution == Market.Resolution.RESOLVED
    assert market.winning_outcome == "No"
    won, lost = position(no_bet), position(yes_bet)
    assert won.status == lost.status == Position.Status.SETTLED
    assert won.settlement_value == Decimal("3333.33")  # cents down
    assert won.realized_pnl == Decimal("1333.33")
    assert lost.settlement_value == Decimal("0.00")
    assert lost.realized_pnl == Decimal("-2000.00")
    assert cash(no_agent) == Decimal("8000.00") + Decimal("3333.33")
    assert cash(yes_agent) == Decimal("8000.00")
    # 001 §1.3: YES 0.80 and NO wins → 0.64; NO 0.80 (f_YES 0.20) and NO wins → 0.04
    assert fresh(yes_bet).brier_score == pytest.approx(0.64)
    assert fresh(no_bet).brier_score == pytest.approx(0.04)


def test_worked_example_of_001_1250_shares_bought_for_500_settle_at_1250(
    gamma: Gamma, yes_and_no: tuple[Agent, Agent, Agent]
) -> None:
    """001 §2.3: $500 on YES at 0.40 = 1,250 shares; resolves YES → $1,250, P/L +$750."""
    yes_agent, _, _ = yes_and_no
    frozen = list_and_freeze(gamma, trading(RESOLVED_YES, ["0.40", "0.60"]))
    trade = bet(decision_for(yes_agent), frozen, "522900", "YES", "500")
    assert trade.shares == Decimal("1250")
    assert trade.price == Decimal("0.4")

    settle_with(gamma, RESOLVED_YES)

    settled = position(trade)
    assert settled.settlement_value == Decimal("1250.00")
    assert settled.realized_pnl == Decimal("750.00")
    assert cash(yes_agent) == Decimal("10750.00")
    assert cash(yes_agent) == STARTING_BALANCE + settled.realized_pnl


# ----------------------------------------------------------------------- multi-outcome


def test_multi_outcome_market_settles_by_outcome(
    gamma: Gamma, yes_and_no: tuple[Agent, Agent, Agent]
) -> None:
    """Market 1237864 (Counter-Strike: Acend vs Bebop) trades at 0.55 / 0.45; Acend wins."""
    acend_fan, bebop_fan, _ = yes_and_no
    frozen = list_and_freeze(gamma, trading(TEAMS, ["0.55", "0.45"]))
    pid = "1237864"
    acend = bet(decision_for(acend_fan), frozen, pid, "Acend", "2000.00")
    bebop = bet(decision_for(bebop_fan), frozen, pid, "Bebop", "2000.00")
    assert position(acend).outcome_index == 0
    assert position(bebop).outcome_index == 1

    report = settle_with(gamma, TEAMS)

    assert report.resolved == [pid]
    market = Market.objects.get(polymarket_id=pid)
    assert market.winning_outcome == "Acend"
    assert acend.shares == Decimal("3636.363636")
    assert position(acend).settlement_value == Decimal("3636.36")
    assert position(acend).realized_pnl == Decimal("1636.36")
    assert position(bebop).settlement_value == Decimal("0.00")
    assert position(bebop).realized_pnl == Decimal("-2000.00")
    assert cash(acend_fan) == Decimal("8000.00") + Decimal("3636.36")
    assert cash(bebop_fan) == Decimal("8000.00")
    assert fresh(acend).brier_score == pytest.approx(0.04)
    assert fresh(acend).side_won is True
    assert fresh(bebop).brier_score == pytest.approx(0.64)
    assert fresh(bebop).side_won is False


# ------------------------------------------------------------------ ambiguous: refunded


def test_ambiguous_50_50_resolution_refunds_every_position_and_scores_nothing(
    gamma: Gamma, yes_and_no: tuple[Agent, Agent, Agent]
) -> None:
    """Market 681413 (Pakistan vs Afghanistan) came back resolved at 50-50: no reliable
    winner, so every position is refunded its cost basis and marked CANCELLED (002)."""
    first, second, third = yes_and_no
    frozen = list_and_freeze(gamma, trading(AMBIGUOUS, ["0.55", "0.45"]))
    pid = "681413"
    pakistan = bet(decision_for(first), frozen, pid, "Pakistan", "1000.00")
    afghanistan = bet(decision_for(second), frozen, pid, "Afghanistan", "733.33")
    third_decision = decision_for(third)
    partly_sold = bet(third_decision, frozen, pid, "Pakistan", "1100.00")
    trade_sell(
        decision=third_decision,
        order=SellOrder(position_id=str(partly_sold.position_id), percentage=Decimal(40)),
        frozen=frozen,
        index=1,
    )
    left = position(partly_sold)
    third_cash = cash(third)

    report = settle_with(gamma, AMBIGUOUS)

    assert report.cancelled == [pid]
    assert report.resolved == []
    market = Market.objects.get(polymarket_id=pid)
    assert market.resolution == Market.Resolution.CANCELLED
    assert market.winning_outcome == ""
    assert "50-50" in market.resolution_note
    for trade, agent in ((pakistan, first), (afghanistan, second)):
        refunded = position(trade)
        assert refunded.status == Position.Status.CANCELLED
        assert refunded.settlement_value == refunded.cost_basis == trade.amount
        assert refunded.realized_pnl == Decimal("0.00")
        assert cash(agent) == STARTING_BALANCE
    refunded = position(partly_sold)
    assert refunded.status == Position.Status.CANCELLED
    assert refunded.settlement_value == left.cost_basis
    assert cash(third) == third_cash + left.cost_basis
    assert cash(third) == STARTING_BALANCE + refunded.realized_pnl
    assert not Trade.objects.filter(market=market, brier_score__isnull=False).exists()
    assert not Trade.objects.filter(market=market, side_won__isnull=False).exists()
    assert not Trade.objects.filter(market=market, scored_at__isnull=False).exists()


# ------------------------------------------------------------- closed but not resolved


def test_closed_but_unresolved_market_settles_nothing_and_stays_open(
    gamma: Gamma, yes_and_no: tuple[Agent, Agent, Agent]
) -> None:
    """Market 253898 closed with UMA status "proposed": not final, so nothing settles; the
    positions keep their last open valuation in the next snapshot."""
    yes_agent, no_agent, _ = yes_and_no
    frozen = list_and_freeze(gamma, trading(PROPOSED, ["0.4", "0.6"]))
    pid = "253898"
    yes_bet = bet(decision_for(yes_agent), frozen, pid, "YES", "400.00")
    no_bet = bet(decision_for(no_agent), frozen, pid, "NO", "600.00")

    report = settle_with(gamma, PROPOSED)

    assert report.checked == 1
    assert report.resolved == []
    assert report.cancelled == []
    assert report.failed == []
    market = Market.objects.get(polymarket_id=pid)
    assert market.resolution == Market.Resolution.OPEN
    assert market.closed is True  # refreshed from the record
    assert market.resolved_at is None
    for trade in (yes_bet, no_bet):
        assert position(trade).status == Position.Status.OPEN
        assert position(trade).settlement_value is None
        assert fresh(trade).brier_score is None
    assert cash(yes_agent) == Decimal("9600.00")
    assert cash(no_agent) == Decimal("9400.00")

    snapshots_take(now=SETTLE_AT, refresh=False)
    snap = PortfolioSnapshot.objects.get(agent=yes_agent)
    assert snap.positions_value == Decimal("400.00")  # 1,000 shares at the last open 0.40
    assert snap.total_value == STARTING_BALANCE

    # and it is asked about again at the next check, which settles it once it resolves
    resolved = {**gamma_json(PROPOSED), "umaResolutionStatus": "resolved"}
    gamma.serve(resolved)
    later = resolutions_check(now=SETTLE_AT + timedelta(hours=1))
    assert later.resolved == [pid]
    assert position(no_bet).settlement_value == Decimal("1000.00")


def test_a_failed_fetch_settles_nothing_and_says_why(
    gamma: Gamma, yes_and_no: tuple[Agent, Agent, Agent], settings: Any
) -> None:
    settings.HTTP_MAX_RETRIES = 0
    yes_agent, _, _ = yes_and_no
    frozen = list_and_freeze(gamma, trading(RESOLVED_YES, ["0.4", "0.6"]))
    trade = bet(decision_for(yes_agent), frozen, "522900", "YES", "2000.00")
    gamma.server.route("GET", "/markets", Reply.json({"error": "boom"}, 500))

    report = resolutions_check(now=SETTLE_AT)

    assert "500" in report.error
    assert "nothing settled" in report.summary()
    assert position(trade).status == Position.Status.OPEN
    check = ResolutionCheck.objects.get()  # the status page reads the failure from here
    assert check.checked_at == SETTLE_AT
    assert (check.markets_checked, check.resolved, check.ok) == (1, [], False)
    assert "500" in check.error
    assert Market.objects.get(polymarket_id="522900").resolution == Market.Resolution.OPEN


def test_a_check_that_breaks_off_after_settling_is_recorded_with_what_it_settled(
    gamma: Gamma, yes_and_no: tuple[Agent, Agent, Agent], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Completing the cohorts fails after a market settled: the settlement stands, the error
    goes up to the task, and the check is recorded, so the status page does not show the
    previous check as the last one."""
    yes_agent, _, _ = yes_and_no
    frozen = list_and_freeze(gamma, trading(RESOLVED_YES, ["0.4", "0.6"]))
    trade = bet(decision_for(yes_agent), frozen, "522900", "YES", "2000.00")
    gamma.serve(gamma_json(RESOLVED_YES))

    def broken(**kwargs: Any) -> list[int]:
        raise RuntimeError("database went away while completing")

    monkeypatch.setattr("arena.services.settlement.cohorts_complete", broken)
    with pytest.raises(RuntimeError):
        resolutions_check(now=SETTLE_AT)

    assert position(trade).status == Position.Status.SETTLED
    check = ResolutionCheck.objects.get()
    assert check.resolved == ["522900"]
    assert "the check broke off: " in check.error
    assert "database went away while completing" in check.error


# ----------------------------------------------- marked resolved only with its settlement


def test_a_failed_settlement_leaves_the_market_open_and_the_next_check_settles_it(
    gamma: Gamma, yes_and_no: tuple[Agent, Agent, Agent], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last write of a settlement (scoring the bets) fails: positions, cash and the
    market must all be as they were, and the next resolution check settles it (002)."""
    yes_agent, no_agent, _ = yes_and_no
    frozen = list_and_freeze(
        gamma, trading(RESOLVED_YES, ["0.4", "0.6"]), trading(RESOLVED_NO, ["0.4", "0.6"])
    )
    yes_bet = bet(decision_for(yes_agent), frozen, "522900", "YES", "2000.00")
    other = bet(decision_for(no_agent), frozen, "537914", "NO", "2000.00")
    gamma.serve(gamma_json(RESOLVED_NO))

    def fail(*args: Any, **kwargs: Any) -> int:
        raise RuntimeError("database went away while scoring")

    original = Trade.objects.bulk_update

    def fail_for_522900(objs: Any, fields: Any, **kwargs: Any) -> int:
        objs = list(objs)
        if any(t.market_id == yes_bet.market_id for t in objs):
            fail()
        return original(objs, fields, **kwargs)

    monkeypatch.setattr(Trade.objects, "bulk_update", fail_for_522900)

    failed = settle_with(gamma, RESOLVED_YES)

    assert failed.failed == ["522900"]
    assert failed.resolved == ["537914"]  # one failure does not stop the others
    market = Market.objects.get(polymarket_id="522900")
    assert market.resolution == Market.Resolution.OPEN
    assert market.winning_outcome == ""
    assert market.resolved_at is None
    assert position(yes_bet).status == Position.Status.OPEN
    assert position(yes_bet).settlement_value is None
    assert position(yes_bet).realized_pnl == Decimal("0.00")
    assert cash(yes_agent) == Decimal("8000.00")  # the payout was rolled back with it
    assert fresh(yes_bet).brier_score is None
    assert position(other).status == Position.Status.SETTLED

    monkeypatch.undo()
    retried = resolutions_check(now=SETTLE_AT + timedelta(minutes=30))

    assert retried.resolved == ["522900"]
    assert retried.failed == []
    first, second = ResolutionCheck.objects.order_by("checked_at")
    assert (first.failed, first.resolved, first.ok) == (["522900"], ["537914"], False)
    assert (second.resolved, second.failed, second.ok) == (["522900"], [], True)
    assert Market.objects.get(polymarket_id="522900").resolution == Market.Resolution.RESOLVED
    assert position(yes_bet).status == Position.Status.SETTLED
    assert cash(yes_agent) == Decimal("13000.00")
    assert fresh(yes_bet).brier_score == pytest.approx(0.04)


# -------------------------------------------------------------------- cohort completion


def _decided(cohort: Cohort) -> None:
    """Every agent's first-week decision is over (the engine marks them DONE when they
    finish); agents that did not trade held."""
    Decision.objects.filter(cohort=cohort).update(status=Decision.Status.DONE)
    for agent in cohort.agents.exclude(decisions__week_start=cohort.week_start):
        Decision.objects.create(
            agent=agent,
            cohort=cohort,
            week_start=cohort.week_start,
            status=Decision.Status.DONE,
            action=Decision.Action.HOLD,
        )


def test_cohort_completes_once_every_position_settled_then_gets_no_decision_or_snapshot(
    gamma: Gamma, cohort: Cohort, yes_and_no: tuple[Agent, Agent, Agent]
) -> None:
    yes_agent, no_agent, _ = yes_and_no
    frozen = list_and_freeze(
        gamma, trading(RESOLVED_YES, ["0.4", "0.6"]), trading(TEAMS, ["0.55", "0.45"])
    )
    bet(decision_for(yes_agent), frozen, "522900", "YES", "2000.00")
    no_decision = decision_for(no_agent)
    bet(no_decision, frozen, "522900", "NO", "1000.00")
    bet(no_decision, frozen, "1237864", "Bebop", "1000.00", index=1)
    _decided(cohort)

    first = settle_with(gamma, RESOLVED_YES)  # the team market is still trading

    assert first.resolved == ["522900"]
    assert first.completed_cohorts == []
    assert Cohort.objects.get(pk=cohort.pk).status == Cohort.Status.ACTIVE

    second = settle_with(gamma, TEAMS, now=SETTLE_AT + timedelta(days=1))

    assert second.resolved == ["1237864"]
    assert second.completed_cohorts == [cohort.number]
    done = Cohort.objects.get(pk=cohort.pk)
    assert done.status == Cohort.Status.COMPLETED
    assert done.completed_at == SETTLE_AT + timedelta(days=1)
    assert not Position.objects.filter(agent__cohort=cohort, status="open").exists()
    final_cash = dict(Agent.objects.filter(cohort=cohort).values_list("pk", "cash"))

    # one final snapshot at completion, at the all-cash value, and none after it …
    final = PortfolioSnapshot.objects.filter(agent__cohort=cohort)
    assert {s.snapshot_timestamp for s in final} == {done.completed_at}
    assert {s.agent_id: s.total_value for s in final} == final_cash
    tick = snapshots_take(now=SETTLE_AT + timedelta(days=2), refresh=False)
    assert tick.written == 0
    assert final.count() == Agent.objects.filter(cohort=cohort).count()
    # … and no decision: neither the next week's run nor a direct call reaches it
    decisions_before = Decision.objects.filter(cohort=cohort).count()
    next_run_at = datetime.combine(NEXT_WEEK, datetime.min.time(), UTC) + timedelta(minutes=5)
    report = decisions_run_all(now=next_run_at, source=RecordedSource())
    # the next week's run starts (and serves) only the next week's cohort
    served = Decision.objects.filter(run_id=report.run_id)
    assert served.exists()
    assert set(served.values_list("cohort__week_start", flat=True)) == {NEXT_WEEK}
    assert decision_run(agent_id=yes_agent.pk, run_id=frozen.run.pk).status == "cohort completed"
    assert Decision.objects.filter(cohort=cohort).count() == decisions_before
    # its final return is fixed
    again = resolutions_check(now=SETTLE_AT + timedelta(days=3))
    assert again.completed_cohorts == []
    assert dict(Agent.objects.filter(cohort=cohort).values_list("pk", "cash")) == final_cash
    assert Cohort.objects.get(pk=cohort.pk).completed_at == SETTLE_AT + timedelta(days=1)


def test_a_completed_cohorts_value_curve_ends_at_its_final_value(
    gamma: Gamma, cohort: Cohort, yes_and_no: tuple[Agent, Agent, Agent]
) -> None:
    """The cohort's final return is fixed at completion, and the value curve must
    end there: the last snapshot of each agent is its final, all-cash value — not the mark
    of the last tick before the settlement that completed the cohort."""
    yes_agent, no_agent, _ = yes_and_no
    frozen = list_and_freeze(gamma, trading(RESOLVED_YES, ["0.4", "0.6"]))
    bet(decision_for(yes_agent), frozen, "522900", "YES", "2000.00")
    bet(decision_for(no_agent), frozen, "522900", "NO", "2000.00")
    _decided(cohort)
    snapshots_take(now=SETTLE_AT - timedelta(hours=1), refresh=False)  # while it trades

    report = settle_with(gamma, RESOLVED_YES)
    snapshots_take(now=SETTLE_AT + timedelta(minutes=10), refresh=False)  # the next tick

    assert report.completed_cohorts == [cohort.number]
    assert cash(yes_agent) == Decimal("13000.00")
    for agent in cohort.agents.all():
        latest = PortfolioSnapshot.objects.filter(agent=agent).latest("snapshot_timestamp")
        assert latest.positions_value == Decimal("0.00")
        assert latest.total_value == agent.cash, agent


def test_cohort_with_an_open_position_in_a_closed_unresolved_market_stays_active(
    gamma: Gamma, cohort: Cohort, yes_and_no: tuple[Agent, Agent, Agent]
) -> None:
    yes_agent, _, _ = yes_and_no
    frozen = list_and_freeze(gamma, trading(PROPOSED, ["0.4", "0.6"]))
    bet(decision_for(yes_agent), frozen, "253898", "YES", "400.00")
    _decided(cohort)

    report = settle_with(gamma, PROPOSED)

    assert report.completed_cohorts == []
    assert Cohort.objects.get(pk=cohort.pk).status == Cohort.Status.ACTIVE
    assert snapshots_take(now=SETTLE_AT, refresh=False).written == cohort.agents.count()


# --------------------------------------------------------------------------- bankruptcy


def test_a_bankrupt_agent_gets_no_prompt_and_is_shown_as_bankrupt(
    cohort: Cohort, client: Any
) -> None:
    broke = agent_named(cohort, "kimi-k2")
    Agent.objects.filter(pk=broke.pk).update(cash=Decimal("49.99"))
    solvent_but_poor = agent_named(cohort, "qwen-3-next")
    Agent.objects.filter(pk=solvent_but_poor.pk).update(cash=Decimal("50.00"))

    report = decisions_run_all(now=RUN_AT, source=RecordedSource())

    assert report.run_id is not None
    skipped = Decision.objects.get(agent=broke, week_start=WEEK)
    assert skipped.status == Decision.Status.SKIPPED
    assert "bankrupt" in skipped.error
    assert skipped.system_prompt == ""
    assert skipped.user_prompt == ""
    assert not DecisionAttempt.objects.filter(decision=skipped).exists()
    assert not Trade.objects.filter(agent=broke).exists()
    assert Agent.objects.get(pk=broke.pk).status == Agent.Status.BANKRUPT
    poor = Decision.objects.get(agent=solvent_but_poor, week_start=WEEK)
    assert poor.status != Decision.Status.SKIPPED
    assert DecisionAttempt.objects.filter(decision=poor).exists()
    assert Agent.objects.get(pk=solvent_but_poor.pk).status == Agent.Status.ACTIVE
    others = Decision.objects.filter(cohort=cohort).exclude(agent=broke)
    assert others.count() == cohort.agents.count() - 1
    assert not others.filter(status=Decision.Status.SKIPPED).exists()

    cohort_page = client.get(f"/cohorts/{cohort.number}/").content.decode()
    row = next(r for r in cohort_page.split("<tr>") if f"/agents/{broke.pk}/" in r)
    assert re.search(BANKRUPT, row)
    assert len(re.findall(BANKRUPT, cohort_page)) == 1
    agent_page = client.get(f"/cohorts/{cohort.number}/agents/{broke.pk}/").content.decode()
    assert re.search(BANKRUPT, agent_page)
    decision_page = client.get(f"/decisions/{skipped.pk}/").content.decode()
    assert "No attempt: no prompt was sent." in decision_page

    # it stays bankrupt for the cohort, whatever its cash later says
    Agent.objects.filter(pk=broke.pk).update(cash=Decimal("5000.00"))
    next_run_at = datetime.combine(NEXT_WEEK, datetime.min.time(), UTC) + timedelta(minutes=5)
    decisions_run_all(now=next_run_at, source=RecordedSource(), cohort_id=cohort.pk)
    later = Decision.objects.get(agent=broke, week_start=NEXT_WEEK)
    assert later.status == Decision.Status.SKIPPED
    assert not DecisionAttempt.objects.filter(decision__agent=broke).exists()
