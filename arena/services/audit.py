"""The determinism audit: re-send stored requests at temperature 0, exactly as they were sent."""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import Any

from agents.clients import OpenRouterClient, OpenRouterError, request_parameters
from agents.exceptions import DecisionParseError
from agents.parsing import parse_decision
from arena import clock
from arena.models import Decision, DecisionAttempt, DeterminismCheck
from arena.services.decisions.lifecycle import parsed_json
from arena.services.frozen import FrozenMarkets

logger = logging.getLogger(__name__)


# ----------------------------------------------------------------- determinism audit


def determinism_sample(*, size: int, seed: int = 0) -> list[Decision]:
    """Return up to `size` decisions answered by OpenRouter with a valid parse, chosen by
    a seeded draw so an audit can be repeated."""
    import random as _random

    candidates = list(
        Decision.objects.filter(
            responder=Decision.Responder.OPENROUTER, status=Decision.Status.DONE, parse_failed=False
        )
        .select_related("agent__model")
        .order_by("pk")
    )
    _random.Random(seed).shuffle(candidates)  # nosec B311 # seeded: the audit sample is reproducible
    return candidates[:size]


def determinism_cost_estimate(*, decisions: list[Decision]) -> Decimal:
    """Return what re-sending these prompts cost the first time (USD; unknown costs as 0)."""
    return sum((d.cost_usd or Decimal(0) for d in decisions), Decimal(0))


def kept_attempt(decision: Decision) -> DecisionAttempt | None:
    """Return the attempt whose answer the decision kept: the last valid one that gave the
    decision's stored answer (a parse retry's, or a later round's), else the last valid one."""
    valid = list(decision.attempts.filter(valid=True).select_related("run").order_by("-number"))
    return next((a for a in valid if a.parsed == decision.parsed), valid[0] if valid else None)


def _replayed_parameters(decision: Decision, attempt: DecisionAttempt) -> dict[str, Any]:
    """The parameters the kept attempt's request went with; for an attempt stored before
    they were kept, those the lineup row gives now (its providers and reasoning budget)."""
    if attempt.request_parameters:
        return dict(attempt.request_parameters)
    model = decision.agent.model
    return request_parameters(
        model=attempt.requested_model or decision.requested_model,
        messages=attempt.request_messages,
        provider_order=list(model.provider_order or []),
        reasoning_max_tokens=model.reasoning_max_tokens,
    )


def determinism_check(*, decision: Decision) -> DeterminismCheck:
    """Re-send the request whose answer the decision kept (`kept_attempt`: its messages and
    parameters, temperature 0, as they were sent) and record whether the answer parses into
    the same decision (action, bets and sells; the reasoning may differ).

    The kept answer may come from a parse retry or from a later round on another snapshot:
    comparing it with any other request's answer would measure the prompts' difference, not
    the model's determinism. The reply is parsed against that round's frozen markets."""
    attempt = kept_attempt(decision)
    check = DeterminismCheck(
        decision=decision,
        requested_model=decision.requested_model,
        original=decision.parsed,
        checked_at=clock.now(),
    )
    if attempt is None:
        check.error = "no valid attempt of this decision to send again"
        check.save()
        return check
    parameters = _replayed_parameters(decision, attempt)
    check.requested_model = str(parameters["model"])
    try:
        with OpenRouterClient.from_settings() as client:
            completion = client.send(messages=list(attempt.request_messages), parameters=parameters)
    except OpenRouterError as exc:
        check.error = f"{type(exc).__name__}: {exc}"
        check.save()
        return check
    check.raw_response = completion.raw_body
    check.response_model = completion.response_model or ""
    check.cost_usd = completion.cost
    _compare(check, decision=decision, attempt=attempt, text=completion.text)
    check.save()
    return check


def _compare(
    check: DeterminismCheck, *, decision: Decision, attempt: DecisionAttempt, text: str
) -> None:
    """Parse the repeated answer against the kept round's frozen markets and compare it."""
    run = attempt.run or decision.run
    frozen = FrozenMarkets.load(run) if run else None
    position_ids = {p["position_id"] for p in (decision.parsed or {}).get("sells", [])} | {
        str(pk) for pk in decision.agent.positions.values_list("pk", flat=True)
    }
    states_probabilities = decision.cohort.methodology_version != "v1"
    try:
        parsed = parse_decision(
            text,
            markets=frozen.views if frozen else {},
            position_ids=position_ids,
            probabilities=states_probabilities,
            panel=[view.market_id for view in frozen.panel] if frozen else [],
        )
    except DecisionParseError as exc:
        check.error = f"invalid response: {exc.message}"
        return
    check.repeated = parsed_json(parsed)
    original = dict(decision.parsed or {})
    # The decision is what repeats or not: its orders (with a bet's stated probability), not
    # its words, nor its panel forecasts, which are scored apart.
    compared = {"reasoning", "forecasts"}
    check.matches = {k: v for k, v in check.repeated.items() if k not in compared} == {
        k: v for k, v in original.items() if k not in compared
    }
