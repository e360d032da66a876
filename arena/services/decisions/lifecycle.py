"""A decision's lifecycle, whichever way its answer arrives: claim, attempts, the stored
answer, execution, finish.

Every agent's decision is a unit of its own: whatever fails inside one is recorded on that
decision (and the attempt it happened in) and the caller goes on to the next agent. A valid
answer is stored before any of its orders executes (`answer_store`), and each order executes
at most once (a unique trade per decision, try and order index), so a claim reclaimed after
a crash resumes the stored answer instead of asking again. An answer still invalid after its
last try is a default HOLD (`answer_hold`). A lineup model's answer (responders.py) and an
outside team's submission (outside.py) go through these same steps.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Max, QuerySet, Sum

from agents.types import BetOrder, PanelForecast, ParsedDecision, SellOrder
from arena import clock, money
from arena.evidence import clipped, error_text, storable_json, storable_text, traceback_summary
from arena.exceptions import ClaimLost, TradeRejected
from arena.models import Agent, Decision, DecisionAttempt, DecisionRun, Position, Trade
from arena.services.commitments import commitment_record, commitment_salt
from arena.services.events import Kind, Level, event_record
from arena.services.forecasts import PanelQuestion, forecasts_keep_live, forecasts_write
from arena.services.frozen import FrozenMarkets
from arena.services.trades import trade_buy, trade_reject, trade_sell

logger = logging.getLogger(__name__)

# A claim older than this belongs to a worker that died; the row may be claimed again.
CLAIM_TTL = timedelta(minutes=30)
# What a slow worker reports when its claim was taken over: it wrote nothing more.
CLAIM_LOST = "claim lost"
# Why a RUNNING claim was taken over (see decision_claim_for).
REDELIVERED = "redelivered"
DEAD_CLAIM = "dead claim"


@dataclass
class Reply:
    """An answer as it is stored on its attempt, whatever answered: OpenRouter, an offline
    agent, a baseline (responders.py) or an outside team's submission (outside.py)."""

    text: str
    raw: str
    responder: str
    requested_model: str
    response_model: str = ""
    provider: str = ""
    finish_reason: str = ""
    used_reasoning: bool = False
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost: Decimal | None = None
    latency_ms: int | None = None
    cached_prompt_tokens: int | None = None
    cache_write_tokens: int | None = None


@dataclass
class DecisionOutcome:
    """What became of one decision in a run: its status (or why it was not run) and the
    orders executed and rejected, with the reasons."""

    decision_id: int | None
    status: str
    executed: int = 0
    rejected: int = 0
    notes: list[str] = field(default_factory=list)
    claim_lost: bool = False


@dataclass
class Progress:
    """How far one decision got, so that a failure is recorded where it happened."""

    decision: Decision | None = None
    run_id: int | None = None
    messages: list[dict[str, str]] = field(default_factory=list)
    attempt_started: datetime | None = None
    attempt_id: int | None = None
    reply: Reply | None = None
    responder: str = ""  # who answers the attempt under way (a Decision.Responder)
    # The parameters the attempt under way is sent to OpenRouter with (None: not sent there).
    request_parameters: dict[str, Any] | None = None


def decision_claim_for(
    *, agent: Agent, week_start: date, now: datetime, holder: str = "", redelivered: bool = False
) -> tuple[Decision, str] | None:
    """Claim the agent's decision row for the week for `holder` (the Celery task id, or ""
    outside a task); return (decision, reclaimed) or None.

    `reclaimed` says whose claim was taken over: REDELIVERED when the row was RUNNING under
    this same holder and this delivery is a `redelivered` one — the broker put the message
    back because the worker running it was lost (rejected on worker loss, or past the
    visibility timeout), so the earlier delivery is dead — or DEAD_CLAIM when it was RUNNING
    under a claim older than CLAIM_TTL; "" for a fresh claim. A second copy of the same task
    that is not a redelivery (a chain link sent twice by a predecessor that ran twice) leaves
    a live claim alone. Each claim is a conditional UPDATE, so of two concurrent claimers
    exactly one gets row count 1.
    """
    # get_or_create inserts in a savepoint of its own and reads the row again when a
    # concurrent claimer's insert won the unique (agent, week) race.
    decision, _ = Decision.objects.get_or_create(
        agent=agent, cohort_id=agent.cohort_id, week_start=week_start
    )
    claim = {
        "status": Decision.Status.RUNNING,
        "claimed_at": now,
        "claimed_by": holder,
        "tries": F("tries") + 1,
    }
    reclaimed = ""
    # A fresh claim (PENDING or RETRYABLE) starts a new round: the previous round's answer
    # is cleared in the claim itself, so no reclaim can ever resume a round sent for retry
    # (that answer stays on its attempt rows and trades).
    claimed = Decision.objects.filter(pk=decision.pk, status__in=Decision.CLAIMABLE).update(
        **claim, parsed=None, parsed_try=None
    )
    if claimed != 1 and holder and redelivered:
        # The same task delivered again (its worker was killed): resume at once, not after
        # CLAIM_TTL, which would leave the rest of its cohort's chain waiting behind it.
        claimed = Decision.objects.filter(
            pk=decision.pk, status=Decision.Status.RUNNING, claimed_by=holder
        ).update(**claim)
        reclaimed = REDELIVERED
    if claimed != 1:
        claimed = Decision.objects.filter(
            pk=decision.pk, status=Decision.Status.RUNNING, claimed_at__lt=now - CLAIM_TTL
        ).update(**claim)
        reclaimed = DEAD_CLAIM
    if claimed != 1:
        return None
    decision.refresh_from_db()
    # The caller's agent, with what it read along (its model and cohort, in a run): what the
    # decision records names the agent without reading it again.
    decision.agent = agent
    return decision, reclaimed


def decision_claim(*, agent: Agent, week_start: date, now: datetime) -> Decision | None:
    """Claim the agent's decision row for the week, creating it if needed.

    Return the claimed decision, or None when another run holds it or it is final. A row
    RUNNING under a claim older than CLAIM_TTL (a dead worker) is claimed again.
    """
    claim = decision_claim_for(agent=agent, week_start=week_start, now=now)
    return claim[0] if claim else None


def under_claim(decision: Decision) -> QuerySet[Decision]:
    """The decision's row while `decision` still holds its claim: RUNNING under the claim
    (`tries`) it was read with. Every write of a decision goes through it."""
    return Decision.objects.filter(
        pk=decision.pk, status=Decision.Status.RUNNING, tries=decision.tries
    )


def round_executed(decision: Decision) -> bool:
    """Whether an order of the decision's stored answer (its round, `parsed_try`) executed."""
    return (
        decision.parsed_try is not None
        and Trade.objects.filter(
            decision=decision, try_number=decision.parsed_try, status=Trade.Status.EXECUTED
        ).exists()
    )


def attempt_record(
    *,
    decision: Decision,
    run_id: int | None,
    messages: list[dict[str, str]],
    reply: Reply | None,
    api_error: str,
    parse_error: str,
    started_at: datetime,
    parsed: ParsedDecision | None = None,
    error_body: str = "",
    error: str = "",
    trace: str = "",
    responder: str = "",
    request_parameters: dict[str, Any] | None = None,
) -> DecisionAttempt:
    """Store one attempt whole. Text from the model or provider is made storable (NUL and
    lone surrogates escaped) and provider strings are clipped to their columns. `error` and
    `trace` record an unexpected failure while the attempt was handled; `responder` says who
    was asked when there is no `reply`; `request_parameters` are those the request went to
    OpenRouter with (None when none went there). A response body is committed to in the
    same transaction (`commitment_record`): no body is stored without its commitment."""
    number = (decision.attempts.aggregate(n=Max("number"))["n"] or 0) + 1
    raw_response = storable_text(reply.raw) if reply else storable_text(error_body)
    with transaction.atomic():
        attempt = DecisionAttempt.objects.create(
            decision=decision,
            number=number,
            run_id=run_id,
            responder=reply.responder if reply else responder,
            requested_model=clipped(
                reply.requested_model if reply else decision.agent.model.openrouter_id, 200
            ),
            request_messages=storable_json(messages),
            request_parameters=request_parameters,
            raw_response=raw_response,
            commitment_salt=commitment_salt(raw_response=raw_response),
            response_text=storable_text(reply.text) if reply else "",
            used_reasoning=reply.used_reasoning if reply else False,
            response_model=clipped(reply.response_model if reply else "", 200),
            upstream_provider=clipped(reply.provider if reply else "", 100),
            finish_reason=clipped(reply.finish_reason if reply else "", 32),
            prompt_tokens=_token_count(reply.prompt_tokens) if reply else None,
            cached_prompt_tokens=_token_count(reply.cached_prompt_tokens) if reply else None,
            cache_write_tokens=_token_count(reply.cache_write_tokens) if reply else None,
            completion_tokens=_token_count(reply.completion_tokens) if reply else None,
            reasoning_tokens=_token_count(reply.reasoning_tokens) if reply else None,
            cost_usd=_cost(reply.cost) if reply else None,
            latency_ms=reply.latency_ms if reply else None,
            api_error=storable_text(api_error),
            parse_error=storable_text(parse_error),
            parsed=storable_json(parsed_json(parsed)) if parsed else None,
            error=error,
            traceback=trace,
            valid=reply is not None and not api_error and not parse_error and not error,
            started_at=started_at,
        )
        commitment_record(attempt=attempt, decision=decision)
        return attempt


_MAX_COUNT = 2_147_483_647  # a PositiveIntegerField


_MAX_COST = Decimal("999999.999999")  # Decimal(12, 6)


def _token_count(value: Any) -> int | None:
    """A provider's token count as stored: a plain int in range, else unknown (None)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MAX_COUNT:
        return value
    return None


def _cost(value: Any) -> Decimal | None:
    """A provider's cost in USD as stored: finite, not negative, fits the column; else None."""
    if not isinstance(value, Decimal) or not value.is_finite() or not 0 <= value <= _MAX_COST:
        return None
    return value.quantize(Decimal("0.000001"))


def parsed_json(parsed: ParsedDecision) -> dict[str, Any]:
    """Return the parsed answer as a decision stores it (amounts and probabilities as
    strings: exact). Methodology v2's stated probabilities and panel forecasts are kept only
    when the answer has them, so a v1 answer is stored as it always was."""
    stored: dict[str, Any] = {
        "action": parsed.action,
        "reasoning": parsed.reasoning,
        "bets": [_bet_json(b) for b in parsed.bets],
        "sells": [
            {"position_id": s.position_id, "percentage": str(s.percentage)} for s in parsed.sells
        ],
    }
    if parsed.forecasts:
        stored["forecasts"] = [
            {
                "market_id": f.market_id,
                "probability": None if f.probability is None else str(f.probability),
                "problem": f.problem,
            }
            for f in parsed.forecasts
        ]
    return stored


def _bet_json(bet: BetOrder) -> dict[str, str]:
    stored = {"market_id": bet.market_id, "side": bet.side, "amount": str(bet.amount)}
    if bet.probability is not None:
        stored["probability"] = str(bet.probability)
    return stored


def parsed_from_json(stored: dict[str, Any]) -> ParsedDecision:
    """Return the ParsedDecision a decision stored (the inverse of parsed_json)."""
    return ParsedDecision(
        action=stored["action"],
        reasoning=stored.get("reasoning", ""),
        bets=tuple(
            BetOrder(
                market_id=b["market_id"],
                side=b["side"],
                amount=Decimal(b["amount"]),
                probability=Decimal(b["probability"]) if b.get("probability") else None,
            )
            for b in stored.get("bets", [])
        ),
        sells=tuple(
            SellOrder(position_id=s["position_id"], percentage=Decimal(s["percentage"]))
            for s in stored.get("sells", [])
        ),
        forecasts=tuple(
            PanelForecast(
                market_id=f["market_id"],
                probability=Decimal(f["probability"]) if f.get("probability") else None,
                problem=f.get("problem", ""),
            )
            for f in stored.get("forecasts", [])
        ),
    )


def answer_store(
    *,
    decision: Decision,
    progress: Progress,
    run_id: int | None,
    messages: list[dict[str, str]],
    reply: Reply,
    parsed: ParsedDecision,
    started_at: datetime,
    panel: Sequence[PanelQuestion] = (),
) -> bool:
    """Store a valid answer before any of its orders executes: the attempt it came in and,
    under the decision's live claim, the parsed answer with its round (`parsed_try`) and,
    under methodology v2, its forecast of each question of the `panel`.

    A reclaim after a crash resumes these orders (each at most once) and never asks again.
    Return False when the claim was taken over while the answer was awaited: the decision is
    someone else's now and none of its orders may be executed here (the attempt is kept).
    """
    with transaction.atomic():
        progress.attempt_id = attempt_record(
            decision=decision, run_id=run_id, messages=messages, reply=reply,
            api_error="", parse_error="", started_at=started_at, parsed=parsed,
            request_parameters=progress.request_parameters,
        ).pk  # fmt: skip
        stored = under_claim(decision).update(
            parsed=storable_json(parsed_json(parsed)),
            parsed_try=decision.tries,
            action=parsed.action,
            reasoning=storable_text(parsed.reasoning),
        )
        if stored == 1 and run_id is not None:
            forecasts_write(
                decision=decision, run_id=run_id, questions=panel, stated=parsed.forecasts
            )
    if stored != 1:
        return False
    decision.parsed_try = decision.tries
    return True


# How a default HOLD after a parse failure is worded, by who answered: what could not be
# parsed, what the tries are counted in, and what the event calls the answer.
_HOLD_WORDS = {
    False: ("response", "attempts", "answer"),
    True: ("submission", "submissions", "submission"),
}


def answer_hold(
    *,
    decision: Decision,
    reply: Reply | None,
    parse_error: str,
    tries: int,
    submitted: bool,
    panel: Sequence[PanelQuestion] = (),
    run_id: int | None = None,
) -> bool:
    """Finish a decision whose answer was still invalid after its last try (002: retries,
    then HOLD): DONE, a default HOLD marked `parse_failed`, with the last parse error, and a
    warning event. `tries` answers were parsed; `submitted` says they were an outside team's
    submissions rather than a lineup model's responses (only the wording differs).

    Under methodology v2 each question of the `panel` (asked in run `run_id`) is recorded as
    forecast by no valid answer, to be imputed.

    Return False, having written nothing, when the claim was taken over meanwhile.
    """
    what, counted, called = _HOLD_WORDS[submitted]
    with transaction.atomic():
        finished = decision_finish(
            decision=decision,
            status=Decision.Status.DONE,
            error=f"invalid after {tries} {counted}: {parse_error}",
            reply=reply,
            parsed=ParsedDecision(
                action="HOLD",
                reasoning=f"[system default] HOLD: the {what} could not be parsed ({parse_error})",
            ),
            parse_failed=True,
        )
        if finished and run_id is not None:
            forecasts_write(decision=decision, run_id=run_id, questions=panel, stated=None)
    if not finished:
        return False
    decision_failure_event(
        decision=decision,
        message=f"invalid {called} after {tries} attempts, default HOLD: {parse_error}",
        level=Level.WARNING,
    )
    return True


def decision_finish(
    *,
    decision: Decision,
    status: str,
    error: str,
    reply: Reply | None,
    parsed: ParsedDecision | None = None,
    parse_failed: bool = False,
    action: str | None = None,
) -> bool:
    """Finish the decision under this executor's claim; return False (and write nothing)
    when the claim was taken over meanwhile. `action` is what it counts as, when not the
    parsed answer's (a decision closed as a HOLD keeps the answer it gave as evidence)."""
    totals = decision.attempts.aggregate(
        prompt=Sum("prompt_tokens"),
        cached=Sum("cached_prompt_tokens"),
        cache_write=Sum("cache_write_tokens"),
        completion=Sum("completion_tokens"),
        cost=Sum("cost_usd"),
        latency=Sum("latency_ms"),
    )
    fields: dict[str, Any] = {
        "status": status,
        "error": storable_text(error),
        "action": action if action is not None else parsed.action if parsed else "",
        "reasoning": storable_text(parsed.reasoning) if parsed else "",
        "parsed": storable_json(parsed_json(parsed)) if parsed else None,
        "parse_failed": parse_failed,
        # Each attempt's figure fits its column; a sum of them may not: then it is unknown.
        "prompt_tokens": _token_count(totals["prompt"]),
        "cached_prompt_tokens": _token_count(totals["cached"]),
        "cache_write_tokens": _token_count(totals["cache_write"]),
        "completion_tokens": _token_count(totals["completion"]),
        "cost_usd": _cost(totals["cost"]),
        "latency_ms": _token_count(totals["latency"]),
        "finished_at": clock.now(),
    }
    if reply is not None:  # a resumed decision keeps the reply it was answered with
        fields["response_model"] = clipped(reply.response_model if reply else "", 200)
        fields["upstream_provider"] = clipped(reply.provider if reply else "", 100)
    with transaction.atomic():
        finished = under_claim(decision).update(**fields)
    return finished == 1


def decision_conclude(
    *,
    decision: Decision,
    parsed: ParsedDecision,
    outcome: DecisionOutcome,
    reply: Reply | None,
) -> DecisionOutcome:
    """Finish a decision whose answer was executed: DONE, or when it was a BET or SELL of
    which no order executed in this round, RETRYABLE (002) — or closed as a HOLD when it may
    not be asked again (`retry_refusal`)."""
    if outcome.claim_lost:
        outcome.status = CLAIM_LOST
        return outcome
    # An order executed here is of this round; otherwise one may have before a reclaim.
    if parsed.action == "HOLD" or outcome.executed or round_executed(decision):
        done = decision_finish(
            decision=decision, status=Decision.Status.DONE, error="", reply=reply, parsed=parsed
        )
        outcome.status = Decision.Status.DONE if done else CLAIM_LOST
        return outcome
    error = "no trade of this BET/SELL executed: " + "; ".join(outcome.notes)
    status = retryable_finish(
        decision=decision, error=error, reply=reply, parsed=parsed, bet=parsed.action == "BET"
    )
    outcome.status = status or CLAIM_LOST
    return outcome


def rounds_asked(decision: Decision) -> int:
    """Return how many rounds the decision has been asked in: the runs (each its own frozen
    snapshot) its attempts were made in, and the run of the round under way. A task
    delivered again after its worker was lost asks again in the same run, and a reclaim that
    resumes a stored answer asks no one: neither is a round of its own."""
    runs = set(decision.attempts.exclude(run=None).values_list("run_id", flat=True))
    return len(runs | ({decision.run_id} if decision.run_id else set()))


def retry_refusal(*, decision: Decision, bet: bool = False) -> str:
    """Return why the decision, whose round just ended with nothing executed, is not asked
    again ("" when it is): it has had DECISION_MAX_ROUNDS rounds (`rounds_asked`), or — for
    a `bet` — its agent's maximum bet (25% of its cash now) is under the minimum, so no bet
    of its can execute in any round. (The week's retry deadline is the retry run's to apply.)"""
    if bet:
        cash = Agent.objects.filter(pk=decision.agent_id).values_list("cash", flat=True).get()
        if money.max_bet(cash) < money.MIN_BET:
            return (
                f"no bet can execute: the maximum bet ${money.max_bet(cash)} (25% of "
                f"${cash} cash) is under the ${money.MIN_BET} minimum"
            )
    rounds = rounds_asked(decision)
    if rounds >= settings.DECISION_MAX_ROUNDS:
        return f"not asked again after {rounds} rounds (DECISION_MAX_ROUNDS)"
    return ""


def retryable_finish(
    *,
    decision: Decision,
    error: str,
    reply: Reply | None,
    parsed: ParsedDecision | None = None,
    bet: bool = False,
) -> str | None:
    """Finish a round that ended with nothing executed (`error` says why): RETRYABLE, for
    the next retry run to ask again, unless `retry_refusal` says it may not be — then it is
    closed, SKIPPED as a HOLD with both reasons (its answer, if any, kept as evidence). A
    `decision_failed` warning records either. Return the status, or None when the claim was
    taken over meanwhile (nothing written)."""
    refusal = retry_refusal(decision=decision, bet=bet)
    if refusal:
        error = f"{error}; closed as a HOLD: {refusal}"
    status = Decision.Status.SKIPPED if refusal else Decision.Status.RETRYABLE
    if not decision_finish(
        decision=decision,
        status=status,
        error=error,
        reply=reply,
        parsed=parsed,
        action=Decision.Action.HOLD if refusal else None,
    ):
        return None
    decision_failure_event(decision=decision, message=error, level=Level.WARNING)
    return status


def decision_failure_event(*, decision: Decision, message: str, level: str) -> None:
    """Record a `decision_failed` event for the decision, at `level`."""
    event_record(
        kind=Kind.DECISION_FAILED,
        level=level,
        message=f"decision {decision.pk} ({decision.agent}): {message}",
        cohort_id=decision.cohort_id,
        agent_id=decision.agent_id,
        decision_id=decision.pk,
        run_id=decision.run_id,
    )


def decision_resume(*, decision: Decision, progress: Progress) -> DecisionOutcome:
    """Execute the orders of a reclaimed decision's stored answer that had not executed when
    its worker died, at the prices of the run it was answered in (an outside agent's at the
    live prices too, read again now: `execution_markets`); then finish it."""
    parsed = parsed_from_json(decision.parsed or {})
    run = DecisionRun.objects.get(pk=decision.run_id or 0)
    progress.run_id = run.pk
    snapshot = FrozenMarkets.load(run)
    panel = [view.market_id for view in snapshot.panel] if parsed.forecasts else []
    frozen = execution_markets(decision=decision, parsed=parsed, frozen=snapshot, also=panel)
    if decision.responder == Decision.Responder.OUTSIDE:  # its forecasts' b: read just now
        forecasts_keep_live(
            decision=decision, claimed=under_claim(decision), parsed=parsed, live=frozen
        )
    outcome = decision_execute(decision=decision, parsed=parsed, frozen=frozen)
    return decision_conclude(decision=decision, parsed=parsed, outcome=outcome, reply=None)


def execution_markets(
    *,
    decision: Decision,
    parsed: ParsedDecision,
    frozen: FrozenMarkets,
    also: Sequence[str] = (),
) -> FrozenMarkets:
    """The markets the decision's orders execute against. A lineup model's or a baseline's:
    the run's frozen snapshot, which it answered on minutes after it froze. An outside
    agent's: the snapshot with the ordered markets (and the markets `also` names: the
    panel's, whose live prices are its forecasts' reference) re-read from Polymarket now (a
    network call, outside any transaction), since its answer may come most of an hour later;
    its orders then execute at the worse of the two prices and never in a market that
    closed."""
    if decision.responder != Decision.Responder.OUTSIDE:
        return frozen
    if parsed.action == "HOLD" and not also:
        return frozen
    market_ids = {bet.market_id for bet in parsed.bets} if parsed.action == "BET" else set()
    market_ids |= set(also)
    if parsed.action == "SELL":
        position_ids = [int(s.position_id) for s in parsed.sells if s.position_id.isdigit()]
        market_ids |= set(
            Position.objects.filter(agent_id=decision.agent_id, pk__in=position_ids).values_list(
                "market__polymarket_id", flat=True
            )
        )
    return frozen.with_live_markets(market_ids)


def decision_fail(*, agent_id: int, progress: Progress, exc: Exception) -> DecisionOutcome:
    """Record an unexpected failure on the decision and its attempt; return the outcome.

    The decision ends RETRYABLE, or DONE when orders of its answer had already executed
    (its trades stand and the answer that explains them is stored). Recording is itself
    guarded: if even that fails, the row stays RUNNING and is reclaimed after CLAIM_TTL.
    """
    error = error_text(exc)
    trace = traceback_summary(exc)
    logger.error("decision of agent %s failed: %s\n%s", agent_id, error, trace)
    decision = progress.decision
    status = "failed"
    if decision is not None:
        try:
            status = _failure_record(decision=decision, progress=progress, error=error, trace=trace)
        except Exception:
            logger.exception("could not record the failure of decision %s", decision.pk)
    try:
        agent = Agent.objects.filter(pk=agent_id).values_list("pk", "cohort_id").first()
    except Exception:  # the database itself may be what failed
        agent = None
    event_record(
        kind=Kind.DECISION_FAILED,
        level=Level.ERROR,
        message=(
            f"decision {decision.pk if decision else '(unclaimed)'} of agent {agent_id} "
            f"failed unexpectedly: {error}"
        ),
        cohort_id=agent[1] if agent else None,
        agent_id=agent[0] if agent else None,
        decision_id=decision.pk if decision else None,
        run_id=progress.run_id,
        data={"traceback": trace},
    )
    return DecisionOutcome(decision.pk if decision else None, status, notes=[error])


def _failure_record(*, decision: Decision, progress: Progress, error: str, trace: str) -> str:
    with transaction.atomic():
        if progress.attempt_id is not None:
            DecisionAttempt.objects.filter(pk=progress.attempt_id).update(
                error=error, traceback=trace
            )
        elif progress.attempt_started is not None:
            # The attempt was not stored (it failed before, or storing it failed): keep one
            # with what is known, so the decision page shows where it broke.
            _failed_attempt_record(decision=decision, progress=progress, error=error, trace=trace)
        executed = round_executed(decision)
        refusal = "" if executed else retry_refusal(decision=decision)
        status = (
            Decision.Status.DONE
            if executed
            else Decision.Status.SKIPPED
            if refusal
            else Decision.Status.RETRYABLE
        )
        closed = {"action": Decision.Action.HOLD} if refusal else {}
        under_claim(decision).update(
            status=status,
            error=f"unexpected failure: {error}"
            + (f"; closed as a HOLD: {refusal}" if refusal else ""),
            traceback=trace,
            finished_at=clock.now(),
            **closed,
        )
    return status


def _failed_attempt_record(
    *, decision: Decision, progress: Progress, error: str, trace: str
) -> None:
    def record(reply: Reply | None) -> None:
        attempt_record(
            decision=decision,
            run_id=progress.run_id,
            messages=progress.messages,
            reply=reply,
            api_error="",
            parse_error="",
            started_at=progress.attempt_started or clock.now(),
            error=error,
            trace=trace,
            responder=progress.responder,
            request_parameters=progress.request_parameters,
        )

    try:
        record(progress.reply)
    except Exception:  # the reply itself is what cannot be stored: keep the rest
        record(None)


def decision_execute(
    *,
    decision: Decision,
    parsed: ParsedDecision,
    frozen: FrozenMarkets,
    try_number: int | None = None,
) -> DecisionOutcome:
    """Execute the decision's orders in order, one transaction per trade, each at most once.

    Each bet is checked against 25% of the cash at that moment, so a later bet can fail after
    earlier ones spent. Trades carry `try_number` (default: the try whose answer the decision
    stored, else the current try); an order of that try already executed or rejected is
    skipped, which makes a repeat — a reclaim after a crash — execute only what is left.
    An order's unexpected failure is recorded as a rejected trade and the others go on.
    """
    outcome = DecisionOutcome(decision.pk, "")
    if try_number is None:
        try_number = decision.parsed_try if decision.parsed_try is not None else decision.tries
    orders: list[BetOrder | SellOrder] = (
        list(parsed.bets)
        if parsed.action == "BET"
        else list(parsed.sells)
        if parsed.action == "SELL"
        else []
    )
    done = set(
        Trade.objects.filter(decision=decision, try_number=try_number).values_list(
            "order_index", flat=True
        )
    )
    for index, order in enumerate(orders):
        if index in done:
            continue
        try:
            if isinstance(order, BetOrder):
                trade_buy(
                    decision=decision,
                    order=order,
                    frozen=frozen,
                    index=index,
                    try_number=try_number,
                )
            else:
                trade_sell(
                    decision=decision,
                    order=order,
                    frozen=frozen,
                    index=index,
                    try_number=try_number,
                )
            outcome.executed += 1
        except TradeRejected as exc:
            outcome.notes.append(str(exc))
            if not _reject(
                decision=decision, order=order, reason=str(exc), index=index, try_number=try_number
            ):
                outcome.claim_lost = True
                break
            outcome.rejected += 1
        except ClaimLost:
            # A slow worker whose claim was taken over: the decision is someone else's now.
            logger.warning("claim on decision %s lost: order %d not executed", decision.pk, index)
            outcome.claim_lost = True
            break
        except IntegrityError:
            # The same order of the same try was recorded elsewhere (two workers on one
            # claim): it was handled once, there; nothing more to do here.
            logger.warning("order %d of decision %s already recorded", index, decision.pk)
        except Exception as exc:
            reason = f"engine error: {error_text(exc)}"
            logger.exception("order %d of decision %s failed", index, decision.pk)
            outcome.notes.append(reason)
            if not _reject(
                decision=decision, order=order, reason=reason, index=index, try_number=try_number
            ):
                outcome.claim_lost = True
                break
            outcome.rejected += 1
    return outcome


def _reject(
    *, decision: Decision, order: BetOrder | SellOrder, reason: str, index: int, try_number: int
) -> bool:
    """Record a rejected order; an order already recorded for this try is left as it is.
    Return False when the claim was lost (nothing recorded)."""
    try:
        with transaction.atomic():
            trade_reject(
                decision=decision,
                order=order,
                reason=storable_text(reason),
                index=index,
                try_number=try_number,
            )
    except ClaimLost:
        return False
    except IntegrityError:
        logger.warning("order %d of decision %s already recorded", index, decision.pk)
    return True
