"""Worker fault drills: the weekly decision run on real Celery worker processes,
consuming from Redis and writing to the PostgreSQL test database, never eager.

- A pool process SIGKILLed mid-decision: the task is delivered again with the same id
  (acks_late + reject_on_worker_lost) and takes over the claim its first delivery left at
  once, instead of waiting out CLAIM_TTL; the run ends as if nothing had happened.
- A whole worker SIGKILLed mid-decision: its unacknowledged message comes back after the
  broker's visibility timeout, to another worker, with the same outcome.
- Two workers share a run across cohorts, while each cohort's agents stay in turn (002).
- The worker queueing a run SIGKILLed part-way, one cohort's chain sent: the Sunday retry
  minutes later queues what the run still owes, on its snapshot (tests/worker_settings.py
  holds the worker at that point, for the drill to kill it there).

The claim rule itself (only the same task delivered again takes over a live claim) is also
checked in-process, on SQLite too. The drills need PostgreSQL (tests/workers.py).

OpenRouter is a replay server in this process; the workers reach it over HTTP. A handler
holds one model call (or delays every call) so that a worker is known to be mid-decision.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from celery.result import AsyncResult

from arena.models import Cohort, Decision, DecisionRun, SystemEvent, Trade
from arena.services.cohorts import cohort_start
from arena.services.decisions.lifecycle import decision_claim
from arena.services.decisions.run import WORKER_LOSSES_MAX, decision_run, decisions_run_all
from arena.tasks import retry_decisions, run_decisions
from arena.weeks import outside_window
from forecaster.celery import app as celery_app
from markets.sources import RecordedSource
from tests.arena.books import assert_books_balance
from tests.arena.conftest import COHORT_AT, OFFLINE, RUN_AT, WEEK
from tests.replay import OPENROUTER_RECORDINGS, ReplayServer, Reply, Request
from tests.workers import needs_worker_processes, worker_env, worker_process, worker_processes


def worker_drill(test: Callable[..., None]) -> Callable[..., None]:
    """A drill on worker processes: PostgreSQL only, committed rows (the workers must see
    them; serialized_rollback restores the lineup seeded by agents/0002 after the flush)."""
    marks = (
        needs_worker_processes,
        pytest.mark.django_db(transaction=True, serialized_rollback=True),
        pytest.mark.celery_worker,
        pytest.mark.drill,
        pytest.mark.slow(reason="waits on real worker processes: started, killed, redelivered"),
    )
    for mark in marks:
        test = mark(test)
    return test


COMPLETIONS = "/chat/completions"
MARKET_ID = "559687"  # the highest-volume market of the recordings the demo source moves
BET = {
    "action": "BET",
    "bets": [{"market_id": MARKET_ID, "side": "NO", "amount": 500}],
    "reasoning": "The favourite is priced about right; a small NO position.",
}


@pytest.mark.django_db
def test_only_the_same_task_delivered_again_takes_over_a_live_claim(
    cohort: Cohort, run: DecisionRun
) -> None:
    """The claim a first delivery of task "first" left (its worker died mid-call): another
    task leaves it alone until CLAIM_TTL, and so does a second copy of "first" that the
    broker did not redeliver (a chain link sent twice: the first copy may be alive);
    "first" redelivered resumes it at once, and the decision keeps the interrupted try among
    its attempts."""
    agent = cohort.agents.get(model__internal_id="gpt-5.1")
    left = decision_claim(agent=agent, week_start=WEEK, now=RUN_AT)
    assert left is not None
    Decision.objects.filter(pk=left.pk).update(claimed_by="first")
    later = RUN_AT + timedelta(minutes=1)

    other = decision_run(
        agent_id=agent.pk, run_id=run.pk, now=later, holder="second", redelivered=True
    )
    assert other.status == "already claimed or final"
    copy = decision_run(agent_id=agent.pk, run_id=run.pk, now=later, holder="first")
    assert copy.status == "already claimed or final"
    again = decision_run(
        agent_id=agent.pk, run_id=run.pk, now=later, holder="first", redelivered=True
    )

    assert again.status == Decision.Status.DONE
    decision = Decision.objects.get(pk=left.pk)
    assert (decision.tries, decision.claimed_by) == (2, "first")
    attempts = list(decision.attempts.order_by("number"))
    assert [a.valid for a in attempts] == [False, True]
    assert attempts[0].error.startswith("interrupted: the worker running try 1 was lost")
    (event,) = SystemEvent.objects.filter(kind=SystemEvent.Kind.DECISION_RECLAIMED)
    assert "its own task delivered again after its worker was lost (task first)" in event.message
    assert event.data["reason"] == "redelivered"
    assert_books_balance(cohort_id=cohort.pk)


class _WorkerKilled(BaseException):
    """Stands for the SIGKILL in the model call: nothing of the decision's handling runs."""


@pytest.mark.django_db
def test_a_task_that_loses_its_worker_again_and_again_is_sent_for_retry_not_looped(
    cohort: Cohort, run: DecisionRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A message whose task kills its worker every time would be delivered again forever:
    at the WORKER_LOSSES_MAX-th delivery of the same task after a loss the decision is sent
    for retry (RETRYABLE, with the reason) instead of asking the model once more; the hourly
    retry run asks again with a new task."""
    from arena.services.decisions import responders

    agent = cohort.agents.get(model__internal_id="gpt-5.1")
    left = decision_claim(agent=agent, week_start=WEEK, now=RUN_AT)
    assert left is not None
    Decision.objects.filter(pk=left.pk).update(claimed_by="crashing")

    def worker_dies(*args: object, **kwargs: object) -> None:
        raise _WorkerKilled

    monkeypatch.setattr(responders, "respond", worker_dies)
    for minute in range(1, WORKER_LOSSES_MAX):
        now = RUN_AT + timedelta(minutes=minute)
        with pytest.raises(_WorkerKilled):
            decision_run(
                agent_id=agent.pk, run_id=run.pk, now=now, holder="crashing", redelivered=True
            )
        assert Decision.objects.get(pk=left.pk).status == Decision.Status.RUNNING

    now = RUN_AT + timedelta(minutes=WORKER_LOSSES_MAX)
    outcome = decision_run(
        agent_id=agent.pk, run_id=run.pk, now=now, holder="crashing", redelivered=True
    )

    assert outcome.status == Decision.Status.RETRYABLE
    decision = Decision.objects.get(pk=left.pk)
    assert decision.status == Decision.Status.RETRYABLE
    assert f"lost its worker {WORKER_LOSSES_MAX} times" in decision.error
    assert not Trade.objects.filter(decision=decision).exists()
    assert_books_balance(cohort_id=cohort.pk)


def _completion(content: str) -> bytes:
    """The real recorded OpenRouter success body with only message.content replaced."""
    body = json.loads(
        (OPENROUTER_RECORDINGS / "chat_completion_ok_json_content_with_reasoning.json").read_text()
    )
    body["choices"][0]["message"]["content"] = content
    return json.dumps(body).encode()


class ModelCalls:
    """OpenRouter's chat endpoint: every model answers the same BET, after `delay` seconds.

    With `hold`, the first call of the hold-th model to call (the hold-th agent of the run's
    chain) waits until `release` is set: its worker is then known to be mid-decision.
    `repeated` is set when that model calls a second time."""

    def __init__(self, *, hold: int | None = None, delay: float = 0.0) -> None:
        self.hold, self.delay = hold, delay
        self.held_model = ""
        self.held = threading.Event()
        self.repeated = threading.Event()
        self.release = threading.Event()
        self.calls: Counter[str] = Counter()
        self._order: list[str] = []
        self._lock = threading.Lock()
        self._answer = _completion(json.dumps(BET))

    def __call__(self, request: Request) -> Reply:
        model = request.json()["model"]
        with self._lock:
            if model not in self._order:
                self._order.append(model)
            self.calls[model] += 1
            hold = self.hold == len(self._order) and self.calls[model] == 1
            if hold:
                self.held_model = model
            elif model == self.held_model:
                self.repeated.set()
        if hold:
            self.held.set()
            self.release.wait(timeout=300)
        elif self.delay:
            time.sleep(self.delay)  # the model "thinks": decisions take a known while
        return Reply(body=self._answer)


def _env(server: ReplayServer, **overrides: str) -> dict[str, str]:
    return worker_env(
        OPENROUTER_BASE_URL=server.url,
        OPENROUTER_API_KEY="sk-or-test-key",
        MARKET_SOURCE="demo",
        # A held call is never given up by the client (that would retry: a second call).
        HTTP_READ_TIMEOUT="300",
        **overrides,
    )


def _last_task(queued: str) -> str:
    return queued.rsplit("last task ", 1)[1].rstrip(")")


def _assert_decided_once_and_resumed(cohort: Cohort, calls: ModelCalls) -> Decision:
    """Every agent decided exactly once, DONE, its orders executed once; the held agent's
    decision was resumed by the redelivered task: two tries, the interrupted one recorded.
    Return the held agent's decision."""
    decisions = list(Decision.objects.filter(cohort=cohort).select_related("agent__model"))
    assert len(decisions) == cohort.agents.count()
    assert {d.status for d in decisions} == {Decision.Status.DONE}
    for decision in decisions:
        parsed = decision.parsed or {}
        trades = Trade.objects.filter(decision=decision)
        # One trade per order of the stored answer, all of the round that answered it.
        assert trades.count() == len(parsed.get("bets", [])) + len(parsed.get("sells", []))
        assert set(trades.values_list("try_number", flat=True)) <= {decision.parsed_try}
    llm = [d for d in decisions if d.responder == Decision.Responder.OPENROUTER]
    assert llm, "the lineup has models that call OpenRouter"
    for decision in llm:
        trade = Trade.objects.get(decision=decision)
        assert (trade.requested_market_id, trade.status) == (MARKET_ID, Trade.Status.EXECUTED)

    (held,) = [d for d in llm if d.agent.model.openrouter_id == calls.held_model]
    assert held.tries == 2
    assert all(d.tries == 1 for d in decisions if d.pk != held.pk)
    attempts = list(held.attempts.order_by("number"))
    assert [a.valid for a in attempts] == [False, True]
    assert attempts[0].error.startswith("interrupted: the worker running try 1 was lost")
    (reclaimed,) = SystemEvent.objects.filter(kind=SystemEvent.Kind.DECISION_RECLAIMED)
    assert reclaimed.decision_id == held.pk
    assert f"delivered again after its worker was lost (task {held.claimed_by})" in (
        reclaimed.message
    )
    # The model was asked again only by the interrupted agent, once.
    assert calls.calls[calls.held_model] == 2
    assert all(n == 1 for model, n in calls.calls.items() if model != calls.held_model)
    assert DecisionRun.objects.get().finished_at is not None
    assert_books_balance(cohort_id=cohort.pk)
    return held


@worker_drill
def test_a_pool_process_killed_mid_decision_is_delivered_again_and_resumes_its_claim(
    openrouter_server: ReplayServer,
) -> None:
    calls = ModelCalls(hold=2)
    openrouter_server.route("POST", COMPLETIONS, calls)
    cohort, _ = cohort_start()

    with worker_process("pool-kill", env=_env(openrouter_server)) as worker:
        queued = run_decisions.delay().get(timeout=120)
        assert "in 1 cohort chain " in queued
        assert calls.held.wait(timeout=120), worker.log()
        (pool_process,) = worker.pool_pids()
        os.kill(pool_process, signal.SIGKILL)
        # Not after CLAIM_TTL: the same task, delivered again, asks the model again at once.
        assert calls.repeated.wait(timeout=60), worker.log()
        calls.release.set()  # the killed process's call is answered into a closed socket
        finished = AsyncResult(_last_task(queued), app=celery_app).get(timeout=180)

        assert finished.startswith("run ")
        assert worker.alive()
        assert "WorkerLostError" in worker.log()
    held = _assert_decided_once_and_resumed(cohort, calls)
    assert AsyncResult(held.claimed_by, app=celery_app).worker == worker.hostname


@worker_drill
def test_a_worker_killed_whole_mid_decision_has_its_task_delivered_again_to_another(
    openrouter_server: ReplayServer,
) -> None:
    """Nothing rejects the message of a worker SIGKILLed whole (pool and all): Redis gives
    it back after the visibility timeout, here 5 s, to the worker still running."""
    calls = ModelCalls(hold=2)
    openrouter_server.route("POST", COMPLETIONS, calls)
    cohort, _ = cohort_start()

    with worker_process("lost", env=_env(openrouter_server)) as lost:
        queued = run_decisions.delay().get(timeout=120)
        assert calls.held.wait(timeout=120), lost.log()
        lost.kill()
    calls.release.set()
    assert not calls.repeated.is_set()

    env = _env(
        openrouter_server,
        DJANGO_SETTINGS_MODULE="tests.worker_settings",
        DRILL_VISIBILITY_TIMEOUT_SECONDS="5",
    )
    with worker_process("survivor", env=env) as survivor:
        finished = AsyncResult(_last_task(queued), app=celery_app).get(timeout=180)
        assert finished.startswith("run ")
    held = _assert_decided_once_and_resumed(cohort, calls)
    assert AsyncResult(held.claimed_by, app=celery_app).worker == survivor.hostname


def _overlap(a: Decision, b: Decision) -> bool:
    assert a.claimed_at is not None
    assert a.finished_at is not None
    assert b.claimed_at is not None
    assert b.finished_at is not None
    return a.claimed_at < b.finished_at and b.claimed_at < a.finished_at


@worker_drill
def test_two_workers_share_a_run_across_cohorts_and_keep_each_cohort_in_turn(
    openrouter_server: ReplayServer,
) -> None:
    calls = ModelCalls(delay=0.5)
    openrouter_server.route("POST", COMPLETIONS, calls)
    this_week, _ = cohort_start()
    last_week, _ = cohort_start(week_start=this_week.week_start - timedelta(days=7))
    env = _env(openrouter_server)

    with worker_processes("w1", "w2", env=env) as (w1, w2):
        queued = run_decisions.delay().get(timeout=120)
        assert "in 2 cohort chains " in queued
        finished = AsyncResult(_last_task(queued), app=celery_app).get(timeout=300)
        assert finished.startswith("run ")

    run = DecisionRun.objects.get()
    by_cohort: dict[int, list[Decision]] = {}
    for decision in Decision.objects.filter(run=run).order_by("claimed_at"):
        by_cohort.setdefault(decision.cohort_id, []).append(decision)
    assert set(by_cohort) == {this_week.pk, last_week.pk}
    for cohort in (this_week, last_week):
        decisions = by_cohort[cohort.pk]
        assert len(decisions) == cohort.agents.count()
        assert {d.status for d in decisions} == {Decision.Status.DONE}
        # Within a cohort, one agent after another (002): no two decisions overlap.
        for earlier, later in zip(decisions, decisions[1:], strict=False):
            assert earlier.finished_at is not None
            assert later.claimed_at is not None
            assert earlier.finished_at <= later.claimed_at
        assert_books_balance(cohort_id=cohort.pk)
    # Across cohorts, side by side.
    assert any(_overlap(a, b) for a in by_cohort[this_week.pk] for b in by_cohort[last_week.pk])
    workers = {
        AsyncResult(d.claimed_by, app=celery_app).worker
        for decisions in by_cohort.values()
        for d in decisions
    }
    assert workers == {w1.hostname, w2.hostname}
    assert run.finished_at is not None
    finishes = SystemEvent.objects.filter(kind=SystemEvent.Kind.RUN_FINISHED, run_id=run.pk)
    assert finishes.count() == 1
    # Each model was asked once per cohort: nothing was delivered twice.
    llm = Decision.objects.filter(run=run, responder=Decision.Responder.OPENROUTER)
    assert sum(calls.calls.values()) == llm.count()


@worker_drill
def test_a_worker_killed_while_queueing_the_run_leaves_no_cohort_unserved_past_minutes(
    settings: Any, tmp_path: Path
) -> None:
    """Sunday 00:05: the worker queueing the week's run is SIGKILLed after sending the first
    cohort's chain, before the second's. A worker started after it decides the first cohort;
    the Sunday retry five minutes on finds the run opened but never queued and queues what it
    still owes, on its snapshot: every agent of both cohorts decides once, on the week's one
    run, long before the outside agents' window closes. The killed worker's own message (the
    run task, acknowledged late) comes back to the survivor after the broker's visibility
    timeout, here 5 s, and serves nobody twice."""
    for name, value in OFFLINE.items():
        setattr(settings, name, value)
    settings.MARKET_UNIVERSE_SIZE = 40
    first, _ = cohort_start(week_start=WEEK, now=COHORT_AT)
    assert decisions_run_all(now=RUN_AT, source=RecordedSource()).run_id is not None
    second_week = WEEK + timedelta(weeks=1)
    sunday = datetime(second_week.year, second_week.month, second_week.day, tzinfo=UTC)
    second, _ = cohort_start(week_start=second_week, now=sunday)
    run_at = sunday + timedelta(minutes=5)
    marker = tmp_path / "holding"
    offline = {"OPENROUTER_API_KEY": "", "MARKET_SOURCE": "demo", "MARKET_UNIVERSE_SIZE": "40"}

    queueing = worker_env(
        **offline,
        DRILL_NOW=run_at.isoformat(),
        DRILL_NOW_SET_AT=str(time.time()),
        DRILL_HOLD_AFTER_DECISIONS_SENT="1",
        DRILL_HOLD_MARKER=str(marker),
    )
    with worker_process("queueing", env=queueing) as lost:
        queued = run_decisions.delay()
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert time.monotonic() < deadline, lost.log()
            time.sleep(0.2)
        lost.kill()
    run = DecisionRun.objects.get(week_start=second_week)
    assert run.queued_at is None
    assert SystemEvent.objects.filter(run=run, kind=SystemEvent.Kind.RUN_STARTED).count() == 1

    # The Sunday retry at 00:10, on a worker whose clock says so.
    later = worker_env(
        **offline,
        DRILL_NOW=(run_at + timedelta(minutes=5)).isoformat(),
        DRILL_NOW_SET_AT=str(time.time()),
        DRILL_VISIBILITY_TIMEOUT_SECONDS="5",
    )
    week = Decision.objects.filter(week_start=second_week)
    owed = first.agents.count() + second.agents.count()
    with worker_process("survivor", env=later) as survivor:
        assert "queued" in retry_decisions.delay().get(timeout=120)
        deadline = time.monotonic() + 180
        while week.filter(status__in=Decision.DECIDED).count() < owed:
            assert time.monotonic() < deadline, survivor.log()
            time.sleep(0.5)
        # The killed worker's run task, delivered again: the week's run is opened already.
        assert "no decision is due" in queued.get(timeout=120)

    assert week.count() == owed  # one decision an agent: nobody decided twice
    assert set(week.values_list("run_id", flat=True)) == {run.pk}  # the week's one snapshot
    closes = outside_window(second_week)[1]
    assert all(d.finished_at is not None and d.finished_at < closes for d in week)
    event = SystemEvent.objects.get(run=run, data__queued_again=True)
    assert "queued again" in event.message
    for cohort in (first, second):
        assert_books_balance(cohort_id=cohort.pk)
