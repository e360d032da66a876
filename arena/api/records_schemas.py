"""Schemas of the arena's JSON API (`arena/api/records.py`): every field listed explicitly.

Money and returns are decimal strings (never floats), timestamps ISO 8601 in UTC, and every
object is named by its stable id: a model by `internal_id`, a cohort by its number, an agent
by its primary key. Brier scores and win rates are plain numbers (they are floats already).
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Annotated, Any

from ninja import Schema
from pydantic import WithJsonSchema

from arena.api.analytics_schemas import LeaderboardAnalyticsFields, ReferenceOut
from arena.models import ResolutionCheck, SnapshotTick
from arena.selectors.status import RunCost, RunOutcome, ScheduledJob, SystemStatus
from markets.models import MarketSyncRun

# Returns are means of exact percents: four places keep every figure the pages show.
RETURN_PLACES = Decimal("0.0001")
# A series point, [ISO 8601 timestamp, decimal string], in terms every JSON Schema draft reads.
POINT_SCHEMA = {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2}


def decimal_string(value: Decimal) -> str:
    return format(value, "f")


def optional_decimal(value: Decimal | None) -> str | None:
    """`decimal_string`, or None for a missing value."""
    return None if value is None else decimal_string(value)


def return_string(value: Decimal | None) -> str | None:
    return None if value is None else decimal_string(value.quantize(RETURN_PLACES))


class ModelRowOut(Schema):
    """A model's figures over its agents of one kind (real, or `offline` stand-ins)."""

    model: str  # the stable id (`internal_id`)
    display_name: str
    provider: str
    baseline: bool
    outside: bool  # an outside team's agent, deciding through the API
    # An outside agent staff admitted to the main leaderboard (ranked there, not on its own
    # board); false for every other row.
    admitted: bool
    active: bool
    offline: bool
    brier: float | None  # pooled over every resolved bet
    avg_return: str | None  # mean of its agents' cohort returns, in percent
    win_rate: float | None  # a fraction, 0 to 1
    resolved_bets: int
    cohorts: int
    bankrupt: int


class LeaderboardRowOut(ModelRowOut, LeaderboardAnalyticsFields):
    """A leaderboard row: its v1 figures, then the analytics beyond v1 on the same bets
    (`/api/v1/analytics` has them in full, with their definitions)."""

    # Its rank in its own table (the main board, or the outside agents'), in `sort`'s order;
    # null for a baseline and for a provisional row, which are never ranked.
    rank: int | None


class LeaderboardOut(Schema):
    """The filters the ranking used, echoed, and its rows."""

    sort: str  # brier, return, win_rate or resolved_bets
    cohorts: str  # all, or completed: only the agents of completed cohorts count
    baselines: str  # include or exclude
    outside: str  # exclude, or include: the outside agents' own board after the baselines
    # The LLM rows ranked (with any outside agent staff admitted), then the baselines (if
    # included), then the outside agents' own board, ranked among themselves (if included).
    rows: list[LeaderboardRowOut]
    # Pseudo-models scored on the questions the LLM rows bet on, never ranked: the market
    # consensus, the uniform random forecaster (expected figures) and the LLM crowd.
    references: list[ReferenceOut]


class StandingOut(Schema):
    """An agent's standing now: cash plus open positions marked to market."""

    agent: int
    cohort: int
    model: str
    display_name: str
    baseline: bool
    outside: bool
    cash: str
    positions_value: str
    total_value: str
    return_percent: str
    brier: float | None
    resolved_bets: int
    open_positions: int
    offline: bool
    status: str


class ModelPage(Schema):
    """The lineup's rows, a page at a time like every list: each model's real row, then its
    offline row if it has offline agents."""

    count: int
    page: int
    page_size: int
    results: list[ModelRowOut]


class ModelVersionOut(Schema):
    """A model version the replies of the model's calls named, and how many calls did."""

    name: str
    calls: int


class ModelDetailOut(Schema):
    model: str
    display_name: str
    provider: str
    baseline: bool
    outside: bool
    active: bool
    # What the lineup admin keeps of the model: the OpenRouter id called, the provider's
    # exact version behind it and its release date (null when not recorded), and how it
    # reasons: none, default, budget or always ("" when not recorded), with the budget sent.
    openrouter_id: str
    upstream_model_id: str
    release_date: date | None
    reasoning_mode: str
    reasoning_max_tokens: int | None
    # What its calls' replies say: the versions that answered (real calls only), most first.
    versions_answering: list[ModelVersionOut]
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
    # [timestamp, total value]: both strings in JSON. Described as a pair of strings, not
    # with `prefixItems` (what pydantic writes for a tuple), which schema validators of
    # older JSON Schema drafts (schemathesis's among them) reject as an invalid schema.
    points: list[Annotated[tuple[datetime, str], WithJsonSchema(POINT_SCHEMA)]]


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
    price: str | None  # the side-correct price it executed at: every figure uses this one
    snapshot_price: str | None  # the side-correct price in the run's frozen snapshot
    # An outside agent's order: the live side-correct price at its submission (price is the
    # worse of the two for the agent); None for the lineup, which executes at the snapshot.
    live_price: str | None
    shares: str | None
    amount: str | None
    implied_confidence: float | None
    brier: float | None
    side_won: bool | None
    created_at: datetime


class PositionPage(Schema):
    count: int
    page: int
    page_size: int
    results: list[PositionOut]  # open first, newest first


class AgentDetailOut(Schema):
    standing: StandingOut
    positions: list[PositionOut]  # open first, newest first
    trades: list[TradeOut]  # the latest AGENT_TRADES_SHOWN, newest first
    trades_count: int  # all of them: /agents/{id}/trades pages through every one


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
    # The response's commitment, published when it was stored (/api/v1/commitments):
    # sha256 of the UTF-8 of commitment_salt + "\n" + raw_response. Both empty (salt) and
    # null (digest) for an attempt with no body or stored before commitments were made.
    commitment_salt: str
    commitment_sha256: str | None
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


class TradeRowOut(TradeOut):
    """A trade with its agent's cohort, model and whether an offline stand-in answered it."""

    cohort: int
    model: str
    display_name: str
    offline: bool


class TradePage(Schema):
    count: int
    page: int
    page_size: int
    results: list[TradeRowOut]  # newest first (by id)


class OutcomePriceOut(Schema):
    outcome: str
    price: str | None  # None where the record gave no usable price


class PricePointOut(Schema):
    """The market's prices at one moment: frozen by a decision run, or the latest sync."""

    at: datetime
    source: str  # "decision run" or "latest sync"
    run: int | None  # the decision run that froze them
    prices: list[OutcomePriceOut]  # in Polymarket's outcome order


class MarketFieldsOut(Schema):
    """A catalogue market's facts and status, as the list and the detail both give them."""

    polymarket_id: str
    question: str
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


class MarketOut(MarketFieldsOut):
    """A catalogue market as the list shows it, with the bets agents placed on it."""

    bets: int  # executed BUYs on it


class MarketPage(Schema):
    count: int
    page: int
    page_size: int
    results: list[MarketOut]  # the catalogue's order: highest volume first, or by close date


class ResolutionOut(Schema):
    """A market resolved (a winning outcome) or cancelled (every position refunded) here."""

    polymarket_id: str
    question: str
    category: str
    outcomes: list[str]
    resolution: str  # resolved or cancelled
    winning_outcome: str  # "" for a cancelled market
    resolved_at: datetime | None
    resolution_note: str
    positions_settled: int  # positions its resolution paid out or refunded
    bets_scored: int  # bets it gave a Brier score (none when cancelled)


class ResolutionPage(Schema):
    count: int
    page: int
    page_size: int
    results: list[ResolutionOut]  # newest resolution first


class MarketDetailOut(MarketFieldsOut):
    description: str
    # Each list as the market page shows it, capped at its latest 50 (the count says how many
    # there are; /trades?market= pages through every trade).
    holders: list[HoldingOut]  # open first
    holders_count: int
    trades: list[TradeRowOut]  # the latest, oldest first
    trades_count: int
    scored: list[TradeRowOut]  # the latest executed bets a resolution scored, oldest first
    scored_count: int
    held_from: datetime | None  # the first position's opening; None if never held
    held_until: datetime | None  # the last close; None while held (or never held)
    price_history: list[PricePointOut]  # the stored prices while held, oldest first


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


class RunCostOut(Schema):
    """Token use and USD cost of one decision run's model calls (sums over its attempts)."""

    run_id: int
    week_start: date
    started_at: datetime
    calls: int
    prompt_tokens: int | None
    cached_prompt_tokens: int | None
    completion_tokens: int | None
    cached_share: str | None  # cached / prompt tokens, a decimal string in [0, 1]
    cost_usd: str | None


class StatusOut(Schema):
    now: datetime
    last_sync: SyncOut | None
    last_run: RunOut | None
    last_tick: TickOut | None
    last_check: CheckOut | None
    jobs: list[JobOut]
    run_costs: list[RunCostOut] = []  # the last few decision runs, newest first


def status_out(found: SystemStatus) -> StatusOut:
    """Return the system's status as the API answers it: each last run (None before the
    first), every scheduled job and the last decision runs' costs."""
    sync, run, tick, check = found.last_sync, found.last_run, found.last_tick, found.last_check
    return StatusOut(
        now=found.now,
        last_sync=None if sync is None else _sync_out(sync, stale=found.sync.stale),
        last_run=None if run is None else _run_out(run),
        last_tick=None if tick is None else _tick_out(tick, stale=found.tick.stale),
        last_check=None if check is None else _check_out(check),
        jobs=[_job_out(job) for job in found.jobs],
        run_costs=[_run_cost_out(cost) for cost in found.run_costs],
    )


def _sync_out(sync: MarketSyncRun, *, stale: bool) -> SyncOut:
    return SyncOut(
        status=sync.status,
        source=sync.source,
        requested=sync.requested,
        fetched=sync.fetched,
        created=sync.created,
        updated=sync.updated,
        rejected=sync.rejected,
        error=sync.error,
        started_at=sync.started_at,
        finished_at=sync.finished_at,
        stale=stale,
    )


def _run_out(run: RunOutcome) -> RunOut:
    return RunOut(
        id=run.run.pk,
        week_start=run.run.week_start,
        started_at=run.run.started_at,
        finished_at=run.run.finished_at,
        source=run.run.source,
        decisions=run.decisions,
        parse_failed=run.parse_failed,
        by_status=dict(run.by_status),
    )


def _tick_out(tick: SnapshotTick, *, stale: bool) -> TickOut:
    return TickOut(
        slot=tick.slot,
        markets_refreshed=tick.markets_refreshed,
        snapshots_written=tick.snapshots_written,
        refresh_error=tick.refresh_error,
        stale=stale,
    )


def _check_out(check: ResolutionCheck) -> CheckOut:
    return CheckOut(
        checked_at=check.checked_at,
        markets_checked=check.markets_checked,
        resolved=[str(i) for i in check.resolved],
        cancelled=[str(i) for i in check.cancelled],
        failed=[str(i) for i in check.failed],
        completed_cohorts=[int(i) for i in check.completed_cohorts],
        error=check.error,
        ok=check.ok,
    )


def _job_out(job: ScheduledJob) -> JobOut:
    return JobOut(
        name=job.name,
        task=job.task,
        schedule=job.schedule,
        next_run_at=job.next_run_at,
        last_run_at=job.last_run_at,
        enabled=job.enabled,
        installed=job.installed,
    )


def _run_cost_out(cost: RunCost) -> RunCostOut:
    return RunCostOut(
        run_id=cost.run.pk,
        week_start=cost.run.week_start,
        started_at=cost.run.started_at,
        calls=cost.calls,
        prompt_tokens=cost.prompt_tokens,
        cached_prompt_tokens=cost.cached_prompt_tokens,
        completion_tokens=cost.completion_tokens,
        cached_share=return_string(cost.cached_share),
        cost_usd=None if cost.cost_usd is None else decimal_string(cost.cost_usd),
    )
