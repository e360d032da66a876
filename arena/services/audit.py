"""The determinism audit: re-send stored prompts at temperature 0."""

from __future__ import annotations

import logging
from decimal import Decimal

from agents.clients import OpenRouterClient, OpenRouterError
from agents.exceptions import DecisionParseError
from agents.parsing import parse_decision
from arena import clock
from arena.models import (
    Decision,
    DeterminismCheck,
)
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


def determinism_check(*, decision: Decision) -> DeterminismCheck:
    """Re-send the decision's first prompt to the same OpenRouter model at temperature 0 and
    record whether the parsed decision matches the stored one (action, bets and sells)."""
    first = decision.attempts.order_by("number").first()
    messages = list(first.request_messages) if first else []
    run = decision.run
    frozen = FrozenMarkets.load(run) if run else None
    check = DeterminismCheck(
        decision=decision,
        requested_model=decision.requested_model,
        original=decision.parsed,
        checked_at=clock.now(),
    )
    try:
        completion = OpenRouterClient.from_settings().complete(
            model=decision.requested_model,
            messages=messages,
            provider_order=list(decision.agent.model.provider_order or []),
        )
    except OpenRouterError as exc:
        check.error = f"{type(exc).__name__}: {exc}"
        check.save()
        return check
    check.raw_response = completion.raw_body
    check.response_model = completion.response_model or ""
    check.cost_usd = completion.cost
    position_ids = {p["position_id"] for p in (decision.parsed or {}).get("sells", [])} | {
        str(pk) for pk in decision.agent.positions.values_list("pk", flat=True)
    }
    try:
        parsed = parse_decision(
            completion.text, markets=frozen.views if frozen else {}, position_ids=position_ids
        )
    except DecisionParseError as exc:
        check.error = f"invalid response: {exc.message}"
    else:
        check.repeated = parsed_json(parsed)
        original = dict(decision.parsed or {})
        check.matches = {k: v for k, v in check.repeated.items() if k != "reasoning"} == {
            k: v for k, v in original.items() if k != "reasoning"
        }
    check.save()
    return check
