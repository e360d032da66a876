"""The week's decision run: open it on one frozen snapshot, run each agent's decision, finish.

`run_open` starts the week's cohort if it is missing, closes what earlier weeks left open and
freezes the markets once for the week; `decision_run` then runs one agent's decision on it —
claim, prompt, then the lineup model's answer (responders.py) or an outside team's awaited
submission (outside.py) — each decision a unit of its own (lifecycle.py). Celery runs the
agents as a chain of short tasks (arena/tasks.py); `decisions_run_all` runs them in one
process. `decision_retry` runs one decision again on a freshly frozen snapshot.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime

from django.conf import settings
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet

from agents.prompts import build_messages, prompt_version
from arena import clock, money
from arena.evidence import error_text, storable_text
from arena.exceptions import DecisionNotRetryable
from arena.models import Agent, Cohort, Decision, DecisionRun, Position, SystemEvent
from arena.services.cohorts import cohort_start
from arena.services.decisions.context import decision_context
from arena.services.decisions.lifecycle import (
    CLAIM_LOST,
    CLAIM_TTL,
    REDELIVERED,
    DecisionOutcome,
    Progress,
    attempt_record,
    decision_claim_for,
    decision_fail,
    decision_failure_event,
    decision_resume,
    round_executed,
    rounds_asked,
    under_claim,
)
from arena.services.decisions.outside import outside_decision_await
from arena.services.decisions.responders import decision_ask, responder_kind
from arena.services.events import Kind, Level, event_record
from arena.services.frozen import FrozenMarkets, run_prepare
from arena.services.schedule import cohort_missed_record
from arena.weeks import (
    QUEUE_GRACE,
    RUN_GRACE,
    cohort_week_start,
    outside_window,
    retry_deadline,
    within_start_grace,
)
from markets.sources import MarketSource

logger = logging.getLogger(__name__)

# A message whose task kills its worker every time would be delivered again forever (the
# broker requeues a lost worker's task): after this many losses in a row the decision is
# sent for retry instead, and the hourly retry run asks again with a new task.
WORKER_LOSSES_MAX = 3
# Advisory lock keys of the weekly run (one per week): an arbitrary base, far from any other.
WEEK_LOCK_KEY = 0x46A_0000_0000


class WorkerLostRepeatedly(Exception):
    """The decision's task lost its worker WORKER_LOSSES_MAX times in a row."""


def decision_run(
    *,
    agent_id: int,
    run_id: int,
    now: datetime | None = None,
    holder: str = "",
    redelivered: bool = False,
    raise_unclaimed: bool = False,
) -> DecisionOutcome:
    """Run the agent's decision for the run's week: claim, prompt, call, parse, execute.
    `holder` names the claim's holder (the Celery task id): the same task `redelivered` by
    the broker after its worker was lost takes the claim over at once (see decision_claim_for).

    Never raises: an unexpected failure is recorded on the decision (error and traceback)
    and on the attempt it happened in, and the decision ends RETRYABLE — or DONE when some
    of its orders had already executed — so the caller goes on to the next agent. Except,
    with `raise_unclaimed`, a database error before the decision was claimed: nothing of
    the agent's happened yet, so it is no failure of the agent's, and the caller (the
    decision task) tries again in seconds rather than leave it to the hourly retry.

    Safe to deliver twice: a repeat finds the row claimed or final and returns. Malformed
    output is retried up to DECISION_PARSE_RETRIES times with the error sent back; still
    invalid → HOLD with the failure recorded. An API failure leaves the row RETRYABLE, and so
    does a BET/SELL in which no trade executed (002).
    """
    progress = Progress(run_id=run_id)
    try:
        return _decision_run(
            agent_id=agent_id,
            run_id=run_id,
            now=now,
            holder=holder,
            redelivered=redelivered,
            progress=progress,
        )
    except DatabaseError as exc:
        if raise_unclaimed and progress.decision is None:
            raise
        return decision_fail(agent_id=agent_id, progress=progress, exc=exc)
    except Exception as exc:  # one agent's failure never stops another's
        return decision_fail(agent_id=agent_id, progress=progress, exc=exc)


def _decision_run(
    *,
    agent_id: int,
    run_id: int,
    now: datetime | None,
    holder: str,
    redelivered: bool,
    progress: Progress,
) -> DecisionOutcome:
    """Claim the agent's decision and take it as far as it goes: resumed, skipped, asked or
    left awaiting. `progress` says how far it got, for `decision_fail` to record a failure."""
    now = now or clock.now()
    agent = Agent.objects.select_related("model", "cohort").get(pk=agent_id)
    run = DecisionRun.objects.get(pk=run_id)
    if agent.cohort.status != Cohort.Status.ACTIVE:
        return DecisionOutcome(None, "cohort completed")
    if agent.cohort.week_start > run.week_start:
        return DecisionOutcome(None, "cohort starts after this run's week")
    claim = decision_claim_for(
        agent=agent, week_start=run.week_start, now=now, holder=holder, redelivered=redelivered
    )
    if claim is None:
        return DecisionOutcome(None, "already claimed or final")
    decision, reclaimed = claim
    progress.decision = decision
    if reclaimed:
        resumes = _reclaim_record(
            decision=decision, agent=agent, run=run, reclaimed=reclaimed, holder=holder, now=now
        )
        if resumes:
            return decision_resume(decision=decision, progress=progress)
    elif decision.tries > 1:
        event_record(
            kind=Kind.DECISION_RETRIED,
            message=f"decision {decision.pk} ({agent}) retried: try {decision.tries}",
            cohort_id=agent.cohort_id,
            agent_id=agent.pk,
            decision_id=decision.pk,
            run_id=run.pk,
        )
    if agent_is_bankrupt(agent=agent):
        return _bankrupt_skip(decision=decision, run=run)
    return _round_open(decision=decision, agent=agent, run=run, now=now, progress=progress)


def _reclaim_record(
    *,
    decision: Decision,
    agent: Agent,
    run: DecisionRun,
    reclaimed: str,
    holder: str,
    now: datetime,
) -> bool:
    """Record whose claim the run took over; return whether the decision resumes its stored
    answer (else it asks again). Raise WorkerLostRepeatedly when its task has lost its
    worker WORKER_LOSSES_MAX times: the decision is then sent for retry."""
    resumes = decision.parsed_try is not None and decision.parsed is not None
    whose = (
        f"its own task delivered again after its worker was lost (task {holder})"
        if reclaimed == REDELIVERED
        else "a dead claim"
    )
    event_record(
        kind=Kind.DECISION_RECLAIMED,
        level=Level.WARNING,
        message=(
            f"decision {decision.pk} ({agent}) reclaimed by {whose}: "
            + ("resuming its stored answer" if resumes else "asking again")
        ),
        cohort_id=agent.cohort_id,
        agent_id=agent.pk,
        decision_id=decision.pk,
        run_id=run.pk,
        data={"reason": reclaimed, "holder": holder, "try": decision.tries},
    )
    if reclaimed == REDELIVERED and not resumes:
        _interrupted_attempt_record(decision=decision, run_id=run.pk, now=now)
    if reclaimed == REDELIVERED:
        losses = SystemEvent.objects.filter(
            decision=decision,
            kind=Kind.DECISION_RECLAIMED,
            data__holder=holder,
            data__reason=REDELIVERED,
        ).count()
        if losses >= WORKER_LOSSES_MAX:
            raise WorkerLostRepeatedly(
                f"task {holder} lost its worker {losses} times while deciding; "
                "sent for retry with a new task"
            )
    return resumes


def _bankrupt_skip(*, decision: Decision, run: DecisionRun) -> DecisionOutcome:
    """End a bankrupt agent's decision SKIPPED, a HOLD: no prompt is sent."""
    with transaction.atomic():
        under_claim(decision).update(
            status=Decision.Status.SKIPPED,
            action=Decision.Action.HOLD,
            reasoning="",
            error="Agent is bankrupt (under $50 cash, no open positions): no prompt sent.",
            run=run,
            finished_at=clock.now(),
        )
    return DecisionOutcome(decision.pk, Decision.Status.SKIPPED)


def _round_open(
    *, decision: Decision, agent: Agent, run: DecisionRun, now: datetime, progress: Progress
) -> DecisionOutcome:
    """Open the decision's new round: what the agent sees at the run's frozen prices, its
    prompt stored under the live claim; then ask the lineup model, or leave an outside
    agent's decision awaiting its submission."""
    frozen = FrozenMarkets.load(run)
    context = decision_context(agent=agent, run=run, frozen=frozen, as_of=now)
    messages = build_messages(context)
    kind = responder_kind(agent.model)
    with transaction.atomic():
        # A new round (its answer was cleared by the claim): only under the live claim.
        new_round = under_claim(decision).update(
            run=run,
            responder=kind,
            prompt_version=prompt_version(context.methodology),
            system_prompt=messages[0]["content"],
            user_prompt=messages[1]["content"],
            requested_model=agent.model.openrouter_id or agent.model.internal_id,
            parsed=None,
            parsed_try=None,
            action="",
            reasoning="",
            error="",
            traceback="",
            response_model="",
            upstream_provider="",
        )
    if new_round != 1:
        return DecisionOutcome(decision.pk, CLAIM_LOST, notes=["claim taken over"])
    decision.run = run  # what this round records (its events) names this round's run
    if kind == Decision.Responder.OUTSIDE:
        return outside_decision_await(decision=decision, now=now)
    return decision_ask(
        decision=decision, agent=agent, run=run, frozen=frozen, context=context,
        messages=messages, kind=kind, progress=progress,
    )  # fmt: skip


def _interrupted_attempt_record(*, decision: Decision, run_id: int, now: datetime) -> None:
    """Keep the try a lost worker left without an answer on the decision's attempts: its
    model call (if it had got that far) was never answered or its answer never stored."""
    interrupted = decision.tries - 1
    messages = (
        [
            {"role": "system", "content": decision.system_prompt},
            {"role": "user", "content": decision.user_prompt},
        ]
        if decision.system_prompt
        else []
    )
    attempt_record(
        decision=decision,
        run_id=run_id,
        messages=messages,
        reply=None,
        api_error="",
        parse_error="",
        started_at=now,
        responder=responder_kind(decision.agent.model),
        error=f"interrupted: the worker running try {interrupted} was lost before an answer "
        "was stored; the task was delivered again and asks again",
    )


def agent_is_bankrupt(*, agent: Agent) -> bool:
    """Mark and report an agent with under $50 cash and no open positions as bankrupt; it
    stays bankrupt for its cohort."""
    if agent.status == Agent.Status.BANKRUPT:
        return True
    # One conditional UPDATE on the row as it is now: cash read earlier may be stale (a
    # settlement can pay out meanwhile), and a funded agent must never be marked bankrupt.
    holding = Position.objects.filter(agent=OuterRef("pk"), status=Position.Status.OPEN)
    marked = (
        Agent.objects.filter(pk=agent.pk, cash__lt=money.MIN_BET)
        .exclude(Exists(holding))
        .update(status=Agent.Status.BANKRUPT)
    )
    if marked:
        agent.status = Agent.Status.BANKRUPT
    return bool(marked)


@dataclass
class RunReport:
    """What a run did: its id (None when nobody was due) and each agent's outcome."""

    run_id: int | None
    outcomes: list[DecisionOutcome] = field(default_factory=list)

    def summary(self) -> str:
        by_status: dict[str, int] = {}
        for o in self.outcomes:
            by_status[o.status] = by_status.get(o.status, 0) + 1
        parts = ", ".join(f"{n} {s}" for s, n in sorted(by_status.items()))
        if self.run_id is None:
            return "no decision is due: no run"
        return f"run {self.run_id}: {len(self.outcomes)} agents ({parts or 'none'})"


def agents_due(
    *,
    week_start: date,
    cohort_id: int | None = None,
    now: datetime | None = None,
    retries_only: bool = False,
) -> list[int]:
    """Return the agents of active cohorts (started by `week_start`) still owing a decision for
    the week, cohort by cohort, lineup order within a cohort.

    An agent owes one unless its decision of *this* week is DONE or SKIPPED (or an outside
    agent's is AWAITING its submission, owed to the API); decisions of
    earlier weeks do not count. A RETRYABLE decision, or a RUNNING one whose claim went
    stale, is owed; a decision under a live claim is another run's and is left out. With
    `retries_only`, only those (RETRYABLE or stale RUNNING) are returned: agents not reached
    yet belong to the run still working through them."""
    now = now or clock.now()
    this_week = Decision.objects.filter(agent=OuterRef("pk"), week_start=week_start)
    # An outside agent's decision awaiting its submission owes the API, not a run.
    decided = this_week.filter(status__in=(*Decision.DECIDED, Decision.Status.AWAITING))
    live = this_week.filter(status=Decision.Status.RUNNING, claimed_at__gte=now - CLAIM_TTL)
    agents = (
        Agent.objects.filter(
            cohort__status=Cohort.Status.ACTIVE, cohort__week_start__lte=week_start
        )
        .exclude(Exists(decided))
        .exclude(Exists(live))
    )
    if retries_only:
        agents = agents.filter(
            Exists(
                this_week.filter(status__in=[Decision.Status.RETRYABLE, Decision.Status.RUNNING])
            )
        )
    if cohort_id is not None:
        agents = agents.filter(cohort_id=cohort_id)
    return list(
        agents.order_by("cohort__week_start", "-model__kind", "model__display_order").values_list(
            "pk", flat=True
        )
    )


def _week_lock(week_start: date) -> None:
    """Hold the week's run lock until the transaction ends. PostgreSQL: a transaction-level
    advisory lock keyed by the week. SQLite: its transactions begin IMMEDIATE (settings), so
    the transaction already holds the database's one write lock."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(%s)", [WEEK_LOCK_KEY + week_start.toordinal()]
            )


def run_open(
    *,
    now: datetime | None = None,
    cohort_id: int | None = None,
    source: MarketSource | None = None,
    retry: bool = False,
) -> tuple[DecisionRun | None, list[int]]:
    """Make sure this week's cohort exists, then freeze a snapshot for the agents that owe
    this week's decision; return the run and those agents in order, or (None, []) when
    nobody owes one.

    Starting the cohort here (idempotently) means a cohort-start task that ran late, after
    the 00:05 run, never leaves the new cohort without its first decision. Only on the
    cohort's first day (COHORT_START_GRACE): a week whose cohort was missed for longer is not
    started mid-week behind the operators' backs (`manage.py start_cohort` does that)."""
    now = now or clock.now()
    week_start = cohort_week_start(now)
    if within_start_grace(week_start, now):
        cohort_start(week_start=week_start, now=now)
    else:
        cohort_missed_record(week_start=week_start)  # said once, on the status page too
    decisions_expire(before=week_start, now=now)
    retries_close(week_start=week_start, now=now)  # before anyone is found due
    # No run may split a week between two snapshots: while a run of the week is still
    # working through its agents, a retry run (hourly) serves only decisions sent for retry
    # or left by a dead worker, and so does a second delivery of the scheduled run (the beat
    # firing twice, two beats) once a run of the week was opened here. Past RUN_GRACE an
    # unfinished run's chain is dead, and its unreached agents are served too.
    under_way = DecisionRun.objects.filter(
        week_start=week_start, finished_at__isnull=True, started_at__gte=now - RUN_GRACE
    )
    opened = under_way.filter(
        Exists(SystemEvent.objects.filter(run_id=OuterRef("pk"), kind=Kind.RUN_STARTED))
    )
    if retry:
        stalled = (
            opened.filter(queued_at__isnull=True, started_at__lt=now - QUEUE_GRACE)
            .order_by("-started_at")
            .first()
        )
        if stalled is not None:
            return _run_queue_again(stalled, cohort_id=cohort_id, now=now)
        # A run frozen but never opened past QUEUE_GRACE lost its process: nobody decided on
        # its snapshot, so it holds nobody back.
        under_way = opened.filter(queued_at__isnull=False) | under_way.filter(
            started_at__gte=now - QUEUE_GRACE
        )
    retries_only = (under_way if retry else opened).exists()
    if not agents_due(
        week_start=week_start, cohort_id=cohort_id, now=now, retries_only=retries_only
    ):
        return None, []
    run = run_prepare(now=now, source=source)  # network: no lock or transaction is held
    with transaction.atomic():
        # Two deliveries may have frozen a run at the same time: under the week's lock,
        # whichever records RUN_STARTED first is the week's run, and the other serves only
        # what a retry run would (usually nobody: it is then discarded).
        _week_lock(week_start)
        if not retries_only and opened.exclude(pk=run.pk).exists():
            retries_only = True
            if not agents_due(
                week_start=week_start, cohort_id=cohort_id, now=now, retries_only=True
            ):
                run.delete()
                return None, []
        event_record(
            kind=Kind.RUN_STARTED,
            message=f"{run} started: {run.universe_size} markets frozen; {run.sync_summary}",
            run_id=run.pk,
            data={"universe_size": run.universe_size},
        )
    return run, agents_due(
        week_start=run.week_start, cohort_id=cohort_id, now=now, retries_only=retries_only
    )


def _run_queue_again(
    run: DecisionRun, *, cohort_id: int | None, now: datetime
) -> tuple[DecisionRun, list[int]]:
    """The agents a run opened but never finished queueing still owes, to be queued again on
    that run, its snapshot: the process sending its tasks died (a killed worker), and a new
    run would split the week between two snapshots. A cohort whose chain did go out may be
    sent a second one; the claims keep each decision to one (a repeat finds it claimed or
    final), and every agent decides on the same snapshot either way."""
    # While another run of the week is still working through its agents, only the retries
    # are this one's: the agents that run has not reached are its, on its snapshot.
    others = DecisionRun.objects.filter(
        week_start=run.week_start,
        finished_at__isnull=True,
        queued_at__isnull=False,
        started_at__gte=now - RUN_GRACE,
    ).exclude(pk=run.pk)
    agents = agents_due(
        week_start=run.week_start, cohort_id=cohort_id, now=now, retries_only=others.exists()
    )
    event_record(
        kind=Kind.RUN_STARTED,
        level=Level.WARNING,
        message=(
            f"{run} queued again: the process sending its tasks stopped before it had sent "
            f"them all; {len(agents)} agents still owe a decision on its snapshot"
        ),
        run_id=run.pk,
        data={"universe_size": run.universe_size, "queued_again": True},
    )
    return run, agents


def run_queued(*, run_id: int, now: datetime | None = None) -> None:
    """Mark the run as having sent every due agent's decision task."""
    DecisionRun.objects.filter(pk=run_id, queued_at__isnull=True).update(
        queued_at=now or clock.now()
    )


def decisions_expire(*, before: date, now: datetime) -> list[int]:
    """Close every decision of a week before `before` that never became final: PENDING,
    RETRYABLE, or RUNNING under a dead claim. Its week is over and a decision belongs to its
    week, so it is not retried any more: it ends SKIPPED (a HOLD), or DONE when orders of its
    stored answer had executed (those trades stand; the rest are not executed a week late).
    Without this a first-week decision left RETRYABLE would keep its cohort from completing.
    Return the ids closed; a repeat closes nothing."""
    stale = Decision.objects.filter(week_start__lt=before).filter(
        Q(status__in=(*Decision.CLAIMABLE, Decision.Status.AWAITING))
        | Q(status=Decision.Status.RUNNING, claimed_at__lt=now - CLAIM_TTL)
    )
    closed = _decisions_close(stale, now=now, why=lambda decision: "its week ended")
    closed += _first_weeks_missed(before=before, now=now)
    return closed


def retries_close(*, week_start: date, now: datetime) -> list[int]:
    """Close the decisions of the week of `week_start` that may not be asked again: RETRYABLE
    ones that have had DECISION_MAX_ROUNDS rounds, and, once the week's retry deadline
    (`retry_deadline`) has passed, every RETRYABLE one and every one RUNNING under a dead
    claim — a retry then would decide on prices days younger than every other agent's, and a
    dead claim's stored answer would execute at prices days old. Each ends as `decisions_expire`
    ends a decision whose week ended. A PENDING decision (its first round) is left alone.
    Return the ids closed; a repeat closes nothing."""
    deadline = retry_deadline(week_start)
    week = Decision.objects.filter(week_start=week_start)
    if now >= deadline:
        due = week.filter(
            Q(status=Decision.Status.RETRYABLE)
            | Q(status=Decision.Status.RUNNING, claimed_at__lt=now - CLAIM_TTL)
        )
    else:  # the round that used the last one closed its decision; unless the cap was lowered
        due = week.filter(status=Decision.Status.RETRYABLE).filter(
            pk__in=week.annotate(rounds=Count("attempts__run", distinct=True))
            .filter(rounds__gte=settings.DECISION_MAX_ROUNDS)
            .values("pk")
        )

    def why(decision: Decision) -> str:
        if now >= deadline:
            return (
                f"not asked again: its week's retry deadline ({deadline:%Y-%m-%d %H:%M} UTC) passed"
            )
        return f"not asked again after {rounds_asked(decision)} rounds (DECISION_MAX_ROUNDS)"

    return _decisions_close(due, now=now, why=why)


def _decisions_close(
    decisions: QuerySet[Decision], *, now: datetime, why: Callable[[Decision], str]
) -> list[int]:
    """Close each of `decisions` that is still as it was read: SKIPPED as a HOLD, or DONE
    when orders of its stored answer had executed (those trades stand, the rest never
    execute), with the reason (`why`, its status, the last error) and a warning event.
    The row is locked as it stands first, so a trade still in flight under its claim commits
    before `executed` is read, or finds the claim gone. Return the ids closed."""
    closed = []
    for decision in decisions.select_related("agent__model", "agent__cohort"):
        with transaction.atomic():
            locked = (
                Decision.objects.select_for_update(of=("self",))
                .filter(pk=decision.pk, status=decision.status, tries=decision.tries)
                .values_list("pk", flat=True)
                .order_by("pk")
                .first()
            )
            if locked is None:
                continue
            executed = round_executed(decision)
            reason = (
                f"{why(decision)} while it was {decision.get_status_display().lower()}"
                + (": the orders executed stand" if executed else ": counted as a HOLD")
                + (f" (last error: {decision.error})" if decision.error else "")
            )
            Decision.objects.filter(pk=decision.pk).update(
                status=Decision.Status.DONE if executed else Decision.Status.SKIPPED,
                action=decision.action if executed else Decision.Action.HOLD,
                error=storable_text(reason),
                finished_at=now,
            )
        closed.append(decision.pk)
        decision_failure_event(decision=decision, message=reason, level=Level.WARNING)
    return closed


def _first_weeks_missed(*, before: date, now: datetime) -> list[int]:
    """Record a SKIPPED first-week decision for every agent of an active cohort whose first
    week ended before `before` without any decision row (a cohort started by hand for a past
    week, a run that never reached the agent): completion needs each first week decided."""
    first_week = Decision.objects.filter(agent=OuterRef("pk"), week_start=F("cohort__week_start"))
    missed = list(
        Agent.objects.filter(cohort__status=Cohort.Status.ACTIVE, cohort__week_start__lt=before)
        .exclude(Exists(first_week))
        .select_related("cohort", "model")
    )
    created = []
    for agent in missed:
        try:
            with transaction.atomic():
                decision = Decision.objects.create(
                    agent=agent,
                    cohort=agent.cohort,
                    week_start=agent.cohort.week_start,
                    status=Decision.Status.SKIPPED,
                    action=Decision.Action.HOLD,
                    error="no decision was made in the cohort's first week: counted as a HOLD",
                    finished_at=now,
                )
        except IntegrityError:  # a run created it meanwhile
            continue
        created.append(decision.pk)
        decision_failure_event(decision=decision, message=decision.error, level=Level.WARNING)
    return created


def run_finish(*, run_id: int) -> None:
    """Mark the run finished and record how its decisions ended. A repeat is a no-op."""
    with transaction.atomic():
        finished = DecisionRun.objects.filter(pk=run_id, finished_at__isnull=True).update(
            finished_at=clock.now()
        )
    if not finished:
        return
    counts = dict(
        Decision.objects.filter(run_id=run_id)
        .values("status")
        .annotate(n=Count("pk"))
        .values_list("status", "n")
        .order_by()
    )
    parts = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    event_record(
        kind=Kind.RUN_FINISHED,
        level=Level.WARNING if counts.get(Decision.Status.RETRYABLE) else Level.INFO,
        message=f"run {run_id} finished: {parts or 'no decisions'}",
        run_id=run_id,
        data={"decisions": counts},
    )


def decisions_run_all(
    *, now: datetime | None = None, cohort_id: int | None = None, source: MarketSource | None = None
) -> RunReport:
    """Prepare one frozen snapshot, then run every due agent's decision, one after another.
    One agent's failure is recorded on its decision and the run goes on."""
    run, agent_ids = run_open(now=now, cohort_id=cohort_id, source=source)
    if run is None:
        return RunReport(None)
    run_queued(run_id=run.pk, now=now)  # this process is its queue
    report = RunReport(run.pk)
    for agent_id in agent_ids:
        _connection_renew()
        try:
            outcome = decision_run(agent_id=agent_id, run_id=run.pk, now=now)
        except Exception as exc:  # decision_run records its own failures; this is the backstop
            logger.exception("decision of agent %s escaped its service", agent_id)
            outcome = DecisionOutcome(None, "failed", notes=[error_text(exc)])
        report.outcomes.append(outcome)
    _connection_renew()
    run_finish(run_id=run.pk)
    return report


def _connection_renew() -> None:
    """Drop a database connection that broke during the previous agent (Django reconnects on
    the next query), so one agent's lost connection does not fail every later agent. Inside
    a caller's transaction nothing is dropped: that transaction is the caller's to end."""
    if not connection.in_atomic_block:
        connection.close_if_unusable_or_obsolete()


def decision_retry(*, decision_id: int, source: MarketSource | None = None) -> DecisionOutcome:
    """Run a RETRYABLE decision again now, on a freshly frozen snapshot for its week; or
    reclaim one left RUNNING by a dead worker (a claim older than CLAIM_TTL), which resumes
    its stored answer if it had one. Raise DecisionNotRetryable for a final decision, one a
    live claim holds, one past its week's retry deadline, or a RETRYABLE one that has had
    DECISION_MAX_ROUNDS rounds."""
    decision = Decision.objects.select_related("agent__model").get(pk=decision_id)
    now = clock.now()
    stale = (
        decision.status == Decision.Status.RUNNING
        and decision.claimed_at is not None
        and decision.claimed_at < now - CLAIM_TTL
    )
    if decision.status != Decision.Status.RETRYABLE and not stale:
        held = " by a live claim" if decision.status == Decision.Status.RUNNING else ""
        raise DecisionNotRetryable(
            f"decision {decision_id} is {decision.status}{held}, not retryable"
        )
    if decision.agent.model.is_outside and now >= outside_window(decision.week_start)[1]:
        raise DecisionNotRetryable(
            f"decision {decision_id} is an outside agent's and its decision window has closed"
        )
    deadline = retry_deadline(decision.week_start)
    if now >= deadline:
        raise DecisionNotRetryable(
            f"decision {decision_id}: its week's retry deadline ({deadline:%Y-%m-%d %H:%M} UTC) "
            "has passed"
        )
    rounds = rounds_asked(decision)
    if decision.status == Decision.Status.RETRYABLE and rounds >= settings.DECISION_MAX_ROUNDS:
        raise DecisionNotRetryable(
            f"decision {decision_id} has had {rounds} rounds (DECISION_MAX_ROUNDS)"
        )
    run = run_prepare(source=source, week_start=decision.week_start)
    outcome = decision_run(agent_id=decision.agent_id, run_id=run.pk)
    run_finish(run_id=run.pk)
    return outcome
