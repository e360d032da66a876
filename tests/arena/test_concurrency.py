"""Overlapping runs (002 "Decision claiming", "Cohorts"): two decision runs of the same week at
once make one decision per agent and no duplicate trade; two cohort starts make one cohort.

PostgreSQL only: real concurrent writers need a database that runs them concurrently.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import date, timedelta
from decimal import Decimal
from typing import TypeVar

import pytest
from django.db import connection, connections
from django.db.models import Count, Sum

from arena.models import Agent, Cohort, Decision, Position, Trade
from arena.services.cohorts import cohort_start
from arena.services.decisions import RunReport, decisions_run_all
from markets.sources import RecordedSource
from tests.arena.conftest import COHORT_AT, RUN_AT, WEEK

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="needs PostgreSQL: SQLite serializes all writers, so two runs cannot overlap",
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
