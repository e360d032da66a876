"""When a cohort completes, and that every bet is scored (002 "Cohorts remain active until all
open positions resolve", "Brier score").

A cohort completes only once every agent has decided in its first week (or is bankrupt) and
no LLM agent holds an open position: not in the middle of its first decision run, and never
kept alive by a baseline. A baseline's position that outlives its cohort is still marked and
settled, and every executed bet gets its Brier score when its market resolves, even when no
agent holds a position in that market any more.

Markets are real recorded Gamma records served by the replay server, as in test_settlement.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from agents.types import SellOrder
from arena.models import Agent, Cohort, Decision, PortfolioSnapshot, Position, Trade
from arena.services.decisions.run import agents_due, decisions_run_all
from arena.services.marking import snapshots_take
from arena.services.settlement import markets_to_check, resolutions_check
from arena.services.trades import trade_sell
from arena.weeks import snapshot_slot
from markets.models import Market
from tests.arena.conftest import RUN_AT, WEEK
from tests.arena.test_settlement import (
    NEXT_WEEK,
    RESOLVED_NO,
    RESOLVED_YES,
    SETTLE_AT,
    Gamma,
    agent_named,
    bet,
    cash,
    decision_for,
    fresh,
    list_and_freeze,
    position,
    settle_with,
    trading,
)
from tests.replay import ReplayServer

NEXT_RUN_AT = datetime.combine(NEXT_WEEK, datetime.min.time(), UTC) + timedelta(minutes=5)


@pytest.fixture
def gamma(gamma_server: ReplayServer) -> Gamma:
    return Gamma(gamma_server)


def decide(agent: Agent, status: str = Decision.Status.DONE) -> None:
    """The agent's first-week decision ends with `status`: a BET if it traded, else a HOLD."""
    decision, _ = Decision.objects.get_or_create(
        agent=agent, cohort_id=agent.cohort_id, week_start=WEEK
    )
    traded = Trade.objects.filter(decision=decision).exists()
    Decision.objects.filter(pk=decision.pk).update(
        status=status, action=Decision.Action.BET if traded else Decision.Action.HOLD
    )


def cohort_status(cohort: Cohort) -> str:
    status: str = Cohort.objects.get(pk=cohort.pk).status
    return status


# ----------------------------------------------------------------- completion mid-run


def test_a_cohort_does_not_complete_in_the_middle_of_its_first_decision_run(
    cohort: Cohort,
) -> None:
    """The first agent of the run held (DONE, no position) while the others are still being
    asked: the cohort holds no position, yet it has not had its first week. A resolution check
    at that moment must leave it ACTIVE — completing it would stop the remaining agents'
    decisions — and so must a run that ended with an agent RETRYABLE. Once every agent has
    decided (DONE, or SKIPPED for a bankrupt agent), the next check completes it."""
    first, second, third, *rest = (
        Agent.objects.select_related("model").get(pk=pk) for pk in agents_due(week_start=WEEK)
    )
    assert rest
    decide(first)  # HOLD, DONE
    decide(second, Decision.Status.RUNNING)  # its model is being called right now
    assert not Position.objects.filter(agent__cohort=cohort).exists()

    mid_run = resolutions_check(now=RUN_AT + timedelta(minutes=1))

    assert mid_run.completed_cohorts == []
    assert cohort_status(cohort) == Cohort.Status.ACTIVE
    assert agents_due(week_start=WEEK)[0] == second.pk  # the run goes on with the others

    # the run ends with the second agent's call failed: still owed, still active
    decide(second, Decision.Status.RETRYABLE)
    Agent.objects.filter(pk=third.pk).update(cash=Decimal("49.99"), status=Agent.Status.BANKRUPT)
    decide(third, Decision.Status.SKIPPED)  # bankrupt: no prompt, and that is its decision
    for agent in rest:
        decide(agent)
    after_run = resolutions_check(now=RUN_AT + timedelta(minutes=30))

    assert after_run.completed_cohorts == []
    assert cohort_status(cohort) == Cohort.Status.ACTIVE

    decide(second)  # the retry held
    done = resolutions_check(now=RUN_AT + timedelta(hours=1))

    assert done.completed_cohorts == [cohort.number]
    completed = Cohort.objects.get(pk=cohort.pk)
    assert completed.status == Cohort.Status.COMPLETED
    assert completed.completed_at == RUN_AT + timedelta(hours=1)


# ------------------------------------------------------------------------- baselines


def test_baselines_do_not_keep_a_cohort_alive(gamma: Gamma, cohort: Cohort) -> None:
    """Every agent decided; only the market-follower baseline holds a position, in a market
    still trading. The cohort completes (baselines must not change what the LLMs experience),
    gets no decision the next week, but the baseline's position is still marked every tick
    and settled — paid and Brier-scored — when the market resolves."""
    baseline = agent_named(cohort, "baseline-market")
    llm = agent_named(cohort, "gpt-5.1")
    frozen = list_and_freeze(gamma, trading(RESOLVED_YES, ["0.4", "0.6"]))
    pid = "522900"
    baseline_bet = bet(decision_for(baseline), frozen, pid, "YES", "1000.00")  # 2,500 shares
    llm_decision = decision_for(llm)
    sold = bet(llm_decision, frozen, pid, "NO", "500.00")
    trade_sell(
        decision=llm_decision,
        order=SellOrder(position_id=str(sold.position_id), percentage=Decimal(100)),
        frozen=frozen,
        index=1,
    )
    for agent in cohort.agents.all():
        decide(agent)
    assert baseline_bet.implied_confidence == pytest.approx(0.4)  # 1,000 of 2,500
    llm_cash = cash(llm)

    report = resolutions_check(now=SETTLE_AT)  # Gamma still serves the market trading

    assert report.checked == 1
    assert report.resolved == []
    assert report.completed_cohorts == [cohort.number]
    assert cohort_status(cohort) == Cohort.Status.COMPLETED
    assert position(baseline_bet).status == Position.Status.OPEN

    # the next week's run (which starts the next week's cohort) decides nothing for it
    decisions_before = Decision.objects.filter(cohort=cohort).count()
    run_report = decisions_run_all(now=NEXT_RUN_AT)

    assert run_report.run_id is not None
    served = Decision.objects.filter(run_id=run_report.run_id)
    assert served.exists()
    assert set(served.values_list("cohort__week_start", flat=True)) == {NEXT_WEEK}
    assert Decision.objects.filter(cohort=cohort).count() == decisions_before
    assert not Decision.objects.filter(cohort=cohort, week_start=NEXT_WEEK).exists()

    # a tick still marks the baseline's open position, and nobody else of the cohort
    tick_at = NEXT_RUN_AT + timedelta(minutes=10)
    snapshots_take(now=tick_at)
    marked = PortfolioSnapshot.objects.filter(
        agent__cohort=cohort, snapshot_timestamp=snapshot_slot(tick_at)
    )
    assert [s.agent_id for s in marked] == [baseline.pk]
    [mark] = marked
    assert mark.cash == Decimal("9000.00")
    assert mark.positions_value == Decimal("1000.00")  # 2,500 shares at YES 0.40
    assert mark.total_value == Decimal("10000.00")

    # the market resolves YES: the baseline is paid $1 a share and its bet is scored
    resolved_at = SETTLE_AT + timedelta(days=7)
    later = settle_with(gamma, RESOLVED_YES, now=resolved_at)

    assert later.resolved == [pid]
    assert Market.objects.get(polymarket_id=pid).resolution == Market.Resolution.RESOLVED
    settled = position(baseline_bet)
    assert settled.status == Position.Status.SETTLED
    assert settled.settlement_value == Decimal("2500.00")
    assert settled.closed_at == resolved_at
    assert cash(baseline) == Decimal("9000.00") + Decimal("2500.00")
    scored = fresh(baseline_bet)
    assert scored.side_won is True
    assert scored.brier_score == pytest.approx(0.36)  # (0.4 − 1)²
    assert scored.scored_at == resolved_at
    assert fresh(sold).brier_score == pytest.approx(0.04)  # NO, confidence 0.2, lost: 0.2²
    assert cash(llm) == llm_cash  # its position was closed by the sale: nothing paid again
    # the completed cohort stays completed, its completion unchanged
    completed = Cohort.objects.get(pk=cohort.pk)
    assert completed.status == Cohort.Status.COMPLETED
    assert completed.completed_at == SETTLE_AT


# -------------------------------------------------------------------- every bet scored


def test_a_bet_in_a_market_every_agent_has_sold_out_of_is_scored_when_it_resolves(
    gamma: Gamma, cohort: Cohort
) -> None:
    """Market 537914 trades at YES 0.40; one agent bets YES, another NO, and both sell out
    before it resolves NO. Nobody holds a position in it, but both bets are forecasts: the
    resolution check must still ask about the market, score both bets when it resolves, and
    mark it resolved (so it is not asked about again)."""
    yes_agent = agent_named(cohort, "gpt-5.1")
    no_agent = agent_named(cohort, "claude-opus-4.5")
    frozen = list_and_freeze(gamma, trading(RESOLVED_NO, ["0.4", "0.6"]))
    pid = "537914"
    bets = []
    for agent, side, amount in ((yes_agent, "YES", "1000.00"), (no_agent, "NO", "2000.00")):
        decision = decision_for(agent)
        placed = bet(decision, frozen, pid, side, amount)
        trade_sell(
            decision=decision,
            order=SellOrder(position_id=str(placed.position_id), percentage=Decimal(100)),
            frozen=frozen,
            index=1,
        )
        bets.append(placed)
    yes_bet, no_bet = bets
    assert not Position.objects.filter(market__polymarket_id=pid, status="open").exists()
    assert markets_to_check() == [pid]
    cash_before = {a.pk: cash(a) for a in (yes_agent, no_agent)}

    still_trading = resolutions_check(now=SETTLE_AT - timedelta(hours=1))

    assert still_trading.checked == 1
    assert still_trading.resolved == []
    assert fresh(yes_bet).brier_score is None

    report = settle_with(gamma, RESOLVED_NO)

    assert report.checked == 1
    assert report.resolved == [pid]
    assert report.failed == []
    market = Market.objects.get(polymarket_id=pid)
    assert market.resolution == Market.Resolution.RESOLVED
    assert market.winning_outcome == "No"
    assert market.resolved_at == SETTLE_AT
    assert fresh(yes_bet).side_won is False
    assert fresh(yes_bet).brier_score == pytest.approx(0.16)  # confidence 0.4, lost: 0.4²
    assert fresh(no_bet).side_won is True
    assert fresh(no_bet).brier_score == pytest.approx(0.04)  # confidence 0.8, won: (0.8 − 1)²
    assert fresh(no_bet).scored_at == SETTLE_AT
    assert not Trade.objects.filter(kind=Trade.Kind.BUY, brier_score__isnull=True).exists()
    # sold positions are not paid again, and the market is not asked about any more
    assert {a.pk: cash(a) for a in (yes_agent, no_agent)} == cash_before
    assert position(yes_bet).status == Position.Status.CLOSED
    assert markets_to_check() == []
    assert resolutions_check(now=SETTLE_AT + timedelta(hours=1)).checked == 0
