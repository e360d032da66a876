"""The weekly decision run: claim, prompt, call, parse, execute, finish.

Every agent's decision is a unit of its own: whatever fails inside one is recorded on that
decision (and the attempt it happened in) and the run goes on to the next agent. A valid
answer is stored before any of its orders executes, and each order executes at most once
(a unique trade per decision, try and order index), so a claim reclaimed after a crash
resumes the stored answer instead of asking again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, Exists, F, Max, OuterRef, Q, QuerySet, Sum

from agents import offline
from agents.clients import OpenRouterClient, OpenRouterError
from agents.exceptions import DecisionParseError
from agents.models import BenchmarkModel
from agents.parsing import parse_decision
from agents.prompts import PROMPT_VERSION, build_messages, build_retry_messages, shared_prefix
from agents.types import (
    BetOrder,
    DecisionContext,
    ParsedDecision,
    PortfolioView,
    PositionView,
    SellOrder,
)
from arena import clock, money
from arena.evidence import clipped, error_text, storable_json, storable_text, traceback_summary
from arena.exceptions import ClaimLost, DecisionNotRetryable, TradeRejected
from arena.models import (
    Agent,
    Cohort,
    Decision,
    DecisionAttempt,
    DecisionRun,
    Position,
    SystemEvent,
    Trade,
)
from arena.services.cohorts import cohort_start
from arena.services.events import Kind, Level, event_record
from arena.services.frozen import FrozenMarkets, run_prepare
from arena.services.marking import position_mark
from arena.services.schedule import cohort_missed_record
from arena.services.trades import trade_buy, trade_reject, trade_sell
from arena.weeks import COHORT_START_GRACE, RUN_GRACE, cohort_week_start, outside_window, week_opens
from markets.sources import MarketSource

logger = logging.getLogger(__name__)

# A claim older than this belongs to a worker that died; the row may be claimed again.
CLAIM_TTL = timedelta(minutes=30)
# What a slow worker reports when its claim was taken over: it wrote nothing more.
CLAIM_LOST = "claim lost"
# Why a RUNNING claim was taken over (see _claim).
REDELIVERED = "redelivered"
DEAD_CLAIM = "dead claim"
# A message whose task kills its worker every time would be delivered again forever (the
# broker requeues a lost worker's task): after this many losses in a row the decision is
# sent for retry instead, and the hourly retry run asks again with a new task.
WORKER_LOSSES_MAX = 3
# Advisory lock keys of the weekly run (one per week): an arbitrary base, far from any other.
WEEK_LOCK_KEY = 0x46A_0000_0000


class WorkerLostRepeatedly(Exception):
    """The decision's task lost its worker WORKER_LOSSES_MAX times in a row."""


# -------------------------------------------------------------------------------- context


def portfolio_view(
    *, agent: Agent, frozen: FrozenMarkets, positions: Iterable[Position] | None = None
) -> PortfolioView:
    """Return the agent's portfolio priced at the frozen snapshot (side-correct prices).

    Positions are valued by the one valuation rule (`position_mark`) applied to the frozen
    prices: a closed, unresolved market with a missing or zero price keeps the price it had
    when last open, exactly as snapshots and pages value it."""
    views = []
    open_positions = (
        positions
        if positions is not None
        else agent.positions.filter(status=Position.Status.OPEN).select_related("market")
    )
    for position in open_positions:
        market = position.market
        row = frozen.rows.get(market.polymarket_id)
        price = position_mark(
            side=position.side,
            index=position.outcome_index,
            outcomes=row.outcomes if row else market.outcomes,
            prices=row.outcome_prices if row else market.outcome_prices,
            last_open_prices=market.last_open_prices,
            closed=row.closed if row else market.closed,
            last_price=position.last_price,
            shares=position.shares,
            cost_basis=position.cost_basis,
        )
        views.append(
            PositionView(
                position_id=str(position.pk),
                market_id=market.polymarket_id,
                question=market.question,
                side=position.side,
                shares=position.shares,
                avg_entry_price=position.avg_entry_price or Decimal("0"),
                current_price=money.price(price),
                current_value=money.cents_down(position.shares * price),
                cost_basis=position.cost_basis,
            )
        )
    return PortfolioView(
        cash=agent.cash, starting_balance=agent.cohort.starting_balance, positions=tuple(views)
    )


# ------------------------------------------------------------------------------ decisions


@dataclass
class Reply:
    """A responder's answer, whatever answered (OpenRouter, an offline agent, a baseline)."""

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


def responder_kind(model: BenchmarkModel) -> str:
    if model.is_baseline:
        return Decision.Responder.BASELINE
    if model.is_outside:
        return Decision.Responder.OUTSIDE
    return (
        Decision.Responder.OPENROUTER if settings.OPENROUTER_API_KEY else Decision.Responder.OFFLINE
    )


def _respond(
    *,
    model: BenchmarkModel,
    kind: str,
    context: DecisionContext,
    messages: list[dict[str, str]],
    attempt: int = 1,
) -> Reply:
    """Ask whoever answers for `model`. Raises OpenRouterError when the API fails."""
    if kind == Decision.Responder.OPENROUTER:
        client = OpenRouterClient.from_settings()
        completion = client.complete(
            model=model.openrouter_id,
            messages=messages,
            provider_order=list(model.provider_order or []),
            reasoning_max_tokens=model.reasoning_max_tokens,
            shared_prefix=shared_prefix(context),
        )
        return Reply(
            text=completion.text,
            raw=completion.raw_body,
            responder=kind,
            requested_model=model.openrouter_id,
            response_model=completion.response_model or "",
            provider=completion.provider or "",
            finish_reason=completion.finish_reason or "",
            used_reasoning=completion.used_reasoning,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
            reasoning_tokens=completion.reasoning_tokens,
            cost=completion.cost,
            latency_ms=completion.latency_ms,
            cached_prompt_tokens=completion.cached_prompt_tokens,
            cache_write_tokens=completion.cache_write_tokens,
        )
    if kind == Decision.Responder.BASELINE:
        if model.internal_id == "baseline-market":
            answer = offline.market_baseline_reply(context=context)
        else:
            answer = offline.random_baseline_reply(seed=model.internal_id, context=context)
    else:
        answer = offline.offline_agent_reply(
            model_id=model.internal_id, context=context, attempt=attempt
        )
    return Reply(
        text=answer.text,
        raw=answer.text,
        responder=kind,
        requested_model=model.openrouter_id or model.internal_id,
        response_model=answer.model,
        latency_ms=0,
    )


def _claim(
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
    try:
        with transaction.atomic():
            decision, _ = Decision.objects.get_or_create(
                agent=agent, cohort_id=agent.cohort_id, week_start=week_start
            )
    except IntegrityError:
        decision = Decision.objects.get(
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
    return decision, reclaimed


def decision_claim(*, agent: Agent, week_start: date, now: datetime) -> Decision | None:
    """Claim the agent's decision row for the week, creating it if needed.

    Return the claimed decision, or None when another run holds it or it is final. A row
    RUNNING under a claim older than CLAIM_TTL (a dead worker) is claimed again.
    """
    claim = _claim(agent=agent, week_start=week_start, now=now)
    return claim[0] if claim else None


def _attempt_record(
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
) -> DecisionAttempt:
    """Store one attempt whole. Text from the model or provider is made storable (NUL and
    lone surrogates escaped) and provider strings are clipped to their columns. `error` and
    `trace` record an unexpected failure while the attempt was handled."""
    number = (decision.attempts.aggregate(n=Max("number"))["n"] or 0) + 1
    with transaction.atomic():
        return DecisionAttempt.objects.create(
            decision=decision,
            number=number,
            run_id=run_id,
            responder=reply.responder if reply else responder_kind(decision.agent.model),
            requested_model=clipped(
                reply.requested_model if reply else decision.agent.model.openrouter_id, 200
            ),
            request_messages=storable_json(messages),
            raw_response=storable_text(reply.raw) if reply else storable_text(error_body),
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


def _under_claim(decision: Decision) -> QuerySet[Decision]:
    """The decision's row while `decision` still holds its claim: RUNNING under the claim
    (`tries`) it was read with. Every write of a decision goes through it."""
    return Decision.objects.filter(
        pk=decision.pk, status=Decision.Status.RUNNING, tries=decision.tries
    )


def _round_executed(decision: Decision) -> bool:
    """Whether an order of the decision's stored answer (its round, `parsed_try`) executed."""
    return (
        decision.parsed_try is not None
        and Trade.objects.filter(
            decision=decision, try_number=decision.parsed_try, status=Trade.Status.EXECUTED
        ).exists()
    )


@dataclass
class DecisionOutcome:
    decision_id: int | None
    status: str
    executed: int = 0
    rejected: int = 0
    notes: list[str] = field(default_factory=list)
    claim_lost: bool = False


@dataclass
class _Progress:
    """How far one decision got, so that a failure is recorded where it happened."""

    decision: Decision | None = None
    run_id: int | None = None
    messages: list[dict[str, str]] = field(default_factory=list)
    attempt_started: datetime | None = None
    attempt_id: int | None = None
    reply: Reply | None = None


def decision_run(
    *,
    agent_id: int,
    run_id: int,
    now: datetime | None = None,
    holder: str = "",
    redelivered: bool = False,
) -> DecisionOutcome:
    """Run the agent's decision for the run's week: claim, prompt, call, parse, execute.
    `holder` names the claim's holder (the Celery task id): the same task `redelivered` by
    the broker after its worker was lost takes the claim over at once (see _claim).

    Never raises: an unexpected failure is recorded on the decision (error and traceback)
    and on the attempt it happened in, and the decision ends RETRYABLE — or DONE when some
    of its orders had already executed — so the caller goes on to the next agent.

    Safe to deliver twice: a repeat finds the row claimed or final and returns. Malformed
    output is retried up to DECISION_PARSE_RETRIES times with the error sent back; still
    invalid → HOLD with the failure recorded. An API failure leaves the row RETRYABLE, and so
    does a BET/SELL in which no trade executed (002).
    """
    progress = _Progress(run_id=run_id)
    try:
        return _decision_run(
            agent_id=agent_id,
            run_id=run_id,
            now=now,
            holder=holder,
            redelivered=redelivered,
            progress=progress,
        )
    except Exception as exc:  # one agent's failure never stops another's
        return _decision_fail(agent_id=agent_id, progress=progress, exc=exc)


def _decision_run(
    *,
    agent_id: int,
    run_id: int,
    now: datetime | None,
    holder: str,
    redelivered: bool,
    progress: _Progress,
) -> DecisionOutcome:
    now = now or clock.now()
    agent = Agent.objects.select_related("model", "cohort").get(pk=agent_id)
    run = DecisionRun.objects.get(pk=run_id)
    if agent.cohort.status != Cohort.Status.ACTIVE:
        return DecisionOutcome(None, "cohort completed")
    if agent.cohort.week_start > run.week_start:
        return DecisionOutcome(None, "cohort starts after this run's week")
    claim = _claim(
        agent=agent, week_start=run.week_start, now=now, holder=holder, redelivered=redelivered
    )
    if claim is None:
        return DecisionOutcome(None, "already claimed or final")
    decision, reclaimed = claim
    progress.decision = decision
    if reclaimed:
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
        if resumes:
            return _decision_resume(decision=decision, progress=progress)
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
        with transaction.atomic():
            _under_claim(decision).update(
                status=Decision.Status.SKIPPED,
                action=Decision.Action.HOLD,
                reasoning="",
                error="Agent is bankrupt (under $50 cash, no open positions): no prompt sent.",
                run=run,
                finished_at=clock.now(),
            )
        return DecisionOutcome(decision.pk, Decision.Status.SKIPPED)

    frozen = FrozenMarkets.load(run)
    context = decision_context(agent=agent, run=run, frozen=frozen, as_of=now)
    messages = build_messages(context)
    kind = responder_kind(agent.model)
    with transaction.atomic():
        # A new round (its answer was cleared by the claim): only under the live claim.
        new_round = _under_claim(decision).update(
            run=run,
            responder=kind,
            prompt_version=PROMPT_VERSION,
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
    if kind == Decision.Responder.OUTSIDE:
        return _outside_await(decision=decision, now=now)
    position_ids = {p.position_id for p in context.portfolio.positions}
    parsed: ParsedDecision | None = None
    last_error = ""
    reply: Reply | None = None
    for attempt in range(settings.DECISION_PARSE_RETRIES + 1):
        started = clock.now()
        progress.messages, progress.attempt_started = messages, started
        progress.attempt_id, progress.reply = None, None
        try:
            reply = _respond(
                model=agent.model,
                kind=kind,
                context=context,
                messages=messages,
                attempt=attempt + 1,
            )
        except OpenRouterError as exc:
            error = error_text(exc)
            progress.attempt_id = _attempt_record(
                decision=decision, run_id=run.pk, messages=messages, reply=None,
                api_error=error, parse_error="", started_at=started, error_body=exc.raw_body,
            ).pk  # fmt: skip
            if not _decision_finish(
                decision=decision,
                status=Decision.Status.RETRYABLE,
                error=f"model call failed: {error}",
                reply=None,
            ):
                return DecisionOutcome(decision.pk, CLAIM_LOST, notes=[error])
            event_record(
                kind=Kind.DECISION_FAILED,
                level=Level.WARNING,
                message=f"decision {decision.pk} ({agent}): model call failed: {error}",
                cohort_id=agent.cohort_id,
                agent_id=agent.pk,
                decision_id=decision.pk,
                run_id=run.pk,
            )
            return DecisionOutcome(decision.pk, Decision.Status.RETRYABLE, notes=[error])
        progress.reply = reply
        try:
            parsed = parse_decision(reply.text, markets=frozen.views, position_ids=position_ids)
        except DecisionParseError as exc:
            last_error = exc.message
            progress.attempt_id = _attempt_record(
                decision=decision, run_id=run.pk, messages=messages, reply=reply,
                api_error="", parse_error=last_error, started_at=started,
            ).pk  # fmt: skip
            if attempt < settings.DECISION_PARSE_RETRIES:
                messages = build_retry_messages(
                    context, invalid_response=reply.text, error=last_error
                )
            continue
        with transaction.atomic():
            # The answer is stored before any of its orders executes: a reclaim after a crash
            # resumes these orders (each at most once) and never asks the model again.
            progress.attempt_id = _attempt_record(
                decision=decision, run_id=run.pk, messages=messages, reply=reply,
                api_error="", parse_error="", started_at=started, parsed=parsed,
            ).pk  # fmt: skip
            stored = _under_claim(decision).update(
                parsed=storable_json(parsed_json(parsed)),
                parsed_try=decision.tries,
                action=parsed.action,
                reasoning=storable_text(parsed.reasoning),
            )
        if stored != 1:  # the claim was taken over while the model answered: not ours now
            return DecisionOutcome(decision.pk, CLAIM_LOST, notes=["claim taken over"])
        decision.parsed_try = decision.tries
        break

    if parsed is None:
        finished = _decision_finish(
            decision=decision,
            status=Decision.Status.DONE,
            error=f"invalid after {settings.DECISION_PARSE_RETRIES + 1} attempts: {last_error}",
            reply=reply,
            parsed=ParsedDecision(
                action="HOLD",
                reasoning=f"[system default] HOLD: the response could not be parsed ({last_error})",
            ),
            parse_failed=True,
        )
        if not finished:
            return DecisionOutcome(decision.pk, CLAIM_LOST, notes=[last_error])
        _failure_event(
            decision=decision,
            message=f"invalid answer after {settings.DECISION_PARSE_RETRIES + 1} attempts, "
            f"default HOLD: {last_error}",
            level=Level.WARNING,
        )
        return DecisionOutcome(decision.pk, Decision.Status.DONE, notes=[last_error])

    outcome = decision_execute(decision=decision, parsed=parsed, frozen=frozen)
    return _decision_conclude(decision=decision, parsed=parsed, outcome=outcome, reply=reply)


def decision_context(
    *, agent: Agent, run: DecisionRun, frozen: FrozenMarkets, as_of: datetime
) -> DecisionContext:
    """Return what `agent` is shown for the run's week: its portfolio (open positions at the
    run's frozen prices) and the frozen markets."""
    positions = list(
        agent.positions.filter(status=Position.Status.OPEN).select_related("market").order_by("pk")
    )
    return DecisionContext(
        as_of=as_of,
        week_start=run.week_start,
        cohort_number=agent.cohort.number,
        portfolio=portfolio_view(agent=agent, frozen=frozen, positions=positions),
        markets=frozen.universe,
    )


def _outside_await(*, decision: Decision, now: datetime) -> DecisionOutcome:
    """Leave an outside agent's decision, its prompt stored, awaiting its submission.

    An outside agent answers through the API (arena/services/outside.py), not here: the run
    goes on to the next agent at once, so no lineup agent ever waits on one. The submission
    goes through the same parser and execution; a window closed with nothing submitted is a
    HOLD "no submission" (`outside_decisions_close`)."""
    with transaction.atomic():
        awaiting = _under_claim(decision).update(status=Decision.Status.AWAITING)
    if awaiting != 1:
        return DecisionOutcome(decision.pk, CLAIM_LOST, notes=["claim taken over"])
    if now >= outside_window(decision.week_start)[1]:
        # Reopened after its window (a retry of a BET that executed nothing): nobody can
        # answer it any more, so it is closed at once, as the window's close would.
        from arena.services.outside import outside_decisions_close  # imports this module

        outside_decisions_close(now=now)
        decision.refresh_from_db(fields=["status"])
        return DecisionOutcome(decision.pk, decision.status)
    return DecisionOutcome(decision.pk, Decision.Status.AWAITING)


def _decision_conclude(
    *,
    decision: Decision,
    parsed: ParsedDecision,
    outcome: DecisionOutcome,
    reply: Reply | None,
) -> DecisionOutcome:
    """Finish a decision whose answer was executed: DONE, or RETRYABLE when it was a BET or
    SELL of which no order executed in this round (002)."""
    if outcome.claim_lost:
        outcome.status = CLAIM_LOST
        return outcome
    no_trade = parsed.action != "HOLD" and not _round_executed(decision)
    status = Decision.Status.RETRYABLE if no_trade else Decision.Status.DONE
    error = "no trade of this BET/SELL executed: " + "; ".join(outcome.notes) if no_trade else ""
    if not _decision_finish(
        decision=decision, status=status, error=error, reply=reply, parsed=parsed
    ):
        outcome.status = CLAIM_LOST
        return outcome
    if no_trade:
        _failure_event(decision=decision, message=error, level=Level.WARNING)
    outcome.status = status
    return outcome


def _failure_event(*, decision: Decision, message: str, level: str) -> None:
    event_record(
        kind=Kind.DECISION_FAILED,
        level=level,
        message=f"decision {decision.pk} ({decision.agent}): {message}",
        cohort_id=decision.cohort_id,
        agent_id=decision.agent_id,
        decision_id=decision.pk,
        run_id=decision.run_id,
    )


def _decision_resume(*, decision: Decision, progress: _Progress) -> DecisionOutcome:
    """Execute the orders of a reclaimed decision's stored answer that had not executed when
    its worker died, at the prices of the run it was answered in; then finish it."""
    parsed = parsed_from_json(decision.parsed or {})
    run = DecisionRun.objects.get(pk=decision.run_id or 0)
    progress.run_id = run.pk
    outcome = decision_execute(decision=decision, parsed=parsed, frozen=FrozenMarkets.load(run))
    return _decision_conclude(decision=decision, parsed=parsed, outcome=outcome, reply=None)


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
    _attempt_record(
        decision=decision,
        run_id=run_id,
        messages=messages,
        reply=None,
        api_error="",
        parse_error="",
        started_at=now,
        error=f"interrupted: the worker running try {interrupted} was lost before an answer "
        "was stored; the task was delivered again and asks again",
    )


def _decision_fail(*, agent_id: int, progress: _Progress, exc: Exception) -> DecisionOutcome:
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


def _failure_record(*, decision: Decision, progress: _Progress, error: str, trace: str) -> str:
    with transaction.atomic():
        if progress.attempt_id is not None:
            DecisionAttempt.objects.filter(pk=progress.attempt_id).update(
                error=error, traceback=trace
            )
        elif progress.attempt_started is not None:
            # The attempt was not stored (it failed before, or storing it failed): keep one
            # with what is known, so the decision page shows where it broke.
            _failed_attempt_record(decision=decision, progress=progress, error=error, trace=trace)
        executed = _round_executed(decision)
        status = Decision.Status.DONE if executed else Decision.Status.RETRYABLE
        _under_claim(decision).update(
            status=status,
            error=f"unexpected failure: {error}",
            traceback=trace,
            finished_at=clock.now(),
        )
    return status


def _failed_attempt_record(
    *, decision: Decision, progress: _Progress, error: str, trace: str
) -> None:
    def record(reply: Reply | None) -> None:
        _attempt_record(
            decision=decision,
            run_id=progress.run_id,
            messages=progress.messages,
            reply=reply,
            api_error="",
            parse_error="",
            started_at=progress.attempt_started or clock.now(),
            error=error,
            trace=trace,
        )

    try:
        record(progress.reply)
    except Exception:  # the reply itself is what cannot be stored: keep the rest
        record(None)


def parsed_json(parsed: ParsedDecision) -> dict[str, Any]:
    return {
        "action": parsed.action,
        "reasoning": parsed.reasoning,
        "bets": [
            {"market_id": b.market_id, "side": b.side, "amount": str(b.amount)} for b in parsed.bets
        ],
        "sells": [
            {"position_id": s.position_id, "percentage": str(s.percentage)} for s in parsed.sells
        ],
    }


def parsed_from_json(stored: dict[str, Any]) -> ParsedDecision:
    """Return the ParsedDecision a decision stored (the inverse of parsed_json)."""
    return ParsedDecision(
        action=stored["action"],
        reasoning=stored.get("reasoning", ""),
        bets=tuple(
            BetOrder(market_id=b["market_id"], side=b["side"], amount=Decimal(b["amount"]))
            for b in stored.get("bets", [])
        ),
        sells=tuple(
            SellOrder(position_id=s["position_id"], percentage=Decimal(s["percentage"]))
            for s in stored.get("sells", [])
        ),
    )


def _decision_finish(
    *,
    decision: Decision,
    status: str,
    error: str,
    reply: Reply | None,
    parsed: ParsedDecision | None = None,
    parse_failed: bool = False,
) -> bool:
    """Finish the decision under this executor's claim; return False (and write nothing)
    when the claim was taken over meanwhile."""
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
        "action": parsed.action if parsed else "",
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
        finished = _under_claim(decision).update(**fields)
    return finished == 1


# -------------------------------------------------------------------------------- trades


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


def agent_is_bankrupt(*, agent: Agent) -> bool:
    """Mark and report an agent with under $50 cash and no open positions as bankrupt; it
    stays bankrupt for its cohort."""
    if agent.status == Agent.Status.BANKRUPT:
        return True
    # One conditional UPDATE on the row as it is now: cash read earlier may be stale (a
    # settlement can pay out meanwhile), and a funded agent must never be marked bankrupt.
    holding = Position.objects.filter(agent=OuterRef("pk"), status=Position.Status.OPEN)
    with transaction.atomic():
        marked = (
            Agent.objects.filter(pk=agent.pk, cash__lt=money.MIN_BET)
            .exclude(Exists(holding))
            .update(status=Agent.Status.BANKRUPT)
        )
    if marked:
        agent.status = Agent.Status.BANKRUPT
    return bool(marked)


# ------------------------------------------------------------------------------ the run


@dataclass
class RunReport:
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
    if now - week_opens(week_start) < COHORT_START_GRACE:
        cohort_start(week_start=week_start, now=now)
    else:
        cohort_missed_record(week_start=week_start)  # said once, on the status page too
    decisions_expire(before=week_start, now=now)
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
    closed = []
    for decision in stale.select_related("agent__model", "agent__cohort"):
        with transaction.atomic():
            # Locked as it stands first, so a trade still in flight under its claim commits
            # before `executed` is read, or finds the claim gone.
            locked = (
                Decision.objects.select_for_update(of=("self",))
                .filter(pk=decision.pk, status=decision.status, tries=decision.tries)
                .values_list("pk", flat=True)
                .order_by("pk")
                .first()
            )
            if locked is None:
                continue
            executed = _round_executed(decision)
            reason = (
                f"its week ended while it was {decision.get_status_display().lower()}"
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
        _failure_event(decision=decision, message=reason, level=Level.WARNING)
    closed += _first_weeks_missed(before=before, now=now)
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
        _failure_event(decision=decision, message=decision.error, level=Level.WARNING)
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
    its stored answer if it had one. Raise DecisionNotRetryable for a final decision or one
    a live claim holds."""
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
    run = run_prepare(source=source, week_start=decision.week_start)
    outcome = decision_run(agent_id=decision.agent_id, run_id=run.pk)
    run_finish(run_id=run.pk)
    return outcome
