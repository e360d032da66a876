"""Thin Celery tasks of the arena: take ids, call one service."""

from __future__ import annotations

import logging

from celery import Task, chain, chord, group, shared_task
from django.conf import settings
from django.db import DatabaseError, transaction

from arena.models import Agent, DecisionRun
from arena.services.cohorts import cohort_start_scheduled
from arena.services.decisions.outside import outside_decisions_close
from arena.services.decisions.run import decision_run, run_finish, run_open, run_queued
from arena.services.marking import snapshots_take
from arena.services.releases import releases_publish_due
from arena.services.settlement import resolutions_check

logger = logging.getLogger(__name__)


@shared_task(name="arena.start_cohort", acks_late=True, soft_time_limit=120, time_limit=150)
def start_cohort() -> str:
    """Start this week's cohort (Sunday 00:00 UTC), within its first day only: a start
    delivered later starts nothing and is recorded as missed. Safe to deliver twice."""
    cohort, created = cohort_start_scheduled()
    if cohort is None:
        return "past the cohort's start grace: nothing started, the week is recorded as missed"
    return f"started {cohort}" if created else f"{cohort} already exists"


@shared_task(name="arena.run_decisions", acks_late=True, soft_time_limit=300, time_limit=330)
def run_decisions(cohort_id: int | None = None) -> str:
    """Freeze this run's market snapshot, then queue every due agent's decision: one chain
    per cohort, its agents one after another (002), each in its own short task; the cohorts'
    chains run side by side on whichever workers are free."""
    return _queue(*run_open(cohort_id=cohort_id))


@shared_task(name="arena.retry_decisions", acks_late=True, soft_time_limit=300, time_limit=330)
def retry_decisions() -> str:
    """Hourly: queue the decisions of this week sent for retry or left by a dead worker
    (never the agents a run of the week is still working through)."""
    return _queue(*run_open(retry=True))


def _queue(run: DecisionRun | None, agent_ids: list[int]) -> str:
    """Queue a chord: its header a group of one chain per cohort (agents in the order given),
    its body `finish_run`, which the result backend starts once every chain has finished."""
    if run is None:
        return "no decision is due: no run"
    cohorts = _by_cohort(agent_ids)
    chains = [
        chain(*(run_agent_decision.si(agent_id, run.pk) for agent_id in agents))
        for agents in cohorts.values()
    ]
    last = chord(group(chains), finish_run.si(run.pk)).apply_async()
    # Until this is written, a retry run takes the run for one whose queueing died here.
    run_queued(run_id=run.pk)
    return (
        f"run {run.pk}: queued {len(agent_ids)} agent decisions in {len(chains)} cohort "
        f"chain{'s' if len(chains) != 1 else ''} (last task {last.id})"
    )


def _by_cohort(agent_ids: list[int]) -> dict[int, list[int]]:
    """The agents grouped by cohort, each group keeping the order of `agent_ids`."""
    cohort_of = dict(Agent.objects.filter(pk__in=agent_ids).values_list("pk", "cohort_id"))
    cohorts: dict[int, list[int]] = {}
    for agent_id in agent_ids:
        cohorts.setdefault(cohort_of[agent_id], []).append(agent_id)
    return cohorts


@shared_task(
    name="arena.run_agent_decision",
    bind=True,
    acks_late=True,
    # Bounded by DECISION_TASK_DATABASE_RETRIES below, not by Celery's default of 3, past
    # which its retry would raise and break the chain.
    max_retries=None,
    soft_time_limit=900,
    time_limit=960,
)
def run_agent_decision(self: Task, agent_id: int, run_id: int) -> str:
    """Run one agent's weekly decision. Safe to deliver twice: the claim makes a repeat a
    no-op, except that this same task delivered again (its worker was lost mid-decision,
    CELERY_TASK_REJECT_ON_WORKER_LOST or the broker's visibility timeout) takes over the
    claim its first delivery left, at once: the claim's holder is this task's id.

    Never fails: a failed link would stop the chain and leave every later agent undecided.
    The service records its own failures; anything escaping it is logged and reported here.
    A database error before the decision was claimed (a restart, a dropped connection) is
    nobody's failure: the task tries again in seconds, DECISION_TASK_DATABASE_RETRIES times,
    keeping its place in the chain, and only then reports it."""
    retries = self.request.retries or 0
    try:
        outcome = decision_run(
            agent_id=agent_id,
            run_id=run_id,
            holder=self.request.id or "",
            # Set by the broker on a message it put back (its worker was lost), never on a
            # second copy of a live task. A retry of this task is this task again: a claim
            # it may have taken before the error is its own to take over.
            redelivered=bool((self.request.delivery_info or {}).get("redelivered")) or retries > 0,
            raise_unclaimed=True,
        )
    except DatabaseError as exc:
        if retries < settings.DECISION_TASK_DATABASE_RETRIES:
            logger.warning(
                "decision of agent %s in run %s: database error before its claim (%s); "
                "trying again",
                agent_id,
                run_id,
                exc,
            )
            raise self.retry(exc=exc, countdown=min(2**retries, 30)) from exc
        logger.exception(
            "decision of agent %s in run %s: the database kept failing", agent_id, run_id
        )
        return f"agent {agent_id}: failed ({type(exc).__name__}: {exc})"
    except Exception as exc:
        logger.exception("decision of agent %s in run %s escaped its service", agent_id, run_id)
        return f"agent {agent_id}: failed ({type(exc).__name__}: {exc})"
    return f"agent {agent_id}: {outcome.status}"


@shared_task(name="arena.finish_run", acks_late=True, soft_time_limit=60, time_limit=90)
def finish_run(run_id: int) -> str:
    """Mark the run finished once every cohort's chain has. Safe to deliver twice."""
    run_finish(run_id=run_id)
    return f"run {run_id} finished"


@shared_task(name="arena.take_snapshots", acks_late=True, soft_time_limit=240, time_limit=270)
def take_snapshots() -> str:
    """Mark every active portfolio to market at this 10-minute slot. Safe to deliver twice."""
    return snapshots_take().summary()


@shared_task(name="arena.check_resolutions", acks_late=True, soft_time_limit=600, time_limit=660)
def check_resolutions() -> str:
    """Settle the markets that resolved upstream; complete finished cohorts; then queue the
    data releases that are due (a cohort completed now or by hand, or whose LLM agents' last
    bet was scored since; a released cohort whose data changed since, as a baseline's or
    outside agent's position settled; a publish that failed an hour ago or more)."""
    summary = resolutions_check().summary()
    # Only once the completions committed, and as a task of its own: a release writes files
    # for as long as the export takes, and its failure must never touch a completion.
    queued: list[str] = []
    transaction.on_commit(lambda: queued.append(publish_due_releases.delay().id))
    return f"{summary}; data releases: task {queued[0]}" if queued else summary


@shared_task(
    name="arena.publish_due_releases", acks_late=True, soft_time_limit=1800, time_limit=1860
)
def publish_due_releases() -> str:
    """Publish every data release that is due (`releases_publish_due`): the first of each
    final cohort (completed, every bet of its LLM agents scored or its market cancelled), and
    the next of each released cohort whose data changed since. Safe to deliver twice: a
    cohort whose data is what its latest release holds is not due, and a publish under way
    makes the other wait for the next check. At the soft time limit it stops; the cohorts
    left are due at the next check."""
    report = releases_publish_due()
    lines = report.done + report.failed
    return "; ".join(lines) if lines else "no release is due"


@shared_task(
    name="arena.close_outside_decisions", acks_late=True, soft_time_limit=120, time_limit=150
)
def close_outside_decisions() -> str:
    """Every 5 minutes: an outside agent's decision still awaiting its submission after the
    window closed becomes a HOLD "no submission". Safe to deliver twice."""
    closed = outside_decisions_close()
    return f"closed {len(closed)} outside decisions" if closed else "none to close"
