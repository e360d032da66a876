"""Mark to market (002): 10-minute portfolio snapshots."""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import connection, transaction
from django.db.models import Avg, Count, QuerySet
from django.utils import timezone

from arena import clock, money
from arena.models import (
    Agent,
    Cohort,
    PortfolioSnapshot,
    Position,
    SnapshotTick,
    Trade,
)
from arena.selectors.ticks import agents_to_mark, held_market_ids
from arena.services.rollup import rollup_bucket_params, rollup_merge, rollup_upsert_sql
from arena.valuation import positions_value_by_agent
from arena.weeks import snapshot_slot
from markets import services as market_services
from markets.models import Market
from markets.sources import MarketSource

logger = logging.getLogger(__name__)


# ------------------------------------------------------------------ mark to market (002)


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


def portfolio_snapshots_write(*, agents: QuerySet[Agent], at: datetime, stale: bool = False) -> int:
    """Write one snapshot per agent of `agents` stamped `at`, valued at the stored prices,
    and merge them into the agents' hourly and daily rollups; return how many were written.
    One statement on PostgreSQL, two on SQLite, whatever the number of agents or positions.
    An (agent, timestamp) already written is left as it is."""
    agents_sql, agents_params = agents.order_by().values("id").query.sql_with_params()
    return _snapshots_write(agents_sql, agents_params, at=at, stale=stale)


def _snapshots_write(
    agents_sql: str, agents_params: Sequence[Any], *, at: datetime, stale: bool
) -> int:
    """`portfolio_snapshots_write` for the agents whose ids `agents_sql` selects."""
    # No savepoint of its own: a failure fails the caller's transaction whole (the tick's).
    with transaction.atomic(savepoint=False):
        written = _snapshots_insert(agents_sql, agents_params, at=at, stale=stale)
        if connection.vendor != "postgresql":  # PostgreSQL merged them in the same statement
            rollup_merge(agent_ids=written, at=at)
    return len(written)


# ------------------------------------- the valuation in SQL (arena.valuation's, in the database)


def _price_at_sql(prices: str, *, index: str, binary: str) -> str:
    """SQL of `valuation._price_at` for outcome `index` in the JSON list `prices`: NULL
    where it gives None (no element, or a JSON null)."""
    if connection.vendor == "postgresql":
        first = f"({prices} ->> 0)::numeric"
        own = f"({prices} ->> {index})::numeric"
    else:
        first = f"CAST(json_extract({prices}, '$[0]') AS REAL)"
        own = f"CAST(json_extract({prices}, '$[' || {index} || ']') AS REAL)"
    return (
        f"CASE WHEN {binary} THEN (CASE WHEN {index} = 0 THEN {first} "
        f"ELSE 1 - {first} END) ELSE {own} END"
    )


def _marks_ctes(markets: str) -> str:
    """SQL of three common table expressions: `held_markets`, what `valuation._known_mark`
    decides once per market (binary or not, a yes / no pair in either order or not, prices
    usable or not) for the markets `markets` selects (a query of market ids); `marks`, the
    name and known mark of each of their outcomes, NULL where a position falls to its last
    trade price or its entry; and `sides`, each mark under every side a position may name
    it by (`valuation.side_outcome_index`): its exact name, and YES or NO for the outcome of
    a yes / no pair named so in another case. A position then finds its mark by equality on
    (market, side), at most one row. The JSON is read once per market and outcome, not for
    every position."""
    if connection.vendor == "postgresql":
        first, second = "lower(m.outcomes ->> 0)", "lower(m.outcomes ->> 1)"
        two = "jsonb_array_length(m.outcomes) = 2"
        length = "jsonb_array_length(m.outcome_prices)"
        unusable = (
            "SELECT 1 FROM jsonb_array_elements_text(m.outcome_prices) AS e(v) "
            "WHERE e.v IS NULL OR e.v::numeric = 0"
        )
        # The outcomes' own rows, not a generate_series over their count: the planner takes
        # a generate_series of computed bounds for 1,000 rows a market, and the statement's
        # cost estimate for so many marks put it past `jit_above_cost`, compiling it on
        # every tick (150-170 ms at 21,000 positions, ten times the statement).
        index = "(o.n - 1)::integer"
        name = "o.name"
        outcomes = (
            "CROSS JOIN LATERAL jsonb_array_elements_text(m.outcomes) WITH ORDINALITY AS o(name, n)"
        )
    else:
        first = "lower(json_extract(m.outcomes, '$[0]'))"
        second = "lower(json_extract(m.outcomes, '$[1]'))"
        two = "json_array_length(m.outcomes) = 2"
        length = "json_array_length(m.outcome_prices)"
        unusable = (
            "SELECT 1 FROM json_each(m.outcome_prices) AS e "
            "WHERE e.value IS NULL OR CAST(e.value AS REAL) = 0"
        )
        index = "o.key"  # an array element's key is its index, an integer
        name = "o.value"
        outcomes = "JOIN json_each(m.outcomes) o"
    binary = f"({two} AND {first} = 'yes' AND {second} = 'no')"
    pair = (
        f"({two} AND {first} IN ('yes', 'no') AND {second} IN ('yes', 'no') "
        f"AND {first} <> {second})"
    )
    # Usable or not is decided for the whole market, as valuation.position_mark decides it.
    usable = f"({length} > 0 AND NOT (m.closed AND EXISTS ({unusable})))"
    price = _price_at_sql("m.outcome_prices", index=index, binary="m.is_binary")
    last_open = _price_at_sql("m.last_open_prices", index=index, binary="m.is_binary")
    mark = f"COALESCE(CASE WHEN m.usable THEN {price} END, {last_open})"
    # SQLite's exact sum (_CENTS_SQLITE) reads the mark in millionths, scaled once here.
    units = (
        ""
        if connection.vendor == "postgresql"
        else ", CAST(ROUND(price * 1000000) AS INTEGER) AS price_units"
    )
    # The pair's names are yes / no in some case (`pair`): ASCII, so upper() gives YES or NO.
    return f"""
        held_markets AS MATERIALIZED (
            SELECT m.id, m.outcomes, m.outcome_prices, m.last_open_prices,
                   {binary} AS is_binary, {pair} AS is_pair, {usable} AS usable
            FROM {Market._meta.db_table} m WHERE m.id IN ({markets})
        ),
        marks AS MATERIALIZED (
            SELECT m.id AS market_id, {name} AS name, m.is_pair, {mark} AS price
            FROM held_markets m {outcomes}
        ),
        sides AS MATERIALIZED (
            SELECT market_id, name AS side, price{units} FROM marks
            UNION ALL
            SELECT market_id, upper(name), price{units} FROM marks
            WHERE is_pair AND upper(name) <> name
        )
    """  # noqa: S608 — the table name is ours  # nosec B608


# The markets any open position is in: read from the (status, market) index alone, a few
# hundred ids, rather than the positions themselves (a superset of those being marked).
_POSITION = Position._meta.db_table
_HELD_MARKETS_SQL = f"SELECT DISTINCT market_id FROM {_POSITION} WHERE status = %s"  # nosec B608

# `valuation.position_value` of position `h` at its outcome's known mark `k` (from `_marks_ctes`):
# exact (numeric) on PostgreSQL; on SQLite in floating point, as SQLite computes decimals.
# A position on an outcome its market no longer lists has no mark: its last trade price.
_VALUE_SQL = (
    "COALESCE(h.shares * COALESCE(k.price, h.last_price), "
    "CASE WHEN h.shares <> 0 THEN h.cost_basis ELSE 0 END)"
)
# SQLite keeps decimals as floating point, and a float sum can land a hair on the wrong side
# of a cent (123.479999999999 summed as 123.48). So it sums exact integers there: shares and
# prices have 6 decimal places at most (markets.parsing quantizes every price), so shares ×
# price is a whole number of 1e-12 dollars. Summed so, SQLite's 64-bit integers would
# overflow past $9.2 M an agent, and one windfall would fail the whole tick: so each value
# is summed in two parts, whole shares × price in millionths of a dollar (a cost basis, in
# cents, scaled to the same) and the shares' millionths × price in 1e-12 dollars, carried
# together once summed. An agent's sum then holds $9.2 trillion, past any money column.
_SHARES_UNITS = "CAST(ROUND(h.shares * 1000000) AS INTEGER)"
_PRICE_UNITS = "COALESCE(k.price_units, CAST(ROUND(h.last_price * 1000000) AS INTEGER))"
_MICROS_SQLITE = (
    f"CASE WHEN {_PRICE_UNITS} IS NOT NULL THEN ({_SHARES_UNITS} / 1000000) * {_PRICE_UNITS} "
    "WHEN h.shares <> 0 THEN CAST(ROUND(h.cost_basis * 100) AS INTEGER) * 10000 ELSE 0 END"
)
# (%% is a literal %: the statement carries parameters.)
_PICOS_SQLITE = f"COALESCE(({_SHARES_UNITS} %% 1000000) * {_PRICE_UNITS}, 0)"
# The sum in cents, rounded down: (micros + picos ÷ 10^6) ÷ 10^4, in integer division.
_CENTS_SQLITE = f"(SUM({_MICROS_SQLITE}) + SUM({_PICOS_SQLITE}) / 1000000) / 10000"
# A LEFT JOIN keeps every position (one without a mark falls back) and, on SQLite, makes the
# positions the outer loop, read in agent order through the agent index (no sort for the
# sum) while each probes the marks by an automatic index. A position finds its outcome by
# name, as `valuation.side_outcome_index` does, by equality on `sides` (at most one row): an
# OR of the two ways in the join condition cost SQLite over a third of the valuation.
_MARK_JOIN = "LEFT JOIN sides k ON k.market_id = h.market_id AND k.side = h.side"


def position_values_sql(positions: QuerySet[Position]) -> dict[int, Decimal]:
    """Return each of `positions`' value as the snapshot write computes it in the database,
    before the sum is rounded to the cent (for checking it against `valuation.position_value`)."""
    held_sql, held_params = positions.order_by().values("id").query.sql_with_params()
    sql = f"""
        WITH {_marks_ctes(_HELD_MARKETS_SQL)}
        SELECT h.id, {_VALUE_SQL} FROM {Position._meta.db_table} h {_MARK_JOIN}
        WHERE h.id IN (SELECT id FROM ({held_sql}) AS held)
    """  # noqa: S608 — our tables; the positions' query is the ORM's  # nosec B608
    with connection.cursor() as cursor:
        cursor.execute(sql, [Position.Status.OPEN.value, *held_params])
        return {pk: Decimal(str(value)) for pk, value in cursor.fetchall()}


# The scored, executed buys: spelled out, not bound, so that both databases can read them
# from the partial index of exactly those rows (`trade_agent_brier`): a planner only uses a
# partial index when the query's own condition implies the index's.
_SCORED_BUYS = (
    f"kind = '{Trade.Kind.BUY.value}' AND status = '{Trade.Status.EXECUTED.value}' "
    "AND brier_score IS NOT NULL"
)


def _snapshots_insert(
    agents_sql: str, agents_params: Sequence[Any], *, at: datetime, stale: bool
) -> list[int]:
    """Write one snapshot per agent `agents_sql` selects, stamped `at`, in one INSERT … SELECT that
    values the open positions in the database (`_VALUE_SQL`: `valuation.position_mark`'s
    rules) and reads cash, positions and Brier scores in one view of the books (one
    statement); return the agents written (a snapshot already there for `at` is left as it
    is). On PostgreSQL the same statement merges the rows written into their rollups (a
    data-modifying WITH, reading them from the insert's RETURNING); SQLite has none, and
    the caller merges them (`rollup_merge`)."""
    postgres = connection.vendor == "postgresql"
    # Positions are worth their sum, cents down (money.cents_down): exact on both databases.
    if postgres:
        positions_value = f"TRUNC(SUM({_VALUE_SQL}), 2)"
    else:
        positions_value = f"{_CENTS_SQLITE} / 100.0"
    total = "(a.cash + COALESCE(v.positions_value, 0))"
    stamp = "CAST(%s AS TIMESTAMPTZ)" if postgres else "%s"
    into = "INSERT INTO" if postgres else "INSERT OR IGNORE INTO"
    insert = f"""
        {into} {PortfolioSnapshot._meta.db_table} (
            agent_id, snapshot_timestamp, cash, positions_value, total_value, total_pnl,
            total_pnl_percent, brier_score, resolved_bets, prices_stale, created_at)
        SELECT a.id, {stamp}, a.cash, COALESCE(v.positions_value, 0), {total},
               {total} - c.starting_balance,
               ROUND(({total} - c.starting_balance) * 100.0 / c.starting_balance, 4),
               brier.mean, COALESCE(brier.n, 0), %s, {stamp}
        FROM marked
        JOIN {Agent._meta.db_table} a ON a.id = marked.id
        JOIN {Cohort._meta.db_table} c ON c.id = a.cohort_id
        LEFT JOIN v ON v.agent_id = a.id
        LEFT JOIN brier ON brier.agent_id = a.id
        {"ON CONFLICT DO NOTHING" if postgres else ""}
    """  # noqa: S608 — our tables  # nosec B608
    adapt = connection.ops.adapt_datetimefield_value
    params = [
        *agents_params,
        Position.Status.OPEN.value,
        Position.Status.OPEN.value,
        adapt(at),
        stale,
        adapt(clock.now()),
    ]
    if postgres:
        columns = "agent_id, snapshot_timestamp, total_value, total_pnl, total_pnl_percent"
        insert = f"""
        , written AS ({insert} RETURNING {columns}),
        merged AS ({rollup_upsert_sql(source="written s", where="")})
        SELECT agent_id FROM written
        """  # noqa: S608 — our tables and columns, no value  # nosec B608
        params += rollup_bucket_params(at)
    else:
        insert += " RETURNING agent_id"
    # The agents are read once (their filter has correlated sub-selects), and the marks once
    # per (market, outcome) (PostgreSQL would fold them back into the join, per position).
    sql = f"""
        WITH marked AS MATERIALIZED ({agents_sql}),
        {_marks_ctes(_HELD_MARKETS_SQL)},
        v AS (
            SELECT h.agent_id, {positions_value} AS positions_value
            FROM {Position._meta.db_table} h {_MARK_JOIN}
            WHERE h.status = %s AND h.agent_id IN (SELECT id FROM marked)
            GROUP BY h.agent_id
        ),
        brier AS (
            SELECT agent_id, AVG(brier_score) AS mean, COUNT(*) AS n
            FROM {Trade._meta.db_table}
            WHERE {_SCORED_BUYS} AND agent_id IN (SELECT id FROM marked)
            GROUP BY agent_id
        )
        {insert}
    """  # noqa: S608 — our tables; the agents' query is the ORM's  # nosec B608
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [agent_id for (agent_id,) in cursor.fetchall()]


def portfolio_snapshots_build(
    *, agents: QuerySet[Agent], at: datetime, stale: bool = False
) -> list[PortfolioSnapshot]:
    """Return (unsaved) one snapshot per agent of `agents` stamped `at`, valued at the stored
    prices by `valuation.position_mark`, from a constant number of queries: the Python reference of
    the snapshot write (`_snapshots_insert` computes the same in the database)."""
    rows = list(agents.order_by().values_list("pk", "cash", "cohort__starting_balance"))
    agent_ids = [pk for pk, _, _ in rows]
    values = positions_value_by_agent(
        Position.objects.filter(status=Position.Status.OPEN, agent_id__in=agent_ids)
    )
    brier = {
        row["agent_id"]: (row["mean"], row["n"])
        for row in Trade.objects.filter(
            kind=Trade.Kind.BUY,
            status=Trade.Status.EXECUTED,
            brier_score__isnull=False,
            agent_id__in=agent_ids,
        )
        .values("agent_id")
        .annotate(mean=Avg("brier_score"), n=Count("pk"))
        .order_by()
    }
    snapshots = []
    for agent_id, cash, starting in rows:
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
    return snapshots


def snapshots_take(
    *, now: datetime | None = None, source: MarketSource | None = None, refresh: bool = True
) -> TickReport:
    """Refresh the prices of every held market, then snapshot every agent of every active
    cohort (and every agent still holding a position in a completed one) at this 10-minute
    slot, and merge the snapshots into the agents' hourly and daily rollups. A repeat for
    the same slot writes nothing. A failed refresh still snapshots, at the last known
    prices, and says so. Queries do not grow with the number of agents or positions: the
    snapshots are one INSERT … SELECT valuing the positions in the database, which also
    reads cash and positions in one view of the books (a settlement committing meanwhile is
    wholly in or wholly out).

    The refresh writes only the markets whose record changed; the tick's row keeps when it
    heard them all (`SnapshotTick.refreshed_at`, stamped `now`) and which held markets it
    did not bring back."""
    now = now or clock.now()
    report = TickReport(slot=snapshot_slot(now))
    if _tick_exists(report.slot):
        report.skipped = True
        return report
    refreshed_at: datetime | None = None
    not_refreshed: list[str] = []
    if refresh:
        held = held_market_ids()
        result = market_services.markets_refresh(  # network
            polymarket_ids=held, source=source, now=now
        )
        report.refreshed = len(result.markets)
        report.refresh_error = result.error
        if result.ok and result.synced_at is not None:
            refreshed_at = result.synced_at
            not_refreshed = sorted(held - {m.polymarket_id for m in result.markets})
    with transaction.atomic():
        tick = _tick_claim(report, refreshed_at=refreshed_at, not_refreshed=not_refreshed)
        if tick is None:
            report.skipped = True
            return report
        report.written = _snapshots_write(
            *_marked_sql(connection.vendor),
            at=report.slot,
            stale=bool(report.refresh_error),
        )
        with connection.cursor() as cursor:
            cursor.execute(_TICK_WRITTEN_SQL, [report.written, tick])
    return report


# The tick's own row, in plain statements: on the loaded bench machine the ORM's building of
# them (a get_or_create's four statements among them) took 5-10 ms of every tick.
_TICK = SnapshotTick._meta.db_table
_TICK_EXISTS_SQL = f"SELECT 1 FROM {_TICK} WHERE slot = %s"  # nosec B608
_TICK_WRITTEN_SQL = f"UPDATE {_TICK} SET snapshots_written = %s WHERE id = %s"  # nosec B608


def _tick_exists(slot: datetime) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(_TICK_EXISTS_SQL, [connection.ops.adapt_datetimefield_value(slot)])
        return cursor.fetchone() is not None


def _tick_claim(
    report: TickReport,
    *,
    refreshed_at: datetime | None,
    not_refreshed: list[str],
) -> int | None:
    """Insert the tick's row for its slot and return its id; None when a tick has it already
    (a second copy of the task waits here for the first to commit, then writes nothing)."""
    adapt = connection.ops.adapt_datetimefield_value
    listed = SnapshotTick._meta.get_field("not_refreshed")
    sql = f"""
        INSERT INTO {_TICK} (slot, markets_refreshed, snapshots_written, refresh_error,
                             refreshed_at, not_refreshed, created_at)
        VALUES (%s, %s, 0, %s, %s, %s, %s)
        ON CONFLICT (slot) DO NOTHING
        RETURNING id
    """  # noqa: S608 — the table name is ours, every value is a parameter  # nosec B608
    params = [
        adapt(report.slot),
        report.refreshed,
        report.refresh_error,
        adapt(refreshed_at),
        listed.get_db_prep_save(not_refreshed, connection),
        adapt(timezone.now()),  # as auto_now_add stamps it: the wall clock
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return None if row is None else int(row[0])


@functools.cache
def _marked_sql(vendor: str) -> tuple[str, tuple[Any, ...]]:
    """Return the SQL and parameters of the ids of `agents_to_mark()`, built once per process
    and database (`vendor`): nothing in it changes from tick to tick, and building it took
    3-8 ms of every tick."""
    sql, params = agents_to_mark().order_by().values("id").query.sql_with_params()
    return sql, tuple(params)
