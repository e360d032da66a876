"""Schemas of the outside agents' API (`arena/api/outside.py`): every field listed explicitly.

Money, prices and shares are decimal strings (never floats), timestamps ISO 8601 in UTC.
"""

from __future__ import annotations

from datetime import date, datetime

from ninja import Schema


class OutsideAgentOut(Schema):
    """One of the token's agents: its cohort, and where this week's decision stands."""

    cohort: int
    agent_id: int
    cohort_status: str
    cash: str
    status: str  # active or bankrupt
    decision_status: str | None  # this week's decision, None before the run opened it


class OutsideMeOut(Schema):
    """The outside agent the token acts for, the token (by prefix) and the week's window."""

    model: str
    display_name: str
    owner: str
    admitted_to_main_board: bool
    token_prefix: str
    token_expires_at: datetime
    week_start: date
    window_opens: datetime
    window_closes: datetime
    resubmissions: int  # malformed submissions sent back per decision, like a model's retries
    agents: list[OutsideAgentOut]


class OutsideMessageOut(Schema):
    role: str
    content: str


class OutsideMarketOut(Schema):
    """One market of the run's frozen snapshot, in rank order, as the prompt lists it."""

    market_id: str
    question: str
    category: str
    outcomes: list[str]
    prices: list[str | None]  # per outcome; for a Yes/No market the first is the YES price
    volume: str
    close_date: datetime | None


class OutsidePositionOut(Schema):
    """An open position at its side-correct mark (`arena.valuation`): in the prompt at the
    frozen snapshot's prices, in the books (`/portfolio`) at the prices the 10-minute
    snapshots value it at."""

    position_id: str
    market_id: str
    question: str
    side: str
    shares: str
    avg_entry_price: str
    current_price: str | None
    current_value: str
    cost_basis: str


class OutsidePortfolioContextOut(Schema):
    cash: str
    starting_balance: str
    positions_value: str
    total_value: str
    max_bet: str  # 25% of cash, floored to the cent: the largest bet that executes
    positions: list[OutsidePositionOut]


class OutsideSubmissionOut(Schema):
    """One stored submission (a decision attempt): its time, whether it parsed, the error."""

    number: int
    submitted_at: datetime
    valid: bool
    parse_error: str


class OutsidePromptOut(Schema):
    """The week's prompt: the very text a lineup model receives (`messages`), and the same
    frozen snapshot and portfolio as structured JSON (`markets`, `portfolio`)."""

    cohort: int
    agent_id: int
    decision_id: int
    week_start: date
    status: str  # awaiting: a submission is taken; done/skipped: final
    window_opens: datetime
    window_closes: datetime
    submissions_left: int  # taken now: 0 outside the window or once final
    # The rules the cohort is scored by (docs/methodology.md), distinct from the prompt's
    # wording (prompt_version): what the answer must carry depends on it.
    methodology_version: str
    prompt_version: str
    run_id: int | None
    frozen_at: datetime | None
    messages: list[OutsideMessageOut]
    portfolio: OutsidePortfolioContextOut
    markets: list[OutsideMarketOut]
    # Methodology v2: the week's forecast panel, in its order, at the snapshot's prices; the
    # answer forecasts each (its `forecasts`) and states a `probability` on every bet. Empty
    # under v1.
    panel: list[OutsideMarketOut]
    submissions: list[OutsideSubmissionOut]


class OutsideTradeOut(Schema):
    decision_id: int
    week_start: date
    kind: str  # BUY or SELL
    status: str  # executed or rejected
    reject_reason: str
    market_id: str | None
    side: str
    amount: str | None
    shares: str | None
    price: str | None  # the side-correct price it executed at
    snapshot_price: str | None  # the side-correct price in the run's frozen snapshot
    live_price: str | None  # the live side-correct price read at the submission
    created_at: datetime


class OutsideDecisionResultOut(Schema):
    """What became of a submission: the decision's status and action, and the trades."""

    decision_id: int
    week_start: date
    status: str  # done, or retryable when no order of a BET/SELL executed (002)
    action: str
    error: str
    trades: list[OutsideTradeOut]
    # True when this submission found the week's answer already stored by an earlier one its
    # web worker died handling: that answer was executed (each order once), not this body.
    resumed: bool = False


class OutsideSnapshotOut(Schema):
    snapshot_timestamp: datetime
    cash: str
    positions_value: str
    total_value: str
    total_pnl: str
    total_pnl_percent: str


class OutsidePortfolioOut(Schema):
    """The agent's books now: cash, open positions (at their last marks), every trade, and
    the latest 10-minute snapshot."""

    cohort: int
    agent_id: int
    status: str
    cash: str
    positions: list[OutsidePositionOut]
    trades: list[OutsideTradeOut]
    latest_snapshot: OutsideSnapshotOut | None
