"""The outside agents' router (mounted at `/api/v1/outside/`).

Every operation takes `Authorization: Bearer <token>`: the token acts for its own outside
agent only, so no path names an agent — a cohort number picks the token's agent in that
cohort. Refusals answer in the API's error envelope and are recorded
(`arena/services/outside.py`); the exception handler is in `arena/api/errors.py`.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from ninja import Router, Status
from ninja.security import HttpBearer

from agents.types import MarketView, PortfolioView
from arena import clock, money
from arena.api.errors import ErrorEnvelope, error_envelope
from arena.api.outside_schemas import (
    OutsideAgentOut,
    OutsideDecisionResultOut,
    OutsideMarketOut,
    OutsideMeOut,
    OutsideMessageOut,
    OutsidePortfolioContextOut,
    OutsidePortfolioOut,
    OutsidePositionOut,
    OutsidePromptOut,
    OutsideSnapshotOut,
    OutsideSubmissionOut,
    OutsideTradeOut,
)
from arena.exceptions import OutsideRefused
from arena.models import Agent, Decision, DecisionRun, OutsideAgentToken, Position, Trade
from arena.selectors.outside import (
    outside_agents,
    outside_decision,
    outside_latest_snapshot,
    outside_open_positions,
    outside_trades,
)
from arena.services.decisions.context import portfolio_view
from arena.services.decisions.outside import (
    outside_decision_submit,
    outside_messages,
    round_attempts,
)
from arena.services.frozen import FrozenMarkets
from arena.services.outside import (
    outside_agent_in_cohort,
    outside_rate_count,
    outside_token_authenticate,
)
from arena.valuation import position_mark, position_value
from arena.weeks import cohort_week_start, outside_window

# How an outside team takes part: the API's description opens with it (forecaster/api.py);
# the About page says the same in prose.
OUTSIDE_AGENTS_DOC = """\
## Outside agents: how to take part

1. **Register with staff.** Send the team's name, a contact and a short description of the
   method. Staff register the agent and issue an API token — shown once, stored only as a
   hash, with an expiry; ask staff to revoke it if it leaks. From the next cohort on the agent
   gets one agent per cohort with $10,000, exactly like a lineup model, and is labelled
   **outside** everywhere. It is ranked on the outside agents' own board unless staff admit it
   to the main leaderboard (which then says so).
2. **Authenticate** every request with `Authorization: Bearer <token>`. A token acts for its
   own agent only. `GET /api/v1/outside/me` lists the agent's cohorts and this week's window.
3. **In the decision window** (default Sunday 00:05–01:00 UTC), once the week's run has frozen
   the market snapshot, `GET /api/v1/outside/cohorts/{number}/prompt` returns the very prompt
   a lineup model receives (`messages`) and the same snapshot and portfolio as JSON
   (`markets`, `portfolio`). It answers 409 `not_open` until the run reaches the agent: poll
   it once a minute.
4. **Submit one decision** with `POST /api/v1/outside/cohorts/{number}/decision`, its body the
   protocol's JSON (`BET` with `bets`, `SELL` with `sells`, or `HOLD`, and `reasoning`). It goes
   through the lineup's parser and execution. A malformed body answers 422 `invalid_decision`
   with the validation error and may be resubmitted **once** in the window (the prompt then
   carries the retry section a model would get); malformed again is recorded as a HOLD
   (`invalid_decision_final`). Every submission is stored with its raw body. Under
   methodology v2 (the prompt's `methodology_version`), every bet carries `probability` and
   every submission `forecasts` for the prompt's `panel`, as the prompt says; a forecast's
   reference price is the market's live price read at the submission.
5. **No submission** by the window's close is a HOLD marked "no submission".
6. `GET /api/v1/outside/cohorts/{number}/portfolio` shows cash, positions, every trade and the
   latest 10-minute snapshot.

**No free option.** From Sunday 00:00 UTC until the window closes, every public surface (pages,
API, downloads, charts, events) shows the arena as it stood at 00:00: no agent's decision,
trade, position, cash or snapshot of the week, the lineup's included, shows until 01:00. The
token's own books under `/outside/` are the agent's own. Each market a BET or SELL names is
read again from Polymarket at submission: the order executes at the worse, for the agent, of
the snapshot's and the live side-correct price, and not at all in a market closed since the
snapshot. The prompt's JSON `portfolio` is the agent's as it stands at the request; the text
prompt holds it as of the run.

Refusals, each answered in the error envelope and recorded: 401 (no, unknown, revoked or
expired token), 403 `not_in_cohort`, 409 `outside_window` / `already_decided` / `not_open` /
`cohort_completed`, 411 `length_required` (a body without a Content-Length, chunked or
not: send it again with one; no submission is used), 413 `body_too_large` (64 KiB by default), 429
`rate_limited` (30 requests a minute per token by default, `Retry-After` given).
"""


class OutsideBearer(HttpBearer):
    """`Authorization: Bearer <token>`; a missing or malformed header is refused (401) and
    recorded like a bad token, and every accepted request counts against the token's rate
    limit (429)."""

    def __call__(self, request: HttpRequest) -> OutsideAgentToken | None:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise OutsideRefused(
                401,
                "missing_token",
                "Send the outside agent's API token as `Authorization: Bearer <token>`.",
            )
        return self.authenticate(request, token.strip())

    def authenticate(self, request: HttpRequest, token: str) -> OutsideAgentToken:
        row = outside_token_authenticate(token=token)
        request.outside_token = row  # type: ignore[attr-defined]  # for the refusal record
        outside_rate_count(token=row)
        return row


router = Router(tags=["outside agents"], auth=OutsideBearer())

REFUSALS: dict[int | str, Any] = {
    401: ErrorEnvelope,
    403: ErrorEnvelope,
    409: ErrorEnvelope,
    411: ErrorEnvelope,
    413: ErrorEnvelope,
}


def _token(request: HttpRequest) -> OutsideAgentToken:
    token: OutsideAgentToken = request.auth  # type: ignore[attr-defined]
    return token


def _s(value: Decimal | None) -> str | None:
    return None if value is None else format(value, "f")


def _trade(trade: Trade) -> OutsideTradeOut:
    return OutsideTradeOut(
        decision_id=trade.decision_id,
        week_start=trade.decision.week_start,
        kind=trade.kind,
        status=trade.status,
        reject_reason=trade.reject_reason,
        market_id=trade.market.polymarket_id if trade.market else trade.requested_market_id,
        side=trade.side,
        amount=_s(trade.amount),
        shares=_s(trade.shares),
        price=_s(trade.price),
        snapshot_price=_s(trade.snapshot_price),
        live_price=_s(trade.live_price),
        created_at=trade.created_at,
    )


@router.get(
    "/me",
    response={200: OutsideMeOut, **REFUSALS},
    summary="Who the token acts for",
    operation_id="arena_outside_api_me",
)
def me(request: HttpRequest) -> OutsideMeOut:
    """The outside agent the token acts for, its agents (one per cohort it was entered in,
    with this week's decision status) and this week's decision window."""
    token = _token(request)
    now = clock.now()
    week_start = cohort_week_start(now)
    opens, closes = outside_window(week_start)
    agents = outside_agents(model_id=token.model_id, week_start=week_start)
    return OutsideMeOut(
        model=token.model.internal_id,
        display_name=token.model.display_name,
        owner=token.model.owner,
        admitted_to_main_board=token.model.admitted_to_main_board,
        token_prefix=token.prefix,
        token_expires_at=token.expires_at,
        week_start=week_start,
        window_opens=opens,
        window_closes=closes,
        resubmissions=settings.DECISION_PARSE_RETRIES,
        agents=[
            OutsideAgentOut(
                cohort=agent.cohort.number,
                agent_id=agent.pk,
                cohort_status=agent.cohort.status,
                cash=format(agent.cash, "f"),
                status=agent.status,
                decision_status=agent.decision_status,  # type: ignore[attr-defined]
            )
            for agent in agents
        ],
    )


@router.get(
    "/cohorts/{int:number}/prompt",
    response={200: OutsidePromptOut, **REFUSALS},
    summary="This week's prompt, as text and as JSON",
    operation_id="arena_outside_api_prompt",
)
def prompt(request: HttpRequest, number: int) -> OutsidePromptOut:
    """The week's prompt for the token's agent in cohort `number`: the very messages a
    lineup model is sent (after an invalid submission, with the retry section naming the
    error), and the run's frozen snapshot and the agent's portfolio as JSON. 409 `not_open`
    until the week's run has frozen the snapshot and reached the agent (poll after Sunday
    00:05 UTC)."""
    token = _token(request)
    agent = outside_agent_in_cohort(token=token, cohort_number=number)
    week_start = cohort_week_start(clock.now())
    decision, run = _prompted_decision(agent=agent, week_start=week_start)
    opens, closes = outside_window(week_start)
    frozen = FrozenMarkets.load(run)
    portfolio = portfolio_view(
        agent=agent, frozen=frozen, positions=outside_open_positions(agent=agent)
    )
    attempts = round_attempts(decision)
    awaiting = decision.status == Decision.Status.AWAITING
    left = settings.DECISION_PARSE_RETRIES + 1 - len(attempts) if awaiting else 0
    opened = awaiting and opens <= clock.now() < closes
    return OutsidePromptOut(
        cohort=agent.cohort.number,
        agent_id=agent.pk,
        decision_id=decision.pk,
        week_start=week_start,
        status=decision.status,
        window_opens=opens,
        window_closes=closes,
        submissions_left=max(0, left) if opened else 0,
        methodology_version=agent.cohort.methodology_version,
        prompt_version=decision.prompt_version,
        run_id=decision.run_id,
        frozen_at=run.started_at,
        messages=[
            OutsideMessageOut(**message)
            for message in outside_messages(decision=decision, attempts=attempts)
        ],
        portfolio=_portfolio_context(portfolio),
        markets=[_market(m) for m in frozen.universe],
        panel=[_market(m) for m in frozen.panel]
        if agent.cohort.methodology_version != "v1"
        else [],
        submissions=[
            OutsideSubmissionOut(
                number=a.number,
                submitted_at=a.started_at,
                valid=a.valid,
                parse_error=a.parse_error,
            )
            for a in attempts
        ],
    )


def _prompted_decision(*, agent: Agent, week_start: date) -> tuple[Decision, DecisionRun]:
    """Return the agent's decision of the week and the run that froze its prompt. Refuse
    (409, not recorded: a read) a decision made without a prompt, and one whose prompt the
    week's run has not written yet."""
    decision = outside_decision(agent=agent, week_start=week_start)
    if decision is not None and decision.status in Decision.DECIDED and not decision.system_prompt:
        # Decided without a prompt: a bankrupt agent is asked nothing (002).
        raise OutsideRefused(
            409,
            "already_decided",
            decision.error or "Decided: no prompt.",
            record=False,  # a read, not a submission
        )
    if decision is None or decision.run is None or not decision.system_prompt:
        raise OutsideRefused(
            409,
            "not_open",
            f"The prompt for the week of {week_start:%Y-%m-%d} is not ready: the week's run "
            "has not reached this agent yet. Try again in a minute.",
            record=False,  # polling is expected
        )
    return decision, decision.run


def _portfolio_context(portfolio: PortfolioView) -> OutsidePortfolioContextOut:
    """The portfolio a lineup model's prompt states, as JSON: priced at the frozen snapshot."""
    return OutsidePortfolioContextOut(
        cash=format(portfolio.cash, "f"),
        starting_balance=format(portfolio.starting_balance, "f"),
        positions_value=format(portfolio.positions_value, "f"),
        total_value=format(portfolio.total_value, "f"),
        max_bet=format(portfolio.max_bet, "f"),
        positions=[
            OutsidePositionOut(
                position_id=p.position_id,
                market_id=p.market_id,
                question=p.question,
                side=p.side,
                shares=format(p.shares, "f"),
                avg_entry_price=format(p.avg_entry_price, "f"),
                current_price=_s(p.current_price),
                current_value=format(p.current_value, "f"),
                cost_basis=format(p.cost_basis, "f"),
            )
            for p in portfolio.positions
        ],
    )


def _market(market: MarketView) -> OutsideMarketOut:
    """A market of the frozen snapshot, as the prompt lists it."""
    return OutsideMarketOut(
        market_id=market.market_id,
        question=market.question,
        category=market.category,
        outcomes=list(market.outcomes),
        prices=[_s(p) for p in market.prices],
        volume=format(market.volume, "f"),
        close_date=market.close_date,
    )


SUBMISSION_BODY = {
    "requestBody": {
        "required": True,
        "description": "One decision in the protocol's JSON (BET, SELL or HOLD), exactly as "
        "a lineup model answers: it goes through the same parser. At most "
        "OUTSIDE_API_MAX_BODY_BYTES (64 KiB by default).",
        "content": {
            "application/json": {
                "schema": {"type": "object"},
                "example": {
                    "action": "BET",
                    "bets": [{"market_id": "559687", "side": "NO", "amount": 500}],
                    "reasoning": "Why, in a few sentences.",
                },
            }
        },
    }
}


@router.post(
    "/cohorts/{int:number}/decision",
    response={200: OutsideDecisionResultOut, 422: ErrorEnvelope, **REFUSALS},
    summary="Submit this week's decision",
    openapi_extra=SUBMISSION_BODY,
    operation_id="arena_outside_api_submit",
)
def submit(
    request: HttpRequest, number: int
) -> Status[OutsideDecisionResultOut] | Status[dict[str, Any]]:
    """Submit the week's decision of the token's agent in cohort `number`, in the decision
    window. 200: parsed and executed (the trades, executed or rejected with the reason).
    Each market a BET or SELL names is read again from Polymarket at submission: an order
    executes at the worse, for the agent, of the snapshot's and the live side-correct price
    (each trade gives `snapshot_price`, `live_price` and the `price` it executed at), and
    none executes in a market closed since the snapshot or whose live price cannot be read.
    422 `invalid_decision`: malformed; the error is in the message (and in the prompt,
    which now carries the retry section) and one resubmission is taken in the window;
    422 `invalid_decision_final`: malformed again, recorded as a HOLD. 409: outside the
    window, before the run opened the decision, or after the week's final decision; or while
    another submission is being handled. One cut off by its dying web worker is taken over
    by the next after OUTSIDE_SUBMISSION_CLAIM_SECONDS: its stored answer, if any, is
    executed (`resumed`: true), else the new body is taken, using no resubmission.
    411: a body without a Content-Length (chunked, or none declared), refused unread (no
    submission used).
    413: the body is over the limit."""
    token = _token(request)
    limit: int = settings.OUTSIDE_API_MAX_BODY_BYTES
    declared = request.META.get("CONTENT_LENGTH") or "0"
    too_large = OutsideRefused(
        413, "body_too_large", f"The request body is over the limit of {limit} bytes."
    )
    # A body without a length (chunked, or none declared) is read by the WSGI stack as empty:
    # refused before it counts as the team's submission, so it can send the body again with one.
    if not request.META.get("CONTENT_LENGTH"):
        raise OutsideRefused(
            411,
            "length_required",
            "Send the body with a Content-Length: a body without one (chunked, or none "
            "declared) is not read. Nothing was recorded and no submission was used; send it "
            "again.",
            token=token,
        )
    # The declared length is checked before anything is read; the body read is checked too.
    if not declared.isdigit() or int(declared) > limit:
        raise too_large
    agent = outside_agent_in_cohort(token=token, cohort_number=number)
    raw = request.body
    if len(raw) > limit:
        raise too_large
    body = raw.decode("utf-8", errors="replace")
    taken = outside_decision_submit(agent=agent, body=body)
    decision = taken.decision
    # An engine failure (outcome set) is answered like an executed one: the decision's status
    # and error say what became of it (retryable: a retry run opens a new prompt).
    if not taken.valid and taken.outcome is None:
        if taken.resubmissions_left:
            message = (
                f"invalid decision: {taken.error}. It is stored; you may resubmit "
                f"{taken.resubmissions_left} more time(s) before the window closes."
            )
            return Status(422, error_envelope(status=422, code="invalid_decision", message=message))
        message = f"invalid decision: {taken.error}. No resubmission is left: recorded as a HOLD."
        return Status(
            422, error_envelope(status=422, code="invalid_decision_final", message=message)
        )
    return Status(200, _result(agent=agent, decision=decision, resumed=taken.resumed))


def _result(*, agent: Agent, decision: Decision, resumed: bool = False) -> OutsideDecisionResultOut:
    trades = outside_trades(agent=agent).filter(decision=decision)
    return OutsideDecisionResultOut(
        decision_id=decision.pk,
        week_start=decision.week_start,
        status=decision.status,
        action=decision.action,
        error=decision.error,
        trades=[_trade(t) for t in trades],
        resumed=resumed,
    )


@router.get(
    "/cohorts/{int:number}/portfolio",
    response={200: OutsidePortfolioOut, **REFUSALS},
    summary="The agent's books: cash, positions, trades, latest snapshot",
    operation_id="arena_outside_api_portfolio",
)
def portfolio(request: HttpRequest, number: int) -> OutsidePortfolioOut:
    """The token's agent in cohort `number`: cash, open positions marked as the snapshots
    mark them, every trade (executed or rejected, with the reason) and the latest 10-minute
    snapshot (`null` before the first)."""
    agent = outside_agent_in_cohort(token=_token(request), cohort_number=number)
    snapshot = outside_latest_snapshot(agent=agent)
    return OutsidePortfolioOut(
        cohort=agent.cohort.number,
        agent_id=agent.pk,
        status=agent.status,
        cash=format(agent.cash, "f"),
        positions=[_position(p) for p in outside_open_positions(agent=agent)],
        trades=[_trade(t) for t in outside_trades(agent=agent)],
        latest_snapshot=None
        if snapshot is None
        else OutsideSnapshotOut(
            snapshot_timestamp=snapshot.snapshot_timestamp,
            cash=format(snapshot.cash, "f"),
            positions_value=format(snapshot.positions_value, "f"),
            total_value=format(snapshot.total_value, "f"),
            total_pnl=format(snapshot.total_pnl, "f"),
            total_pnl_percent=format(snapshot.total_pnl_percent, "f"),
        ),
    )


def _position(position: Position) -> OutsidePositionOut:
    """An open position marked as the snapshots mark it (`arena.valuation`): at its
    outcome's side-correct price now, or the fallback a closed, unresolved market keeps."""
    market = position.market
    marking: dict[str, Any] = {
        "side": position.side, "outcomes": market.outcomes, "prices": market.outcome_prices,
        "last_open_prices": market.last_open_prices, "closed": market.closed,
        "last_price": position.last_price, "shares": position.shares,
        "cost_basis": position.cost_basis,
    }  # fmt: skip
    return OutsidePositionOut(
        position_id=str(position.pk),
        market_id=market.polymarket_id,
        question=market.question,
        side=position.side,
        shares=format(position.shares, "f"),
        avg_entry_price=_s(position.avg_entry_price) or "0",
        current_price=format(money.price(position_mark(**marking)), "f"),
        current_value=format(money.cents_down(position_value(**marking)), "f"),
        cost_basis=format(position.cost_basis, "f"),
    )
