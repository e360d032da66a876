"""The weekly decision run: claim, prompt, call, parse, execute, finish."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import IntegrityError
from django.db.models import F, Max, Q, Sum

from agents import offline
from agents.clients import OpenRouterClient, OpenRouterError
from agents.exceptions import DecisionParseError
from agents.models import BenchmarkModel
from agents.parsing import parse_decision
from agents.prompts import PROMPT_VERSION, build_messages, build_retry_messages
from agents.types import (
    BetOrder,
    DecisionContext,
    ParsedDecision,
    PortfolioView,
    PositionView,
    SellOrder,
)
from arena import clock, money
from arena.exceptions import DecisionNotRetryable, TradeRejected
from arena.models import (
    Agent,
    Cohort,
    Decision,
    DecisionAttempt,
    DecisionRun,
    Position,
)
from arena.services.cohorts import cohort_week_start
from arena.services.frozen import FrozenMarkets, run_prepare, side_price
from arena.services.trades import trade_buy, trade_reject, trade_sell
from markets.sources import MarketSource

logger = logging.getLogger(__name__)

# A claim older than this belongs to a worker that died; the row may be claimed again.
CLAIM_TTL = timedelta(minutes=30)


# -------------------------------------------------------------------------------- context


def portfolio_view(
    *, agent: Agent, frozen: FrozenMarkets, positions: Iterable[Position] | None = None
) -> PortfolioView:
    """Return the agent's portfolio priced at the frozen snapshot (side-correct prices)."""
    views = []
    open_positions = (
        positions
        if positions is not None
        else agent.positions.filter(status=Position.Status.OPEN).select_related("market")
    )
    for position in open_positions:
        view = frozen.views.get(position.market.polymarket_id)
        price = side_price(view, position.side) if view else None
        if price is None:
            price = position.last_price
        value = money.cents_down(position.shares * price) if price is not None else Decimal("0")
        views.append(
            PositionView(
                position_id=str(position.pk),
                market_id=position.market.polymarket_id,
                question=position.market.question,
                side=position.side,
                shares=position.shares,
                avg_entry_price=position.avg_entry_price or Decimal("0"),
                current_price=price,
                current_value=value,
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


def responder_kind(model: BenchmarkModel) -> str:
    if model.is_baseline:
        return Decision.Responder.BASELINE
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


def decision_claim(*, agent: Agent, week_start: date, now: datetime) -> Decision | None:
    """Claim the agent's decision row for the week, creating it if needed.

    Return the claimed decision, or None when another run holds it or it is final. The
    conditional UPDATE is the lock: of two concurrent runs exactly one gets row count 1.
    """
    try:
        decision, _ = Decision.objects.get_or_create(
            agent=agent, cohort_id=agent.cohort_id, week_start=week_start
        )
    except IntegrityError:
        decision = Decision.objects.get(
            agent=agent, cohort_id=agent.cohort_id, week_start=week_start
        )
    claimable = Q(status__in=Decision.CLAIMABLE) | Q(
        status=Decision.Status.RUNNING, claimed_at__lt=now - CLAIM_TTL
    )
    claimed = Decision.objects.filter(claimable, pk=decision.pk).update(
        status=Decision.Status.RUNNING, claimed_at=now, tries=F("tries") + 1
    )
    if claimed != 1:
        return None
    decision.refresh_from_db()
    return decision


def _attempt_record(
    *,
    decision: Decision,
    run: DecisionRun,
    messages: list[dict[str, str]],
    reply: Reply | None,
    api_error: str,
    parse_error: str,
    started_at: datetime,
) -> DecisionAttempt:
    number = (decision.attempts.aggregate(n=Max("number"))["n"] or 0) + 1
    return DecisionAttempt.objects.create(
        decision=decision,
        number=number,
        run=run,
        responder=reply.responder if reply else responder_kind(decision.agent.model),
        requested_model=reply.requested_model if reply else decision.agent.model.openrouter_id,
        request_messages=messages,
        raw_response=reply.raw if reply else "",
        response_text=reply.text if reply else "",
        used_reasoning=reply.used_reasoning if reply else False,
        response_model=reply.response_model if reply else "",
        upstream_provider=reply.provider if reply else "",
        finish_reason=reply.finish_reason if reply else "",
        prompt_tokens=reply.prompt_tokens if reply else None,
        completion_tokens=reply.completion_tokens if reply else None,
        reasoning_tokens=reply.reasoning_tokens if reply else None,
        cost_usd=reply.cost if reply else None,
        latency_ms=reply.latency_ms if reply else None,
        api_error=api_error,
        parse_error=parse_error,
        valid=reply is not None and not api_error and not parse_error,
        started_at=started_at,
    )


@dataclass
class DecisionOutcome:
    decision_id: int | None
    status: str
    executed: int = 0
    rejected: int = 0
    notes: list[str] = field(default_factory=list)


def decision_run(*, agent_id: int, run_id: int, now: datetime | None = None) -> DecisionOutcome:
    """Run the agent's decision for the run's week: claim, prompt, call, parse, execute.

    Safe to deliver twice: a repeat finds the row claimed or final and returns. Malformed
    output is retried up to DECISION_PARSE_RETRIES times with the error sent back; still
    invalid → HOLD with the failure recorded. An API failure leaves the row RETRYABLE, and so
    does a BET/SELL in which no trade executed (002).
    """
    now = now or clock.now()
    agent = Agent.objects.select_related("model", "cohort").get(pk=agent_id)
    run = DecisionRun.objects.get(pk=run_id)
    if agent.cohort.status != Cohort.Status.ACTIVE:
        return DecisionOutcome(None, "cohort completed")
    if agent.cohort.week_start > run.week_start:
        return DecisionOutcome(None, "cohort starts after this run's week")
    decision = decision_claim(agent=agent, week_start=run.week_start, now=now)
    if decision is None:
        return DecisionOutcome(None, "already claimed or final")

    if agent_is_bankrupt(agent=agent):
        Decision.objects.filter(pk=decision.pk).update(
            status=Decision.Status.SKIPPED,
            action=Decision.Action.HOLD,
            reasoning="",
            error="Agent is bankrupt (under $50 cash, no open positions): no prompt sent.",
            run=run,
            finished_at=clock.now(),
        )
        return DecisionOutcome(decision.pk, Decision.Status.SKIPPED)

    frozen = FrozenMarkets.load(run)
    positions = list(
        agent.positions.filter(status=Position.Status.OPEN).select_related("market").order_by("pk")
    )
    context = DecisionContext(
        as_of=now,
        week_start=run.week_start,
        cohort_number=agent.cohort.number,
        portfolio=portfolio_view(agent=agent, frozen=frozen, positions=positions),
        markets=frozen.universe,
    )
    messages = build_messages(context)
    kind = responder_kind(agent.model)
    Decision.objects.filter(pk=decision.pk).update(
        run=run,
        responder=kind,
        prompt_version=PROMPT_VERSION,
        system_prompt=messages[0]["content"],
        user_prompt=messages[1]["content"],
        requested_model=agent.model.openrouter_id or agent.model.internal_id,
    )
    position_ids = {str(p.pk) for p in positions}
    parsed: ParsedDecision | None = None
    last_error = ""
    reply: Reply | None = None
    for attempt in range(settings.DECISION_PARSE_RETRIES + 1):
        started = clock.now()
        try:
            reply = _respond(
                model=agent.model,
                kind=kind,
                context=context,
                messages=messages,
                attempt=attempt + 1,
            )
        except OpenRouterError as exc:
            _attempt_record(
                decision=decision, run=run, messages=messages, reply=None,
                api_error=f"{type(exc).__name__}: {exc}", parse_error="", started_at=started,
            )  # fmt: skip
            _decision_finish(
                decision=decision,
                status=Decision.Status.RETRYABLE,
                error=f"model call failed: {type(exc).__name__}: {exc}",
                reply=None,
            )
            return DecisionOutcome(decision.pk, Decision.Status.RETRYABLE, notes=[str(exc)])
        try:
            parsed = parse_decision(reply.text, markets=frozen.views, position_ids=position_ids)
        except DecisionParseError as exc:
            last_error = exc.message
            _attempt_record(
                decision=decision, run=run, messages=messages, reply=reply,
                api_error="", parse_error=last_error, started_at=started,
            )  # fmt: skip
            if attempt < settings.DECISION_PARSE_RETRIES:
                messages = build_retry_messages(
                    context, invalid_response=reply.text, error=last_error
                )
            continue
        _attempt_record(
            decision=decision, run=run, messages=messages, reply=reply,
            api_error="", parse_error="", started_at=started,
        )  # fmt: skip
        break

    if parsed is None:
        _decision_finish(
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
        return DecisionOutcome(decision.pk, Decision.Status.DONE, notes=[last_error])

    outcome = decision_execute(decision=decision, parsed=parsed, frozen=frozen)
    no_trade = parsed.action != "HOLD" and outcome.executed == 0
    _decision_finish(
        decision=decision,
        status=Decision.Status.RETRYABLE if no_trade else Decision.Status.DONE,
        error="no trade of this BET/SELL executed: " + "; ".join(outcome.notes) if no_trade else "",
        reply=reply,
        parsed=parsed,
    )
    outcome.status = Decision.Status.RETRYABLE if no_trade else Decision.Status.DONE
    return outcome


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


def _decision_finish(
    *,
    decision: Decision,
    status: str,
    error: str,
    reply: Reply | None,
    parsed: ParsedDecision | None = None,
    parse_failed: bool = False,
) -> None:
    totals = decision.attempts.aggregate(
        prompt=Sum("prompt_tokens"),
        completion=Sum("completion_tokens"),
        cost=Sum("cost_usd"),
        latency=Sum("latency_ms"),
    )
    Decision.objects.filter(pk=decision.pk).update(
        status=status,
        error=error,
        action=parsed.action if parsed else "",
        reasoning=parsed.reasoning if parsed else "",
        parsed=parsed_json(parsed) if parsed else None,
        parse_failed=parse_failed,
        response_model=reply.response_model if reply else "",
        upstream_provider=reply.provider if reply else "",
        prompt_tokens=totals["prompt"],
        completion_tokens=totals["completion"],
        cost_usd=totals["cost"],
        latency_ms=totals["latency"],
        finished_at=clock.now(),
    )


# -------------------------------------------------------------------------------- trades


def decision_execute(
    *, decision: Decision, parsed: ParsedDecision, frozen: FrozenMarkets
) -> DecisionOutcome:
    """Execute the decision's orders in order, one transaction per trade. Each bet is checked
    against 25% of the cash at that moment, so a later bet can fail after earlier ones spent."""
    outcome = DecisionOutcome(decision.pk, "")
    try_number = decision.tries
    orders: list[BetOrder | SellOrder] = (
        list(parsed.bets)
        if parsed.action == "BET"
        else list(parsed.sells)
        if parsed.action == "SELL"
        else []
    )
    for index, order in enumerate(orders):
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
            outcome.rejected += 1
            outcome.notes.append(str(exc))
            trade_reject(
                decision=decision, order=order, reason=str(exc), index=index, try_number=try_number
            )
    return outcome


def agent_is_bankrupt(*, agent: Agent) -> bool:
    """Mark and report an agent with under $50 cash and no open positions as bankrupt; it
    stays bankrupt for its cohort."""
    if agent.status == Agent.Status.BANKRUPT:
        return True
    if agent.cash >= money.MIN_BET or agent.positions.filter(status=Position.Status.OPEN).exists():
        return False
    Agent.objects.filter(pk=agent.pk).update(status=Agent.Status.BANKRUPT)
    agent.status = Agent.Status.BANKRUPT
    return True


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


def agents_due(*, week_start: date, cohort_id: int | None = None) -> list[int]:
    """Return the agents of active cohorts (started by `week_start`) still owing a decision for
    the week, cohort by cohort, lineup order within a cohort."""
    agents = Agent.objects.filter(
        cohort__status=Cohort.Status.ACTIVE, cohort__week_start__lte=week_start
    ).exclude(
        decisions__week_start=week_start,
        decisions__status__in=[Decision.Status.DONE, Decision.Status.SKIPPED],
    )
    if cohort_id is not None:
        agents = agents.filter(cohort_id=cohort_id)
    return list(
        agents.order_by("cohort__week_start", "-model__kind", "model__display_order").values_list(
            "pk", flat=True
        )
    )


def run_open(
    *, now: datetime | None = None, cohort_id: int | None = None, source: MarketSource | None = None
) -> tuple[DecisionRun | None, list[int]]:
    """Freeze a snapshot for the agents that owe this week's decision; return the run and
    those agents in order, or (None, []) when nobody owes one."""
    now = now or clock.now()
    if not agents_due(week_start=cohort_week_start(now), cohort_id=cohort_id):
        return None, []
    run = run_prepare(now=now, source=source)
    return run, agents_due(week_start=run.week_start, cohort_id=cohort_id)


def run_finish(*, run_id: int) -> None:
    DecisionRun.objects.filter(pk=run_id, finished_at__isnull=True).update(finished_at=clock.now())


def decisions_run_all(
    *, now: datetime | None = None, cohort_id: int | None = None, source: MarketSource | None = None
) -> RunReport:
    """Prepare one frozen snapshot, then run every due agent's decision, one after another."""
    run, agent_ids = run_open(now=now, cohort_id=cohort_id, source=source)
    if run is None:
        return RunReport(None)
    report = RunReport(run.pk)
    for agent_id in agent_ids:
        report.outcomes.append(decision_run(agent_id=agent_id, run_id=run.pk, now=now))
    run_finish(run_id=run.pk)
    return report


def decision_retry(*, decision_id: int, source: MarketSource | None = None) -> DecisionOutcome:
    """Run a RETRYABLE decision again now, on a freshly frozen snapshot for its week.
    Raise DecisionNotRetryable for a final decision or one a live claim holds."""
    decision = Decision.objects.select_related("agent").get(pk=decision_id)
    if decision.status != Decision.Status.RETRYABLE:
        raise DecisionNotRetryable(f"decision {decision_id} is {decision.status}, not retryable")
    run = run_prepare(source=source, week_start=decision.week_start)
    outcome = decision_run(agent_id=decision.agent_id, run_id=run.pk)
    run_finish(run_id=run.pk)
    return outcome
