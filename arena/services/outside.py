"""Outside agents (issue 13): tokens, the weekly submission through the API, the window's close.

An outside agent decides on exactly the lineup's terms. The run that freezes the week's
snapshot stores its prompt — the same rendering a lineup model is sent — and leaves its
decision AWAITING (`decisions._outside_await`), going on to the next agent at once. Its
submission, in the decision window, goes through the same parser with the same one retry (the
validation error goes back; one resubmission), and a valid one through the same execution.
Every submission is stored as a DecisionAttempt with its raw body. A window closed with
nothing submitted is a HOLD marked "no submission" (`outside_decisions_close`).

Tokens are `fa_<prefix>_<secret>`; only their SHA-256 is stored. Every refusal (a bad token,
the rate limit, a body too large, a cohort the agent is not in, a submission outside the
window or after the final one) raises OutsideRefused and is recorded as an
`outside_refused` system event naming the token by its prefix, never the token.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import caches
from django.db import IntegrityError, transaction
from django.utils import timezone

from agents.exceptions import DecisionParseError
from agents.models import BenchmarkModel
from agents.parsing import parse_decision
from agents.prompts import retry_section
from agents.types import ParsedDecision
from arena import clock
from arena.evidence import storable_json, storable_text
from arena.exceptions import OutsideRefused
from arena.models import (
    Agent,
    Cohort,
    Decision,
    DecisionAttempt,
    DecisionRun,
    OutsideAgentToken,
    SystemEvent,
)
from arena.services import decisions as engine
from arena.services.events import Kind, Level, event_record
from arena.services.frozen import FrozenMarkets
from arena.weeks import cohort_week_start, outside_window

logger = logging.getLogger(__name__)

TOKEN_PATTERN = re.compile(r"fa_([0-9a-f]{8})_[A-Za-z0-9_-]{40,64}")
# The claim holder of a decision while a submission is being handled.
SUBMISSION_HOLDER = "outside-api"
NO_SUBMISSION = "no submission"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


# --------------------------------------------------------------------------------- tokens


def outside_token_issue(
    *,
    model: BenchmarkModel,
    actor_id: int | None,
    expires_at: datetime | None = None,
    now: datetime | None = None,
) -> tuple[OutsideAgentToken, str]:
    """Issue an API token for the outside agent `model`; return (row, token).

    The token itself is returned once, here, and never stored: the caller shows it once.
    It expires at `expires_at` (default OUTSIDE_TOKEN_DAYS from now). Raise ValueError for
    a lineup model."""
    if not model.is_outside:
        raise ValueError(f"{model} is not an outside agent: only outside agents get tokens")
    now = now or clock.now()
    expires_at = expires_at or now + timedelta(days=settings.OUTSIDE_TOKEN_DAYS)
    for _ in range(5):  # a prefix collision (1 in 4 billion a pair) draws again
        prefix = secrets.token_hex(4)
        token = f"fa_{prefix}_{secrets.token_urlsafe(32)}"
        try:
            with transaction.atomic():
                row = OutsideAgentToken.objects.create(
                    model=model,
                    prefix=prefix,
                    digest=_digest(token),
                    created_at=now,
                    created_by_id=actor_id,
                    expires_at=expires_at,
                )
        except IntegrityError:
            continue
        return row, token
    raise RuntimeError("could not draw an unused token prefix")


def outside_token_revoke(*, token_id: int, now: datetime | None = None) -> bool:
    """Revoke the token; return False when it was revoked already (a repeat is a no-op)."""
    with transaction.atomic():
        revoked = OutsideAgentToken.objects.filter(pk=token_id, revoked_at__isnull=True).update(
            revoked_at=now or clock.now()
        )
    return revoked == 1


def outside_admission_set(*, model_id: int, admitted: bool) -> bool:
    """Admit the outside agent to the main leaderboard (or withdraw it); return whether the
    row changed. Lineup models are never touched."""
    with transaction.atomic():
        changed = (
            BenchmarkModel.objects.filter(pk=model_id, kind=BenchmarkModel.Kind.OUTSIDE)
            .exclude(admitted_to_main_board=admitted)
            # updated_at (wall time, as auto_now keeps it) moves the data watermark: cached
            # leaderboards are recomputed.
            .update(admitted_to_main_board=admitted, updated_at=timezone.now())
        )
    return changed == 1


def outside_token_authenticate(*, token: str, now: datetime | None = None) -> OutsideAgentToken:
    """Return the live token row for `token`, or raise OutsideRefused (401): unknown, not a
    token at all, revoked or expired. The comparison is on digests, in constant time."""
    now = now or clock.now()
    match = TOKEN_PATTERN.fullmatch(token)
    row = (
        OutsideAgentToken.objects.select_related("model").filter(prefix=match.group(1)).first()
        if match
        else None
    )
    if row is None or not hmac.compare_digest(row.digest, _digest(token)):
        raise OutsideRefused(401, "invalid_token", "The API token is not valid.")
    if row.revoked_at is not None:
        raise _with(OutsideRefused(401, "token_revoked", "The API token was revoked."), row)
    if row.expires_at <= now:
        raise _with(OutsideRefused(401, "token_expired", "The API token has expired."), row)
    if row.last_used_at is None or row.last_used_at < now - timedelta(minutes=1):
        OutsideAgentToken.objects.filter(pk=row.pk).update(last_used_at=now)
    return row


def _with(refusal: OutsideRefused, token: OutsideAgentToken) -> OutsideRefused:
    refusal.token = token  # type: ignore[attr-defined]
    return refusal


def outside_rate_count(*, token: OutsideAgentToken) -> None:
    """Count one request of the token in its fixed window (OUTSIDE_API_RATE_LIMIT requests per
    OUTSIDE_API_RATE_WINDOW_SECONDS); raise OutsideRefused (429) over the limit. Counted in
    the `api_rate` cache (Redis when configured: every process counts against one limit);
    the key names the token by its prefix, never the token."""
    window: int = settings.OUTSIDE_API_RATE_WINDOW_SECONDS
    now = time.time()
    number = int(now // window)
    key = f"outside-rate:{token.prefix}:{number}"
    counts = caches["api_rate"]
    try:
        counts.add(key, 0, timeout=window + 1)
        try:
            count = counts.incr(key)
        except ValueError:  # expired between add and incr
            counts.set(key, 1, timeout=window + 1)
            count = 1
    except Exception as exc:  # the cache is down: serve rather than fail
        logger.warning("outside rate limit not counted: the api_rate cache failed: %s", exc)
        return
    if count > settings.OUTSIDE_API_RATE_LIMIT:
        wait = max(1, int((number + 1) * window - now + 0.999))
        refusal = OutsideRefused(
            429,
            "rate_limited",
            f"Too many requests with this token: at most {settings.OUTSIDE_API_RATE_LIMIT} "
            f"per {window} s; try again in {wait} seconds.",
        )
        refusal.retry_after = wait  # type: ignore[attr-defined]
        # Only the first request over the limit in a window is recorded: a client hammering
        # the API must not fill the operations record.
        refusal.record = count == settings.OUTSIDE_API_RATE_LIMIT + 1  # type: ignore[attr-defined]
        raise _with(refusal, token)


# A refused submission's body is kept with the refusal, up to this many characters (the
# whole body's size and digest too): what was sent is on record, as for a model's answer.
REFUSED_BODY_KEPT = 4096


def outside_refusal_record(
    *,
    refusal: OutsideRefused,
    method: str,
    path: str,
    token: OutsideAgentToken | None,
    body: bytes | None = None,
    client: str = "",
) -> None:
    """Record a refused request: what was refused and why, the token by its prefix only, and
    a refused submission's body (clipped, with its size and SHA-256). A client's refused
    tokens (401) are recorded once per rate window, so that they cannot flood the record."""
    if not getattr(refusal, "record", True):
        return
    if refusal.status == 401 and (
        SystemEvent.objects.filter(
            kind=Kind.OUTSIDE_REFUSED,
            data__status=401,
            data__client=client,
            created_at__gte=clock.now()
            - timedelta(seconds=settings.OUTSIDE_API_RATE_WINDOW_SECONDS),
        ).exists()
    ):
        return
    agent: Agent | None = getattr(refusal, "agent", None)
    sent = {}
    if body is not None:
        sent = {
            "body": storable_text(body.decode("utf-8", errors="backslashreplace"))[
                :REFUSED_BODY_KEPT
            ],
            "body_bytes": len(body),
            "body_sha256": hashlib.sha256(body).hexdigest(),
        }
    event_record(
        kind=Kind.OUTSIDE_REFUSED,
        level=Level.WARNING,
        message=f"{method} {path} refused ({refusal.status} {refusal.code}): {refusal.message}",
        agent_id=agent.pk if agent else None,
        cohort_id=agent.cohort_id if agent else None,
        decision_id=getattr(refusal, "decision_id", None),
        data={
            "status": refusal.status,
            "code": refusal.code,
            "method": method,
            "path": path[:200],
            "token_prefix": token.prefix if token else None,
            "model": token.model.internal_id if token else None,
            "client": client,
            **sent,
        },
    )


# ------------------------------------------------------------------------------- agents


def outside_agent_in_cohort(*, token: OutsideAgentToken, cohort_number: int) -> Agent:
    """Return the token's agent in the cohort, or raise OutsideRefused (403): a token acts
    for its own agent only, and only in cohorts it was entered in."""
    agent = (
        Agent.objects.select_related("cohort", "model")
        .filter(model_id=token.model_id, cohort__number=cohort_number)
        .first()
    )
    if agent is None:
        raise _with(
            OutsideRefused(
                403,
                "not_in_cohort",
                f"{token.model.display_name} has no agent in cohort {cohort_number}.",
            ),
            token,
        )
    return agent


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
    outcome: engine.DecisionOutcome | None = None


def _refusal(
    status: int, code: str, message: str, *, agent: Agent, decision: Decision | None = None
) -> OutsideRefused:
    refusal = OutsideRefused(status, code, message)
    refusal.agent = agent  # type: ignore[attr-defined]
    refusal.decision_id = decision.pk if decision else None  # type: ignore[attr-defined]
    return refusal


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
        raise _refusal(
            409,
            "not_open",
            "Another submission for this decision is being handled.",
            agent=agent,
            decision=decision,
        )
    decision.refresh_from_db()
    progress = engine._Progress(decision=decision, run_id=decision.run_id)
    try:
        return _submission_take(
            decision=decision, agent=agent, body=body, now=now, progress=progress
        )
    except Exception as exc:  # recorded on the decision like a lineup agent's failure
        outcome = engine._decision_fail(agent_id=agent.pk, progress=progress, exc=exc)
        decision.refresh_from_db()
        return Submission(decision, valid=False, error=outcome.notes[0], outcome=outcome)


def _submission_take(
    *, decision: Decision, agent: Agent, body: str, now: datetime, progress: engine._Progress
) -> Submission:
    run = DecisionRun.objects.get(pk=decision.run_id or 0)
    frozen = FrozenMarkets.load(run)
    position_ids = {
        str(pk) for pk in agent.positions.filter(status="open").values_list("pk", flat=True)
    }
    earlier = round_attempts(decision)
    messages = outside_messages(decision=decision, attempts=earlier)
    progress.messages, progress.attempt_started = messages, now
    reply = engine.Reply(
        text=body,
        raw=body,
        responder=Decision.Responder.OUTSIDE,
        requested_model=agent.model.internal_id,
        response_model=agent.model.internal_id,
    )
    progress.reply = reply
    try:
        parsed = parse_decision(body, markets=frozen.views, position_ids=position_ids)
    except DecisionParseError as exc:
        error = exc.message
        progress.attempt_id = engine._attempt_record(
            decision=decision, run_id=run.pk, messages=messages, reply=reply,
            api_error="", parse_error=error, started_at=now,
        ).pk  # fmt: skip
        left = settings.DECISION_PARSE_RETRIES - len(earlier)
        if left > 0:
            with transaction.atomic():
                reopened = engine._under_claim(decision).update(status=Decision.Status.AWAITING)
            decision.refresh_from_db()
            if reopened != 1:  # the claim was taken over: no resubmission is awaited here
                return Submission(decision, valid=False, error=error)
            return Submission(decision, valid=False, error=error, resubmissions_left=left)
        tries = len(earlier) + 1
        engine._decision_finish(
            decision=decision,
            status=Decision.Status.DONE,
            error=f"invalid after {tries} submissions: {error}",
            reply=reply,
            parsed=ParsedDecision(
                action="HOLD",
                reasoning=f"[system default] HOLD: the submission could not be parsed ({error})",
            ),
            parse_failed=True,
        )
        engine._failure_event(
            decision=decision,
            message=f"invalid submission after {tries} attempts, default HOLD: {error}",
            level=Level.WARNING,
        )
        decision.refresh_from_db()
        return Submission(decision, valid=False, error=error)
    with transaction.atomic():
        # Stored before any order executes, as a model's answer is (decisions.py).
        progress.attempt_id = engine._attempt_record(
            decision=decision, run_id=run.pk, messages=messages, reply=reply,
            api_error="", parse_error="", started_at=now, parsed=parsed,
        ).pk  # fmt: skip
        engine._under_claim(decision).update(
            parsed=storable_json(engine.parsed_json(parsed)),
            parsed_try=decision.tries,
            action=parsed.action,
            reasoning=storable_text(parsed.reasoning),
        )
    decision.parsed_try = decision.tries
    outcome = engine.decision_execute(decision=decision, parsed=parsed, frozen=frozen)
    outcome = engine._decision_conclude(
        decision=decision, parsed=parsed, outcome=outcome, reply=reply
    )
    decision.refresh_from_db()
    return Submission(decision, valid=True, outcome=outcome)


# -------------------------------------------------------------------------- the close


def outside_decisions_close(*, now: datetime | None = None) -> list[int]:
    """Close every outside decision still awaiting a submission once its window has closed:
    a HOLD marked "no submission" — or, when a malformed submission was never resubmitted,
    a HOLD marked as a parse failure, as a model's would be. Return the ids closed; a repeat
    closes nothing. Run every five minutes (beat: close-outside-decisions)."""
    now = now or clock.now()
    closed = []
    awaiting = Decision.objects.filter(status=Decision.Status.AWAITING).select_related(
        "agent__model"
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
                parsed=storable_json(engine.parsed_json(hold)),
                reasoning=reasoning,
                error=error,
                parse_failed=bool(last_error),
                no_submission=not submitted,
                finished_at=now,
            )
        if finished != 1:  # a submission claimed it meanwhile
            continue
        closed.append(decision.pk)
        engine._failure_event(decision=decision, message=error, level=Level.WARNING)
    return closed
