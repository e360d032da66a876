"""Schemas of the arena's JSON API (`arena/api.py`): every field listed explicitly.

Money and returns are decimal strings (never floats), timestamps ISO 8601 in UTC, and every
object is named by its stable id: a model by `internal_id`, a cohort by its number, an agent
by its primary key. Brier scores and win rates are plain numbers (they are floats already).
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal

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
