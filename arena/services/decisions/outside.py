"""An outside team's answer: its weekly submission through the API, and the window's close.

An outside agent decides on exactly the lineup's terms. The run that freezes the week's
snapshot stores its prompt — the same rendering a lineup model is sent — and leaves its
decision AWAITING (`outside_decision_await`), going on to the next agent at once. Its
submission, in the decision window, goes through the same parser with the same retries (the
validation error goes back; a resubmission), and a valid one through the same lifecycle: it
is stored before any order executes, and executed and finished as a model's answer is.
Every submission is stored as a DecisionAttempt with its raw body. A window closed with
nothing submitted is a HOLD marked "no submission" (`outside_decisions_close`).

The team's tokens, the rate limit and the recording of refusals are in
arena/services/outside.py; this module only takes what an authenticated agent submits.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F

from agents.exceptions import DecisionParseError
from agents.parsing import parse_decision
from agents.prompts import retry_section
from agents.types import ParsedDecision
from arena import clock
from arena.evidence import storable_json
from arena.exceptions import OutsideRefused
from arena.models import Agent, Cohort, Decision, DecisionAttempt, DecisionRun, PanelForecast
from arena.services.decisions.lifecycle import (
    CLAIM_LOST,
    DecisionOutcome,
    Progress,
    Reply,
    answer_hold,
    answer_store,
    attempt_record,
    decision_conclude,
    decision_execute,
    decision_fail,
    decision_failure_event,
    decision_resume,
    execution_markets,
    parsed_json,
    under_claim,
)
from arena.services.events import Kind, Level, event_record
from arena.services.forecasts import (
    PanelQuestion,
    forecasts_keep_live,
    forecasts_write,
    questions_asked,
)
from arena.services.frozen import FrozenMarkets
from arena.weeks import cohort_week_start, outside_window

# The claim holder of a decision while a submission is being handled.
SUBMISSION_HOLDER = "outside-api"
NO_SUBMISSION = "no submission"


def outside_messages(
    *, decision: Decision, attempts: list[DecisionAttempt]
) -> list[dict[str, str]]:
    """The prompt as it stands for the decision's current round: the stored system and user
    prompts and, after an invalid submission, the retry section a lineup model is sent (the
    validation error and the start of the invalid body)."""
    user = decision.user_prompt
    last = attempts[-1] if attempts else None
    if last is not None and last.parse_error:
        retry = retry_section(
            invalid_response=last.response_text,
            error=last.parse_error,
            version=decision.prompt_version,
        )
        user = f"{user}\n\n{retry}"
    return [
        {"role": "system", "content": decision.system_prompt},
        {"role": "user", "content": user},
    ]


def questions_at_close(decision: Decision) -> tuple[PanelQuestion, ...]:
    """The panel's questions of an outside decision held by default (no submission, or none
    valid): each missing, imputed at its round's snapshot price, as a lineup agent's missing
    forecast is, so a team never gains coverage by not answering."""
    if decision.cohort.methodology_version == "v1" or decision.run is None:
        return ()
    return questions_asked(FrozenMarkets.load(decision.run))


def round_attempts(decision: Decision) -> list[DecisionAttempt]:
    """The submissions of the decision's current round (its run), in order."""
    return list(decision.attempts.filter(run_id=decision.run_id).order_by("number"))


@dataclass
class Submission:
    """What became of one submission."""

    decision: Decision
    valid: bool
    error: str = ""
    resubmissions_left: int = 0
    outcome: DecisionOutcome | None = None
    # The answer a submission cut off by its dying web worker had stored was executed, not
    # this body (which was not read as an answer).
    resumed: bool = False


def _refusal(
    status: int, code: str, message: str, *, agent: Agent, decision: Decision | None = None
) -> OutsideRefused:
    return OutsideRefused(
        status, code, message, agent=agent, decision_id=decision.pk if decision else None
    )


def _being_handled(*, agent: Agent, decision: Decision) -> OutsideRefused:
    return _refusal(
        409,
        "not_open",
        "Another submission for this decision is being handled.",
        agent=agent,
        decision=decision,
    )


def _submission_failed(
    *, agent: Agent, decision: Decision, progress: Progress, exc: Exception
) -> Submission:
    """A submission the engine failed on: recorded on the decision as a lineup agent's is."""
    outcome = decision_fail(agent_id=agent.pk, progress=progress, exc=exc)
    decision.refresh_from_db()
    return Submission(decision, valid=False, error=outcome.notes[0], outcome=outcome)


def outside_decision_submit(*, agent: Agent, body: str, now: datetime | None = None) -> Submission:
    """Take the agent's submission for this week: parse it like a model's answer and execute
    it like one. Raise OutsideRefused (409) outside the window, before the week's run has
    opened the decision, for a cohort that completed, and after the week's final decision.

    A malformed body is stored (an attempt with its parse error) and, while the retries
    allow (DECISION_PARSE_RETRIES, like a model's), the decision awaits a resubmission;
    still malformed → HOLD, `parse_failed`. Two submissions racing for one decision: one
    claims it (a conditional UPDATE), the other is refused."""
    now = now or clock.now()
    week_start = cohort_week_start(now)
    opens, closes = outside_window(week_start)
    decision = Decision.objects.filter(agent=agent, week_start=week_start).first()
    if agent.cohort.status != Cohort.Status.ACTIVE:
        raise _refusal(
            409,
            "cohort_completed",
            f"Cohort {agent.cohort.number} has completed: it takes no more decisions.",
            agent=agent,
            decision=decision,
        )
    if not opens <= now < closes:
        raise _refusal(
            409,
            "outside_window",
            f"Submissions for the week of {week_start:%Y-%m-%d} are taken from "
            f"{opens:%Y-%m-%d %H:%M} to {closes:%H:%M} UTC; it is {now:%Y-%m-%d %H:%M:%S} UTC.",
            agent=agent,
            decision=decision,
        )
    if decision is not None and decision.status in Decision.DECIDED:
        raise _refusal(
            409,
            "already_decided",
            f"The decision for the week of {week_start:%Y-%m-%d} is final "
            f"({decision.action or decision.status}): a second one is refused.",
            agent=agent,
            decision=decision,
        )
    if decision is not None and _left_by_a_dead_submission(decision, now):
        return _submission_after_a_dead_one(decision=decision, agent=agent, body=body, now=now)
    if decision is None or decision.status != Decision.Status.AWAITING:
        raise _refusal(
            409,
            "not_open",
            "No decision awaits a submission now: the week's run has not reached this agent "
            "yet, a submission is being handled, or a retry run will open a new prompt "
            "(read the prompt endpoint until it shows status awaiting).",
            agent=agent,
            decision=decision,
        )
    with transaction.atomic():
        claimed = Decision.objects.filter(pk=decision.pk, status=Decision.Status.AWAITING).update(
            status=Decision.Status.RUNNING, claimed_at=now, claimed_by=SUBMISSION_HOLDER
        )
    if claimed != 1:
        raise _being_handled(agent=agent, decision=decision)
    decision.refresh_from_db()
    progress = Progress(decision=decision, run_id=decision.run_id)
    try:
        return _submission_take(
            decision=decision, agent=agent, body=body, now=now, progress=progress
        )
    except Exception as exc:  # recorded on the decision like a lineup agent's failure
        return _submission_failed(agent=agent, decision=decision, progress=progress, exc=exc)


def _left_by_a_dead_submission(decision: Decision, now: datetime) -> bool:
    """Whether the decision is held by a submission claim older than a submission normally
    takes (OUTSIDE_SUBMISSION_CLAIM_SECONDS): the web worker handling it died (or is stuck on
    a slow live price read, and loses its claim), and the team would otherwise be locked out
    until the window closed."""
    dead_before = now - timedelta(seconds=settings.OUTSIDE_SUBMISSION_CLAIM_SECONDS)
    return (
        decision.status == Decision.Status.RUNNING
        and decision.claimed_by == SUBMISSION_HOLDER
        and decision.claimed_at is not None
        and decision.claimed_at <= dead_before
    )


def _submission_after_a_dead_one(
    *, decision: Decision, agent: Agent, body: str, now: datetime
) -> Submission:
    """Take over the claim a dead submission left (a new claim, so that the dead one, were it
    only slow, could write nothing more). If it had stored its answer, that answer resumes as
    a reclaim's does: the orders without a trade execute, none twice, and this body is not
    read. If not, this body is taken as the round's submission; either way no resubmission
    is used up."""
    with transaction.atomic():
        taken = Decision.objects.filter(
            pk=decision.pk,
            status=Decision.Status.RUNNING,
            claimed_by=SUBMISSION_HOLDER,
            tries=decision.tries,
        ).update(claimed_at=now, tries=F("tries") + 1)
    if taken != 1:
        raise _being_handled(agent=agent, decision=decision)
    decision.refresh_from_db()
    resumes = decision.parsed is not None and decision.parsed_try is not None
    event_record(
        kind=Kind.DECISION_RECLAIMED,
        level=Level.WARNING,
        message=(
            f"decision {decision.pk} ({agent}) reclaimed by a resubmission from a submission "
            "cut off by its dying web worker: "
            + ("resuming its stored answer" if resumes else "taking the new body")
        ),
        cohort_id=agent.cohort_id,
        agent_id=agent.pk,
        decision_id=decision.pk,
        run_id=decision.run_id,
        data={"reason": "dead_submission", "holder": SUBMISSION_HOLDER, "try": decision.tries},
    )
    progress = Progress(decision=decision, run_id=decision.run_id)
    try:
        if not resumes:
            return _submission_take(
                decision=decision, agent=agent, body=body, now=now, progress=progress
            )
        outcome = decision_resume(decision=decision, progress=progress)
    except Exception as exc:  # recorded on the decision like a lineup agent's failure
        return _submission_failed(agent=agent, decision=decision, progress=progress, exc=exc)
    decision.refresh_from_db()
    return Submission(decision, valid=True, outcome=outcome, resumed=True)


def _submission_take(
    *, decision: Decision, agent: Agent, body: str, now: datetime, progress: Progress
) -> Submission:
    """Parse the claimed decision's submission, then store and execute it as a model's
    answer is (lifecycle.answer_store, decision_execute), or keep it as an invalid try."""
    run = DecisionRun.objects.get(pk=decision.run_id or 0)
    frozen = FrozenMarkets.load(run)
    position_ids = {
        str(pk) for pk in agent.positions.filter(status="open").values_list("pk", flat=True)
    }
    earlier = round_attempts(decision)
    messages = outside_messages(decision=decision, attempts=earlier)
    progress.messages, progress.attempt_started = messages, now
    progress.responder = Decision.Responder.OUTSIDE
    reply = Reply(
        text=body,
        raw=body,
        responder=Decision.Responder.OUTSIDE,
        requested_model=agent.model.internal_id,
        response_model=agent.model.internal_id,
    )
    progress.reply = reply
    methodology = agent.cohort.methodology_version
    panel = frozen.panel if methodology != "v1" else ()
    try:
        parsed = parse_decision(
            body,
            markets=frozen.views,
            position_ids=position_ids,
            probabilities=methodology != "v1",
            panel=[view.market_id for view in panel],
        )
    except DecisionParseError as exc:
        progress.attempt_id = attempt_record(
            decision=decision, run_id=run.pk, messages=messages, reply=reply,
            api_error="", parse_error=exc.message, started_at=now,
        ).pk  # fmt: skip
        return _submission_invalid(
            decision=decision, reply=reply, error=exc.message, earlier=len(earlier)
        )
    stored = answer_store(
        decision=decision, progress=progress, run_id=run.pk, messages=messages,
        reply=reply, parsed=parsed, started_at=now,
    )  # fmt: skip
    if stored:
        # Read live: the orders' prices, and the panel's, its forecasts' b, kept before any
        # order executes (a resumed answer keeps them then: `decision_resume`).
        live = execution_markets(
            decision=decision, parsed=parsed, frozen=frozen, also=[v.market_id for v in panel]
        )
        forecasts_keep_live(
            decision=decision, claimed=under_claim(decision), parsed=parsed, live=live
        )
        outcome = decision_execute(decision=decision, parsed=parsed, frozen=live)
        outcome = decision_conclude(decision=decision, parsed=parsed, outcome=outcome, reply=reply)
    else:  # the claim was taken over meanwhile: none of its orders is executed here
        outcome = DecisionOutcome(decision.pk, CLAIM_LOST, notes=["claim taken over"])
    decision.refresh_from_db()
    return Submission(decision, valid=True, outcome=outcome)


def _submission_invalid(
    *, decision: Decision, reply: Reply, error: str, earlier: int
) -> Submission:
    """After a malformed submission (stored, with its parse error) that followed `earlier`
    ones this round: await a resubmission while the retries allow, else the default HOLD."""
    left = settings.DECISION_PARSE_RETRIES - earlier
    if left > 0:
        with transaction.atomic():
            reopened = under_claim(decision).update(status=Decision.Status.AWAITING)
        decision.refresh_from_db()
        if reopened != 1:  # the claim was taken over: no resubmission is awaited here
            return Submission(decision, valid=False, error=error)
        return Submission(decision, valid=False, error=error, resubmissions_left=left)
    # Final either way: held here, or (the claim taken over) by whoever holds it now.
    answer_hold(
        decision=decision, reply=reply, parse_error=error, tries=earlier + 1, submitted=True,
        panel=questions_at_close(decision), run_id=decision.run_id,
    )  # fmt: skip
    decision.refresh_from_db()
    return Submission(decision, valid=False, error=error)


def outside_decisions_close(*, now: datetime | None = None) -> list[int]:
    """Close every outside decision still awaiting a submission once its window has closed:
    a HOLD marked "no submission" — or, when a malformed submission was never resubmitted,
    a HOLD marked as a parse failure, as a model's would be. Return the ids closed; a repeat
    closes nothing. Run every five minutes (beat: close-outside-decisions)."""
    now = now or clock.now()
    closed = []
    awaiting = Decision.objects.filter(status=Decision.Status.AWAITING).select_related(
        "agent__model", "cohort", "run"
    )
    for decision in awaiting:
        closes = outside_window(decision.week_start)[1]
        if now < closes:
            continue
        attempts = round_attempts(decision)
        last_error = attempts[-1].parse_error if attempts else ""
        # An earlier round's submission (a BET that executed nothing, reopened by a retry)
        # was a submission: the week is not "no submission".
        submitted = decision.attempts.exists()
        if last_error:
            reasoning = f"[system default] HOLD: the submission could not be parsed ({last_error})"
            error = f"invalid, not resubmitted before the window closed: {last_error}"
        elif submitted:
            reasoning = "[system default] HOLD: no order of the week's submission executed"
            error = (
                f"the window closed at {closes:%Y-%m-%d %H:%M} UTC with no order of the "
                "week's submission executed"
            )
        else:
            reasoning = "[system default] HOLD: no submission in the decision window"
            error = f"{NO_SUBMISSION}: the window closed at {closes:%Y-%m-%d %H:%M} UTC"
        hold = ParsedDecision(action="HOLD", reasoning=reasoning)
        with transaction.atomic():
            finished = Decision.objects.filter(
                pk=decision.pk, status=Decision.Status.AWAITING
            ).update(
                status=Decision.Status.DONE,
                action=Decision.Action.HOLD,
                parsed=storable_json(parsed_json(hold)),
                reasoning=reasoning,
                error=error,
                parse_failed=bool(last_error),
                no_submission=not submitted,
                finished_at=now,
            )
            # A submission whose orders all failed stated its forecasts: those stay.
            if (
                finished == 1
                and decision.run_id is not None
                and not PanelForecast.objects.filter(decision=decision).exists()
            ):
                forecasts_write(
                    decision=decision,
                    run_id=decision.run_id,
                    questions=questions_at_close(decision),
                    stated=None,
                    now=now,
                )
        if finished != 1:  # a submission claimed it meanwhile
            continue
        closed.append(decision.pk)
        decision_failure_event(decision=decision, message=error, level=Level.WARNING)
    return closed


def outside_decision_await(*, decision: Decision, now: datetime) -> DecisionOutcome:
    """Leave an outside agent's decision, its prompt stored, awaiting its submission.

    An outside agent answers through the API (`outside_decision_submit`), not here: the run
    goes on to the next agent at once, so no lineup agent ever waits on one. The submission
    goes through the same parser and execution; a window closed with nothing submitted is a
    HOLD "no submission" (`outside_decisions_close`)."""
    with transaction.atomic():
        awaiting = under_claim(decision).update(status=Decision.Status.AWAITING)
    if awaiting != 1:
        return DecisionOutcome(decision.pk, CLAIM_LOST, notes=["claim taken over"])
    if now >= outside_window(decision.week_start)[1]:
        # Reopened after its window (a retry of a BET that executed nothing): nobody can
        # answer it any more, so it is closed at once, as the window's close would.
        outside_decisions_close(now=now)
        decision.refresh_from_db(fields=["status"])
        return DecisionOutcome(decision.pk, decision.status)
    return DecisionOutcome(decision.pk, Decision.Status.AWAITING)
