"""The analytics' entry points: `compute_analytics` reads the bets and computes every figure
(a handful of queries, then one vectorised pass: bench/analytics.py); `analytics` keeps its
answer until a bet is scored, a market resolves or a decision is made, and `panel_board` the
forecast panel's likewise."""

from __future__ import annotations

import hashlib

from django.core.cache import caches
from django.db import connection
from django.utils import timezone

from agents.models import BenchmarkModel
from arena.models import Cohort, Decision, DecisionAttempt, Trade
from arena.seal import cache_part
from arena.selectors import panel
from arena.selectors.analytics import compute, read
from arena.selectors.analytics.definitions import DEFAULT_BINS
from arena.selectors.analytics.figures import Analytics, ModelAnalytics
from arena.selectors.panel import PanelBoard
from markets.models import Market

CACHE_SECONDS = 3600  # the key moves with the data; this bounds what it does not track


def compute_analytics(*, cohorts: str = "all", bins: int = DEFAULT_BINS) -> Analytics:
    """Return the analytics of every leaderboard row over `cohorts` ("all", or "completed":
    only the agents of completed cohorts), with `bins` forecast bins, from the database."""
    scope = read.analytics_scope(cohorts=cohorts)
    bets, categories = read.resolved_bets(scope=scope)
    questions = read.coverage_questions(scope=scope)
    rows = [ModelAnalytics(model=model, offline=offline) for model, offline in scope.rows]
    resampled = compute.fill_rows(
        rows=rows, bets=bets, categories=categories, questions=questions, bins=bins
    )
    compute.rank_rows(resampled=resampled, rows=rows)
    return Analytics(
        cohorts=cohorts,
        bins=bins,
        rows=rows,
        references=compute.reference_figures(bets=bets, rows=rows, bins=bins),
        comparisons=compute.pairwise_comparisons(bets=bets, rows=rows),
        computed_at=timezone.now(),
    )


def analytics_watermark() -> str:
    """A mark that moves when the analytics may change: a bet scored (the latest scoring time:
    a bet is scored at its settlement, so the latest only moves forward), a market resolved or
    cancelled (their count and latest time), a decision made or a round of one retried in
    place (which agents are offline, which runs they saw), a cohort completed, the lineup
    changed. One query of index reads: every page that shows the analytics pays it on every
    request. An edit that moves none of these (a market's category) shows within
    `CACHE_SECONDS`."""
    trade, market = Trade._meta.db_table, Market._meta.db_table
    decision, attempt = Decision._meta.db_table, DecisionAttempt._meta.db_table
    cohort, lineup = Cohort._meta.db_table, BenchmarkModel._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            # Only our own table names are formatted in; the values are parameters.
            f"SELECT (SELECT MAX(scored_at) FROM {trade}),"  # nosec B608
            f" (SELECT COUNT(*) FROM {market} WHERE resolution <> %s),"
            f" (SELECT MAX(resolved_at) FROM {market} WHERE resolution <> %s),"
            f" (SELECT MAX(id) FROM {decision}),"
            f" (SELECT MAX(id) FROM {attempt}),"
            f" (SELECT COUNT(*) FROM {cohort} WHERE status = %s),"
            f" (SELECT COUNT(*) FROM {lineup}),"
            f" (SELECT COUNT(*) FROM {lineup} WHERE active = %s)",
            [Market.Resolution.OPEN, Market.Resolution.OPEN, Cohort.Status.COMPLETED, True],
        )
        row = cursor.fetchone()
    # The figures read under the seal (arena/seal.py) are another answer than the same data's.
    return "-".join([*("" if part is None else str(part) for part in row), cache_part()])


def analytics(*, cohorts: str = "all", bins: int = DEFAULT_BINS) -> Analytics:
    """Return `compute_analytics`, kept until `analytics_watermark` moves."""
    # The mark holds timestamps (spaces, colons): hashed, the key suits every cache backend.
    mark = hashlib.sha256(analytics_watermark().encode()).hexdigest()[:32]
    # The pickle names the figures' classes by module: the version moves when they do.
    key = f"analytics:v4:{cohorts}:{bins}:{mark}"
    found = caches["default"].get(key)
    if isinstance(found, Analytics):
        return found
    result = compute_analytics(cohorts=cohorts, bins=bins)
    caches["default"].set(key, result, CACHE_SECONDS)
    return result


def panel_board() -> PanelBoard:
    """Return the forecast panel's board (`arena.selectors.panel.panel_board`), kept until
    `analytics_watermark` moves: a panel question's outcome is set when its market resolves,
    and its forecasts are made by decisions, both of which move it."""
    mark = hashlib.sha256(analytics_watermark().encode()).hexdigest()[:32]
    key = f"panel-board:v1:{mark}"
    found = caches["default"].get(key)
    if isinstance(found, PanelBoard):
        return found
    result = panel.panel_board()
    caches["default"].set(key, result, CACHE_SECONDS)
    return result


def model_analytics(
    *, model: BenchmarkModel, cohorts: str = "all", bins: int = DEFAULT_BINS
) -> list[ModelAnalytics]:
    """Return `model`'s rows of `analytics` (real first, then offline)."""
    return analytics(cohorts=cohorts, bins=bins).rows_of(model)
