"""Schemas of the arena's JSON API (`arena/api.py`): every field listed explicitly.

Money and returns are decimal strings (never floats), timestamps ISO 8601 in UTC, and every
object is named by its stable id: a model by `internal_id`, a cohort by its number, an agent
by its primary key. Brier scores and win rates are plain numbers (they are floats already).
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any

from ninja import Schema

# Returns are means of exact percents: four places keep every figure the pages show.
RETURN_PLACES = Decimal("0.0001")


def decimal_string(value: Decimal) -> str:
    return format(value, "f")


def return_string(value: Decimal | None) -> str | None:
    return None if value is None else decimal_string(value.quantize(RETURN_PLACES))


class ErrorBody(Schema):
    status: int
    code: str
    message: str


class ErrorEnvelope(Schema):
    error: ErrorBody


class ModelRowOut(Schema):
    """A model's figures over its agents of one kind (real, or `offline` stand-ins)."""

    model: str  # the stable id (`internal_id`)
    display_name: str
    provider: str
    baseline: bool
    active: bool
    offline: bool
    brier: float | None  # pooled over every resolved bet
    avg_return: str | None  # mean of its agents' cohort returns, in percent
    win_rate: float | None  # a fraction, 0 to 1
    resolved_bets: int
    cohorts: int
    bankrupt: int


class LeaderboardOut(Schema):
    sort: str
    rows: list[ModelRowOut]  # the LLM rows ranked, then the baselines


class StandingOut(Schema):
    """An agent's standing now: cash plus open positions marked to market."""

    agent: int
    cohort: int
    model: str
    display_name: str
    baseline: bool
    cash: str
    positions_value: str
    total_value: str
    return_percent: str
    brier: float | None
    resolved_bets: int
    open_positions: int
    offline: bool
    status: str


class ModelDetailOut(Schema):
    model: str
    display_name: str
    provider: str
    baseline: bool
    active: bool
    rows: list[ModelRowOut]  # the real row, then an offline row if it has offline agents
    agents: list[StandingOut]  # newest cohort first, real agents before offline ones


class CohortOut(Schema):
    number: int
    week_start: date
    started_at: datetime
    status: str
    completed_at: datetime | None
    methodology_version: str
    agent_count: int
    open_positions: int


class CohortPage(Schema):
    count: int
    page: int
    page_size: int
    results: list[CohortOut]


class CohortDetailOut(CohortOut):
    standings: list[StandingOut]


class SeriesOut(Schema):
    agent: int
    label: str
    range: str
    points: list[tuple[datetime, str]]  # [timestamp, total value]


class PositionOut(Schema):
    """A position; `price_now` and `value_now` (shares × price) only while it is open."""

    id: int
    market: str  # Polymarket's id
    question: str
    side: str
    outcome_index: int
    status: str
    shares: str
    cost_basis: str
    realized_pnl: str
    settlement_value: str | None
    price_now: str | None
    value_now: str | None
    opened_at: datetime
    closed_at: datetime | None


class TradeOut(Schema):
    """An order as the engine recorded it, executed or rejected (with its reason)."""

    id: int
    decision: int
    agent: int
    kind: str
    status: str
    reject_reason: str
    market: str | None  # Polymarket's id; None when the order named no known market
    side: str
    order_index: int
    try_number: int
    price: str | None
    shares: str | None
    amount: str | None
    implied_confidence: float | None
    brier: float | None
    side_won: bool | None
    created_at: datetime


class AgentDetailOut(Schema):
    standing: StandingOut
    positions: list[PositionOut]  # open first, newest first
    trades: list[TradeOut]  # newest first


class DecisionOut(Schema):
    id: int
    agent: int
    cohort: int
    model: str
    display_name: str
    week_start: date
    status: str
    action: str
    responder: str
    parse_failed: bool
    created_at: datetime


class DecisionPage(Schema):
    count: int
    page: int
    page_size: int
    results: list[DecisionOut]  # newest week first


class AttemptOut(Schema):
    number: int
    responder: str
    requested_model: str
    response_model: str
    upstream_provider: str
    prompt_tokens: int | None
    completion_tokens: int | None
    reasoning_tokens: int | None
    cost_usd: str | None
    latency_ms: int | None
    raw_response: str
    parse_error: str
    api_error: str
    valid: bool
    started_at: datetime


class DecisionDetailOut(DecisionOut):
    reasoning: str
    system_prompt: str
    user_prompt: str
    parsed: dict[str, Any] | None
    prompt_version: str
    cost_usd: str | None
    attempts: list[AttemptOut]  # in the order they were made
    trades: list[TradeOut]


class HoldingOut(Schema):
    agent: int
    cohort: int
    model: str
    display_name: str
    offline: bool
    side: str
    status: str
    shares: str
    cost_basis: str
    opened_at: datetime
    closed_at: datetime | None


class MarketTradeOut(TradeOut):
    cohort: int
    model: str
    display_name: str
    offline: bool


class MarketDetailOut(Schema):
    polymarket_id: str
    question: str
    description: str
    category: str
    slug: str
    event_title: str
    outcomes: list[str]
    outcome_prices: list[str | None]
    volume: str
    liquidity: str | None
    close_date: datetime | None
    closed: bool
    resolution: str
    winning_outcome: str
    resolved_at: datetime | None
    status: str  # open, closed, resolved, cancelled
    status_label: str  # what the pages print
    holders: list[HoldingOut]  # open first
    trades: list[MarketTradeOut]  # oldest first
    scored: list[MarketTradeOut]  # the executed bets a resolution scored


class SyncOut(Schema):
    status: str
    source: str
    requested: int
    fetched: int
    created: int
    updated: int
    rejected: int
    error: str
    started_at: datetime
    finished_at: datetime
    stale: bool


class RunOut(Schema):
    id: int
    week_start: date
    started_at: datetime
    finished_at: datetime | None
    source: str
    decisions: int
    parse_failed: int
    by_status: dict[str, int]


class TickOut(Schema):
    slot: datetime
    markets_refreshed: int
    snapshots_written: int
    refresh_error: str
    stale: bool


class CheckOut(Schema):
    checked_at: datetime
    markets_checked: int
    resolved: list[str]
    cancelled: list[str]
    failed: list[str]
    completed_cohorts: list[int]
    error: str
    ok: bool


class JobOut(Schema):
    name: str
    task: str
    schedule: str
    next_run_at: datetime | None
    last_run_at: datetime | None
    enabled: bool
    installed: bool


class StatusOut(Schema):
    now: datetime
    last_sync: SyncOut | None
    last_run: RunOut | None
    last_tick: TickOut | None
    last_check: CheckOut | None
    jobs: list[JobOut]
