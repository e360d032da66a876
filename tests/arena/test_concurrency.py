"""Overlapping runs (002 "Decision claiming", "Cohorts", "Settlement"): two decision runs of the
same week at once make one decision per agent and no duplicate trade; two cohort starts of a
week make one cohort, and of two weeks two cohorts with distinct numbers; a buy racing a
settlement never leaves an open position on a resolved market.

PostgreSQL only: real concurrent writers need a database that runs them concurrently.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import date, timedelta
from decimal import Decimal
from typing import TypeVar

import pytest
from django.db import connection, connections, transaction
from django.db.models import Count, Sum

from agents.types import BetOrder, MarketView
from arena.exceptions import TradeRejected
from arena.models import Agent, Cohort, Decision, Position, Trade
from arena.services.cohorts import cohort_start
from arena.services.decisions.run import RunReport, decisions_run_all
from arena.services.frozen import FrozenMarkets
from arena.services.settlement import market_settle
from arena.services.trades import trade_buy
from markets.models import Market
from markets.resolution import Verdict
from markets.sources import RecordedSource
from tests.arena.conftest import COHORT_AT, RUN_AT, WEEK

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="needs PostgreSQL: SQLite serializes all writers, so two connections cannot race",
    ),
    # serialized_rollback: the lineup seeded by agents/0002 is restored even if an earlier
    # transactional test flushed it.
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]

T = TypeVar("T")


def at_once(work: Callable[[], T]) -> list[T]:
    """Run `work` in two threads released together; return both results (or raise)."""
    barrier = threading.Barrier(2)

    def worker() -> T:
        try:
            barrier.wait(timeout=10)
            return work()
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(worker) for _ in range(2)]
        return [future.result(timeout=120) for future in futures]


def waits_on(pid: int, *, done: Callable[[], bool], timeout: float = 30) -> bool:
    """Whether another connection comes to wait on a lock that backend `pid` holds. Polled
    from this thread's connection (autocommit: each poll sees the locks afresh) until one
    does, `done()` is true, or `timeout` seconds have passed."""
    deadline = time.monotonic() + timeout
    with connection.cursor() as cursor:
        while not done() and time.monotonic() < deadline:
            cursor.execute(
                "SELECT EXISTS (SELECT 1 FROM pg_stat_activity"
                " WHERE %s = ANY(pg_blocking_pids(pid)))",
                [pid],
            )
            row = cursor.fetchone()
            if row is not None and row[0]:
                return True
            time.sleep(0.01)
    return False


def while_held(hold: Callable[[], object], work: Callable[[], T]) -> T:
    """Run `hold` in a transaction on one connection and leave that transaction open; run
    `work` on a second connection, and commit the first only once `work` waits on a lock it
    holds: the race, staged in the one order that loses. Return what `work` returned (or
    raise what it raised)."""
    held = threading.Event()
    release = threading.Event()
    holder_pid: list[int] = []

    def holder() -> None:
        try:
            with transaction.atomic():
                hold()
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_backend_pid()")
                    row = cursor.fetchone()
                    assert row is not None
                    holder_pid.append(row[0])
                held.set()
                release.wait(timeout=60)
        finally:
            held.set()
            connections.close_all()

    def worker() -> T:
        try:
            return work()
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=2) as pool:
        holding = pool.submit(holder)
        held.wait(timeout=60)
        if not holder_pid:
            holding.result(timeout=60)  # raises what `hold` raised
        working = pool.submit(worker)
        try:
            waited = waits_on(holder_pid[0], done=working.done)
        finally:
            release.set()
        holding.result(timeout=60)
        result = working.result(timeout=60)
    assert waited, "the second connection never waited on the first: the race was not staged"
    return result


def test_two_decision_runs_at_once_make_one_decision_per_agent_and_no_duplicate_trade() -> None:
    cohort, _ = cohort_start(week_start=WEEK, now=COHORT_AT)
    agents = cohort.agents.count()

    reports: list[RunReport] = at_once(
        lambda: decisions_run_all(now=RUN_AT, source=RecordedSource())
    )

    # Each agent's decision was claimed and run by exactly one of the two runs.
    claimed = [o.decision_id for r in reports for o in r.outcomes if o.decision_id is not None]
    assert sorted(claimed) == sorted(Decision.objects.values_list("pk", flat=True))
    assert Decision.objects.count() == agents
    per_agent = Decision.objects.values("agent").annotate(n=Count("pk"))
    assert {row["n"] for row in per_agent} == {1}
    assert set(Decision.objects.values_list("status", flat=True)) == {Decision.Status.DONE}
    assert set(Decision.objects.values_list("tries", flat=True)) == {1}

    # Every trade belongs to one decision, once: as many as that decision's orders.
    expected_trades = 0
    for decision in Decision.objects.all():
        assert decision.parsed is not None
        orders = decision.parsed["bets"] + decision.parsed["sells"]
        expected_trades += len(orders)
        indexes = list(
            Trade.objects.filter(decision=decision)
            .order_by("order_index")
            .values_list("order_index", flat=True)
        )
        assert indexes == list(range(len(orders)))
    assert expected_trades > 0
    assert Trade.objects.count() == expected_trades
    assert set(Trade.objects.values_list("try_number", flat=True)) == {1}

    # And no money moved twice.
    for agent in Agent.objects.filter(cohort=cohort):
        spent = Trade.objects.filter(
            agent=agent, kind=Trade.Kind.BUY, status=Trade.Status.EXECUTED
        ).aggregate(total=Sum("amount"))["total"] or Decimal(0)
        assert agent.cash == Decimal("10000.00") - spent
        held = Position.objects.filter(agent=agent).aggregate(total=Sum("cost_basis"))["total"]
        assert (held or Decimal(0)) == spent


def test_two_cohort_starts_at_once_make_one_cohort() -> None:
    for week in range(5):  # several rounds, to give the race every chance to show
        week_start = WEEK + timedelta(weeks=week)

        def start(week_start: date = week_start) -> tuple[Cohort, bool]:
            return cohort_start(week_start=week_start)

        results = at_once(start)

        assert sorted(created for _, created in results) == [False, True]
        assert results[0][0].pk == results[1][0].pk
        assert Cohort.objects.filter(week_start=week_start).count() == 1
        assert Agent.objects.filter(cohort__week_start=week_start).count() == 9
    assert sorted(Cohort.objects.values_list("number", flat=True)) == [1, 2, 3, 4, 5]


def test_two_cohort_starts_for_different_weeks_at_once_both_get_numbers() -> None:
    first, _ = cohort_start(week_start=WEEK, now=COHORT_AT)
    n = first.number
    week_1, week_2 = WEEK + timedelta(weeks=1), WEEK + timedelta(weeks=2)

    # The start of week 1 has taken number n + 1 and not yet committed; the start of week 2
    # reads the same max(number), and its INSERT waits on that uncommitted number. Week 1
    # commits: the INSERT fails on the unique number, and the start takes the next one.
    cohort, created = while_held(
        lambda: cohort_start(week_start=week_1, now=COHORT_AT + timedelta(weeks=1)),
        lambda: cohort_start(week_start=week_2, now=COHORT_AT + timedelta(weeks=2)),
    )

    assert created
    assert cohort.week_start == week_2
    numbers = dict(
        Cohort.objects.filter(week_start__in=[week_1, week_2]).values_list("week_start", "number")
    )
    assert numbers == {week_1: n + 1, week_2: n + 2}
    assert cohort.number == n + 2
    assert Agent.objects.filter(cohort=cohort).count() == first.agents.count()


def test_buy_racing_a_settlement_never_leaves_an_open_position_on_a_resolved_market(
    decision: Decision, frozen: FrozenMarkets, binary: MarketView
) -> None:
    agent = Agent.objects.get(pk=decision.agent_id)
    cash = agent.cash

    def settle() -> None:
        """A settlement holding the market row: it marked the market resolved (there was no
        position to settle yet) and has not committed."""
        verdict = Verdict("resolved", binary.outcomes[0], 0, "race: resolved during a buy")
        assert market_settle(polymarket_id=binary.market_id, verdict=verdict, now=RUN_AT)

    def buy() -> Trade | TradeRejected:
        order = BetOrder(market_id=binary.market_id, side="YES", amount=Decimal("100.00"))
        try:
            return trade_buy(decision=decision, order=order, frozen=frozen, index=0)
        except TradeRejected as rejected:
            return rejected

    outcome = while_held(settle, buy)

    market = Market.objects.get(polymarket_id=binary.market_id)
    assert market.resolution == Market.Resolution.RESOLVED
    assert not Position.objects.filter(
        market__resolution=Market.Resolution.RESOLVED, status=Position.Status.OPEN
    ).exists()
    assert isinstance(outcome, TradeRejected)
    assert "closed" in str(outcome)
    assert not Position.objects.filter(agent=agent).exists()
    assert not Trade.objects.filter(agent=agent, status=Trade.Status.EXECUTED).exists()
    agent.refresh_from_db()
    assert agent.cash == cash


def test_a_sell_racing_a_settlement_waits_for_it_instead_of_deadlocking(
    decision: Decision, frozen: FrozenMarkets, binary: MarketView
) -> None:
    """Settlement locks the market, then its positions. A sell that locked the position first
    and then waited for the market would deadlock against it; a sell locks the market first
    (as a buy does), waits, and then finds the position settled."""
    from agents.types import SellOrder
    from arena.services.trades import trade_sell

    bought = trade_buy(
        decision=decision,
        frozen=frozen,
        index=0,
        order=BetOrder(market_id=binary.market_id, side="YES", amount=Decimal("100")),
    )
    market_locked, go_on = threading.Event(), threading.Event()
    settler_pid: list[int] = []
    results: dict[str, object] = {}

    def settlement() -> None:
        try:
            with transaction.atomic():
                Market.objects.select_for_update().get(polymarket_id=binary.market_id)
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_backend_pid()")
                    row = cursor.fetchone()
                    assert row is not None
                    settler_pid.append(row[0])
                market_locked.set()
                go_on.wait(timeout=30)
                # … then the rest of the settlement: it locks the positions.
                verdict = Verdict("resolved", binary.outcomes[0], 0, "race: settled during a sell")
                results["settled"] = market_settle(
                    polymarket_id=binary.market_id, verdict=verdict, now=RUN_AT
                )
        except Exception as exc:  # reported below
            results["settled"] = exc
        finally:
            market_locked.set()
            connections.close_all()

    def sell() -> None:
        order = SellOrder(position_id=str(bought.position_id), percentage=Decimal("50"))
        try:
            results["sold"] = trade_sell(decision=decision, frozen=frozen, index=1, order=order)
        except Exception as exc:
            results["sold"] = exc
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=2) as pool:
        settling = pool.submit(settlement)
        market_locked.wait(timeout=30)
        selling = pool.submit(sell)
        try:
            waited = waits_on(settler_pid[0], done=selling.done)
        finally:
            go_on.set()
        settling.result(timeout=60)
        selling.result(timeout=60)

    assert waited, "the sell never waited on the settlement: the race was not staged"
    assert results["settled"] is True, results
    assert isinstance(results["sold"], TradeRejected), str(results["sold"])
    assert "not held" in str(results["sold"])
    assert bought.position_id is not None
    position = Position.objects.get(pk=bought.position_id)
    assert position.status == Position.Status.SETTLED


def test_a_connection_lost_during_one_agents_decision_does_not_stop_the_run(
    settings: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database drops the connection while the second agent waits on its model (a
    restart, an idle kill): that decision is left for a reclaim, and every later agent still
    decides."""
    from arena.services.decisions import lifecycle, responders

    settings.MARKET_UNIVERSE_SIZE = 40  # type: ignore[attr-defined]
    asked: list[str] = []
    hold = '{"action": "HOLD", "reasoning": "Nothing to do."}'

    def respond(*, model: object, kind: str, **kw: object) -> lifecycle.Reply:
        asked.append(str(model))
        if len(asked) == 2:
            with connection.cursor() as cursor:
                try:
                    cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")
                except Exception:  # the server closes the connection under the statement
                    pass
        return lifecycle.Reply(text=hold, raw=hold, responder=kind, requested_model="m")

    monkeypatch.setattr(responders, "respond", respond)

    report = decisions_run_all(now=RUN_AT, source=RecordedSource())

    connection.close()  # look with a fresh connection
    agents = Agent.objects.filter(cohort__week_start=WEEK).count()
    assert len(asked) == agents
    assert len(report.outcomes) == agents
    statuses = list(Decision.objects.values_list("status", flat=True))
    assert statuses.count(Decision.Status.DONE) == agents - 1
    assert statuses.count(Decision.Status.RUNNING) == 1  # reclaimed by a later run


def test_a_snapshot_is_never_torn_by_a_settlement_committing_during_the_tick() -> None:
    """A tick values cash and positions in one INSERT … SELECT. A settlement committing while
    the tick is under way (after it opened its transaction and wrote its tick row, just before
    the snapshot statement) is wholly in the snapshot or wholly out, never half counted: here
    wholly in — the cash paid out and the position gone, nothing counted twice."""
    from arena.models import PortfolioSnapshot
    from arena.services import marking
    from arena.services.decisions.lifecycle import decision_claim
    from arena.services.frozen import run_prepare

    cohort, _ = cohort_start(week_start=WEEK, now=COHORT_AT)
    run = run_prepare(now=RUN_AT, source=RecordedSource())
    frozen = FrozenMarkets.load(run)
    view = next(
        v
        for v in frozen.universe
        if v.is_binary and v.yes_price and Decimal("0.3") < v.yes_price < Decimal("0.7")
    )
    agent = cohort.agents.get(model__internal_id="gpt-5.1")
    decision = decision_claim(agent=agent, week_start=WEEK, now=RUN_AT)
    assert decision is not None
    order = BetOrder(market_id=view.market_id, side="YES", amount=Decimal("2000"))
    trade_buy(decision=decision, order=order, frozen=frozen, index=0, try_number=1)
    shares = Position.objects.get(agent=agent).shares
    snapshot_table = PortfolioSnapshot._meta.db_table
    settled_mid_tick: list[bool] = []

    def settlement_commits_first(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        if (
            not settled_mid_tick
            and sql.lstrip().upper().startswith(("INSERT", "WITH"))
            and (snapshot_table in sql)
        ):

            def settle() -> None:
                try:
                    verdict = Verdict("resolved", view.outcomes[0], 0, "race: settled mid-tick")
                    market_settle(polymarket_id=view.market_id, verdict=verdict, now=RUN_AT)
                finally:
                    connections.close_all()

            other = threading.Thread(target=settle)
            other.start()
            other.join()
            settled_mid_tick.append(True)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(settlement_commits_first):
        marking.snapshots_take(now=RUN_AT, refresh=False)

    assert settled_mid_tick, "the settlement never ran inside the tick"
    assert Position.objects.get(agent=agent).status == Position.Status.SETTLED
    snapshot = PortfolioSnapshot.objects.get(agent=agent)
    assert snapshot.cash == Decimal("8000.00") + shares.quantize(Decimal("0.01"))
    assert snapshot.positions_value == 0
    assert snapshot.total_value == snapshot.cash + snapshot.positions_value


def test_two_catalogue_upserts_in_opposite_orders_wait_instead_of_deadlocking() -> None:
    """The sync (by volume), a price refresh (by id) and a resolution check (by record) upsert
    the same markets at the same minute; rows are locked in one order, so none deadlocks."""
    from django.db.utils import DatabaseError

    from markets.parsing import parse_markets
    from markets.services import markets_upsert

    markets = list(parse_markets(RecordedSource().fetch_top_markets(500)).markets)
    markets_upsert(markets=markets)
    errors: list[str] = []
    for _ in range(10):
        barrier = threading.Barrier(2)

        def upsert(rows: list[object], barrier: threading.Barrier = barrier) -> None:
            try:
                barrier.wait(timeout=10)
                markets_upsert(markets=rows, include_raw=False)  # type: ignore[arg-type]
            except DatabaseError as exc:
                errors.append(f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
            finally:
                connections.close_all()

        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(upsert, [markets, markets[::-1]]))

    assert errors == []


def test_closing_a_past_weeks_decision_waits_for_a_trade_in_flight() -> None:
    """Expiry locks the decision before it reads whether an order executed: a bet committing
    meanwhile makes it DONE with its trade, never a skipped HOLD beside an executed bet."""
    from agents.types import ParsedDecision
    from arena.services.decisions.lifecycle import decision_claim, parsed_json
    from arena.services.decisions.run import decisions_expire
    from arena.services.frozen import run_prepare

    cohort, _ = cohort_start(week_start=WEEK, now=COHORT_AT)
    run = run_prepare(now=RUN_AT, source=RecordedSource())
    frozen = FrozenMarkets.load(run)
    view = next(v for v in frozen.universe if v.is_binary and v.yes_price)
    agent = cohort.agents.get(model__internal_id="gpt-5.1")
    decision = decision_claim(agent=agent, week_start=WEEK, now=RUN_AT)
    assert decision is not None
    order = BetOrder(market_id=view.market_id, side="YES", amount=Decimal("500"))
    answer = ParsedDecision(action="BET", reasoning="One bet.", bets=(order,))
    Decision.objects.filter(pk=decision.pk).update(
        run=run, parsed_try=decision.tries, action="BET", parsed=parsed_json(answer)
    )
    decision.refresh_from_db()

    while_held(
        lambda: trade_buy(
            decision=decision, order=order, frozen=frozen, index=0, try_number=decision.tries
        ),
        lambda: decisions_expire(before=WEEK + timedelta(weeks=1), now=RUN_AT + timedelta(weeks=1)),
    )

    decision.refresh_from_db()
    assert Trade.objects.filter(decision=decision, status=Trade.Status.EXECUTED).count() == 1
    assert decision.status == Decision.Status.DONE
    assert decision.action == "BET"
