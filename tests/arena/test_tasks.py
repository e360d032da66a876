"""The weekly tasks, delivered through Redis to a real Celery worker (never eager)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from arena.models import Cohort, Decision, PortfolioSnapshot
from arena.tasks import run_decisions, start_cohort, take_snapshots

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.celery_worker,
]


def _wait_for(predicate: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("the worker did not finish in time")
        time.sleep(0.2)


def test_weekly_tasks_start_a_cohort_run_every_agent_in_turn_and_snapshot(
    settings: Any, celery_worker_on_redis: Any
) -> None:
    settings.MARKET_SOURCE = "demo"
    settings.OPENROUTER_API_KEY = ""

    assert start_cohort.delay().get(timeout=30).startswith("started Cohort 1")
    assert start_cohort.delay().get(timeout=30).endswith("already exists")
    assert Cohort.objects.count() == 1
    agents = Cohort.objects.get().agents.count()

    queued = run_decisions.delay().get(timeout=60)
    assert f"queued {agents} agent decisions" in queued
    _wait_for(lambda: Decision.objects.filter(status="done").count() == agents)
    # Agents of a cohort are processed one after another: claims never overlap.
    decisions = list(Decision.objects.order_by("claimed_at"))
    for earlier, later in zip(decisions, decisions[1:], strict=False):
        assert earlier.finished_at is not None
        assert later.claimed_at is not None
        assert earlier.finished_at <= later.claimed_at
    # A second run for the same week finds nothing due: no duplicate decision.
    assert run_decisions.delay().get(timeout=60) == "no decision is due: no run"
    assert Decision.objects.count() == agents

    assert "snapshots" in take_snapshots.delay().get(timeout=60)
    assert PortfolioSnapshot.objects.count() == agents
