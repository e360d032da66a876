"""A lineup model's answer: ask whoever answers for the model, parse, ask again.

OpenRouter answers when a key is set; otherwise the offline stand-in answers for each
lineup model, as the baselines always do. A malformed answer is sent back with its parse
error, up to DECISION_PARSE_RETRIES times; the valid answer is then stored, executed and the
decision finished through the lifecycle, exactly as an outside team's submission is.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings

from agents import offline
from agents.clients import OpenRouterClient, OpenRouterError, request_parameters
from agents.exceptions import DecisionParseError
from agents.models import BenchmarkModel
from agents.parsing import parse_decision
from agents.prompts import build_retry_messages, shared_prefix
from agents.types import DecisionContext
from arena import clock
from arena.evidence import error_text
from arena.models import Agent, Decision, DecisionRun
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
    retryable_finish,
)
from arena.services.forecasts import questions_asked
from arena.services.frozen import FrozenMarkets


def responder_kind(model: BenchmarkModel) -> str:
    """Return who answers for `model` (a Decision.Responder): the baselines and the outside
    agents are their own; a lineup model is asked on OpenRouter when a key is set, else its
    offline stand-in answers."""
    if model.is_baseline:
        return Decision.Responder.BASELINE
    if model.is_outside:
        return Decision.Responder.OUTSIDE
    return (
        Decision.Responder.OPENROUTER if settings.OPENROUTER_API_KEY else Decision.Responder.OFFLINE
    )


def openrouter_parameters(
    *, model: BenchmarkModel, kind: str, context: DecisionContext, messages: list[dict[str, str]]
) -> dict[str, Any] | None:
    """Return the parameters `messages` go to OpenRouter with for `model` (its pinned
    providers, its reasoning budget, the run's shared prefix as a cache breakpoint), stored on
    the attempt so the request can be sent again as it was; None when `kind` asks no one there."""
    if kind != Decision.Responder.OPENROUTER:
        return None
    return _parameters(model=model, context=context, messages=messages)


def _parameters(
    *, model: BenchmarkModel, context: DecisionContext, messages: list[dict[str, str]]
) -> dict[str, Any]:
    return request_parameters(
        model=model.openrouter_id,
        messages=messages,
        provider_order=list(model.provider_order or []),
        reasoning_max_tokens=model.reasoning_max_tokens,
        shared_prefix=shared_prefix(context),
    )


def respond(
    *,
    model: BenchmarkModel,
    kind: str,
    context: DecisionContext,
    messages: list[dict[str, str]],
    attempt: int = 1,
    parameters: dict[str, Any] | None = None,
) -> Reply:
    """Ask whoever answers for `model`; OpenRouter with `parameters` (openrouter_parameters').
    Raises OpenRouterError when the API fails."""
    if kind == Decision.Responder.OPENROUTER:
        if parameters is None:
            parameters = _parameters(model=model, context=context, messages=messages)
        with OpenRouterClient.from_settings() as client:
            completion = client.send(messages=messages, parameters=parameters)
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


def decision_ask(
    *,
    decision: Decision,
    agent: Agent,
    run: DecisionRun,
    frozen: FrozenMarkets,
    context: DecisionContext,
    messages: list[dict[str, str]],
    kind: str,
    progress: Progress,
) -> DecisionOutcome:
    """Ask the lineup model for the decision's answer (its prompt, `messages`, is stored),
    then store and execute a valid one and finish the decision.

    Each answer is kept as an attempt. A malformed one is sent back with its error up to
    DECISION_PARSE_RETRIES times; still invalid → a default HOLD. An API failure leaves the
    decision RETRYABLE. A claim taken over meanwhile ends it CLAIM_LOST, having written no
    more. `progress` follows each attempt, so an unexpected failure is recorded on it.
    """
    position_ids = {p.position_id for p in context.portfolio.positions}
    last_error = ""
    reply: Reply | None = None
    for attempt in range(settings.DECISION_PARSE_RETRIES + 1):
        started = clock.now()
        progress.messages, progress.attempt_started = messages, started
        progress.attempt_id, progress.reply, progress.responder = None, None, kind
        progress.request_parameters = openrouter_parameters(
            model=agent.model, kind=kind, context=context, messages=messages
        )
        try:
            reply = respond(
                model=agent.model,
                kind=kind,
                context=context,
                messages=messages,
                attempt=attempt + 1,
                parameters=progress.request_parameters,
            )
        except OpenRouterError as exc:
            return _call_failed(
                decision=decision, run=run, messages=messages, started=started, exc=exc,
                kind=kind, progress=progress,
            )  # fmt: skip
        progress.reply = reply
        try:
            parsed = parse_decision(
                reply.text,
                markets=frozen.views,
                position_ids=position_ids,
                probabilities=context.states_probabilities,
                panel=[view.market_id for view in context.panel],
            )
        except DecisionParseError as exc:
            last_error = exc.message
            progress.attempt_id = attempt_record(
                decision=decision, run_id=run.pk, messages=messages, reply=reply,
                api_error="", parse_error=last_error, started_at=started,
                request_parameters=progress.request_parameters,
            ).pk  # fmt: skip
            if attempt < settings.DECISION_PARSE_RETRIES:
                messages = build_retry_messages(
                    context, invalid_response=reply.text, error=last_error
                )
            continue
        stored = answer_store(
            decision=decision, progress=progress, run_id=run.pk, messages=messages,
            reply=reply, parsed=parsed, started_at=started,
            panel=questions_asked(frozen) if context.panel else (),
        )  # fmt: skip
        if not stored:  # the claim was taken over while the model answered: not ours now
            return DecisionOutcome(decision.pk, CLAIM_LOST, notes=["claim taken over"])
        outcome = decision_execute(decision=decision, parsed=parsed, frozen=frozen)
        return decision_conclude(decision=decision, parsed=parsed, outcome=outcome, reply=reply)
    tries = settings.DECISION_PARSE_RETRIES + 1
    if not answer_hold(
        decision=decision, reply=reply, parse_error=last_error, tries=tries, submitted=False,
        panel=questions_asked(frozen) if context.panel else (), run_id=run.pk,
    ):  # fmt: skip
        return DecisionOutcome(decision.pk, CLAIM_LOST, notes=[last_error])
    return DecisionOutcome(decision.pk, Decision.Status.DONE, notes=[last_error])


def _call_failed(
    *,
    decision: Decision,
    run: DecisionRun,
    messages: list[dict[str, str]],
    started: datetime,
    exc: OpenRouterError,
    kind: str,
    progress: Progress,
) -> DecisionOutcome:
    """Keep the failed model call as an attempt (with the error body the API sent) and leave
    the decision RETRYABLE for the hourly retry run, or closed as a HOLD when it has had its
    rounds (`retryable_finish`)."""
    error = error_text(exc)
    progress.attempt_id = attempt_record(
        decision=decision, run_id=run.pk, messages=messages, reply=None, api_error=error,
        parse_error="", started_at=started, error_body=exc.raw_body, responder=kind,
        request_parameters=progress.request_parameters,
    ).pk  # fmt: skip
    status = retryable_finish(decision=decision, error=f"model call failed: {error}", reply=None)
    return DecisionOutcome(decision.pk, status or CLAIM_LOST, notes=[error])
