"""Writes of the arena: cohorts, decision runs, decisions, trades.

Network calls (Gamma, OpenRouter) happen outside every transaction; each write is a short
`transaction.atomic`. Idempotency rests on unique constraints: one cohort per week start,
one decision per (agent, cohort, week) claimed by a conditional UPDATE before any call.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Avg, Count, F, Max, Q, QuerySet, Sum

from agents import offline
from agents.clients import OpenRouterClient, OpenRouterError
from agents.exceptions import DecisionParseError
from agents.models import BenchmarkModel
from agents.parsing import parse_decision
from agents.prompts import PROMPT_VERSION, build_messages, build_retry_messages
from agents.types import (
    BetOrder,
    DecisionContext,
    MarketView,
    ParsedDecision,
    PortfolioView,
    PositionView,
    SellOrder,
)
from arena import clock, money
from arena.exceptions import DecisionNotRetryable, TradeRejected
from arena.models import (
    STARTING_BALANCE,
    Agent,
    Cohort,
    Decision,
    DecisionAttempt,
    DecisionRun,
    DeterminismCheck,
    PortfolioSnapshot,
    Position,
    SnapshotMarket,
    SnapshotTick,
    Trade,
)
from markets import services as market_services
from markets.exceptions import GammaUnavailable
from markets.models import Market
from markets.parsing import parse_markets
from markets.resolution import Verdict, verdict_for_record
from markets.sources import MarketSource, market_source
from scoring.brier import bet_brier_for_outcome, implied_confidence

logger = logging.getLogger(__name__)

# A claim older than this belongs to a worker that died; the row may be claimed again.
CLAIM_TTL = timedelta(minutes=30)


# ---------------------------------------------------------------------------------- cohorts


def cohort_week_start(now: datetime | None = None) -> date:
    """Return the Sunday (UTC) of the week containing `now`: the cohort's week start."""
    moment = (now or clock.now()).astimezone(UTC)
    day = moment.date()
    return day - timedelta(days=(day.weekday() + 1) % 7)


def cohort_start(
    *, week_start: date | None = None, now: datetime | None = None
) -> tuple[Cohort, bool]:
    """Start the cohort of `week_start` (default: this week) with one agent per active lineup
    model, $10,000 each. Return (cohort, created); a repeat returns the existing cohort and
    False. The unique week start makes a concurrent start a no-op too."""
    now = now or clock.now()
    week_start = week_start or cohort_week_start(now)
    if week_start.weekday() != 6:
        raise ValueError(f"{week_start} is not a Sunday: cohorts start on Sunday 00:00 UTC")
    existing = Cohort.objects.filter(week_start=week_start).first()
    if existing:
        return existing, False
    started_at = datetime(week_start.year, week_start.month, week_start.day, tzinfo=UTC)
    try:
        with transaction.atomic():
            number = (Cohort.objects.aggregate(n=Max("number"))["n"] or 0) + 1
            cohort = Cohort.objects.create(
                number=number, week_start=week_start, started_at=min(started_at, now)
            )
            Agent.objects.bulk_create(
                Agent(cohort=cohort, model=model, cash=STARTING_BALANCE)
                for model in BenchmarkModel.objects.filter(active=True)
            )
    except IntegrityError:
        return Cohort.objects.get(week_start=week_start), False
    logger.info("started %s with %d agents", cohort, cohort.agents.count())
    return cohort, True


# ---------------------------------------------------------------------- the frozen snapshot


def _held_market_ids() -> set[str]:
    return set(
        Position.objects.filter(status=Position.Status.OPEN, agent__cohort__status="active")
        .values_list("market__polymarket_id", flat=True)
        .order_by()  # the model's default ordering would widen the DISTINCT to every row
        .distinct()
    )


def run_prepare(
    *,
    now: datetime | None = None,
    source: MarketSource | None = None,
    week_start: date | None = None,
) -> DecisionRun:
    """Refresh the top markets and the markets agents hold, then freeze them as one snapshot
    that every decision of the run sees. A failed refresh freezes the catalogue as it stands
    and says so in `sync_summary`."""
    now = now or clock.now()
    source = source or market_source()
    limit = settings.MARKET_UNIVERSE_SIZE
    result = market_services.markets_sync_top(limit=limit, source=source)  # network, no txn
    held = _held_market_ids()
    refresh = market_services.markets_refresh(polymarket_ids=held, source=source)
    summary = result.summary() + ("" if refresh.ok else f"; held refresh failed: {refresh.error}")
    if result.ok:
        universe_ids = [m.polymarket_id for m in result.markets[:limit]]
    else:
        universe_ids = list(
            Market.objects.filter(resolution=Market.Resolution.OPEN, closed=False, active=True)
            .order_by("-volume")
            .values_list("polymarket_id", flat=True)[:limit]
        )
    with transaction.atomic():
        run = DecisionRun.objects.create(
            week_start=week_start or cohort_week_start(now),
            started_at=now,
            source=source.name,
            universe_size=len(universe_ids),
            sync_summary=summary,
        )
        markets = Market.objects.defer("raw", "description").in_bulk(
            set(universe_ids) | held, field_name="polymarket_id"
        )
        rank = {pid: i for i, pid in enumerate(universe_ids, start=1)}
        SnapshotMarket.objects.bulk_create(
            [
                SnapshotMarket(
                    run=run,
                    market=market,
                    rank=rank.get(pid),
                    polymarket_id=pid,
                    question=market.question,
                    category=market.category,
                    outcomes=market.outcomes,
                    outcome_prices=market.outcome_prices,
                    volume=market.volume,
                    close_date=market.close_date,
                    closed=market.closed or market.resolution != Market.Resolution.OPEN,
                )
                for pid, market in markets.items()
            ],
            batch_size=1000,
        )
    return run


def _view(row: SnapshotMarket) -> MarketView:
    return MarketView(
        market_id=row.polymarket_id,
        question=row.question,
        category=row.category,
        outcomes=tuple(str(o) for o in row.outcomes),
        prices=tuple(Decimal(p) if p is not None else None for p in row.outcome_prices),
        volume=row.volume,
        close_date=row.close_date,
    )


@dataclass
class FrozenMarkets:
    """A run's snapshot in memory: views by Polymarket id, the universe in rank order."""

    run: DecisionRun
    rows: dict[str, SnapshotMarket]
    views: dict[str, MarketView]
    universe: tuple[MarketView, ...]

    @classmethod
    def load(cls, run: DecisionRun) -> FrozenMarkets:
        """Return the run's snapshot; a run's snapshot never changes, so it is read once per
        process and shared by the run's decisions."""
        cached = _FROZEN_CACHE.get(run.pk)
        if cached is not None and cached.run.started_at == run.started_at:
            return cached
        rows = {r.polymarket_id: r for r in run.markets.all()}
        views = {pid: _view(row) for pid, row in rows.items()}
        ranked = sorted((r for r in rows.values() if r.rank), key=lambda r: r.rank or 0)
        frozen = cls(run, rows, views, tuple(views[r.polymarket_id] for r in ranked))
        _FROZEN_CACHE.clear()  # keep one run: a process works through one run at a time
        _FROZEN_CACHE[run.pk] = frozen
        return frozen


_FROZEN_CACHE: dict[int, FrozenMarkets] = {}


def side_price(view: MarketView, side: str) -> Decimal | None:
    """Return the side-correct price: YES the stored price, NO 1 − it, an outcome its own."""
    if view.is_binary:
        yes = view.yes_price
        if yes is None or side not in ("YES", "NO"):
            return None
        return yes if side == "YES" else money.price(Decimal(1) - yes)
    for outcome, price in zip(view.outcomes, view.prices, strict=False):
        if outcome == side:
            return price
    return None


def outcome_index(view: MarketView, side: str) -> int:
    if view.is_binary:
        return 0 if side == "YES" else 1
    return list(view.outcomes).index(side)


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


def _parsed_json(parsed: ParsedDecision) -> dict[str, Any]:
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
        parsed=_parsed_json(parsed) if parsed else None,
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


def trade_reject(
    *, decision: Decision, order: BetOrder | SellOrder, reason: str, index: int, try_number: int
) -> Trade:
    """Record an order that could not execute, with its reason and inputs."""
    is_bet = isinstance(order, BetOrder)
    market = (
        Market.objects.filter(polymarket_id=order.market_id).first()
        if isinstance(order, BetOrder)
        else None
    )
    position = (
        Position.objects.filter(pk=order.position_id, agent_id=decision.agent_id).first()
        if isinstance(order, SellOrder) and order.position_id.isdigit()
        else None
    )
    return Trade.objects.create(
        decision=decision,
        agent_id=decision.agent_id,
        order_index=index,
        try_number=try_number,
        kind=Trade.Kind.BUY if is_bet else Trade.Kind.SELL,
        status=Trade.Status.REJECTED,
        reject_reason=reason,
        market=market or (position.market if position else None),
        position=position,
        requested_market_id=order.market_id if isinstance(order, BetOrder) else "",
        requested_position_id=order.position_id if isinstance(order, SellOrder) else "",
        side=order.side if isinstance(order, BetOrder) else (position.side if position else ""),
        requested_amount=money.cents_down(order.amount)
        if isinstance(order, BetOrder) and order.amount <= money.MAX_STORABLE
        else None,
        requested_percentage=order.percentage if isinstance(order, SellOrder) else None,
        created_at=clock.now(),
    )


def trade_buy(
    *, decision: Decision, order: BetOrder, frozen: FrozenMarkets, index: int, try_number: int = 1
) -> Trade:
    """Buy `order.amount` USD of a side at the frozen side-correct price, or raise TradeRejected.

    Rules (002): amount ≥ $50 and ≤ 25% of cash now; a usable price strictly between 0 and 1;
    the market open; shares = amount / price (rounded down); one open position per market and
    side — a second bet adds shares and cost basis. Stores the bet's implied confidence.
    """
    view = frozen.views.get(order.market_id)
    row = frozen.rows.get(order.market_id)
    if view is None or row is None:
        raise TradeRejected(f"unknown market {order.market_id}: not in this run's snapshot")
    amount = money.cents_down(order.amount)
    if amount < money.MIN_BET:
        raise TradeRejected(f"bet ${amount} is under the ${money.MIN_BET} minimum")
    price = side_price(view, order.side)
    if price is None:
        raise TradeRejected(f"no price for {order.side} in market {order.market_id}")
    if price <= 0 or price >= 1:
        raise TradeRejected(f"price {price} of {order.side} leaves nothing to trade (0 or 1)")
    now = clock.now()
    with transaction.atomic():
        agent = Agent.objects.select_for_update().get(pk=decision.agent_id)
        market = Market.objects.get(pk=row.market_id)
        if row.closed or market.closed or market.resolution != Market.Resolution.OPEN:
            raise TradeRejected(f"market {order.market_id} is closed")
        max_bet = money.cents_down(agent.cash * money.MAX_BET_FRACTION)
        if amount > agent.cash:
            raise TradeRejected(f"bet ${amount} is more than the ${agent.cash} cash left")
        if amount > max_bet:
            raise TradeRejected(f"bet ${amount} is over 25% of cash (max ${max_bet})")
        shares = money.shares_down(amount / price)
        if shares <= 0:
            raise TradeRejected("bet buys no shares")
        cash_before = agent.cash
        # Plain values computed from the locked row, never F() arithmetic: SQLite would do
        # it in binary floating point and drift off the cent.
        debited = Agent.objects.filter(pk=agent.pk, cash__gte=amount).update(
            cash=cash_before - amount
        )
        if debited != 1:
            raise TradeRejected(f"bet ${amount} is more than the cash left")
        position = (
            Position.objects.select_for_update()
            .filter(agent=agent, market=market, side=order.side, status=Position.Status.OPEN)
            .first()
        )
        if position:
            Position.objects.filter(pk=position.pk).update(
                shares=position.shares + shares,
                cost_basis=position.cost_basis + amount,
                last_price=price,
            )
        else:
            position = Position.objects.create(
                agent=agent,
                market=market,
                side=order.side,
                outcome_index=outcome_index(view, order.side),
                shares=shares,
                cost_basis=amount,
                last_price=price,
                opened_at=now,
            )
        return Trade.objects.create(
            decision=decision,
            agent=agent,
            order_index=index,
            try_number=try_number,
            kind=Trade.Kind.BUY,
            status=Trade.Status.EXECUTED,
            market=market,
            position=position,
            requested_market_id=order.market_id,
            side=order.side,
            requested_amount=amount,
            price=price,
            shares=shares,
            amount=amount,
            cash_before=cash_before,
            cash_after=cash_before - amount,
            implied_confidence=implied_confidence(
                amount=float(amount), cash_before=float(cash_before)
            ),
            created_at=now,
        )


def trade_sell(
    *, decision: Decision, order: SellOrder, frozen: FrozenMarkets, index: int, try_number: int = 1
) -> Trade:
    """Sell `order.percentage` of a held position at the frozen side-correct price, or raise
    TradeRejected. Proceeds (rounded down) go to cash; cost basis falls proportionally
    (released rounded up); 100% closes the position."""
    now = clock.now()
    with transaction.atomic():
        position = (
            Position.objects.select_for_update()
            .select_related("market")
            .filter(
                pk=order.position_id if order.position_id.isdigit() else -1,
                agent_id=decision.agent_id,
            )
            .first()
        )
        if position is None or position.status != Position.Status.OPEN:
            raise TradeRejected(f"position {order.position_id} is not held by this agent")
        market = position.market
        if market.closed or market.resolution != Market.Resolution.OPEN:
            raise TradeRejected(f"market {market.polymarket_id} is closed")
        view = frozen.views.get(market.polymarket_id)
        price = side_price(view, position.side) if view else None
        if price is None:
            raise TradeRejected(f"no price for {position.side} in market {market.polymarket_id}")
        fraction = order.percentage / Decimal(100)
        full = order.percentage >= 100
        shares_sold = position.shares if full else money.shares_down(position.shares * fraction)
        if shares_sold <= 0:
            raise TradeRejected("sell of 0 shares")
        proceeds = money.cents_down(shares_sold * price)
        released = (
            position.cost_basis
            if full
            else min(
                money.cents_up(position.cost_basis * shares_sold / position.shares),
                position.cost_basis,
            )
        )
        realized = proceeds - released
        agent = Agent.objects.select_for_update().get(pk=decision.agent_id)
        cash_before = agent.cash
        Agent.objects.filter(pk=agent.pk).update(cash=cash_before + proceeds)
        remaining = position.shares - shares_sold
        Position.objects.filter(pk=position.pk).update(
            shares=remaining,
            cost_basis=position.cost_basis - released,
            realized_pnl=position.realized_pnl + realized,
            last_price=price,
            status=Position.Status.OPEN if remaining > 0 else Position.Status.CLOSED,
            closed_at=None if remaining > 0 else now,
        )
        return Trade.objects.create(
            decision=decision,
            agent=agent,
            order_index=index,
            try_number=try_number,
            kind=Trade.Kind.SELL,
            status=Trade.Status.EXECUTED,
            market=market,
            position=position,
            requested_position_id=order.position_id,
            side=position.side,
            requested_percentage=order.percentage,
            price=price,
            shares=shares_sold,
            amount=proceeds,
            cash_before=cash_before,
            cash_after=cash_before + proceeds,
            cost_basis_released=released,
            realized_pnl=realized,
            created_at=now,
        )


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


# ------------------------------------------------------------------ mark to market (002)

SNAPSHOT_SLOT = timedelta(minutes=10)


def snapshot_slot(now: datetime) -> datetime:
    """Return the 10-minute slot `now` falls in (UTC, floored)."""
    moment = now.astimezone(UTC)
    return moment.replace(minute=moment.minute - moment.minute % 10, second=0, microsecond=0)


def _price_at(prices: list[Any], *, side: str, index: int, binary: bool) -> Decimal | None:
    if binary:
        if not prices or prices[0] is None:
            return None
        yes = Decimal(str(prices[0]))
        return yes if index == 0 else Decimal(1) - yes
    if index >= len(prices) or prices[index] is None:
        return None
    return Decimal(str(prices[index]))


def position_mark(
    *,
    side: str,
    index: int,
    outcomes: list[Any],
    prices: list[Any],
    last_open_prices: list[Any],
    closed: bool,
    last_price: Decimal | None,
    shares: Decimal,
    cost_basis: Decimal,
) -> Decimal:
    """Return a position's side-correct valuation price.

    YES: the YES price; NO: 1 − YES; an outcome: its own price. When the market has no
    usable price — none reported, or closed and unresolved with a price at 0 — the
    position keeps the price the market had when last open, else its last trade price, else
    its average entry, rather than collapsing to zero (002).
    """
    binary = [str(o).lower() for o in outcomes] == ["yes", "no"]
    # Usable or not is decided for the whole market, so both sides of a pair stay
    # consistent: a closed, unresolved market with a missing or zero price has none (a
    # zero would wipe a position out before the resolution says so).
    usable = bool(prices) and not (
        closed and any(p is None or Decimal(str(p)) == 0 for p in prices)
    )
    price = _price_at(prices, side=side, index=index, binary=binary) if usable else None
    if price is not None:
        return price
    fallback = _price_at(last_open_prices, side=side, index=index, binary=binary)
    if fallback is not None:
        return fallback
    if last_price is not None:
        return last_price
    return cost_basis / shares if shares else Decimal(0)


def positions_value_by_agent(positions: QuerySet[Position]) -> dict[int, Decimal]:
    """Return Σ shares × side-correct mark price per agent for `positions` (two queries:
    the positions, then each of their markets once)."""
    rows = list(
        positions.order_by().values_list(
            "agent_id", "market_id", "outcome_index", "side", "shares", "cost_basis", "last_price"
        )
    )
    markets = {
        pk: (outcomes, prices, last_open, closed)
        for pk, outcomes, prices, last_open, closed in Market.objects.filter(
            pk__in={row[1] for row in rows}
        )
        .order_by()
        .values_list("pk", "outcomes", "outcome_prices", "last_open_prices", "closed")
    }
    values: dict[int, Decimal] = {}
    for agent_id, market_id, index, side, shares, cost, last_price in rows:
        outcomes, prices, last_open, closed = markets[market_id]
        price = position_mark(
            side=side, index=index, outcomes=outcomes, prices=prices,
            last_open_prices=last_open, closed=closed, last_price=last_price,
            shares=shares, cost_basis=cost,
        )  # fmt: skip
        values[agent_id] = values.get(agent_id, Decimal(0)) + shares * price
    return values


@dataclass
class TickReport:
    slot: datetime
    written: int = 0
    refreshed: int = 0
    refresh_error: str = ""
    skipped: bool = False

    def summary(self) -> str:
        if self.skipped:
            return f"slot {self.slot:%Y-%m-%d %H:%M} already snapshotted: nothing written"
        stale = f" (price refresh failed: {self.refresh_error})" if self.refresh_error else ""
        return (
            f"slot {self.slot:%Y-%m-%d %H:%M}: {self.written} snapshots, "
            f"{self.refreshed} markets refreshed{stale}"
        )


def portfolio_snapshots_write(
    *, cohorts: QuerySet[Cohort], at: datetime, stale: bool = False
) -> int:
    """Write one snapshot per agent of `cohorts` stamped `at`, valued at the stored prices;
    return how many. A constant number of queries whatever the number of agents or
    positions. An (agent, timestamp) already written is left as it is."""
    agents = list(
        Agent.objects.filter(cohort__in=cohorts)
        .order_by()
        .values_list("pk", "cash", "cohort__starting_balance")
    )
    values = positions_value_by_agent(
        Position.objects.filter(status=Position.Status.OPEN, agent__cohort__in=cohorts)
    )
    brier = {
        row["agent_id"]: (row["mean"], row["n"])
        for row in Trade.objects.filter(
            kind=Trade.Kind.BUY,
            status=Trade.Status.EXECUTED,
            brier_score__isnull=False,
            agent__cohort__in=cohorts,
        )
        .values("agent_id")
        .annotate(mean=Avg("brier_score"), n=Count("pk"))
        .order_by()
    }
    snapshots = []
    for agent_id, cash, starting in agents:
        positions_value = money.cents_down(values.get(agent_id, Decimal(0)))
        total = cash + positions_value
        mean, count = brier.get(agent_id, (None, 0))
        snapshots.append(
            PortfolioSnapshot(
                agent_id=agent_id,
                snapshot_timestamp=at,
                cash=cash,
                positions_value=positions_value,
                total_value=total,
                total_pnl=total - starting,
                total_pnl_percent=((total - starting) / starting * 100).quantize(Decimal("0.0001")),
                brier_score=mean,
                resolved_bets=count,
                prices_stale=stale,
            )
        )
    PortfolioSnapshot.objects.bulk_create(snapshots, ignore_conflicts=True, batch_size=2000)
    return len(snapshots)


def snapshots_take(
    *, now: datetime | None = None, source: MarketSource | None = None, refresh: bool = True
) -> TickReport:
    """Refresh the prices of every held market, then snapshot every agent of every active
    cohort at this 10-minute slot. A repeat for the same slot writes nothing. A failed
    refresh still snapshots, at the last known prices, and says so. Queries do not grow
    with the number of agents or positions."""
    now = now or clock.now()
    report = TickReport(slot=snapshot_slot(now))
    if SnapshotTick.objects.filter(slot=report.slot).exists():
        report.skipped = True
        return report
    if refresh:
        held = _held_market_ids()
        result = market_services.markets_refresh(polymarket_ids=held, source=source)  # network
        report.refreshed = len(result.markets)
        report.refresh_error = result.error
    with transaction.atomic():
        _, created = SnapshotTick.objects.get_or_create(
            slot=report.slot,
            defaults={"refresh_error": report.refresh_error, "markets_refreshed": report.refreshed},
        )
        if not created:
            report.skipped = True
            return report
        report.written = portfolio_snapshots_write(
            cohorts=Cohort.objects.filter(status=Cohort.Status.ACTIVE),
            at=report.slot,
            stale=bool(report.refresh_error),
        )
        SnapshotTick.objects.filter(slot=report.slot).update(snapshots_written=report.written)
    return report


# ------------------------------------------------------------- resolution and settlement


@dataclass
class ResolutionReport:
    checked: int = 0
    resolved: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    completed_cohorts: list[int] = field(default_factory=list)
    error: str = ""

    def summary(self) -> str:
        if self.error:
            return f"resolution check failed, nothing settled: {self.error}"
        return (
            f"checked {self.checked} markets: {len(self.resolved)} resolved, "
            f"{len(self.cancelled)} cancelled (refunded), {len(self.failed)} failed to settle; "
            f"{len(self.completed_cohorts)} cohorts completed"
        )


def market_settle(*, polymarket_id: str, verdict: Verdict, now: datetime | None = None) -> bool:
    """Settle every open position in the market and mark it resolved or cancelled, in one
    transaction: the market is marked only if its settlement succeeds (002). Resolved: a
    winning share pays $1, a losing one $0, and every bet placed in the market gets its Brier
    score from its implied confidence. Cancelled: each position is refunded its cost basis,
    no Brier. Return False when there was nothing to do (already settled)."""
    now = now or clock.now()
    with transaction.atomic():
        market = Market.objects.select_for_update().get(polymarket_id=polymarket_id)
        if market.resolution != Market.Resolution.OPEN:
            return False
        resolved = verdict.state == "resolved"
        positions = list(
            Position.objects.select_for_update().filter(market=market, status=Position.Status.OPEN)
        )
        payouts: dict[int, Decimal] = {}
        for position in positions:
            if resolved:
                won = position.outcome_index == verdict.winning_index
                payout = money.cents_down(position.shares) if won else Decimal("0.00")
                position.status = Position.Status.SETTLED
            else:
                payout = position.cost_basis
                position.status = Position.Status.CANCELLED
            position.settlement_value = payout
            position.realized_pnl = position.realized_pnl + payout - position.cost_basis
            position.closed_at = now
            payouts[position.agent_id] = payouts.get(position.agent_id, Decimal(0)) + payout
        Position.objects.bulk_update(
            positions, ["status", "settlement_value", "realized_pnl", "closed_at"]
        )
        for agent in Agent.objects.select_for_update().filter(pk__in=payouts):
            if payouts[agent.pk]:
                Agent.objects.filter(pk=agent.pk).update(cash=agent.cash + payouts[agent.pk])
        if resolved:
            bets = list(
                Trade.objects.select_related("position").filter(
                    market=market, kind=Trade.Kind.BUY, status=Trade.Status.EXECUTED
                )
            )
            for bet in bets:
                won = (
                    bet.position is not None and bet.position.outcome_index == verdict.winning_index
                )
                bet.side_won = won
                bet.brier_score = bet_brier_for_outcome(
                    confidence=bet.implied_confidence or 0.0, side_won=won
                )
                bet.scored_at = now
            Trade.objects.bulk_update(bets, ["side_won", "brier_score", "scored_at"])
        market.resolution = Market.Resolution.RESOLVED if resolved else Market.Resolution.CANCELLED
        market.winning_outcome = verdict.winning_outcome or "" if resolved else ""
        market.resolved_at = now
        market.resolution_note = verdict.reason
        market.save(
            update_fields=["resolution", "winning_outcome", "resolved_at", "resolution_note"]
        )
    return True


def cohorts_complete(*, now: datetime | None = None) -> list[int]:
    """Complete every active cohort that has decided at least once and holds no open
    position; its final return is then fixed. Return the completed cohort numbers."""
    now = now or clock.now()
    done = list(
        Cohort.objects.filter(status=Cohort.Status.ACTIVE, decisions__status=Decision.Status.DONE)
        .exclude(agents__positions__status=Position.Status.OPEN)
        .distinct()
        .values_list("pk", "number")
    )
    if done:
        with transaction.atomic():
            finishing = Cohort.objects.filter(
                pk__in=[pk for pk, _ in done], status=Cohort.Status.ACTIVE
            )
            # The curve ends at the final, all-cash value: later ticks skip completed cohorts.
            portfolio_snapshots_write(cohorts=finishing, at=now)
            finishing.update(status=Cohort.Status.COMPLETED, completed_at=now)
    return [number for _, number in done]


def resolutions_check(
    *, now: datetime | None = None, source: MarketSource | None = None
) -> ResolutionReport:
    """Ask the market source about every market in which positions are open; settle those
    that resolved (or refund those resolved without a determinable winner); then complete
    the cohorts that hold nothing more. A failed fetch settles nothing and says why; a
    failed settlement leaves its market open for the next check."""
    now = now or clock.now()
    source = source or market_source()
    report = ResolutionReport()
    ids = sorted(
        set(
            Position.objects.filter(
                status=Position.Status.OPEN, market__resolution=Market.Resolution.OPEN
            )
            .values_list("market__polymarket_id", flat=True)
            .order_by()
            .distinct()
        )
    )
    report.checked = len(ids)
    if ids:
        try:
            records = source.fetch_markets_by_ids(ids)  # network, no transaction open
        except GammaUnavailable as exc:
            report.error = str(exc)
            return report
        batch = parse_markets(records)
        market_services.markets_upsert(
            markets=[m for m in batch.markets if m.polymarket_id in ids], include_raw=False
        )
        for record in records:
            if not isinstance(record, dict) or str(record.get("id")) not in ids:
                continue
            verdict = verdict_for_record(record, now=now)
            if verdict.state == "open":
                continue
            pid = str(record["id"])
            try:
                if market_settle(polymarket_id=pid, verdict=verdict, now=now):
                    (report.resolved if verdict.state == "resolved" else report.cancelled).append(
                        pid
                    )
            except Exception:  # a failed settlement must not stop the others
                logger.exception("settling market %s failed; the next check retries it", pid)
                report.failed.append(pid)
    report.completed_cohorts = cohorts_complete(now=now)
    return report


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
    _random.Random(seed).shuffle(candidates)
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
        check.repeated = _parsed_json(parsed)
        original = dict(decision.parsed or {})
        check.matches = {k: v for k, v in check.repeated.items() if k != "reasoning"} == {
            k: v for k, v in original.items() if k != "reasoning"
        }
    check.save()
    return check
