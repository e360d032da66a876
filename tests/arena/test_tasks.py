"""The weekly tasks, delivered through Redis to a real Celery worker (never eager)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from celery.result import AsyncResult
from django.db import OperationalError

from arena.models import Cohort, Decision, PortfolioSnapshot
from arena.tasks import retry_decisions, run_decisions, start_cohort, take_snapshots
from arena.weeks import cohort_week_start, week_opens
from forecaster.celery import app as celery_app

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.celery_worker,
]


@pytest.fixture(autouse=True)
def sunday_night(time_machine: Any) -> None:
    """This week's Sunday, a minute past midnight UTC, the clock running: the weekly start
    starts a cohort only on its first day (COHORT_START_GRACE)."""
    time_machine.move_to(week_opens(cohort_week_start()) + timedelta(minutes=1), tick=True)


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
    assert f"queued {agents} agent decisions in 1 cohort chain " in queued
    # Wait on the chain's last task through Redis, not by polling the database: SQLite's
    # shared in-memory test database locks tables against a concurrent reader.
    last_task = queued.rsplit("last task ", 1)[1].rstrip(")")
    assert AsyncResult(last_task, app=celery_app).get(timeout=120).startswith("run ")
    assert Decision.objects.filter(status="done").count() == agents
    # Agents of a cohort are processed one after another: claims never overlap.
    decisions = list(Decision.objects.order_by("claimed_at"))
    for earlier, later in zip(decisions, decisions[1:], strict=False):
        assert earlier.finished_at is not None
        assert later.claimed_at is not None
        assert earlier.finished_at <= later.claimed_at
    # A second run for the same week finds nothing due: no duplicate decision; nor does the
    # hourly retry run.
    assert run_decisions.delay().get(timeout=60) == "no decision is due: no run"
    assert retry_decisions.delay().get(timeout=60) == "no decision is due: no run"
    assert Decision.objects.count() == agents

    assert "snapshots" in take_snapshots.delay().get(timeout=60)
    assert PortfolioSnapshot.objects.count() == agents


def test_a_decision_task_that_breaks_does_not_stop_the_chain(
    settings: Any, celery_worker_on_redis: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed link would stop a Celery chain and leave every later agent undecided; the
    decision task reports the failure instead of raising, and the chain goes on."""
    import arena.tasks as tasks_module
    from arena.services.decisions.run import decision_run

    settings.MARKET_SOURCE = "demo"
    settings.OPENROUTER_API_KEY = ""
    start_cohort.delay().get(timeout=30)
    cohort = Cohort.objects.get()
    first = cohort.agents.order_by("-model__kind", "model__display_order").first()
    assert first is not None

    def breaks_for_the_first_agent(*, agent_id: int, **kwargs: Any) -> Any:
        if agent_id == first.pk:
            raise RuntimeError("the service itself broke")
        return decision_run(agent_id=agent_id, **kwargs)

    # The worker runs in a thread of this process, so it sees the patched name.
    monkeypatch.setattr(tasks_module, "decision_run", breaks_for_the_first_agent)

    queued = run_decisions.delay().get(timeout=60)
    last_task = queued.rsplit("last task ", 1)[1].rstrip(")")
    assert AsyncResult(last_task, app=celery_app).get(timeout=120).startswith("run ")
    agents = cohort.agents.count()
    assert Decision.objects.filter(status="done").count() == agents - 1
    assert not Decision.objects.filter(agent=first).exists()
    assert not Decision.objects.filter(status="running").exists()

    # The hourly retry run queues the one agent left, on the same path: a chain of one.
    monkeypatch.undo()
    queued = retry_decisions.delay().get(timeout=60)
    assert "queued 1 agent decisions in 1 cohort chain " in queued
    last_task = queued.rsplit("last task ", 1)[1].rstrip(")")
    assert AsyncResult(last_task, app=celery_app).get(timeout=120).startswith("run ")
    assert Decision.objects.get(agent=first).status == "done"


def test_a_database_error_before_the_claim_is_tried_again_in_seconds_not_failed(
    settings: Any, celery_worker_on_redis: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dropped connection before the decision is claimed is nobody's failure: the task
    tries again in a second, keeping its place in the chain, and the agent decides in this
    run, not an hour later in the retry run."""
    import arena.services.decisions.run as run_module
    from arena.models import SystemEvent
    from arena.services.decisions.lifecycle import decision_claim_for

    settings.MARKET_SOURCE = "demo"
    settings.OPENROUTER_API_KEY = ""
    start_cohort.delay().get(timeout=30)
    cohort = Cohort.objects.get()
    first = cohort.agents.order_by("-model__kind", "model__display_order").first()
    assert first is not None
    dropped: list[int] = []

    def drops_once_for_the_first_agent(**kwargs: Any) -> Any:
        if kwargs["agent"].pk == first.pk and not dropped:
            dropped.append(first.pk)
            raise OperationalError("server closed the connection unexpectedly")
        return decision_claim_for(**kwargs)

    # The worker runs in a thread of this process, so it sees the patched name.
    monkeypatch.setattr(run_module, "decision_claim_for", drops_once_for_the_first_agent)

    queued = run_decisions.delay().get(timeout=60)
    last_task = queued.rsplit("last task ", 1)[1].rstrip(")")
    assert AsyncResult(last_task, app=celery_app).get(timeout=120).startswith("run ")
    assert dropped == [first.pk]
    decision = Decision.objects.get(agent=first)
    assert decision.status == "done"
    assert decision.tries == 1  # one claim: the error came before it
    assert Decision.objects.filter(status="done").count() == cohort.agents.count()
    assert not SystemEvent.objects.filter(kind="decision_failed").exists()


def test_in_process_a_database_error_before_the_claim_is_recorded_as_before(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside a task (the in-process run of a command) nothing would try again: the failure
    is recorded and the run goes on, as for any failure."""
    import arena.services.decisions.run as run_module
    from arena.models import SystemEvent

    settings.MARKET_SOURCE = "demo"
    settings.OPENROUTER_API_KEY = ""
    start_cohort()
    agent = Cohort.objects.get().agents.first()
    assert agent is not None
    run, _ = run_module.run_open()
    assert run is not None

    def drops(**kwargs: Any) -> Any:
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(run_module, "decision_claim_for", drops)
    outcome = run_module.decision_run(agent_id=agent.pk, run_id=run.pk)
    assert outcome.status == "failed"
    assert SystemEvent.objects.filter(kind="decision_failed", agent=agent).exists()
    with pytest.raises(OperationalError):
        run_module.decision_run(agent_id=agent.pk, run_id=run.pk, raise_unclaimed=True)
