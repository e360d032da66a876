"""Measure the 10-minute mark-to-market tick (`snapshots_take`) and the reading of a year of
snapshots, on SQLite and PostgreSQL.

Run from the repository root: .venv/bin/python bench/snapshot_tick.py [--repeat N] [--no-postgres]

The data, built with bulk_create: 100 active cohorts (distinct Sunday week starts) × the 7 LLMs
of the lineup = 700 agents, each holding 30 open positions (21,000 positions) spread over the
~600 real markets of the embedded recordings (synced into the catalogue with
`markets_sync_top(source=RecordedSource(), limit=600)`), each position with its executed BUY
trade (a third of them Brier-scored, so the tick's Brier aggregate has rows to read).

The tick's price refresh goes to a local ReplayServer (tests/replay.py, a real HTTP server on
127.0.0.1) standing in for Gamma: settings.MARKET_SOURCE = "gamma" and POLYMARKET_GAMMA_URL =
its url, answering GET /markets?id=…&id=… from the recorded records (the pattern of
tests/markets/conftest.py by_id_handler; the records are encoded once, so the server's own work
stays small). The real GammaClient fetches the held markets in batches of 50.

Measured, each in a new 10-minute slot (a repeated slot writes nothing):
- the whole tick, `snapshots_take()`, and the snapshot write alone, `snapshots_take(refresh=False)`
  (the project's own time), with 1, 10 and 100 active cohorts: time and query count; next to
  the write, in the same run, a reference set-based statement (`reference_write`: one INSERT …
  SELECT of the same snapshot rows at the positions' stored last prices, committed as the
  write is, its rows deleted after; and the same statement alone, rolled back) and the
  ratio of the two (target ≤ 3×), and of the whole tick to it; the four are timed taking
  turns, so that the shared machine's load weighs on each alike;
- at 100 cohorts, the refresh taken apart: the held-markets query, the HTTP fetch (to localhost,
  JSON decoded), `parse_markets`, `markets_upsert(include_raw=False)` of the records as served
  (nothing changed: nothing written) and with every price moved (every row written),
  `markets_refresh` whole;
- a year of snapshots: 52,560 PortfolioSnapshot rows (one year of 10-minute slots) for one agent,
  interleaved slot by slot with the same for the other agents of its cohort (as ticks write
  them), its hourly and daily rollup rebuilt (`rollup_rebuild`, as the COPY bypasses the tick),
  then `arena.selectors.curves.value_series(agents=[agent], range_key="ALL")` (the agent
  page's chart), the same for the cohort's agents (the cohort page; target < 50 ms on
  PostgreSQL) and at 1M, the same two with the rollup switched off (the snapshots alone; the
  curves are checked equal), the 1W range, and a raw
  range query on
  (agent_id, snapshot_timestamp) — with the query plans (EXPLAIN ANALYZE on PostgreSQL after
  ANALYZE, as autovacuum would have; EXPLAIN QUERY PLAN on SQLite).

Settings are read at django.setup(), so each database runs in a child process with its own
DATABASE_URL: a temporary SQLite file, and postgres://postgres@127.0.0.1:5432/bench_tick
(created and dropped here; override with BENCH_TICK_POSTGRES_URL). Both are migrated first.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from functools import partial
from itertools import cycle
from pathlib import Path
from typing import Any

import harness

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: make the project (and tests.replay) importable

POSTGRES_URL = os.environ.get(
    "BENCH_TICK_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/bench_tick"
)
CHILD_FLAG = "--child"
COHORTS = 100
POSITIONS_PER_AGENT = 30
CATALOGUE = 600
SCALES = (1, 10, 100)
LAST_WEEK_START = date(2026, 3, 1)  # a Sunday; cohorts go back one week each from here
FIRST_TICK = datetime(2026, 3, 2, tzinfo=UTC)  # tick slots, 10 minutes apart
YEAR_START = datetime(2025, 3, 1, tzinfo=UTC)  # the year of snapshots ends before FIRST_TICK
YEAR_SLOTS = 365 * 24 * 6  # 52,560
TARGET_WRITE_SECONDS = 2.0
TARGET_WRITE_RATIO = 3.0  # the tick's write against the reference set-based statement
TARGET_COHORT_CHART_SECONDS = 0.050


# --- child: one database, configured by DATABASE_URL before django.setup() ---------------------


def _server_version() -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT sqlite_version()")
        else:
            cursor.execute("SHOW server_version")
        return str(cursor.fetchone()[0]).split()[0]


def _measure(run: Callable[[], Any], *, repeat: int) -> dict[str, Any]:
    """Time `run` `repeat` times, then count its queries in one more run (timings carry no
    capture overhead). Return median, min, queries and the last result's summary. With
    repeat=0 (a long read), the one captured run is also the timed one."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    if repeat == 0:
        with CaptureQueriesContext(connection) as captured:
            clock = time.perf_counter()
            result = run()
            elapsed = time.perf_counter() - clock
        return {
            "median": elapsed,
            "min": elapsed,
            "queries": len(captured.captured_queries),
            "result": result,
        }
    seconds = []
    for _ in range(repeat):
        clock = time.perf_counter()
        run()
        seconds.append(time.perf_counter() - clock)
    with CaptureQueriesContext(connection) as captured:
        result = run()
    return {
        "median": statistics.median(seconds),
        "min": min(seconds),
        "queries": len(captured.captured_queries),
        "result": result,
    }


def _measure_alternately(
    runs: dict[str, Callable[[], Any]], *, repeat: int
) -> dict[str, dict[str, Any]]:
    """`_measure` each of `runs`, taking turns (the first of each, then the second of each,
    …): a change in the shared machine's load then weighs on every one of them alike, and
    their ratios hold. Queries are counted in one more round."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    seconds: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            clock = time.perf_counter()
            run()
            seconds[name].append(time.perf_counter() - clock)
    figures = {}
    for name, run in runs.items():
        with CaptureQueriesContext(connection) as captured:
            result = run()
        timed = seconds[name] or [0.0]
        figures[name] = {
            "median": statistics.median(timed),
            "min": min(timed),
            "queries": len(captured.captured_queries),
            "result": result,
        }
    return figures


def _side_price(outcomes: list[Any], prices: list[Any], index: int) -> Decimal:
    try:
        price = Decimal(str(prices[index]))
    except (IndexError, TypeError, ArithmeticError):
        return Decimal("0.5")
    return price if Decimal("0.01") <= price <= Decimal("0.99") else Decimal("0.5")


def build_data(
    *,
    seed: int = 7,
    cohorts: int = COHORTS,
    positions_per_agent: int = POSITIONS_PER_AGENT,
    catalogue: int = CATALOGUE,
) -> dict[str, Any]:
    """Catalogue, cohorts, agents, decisions, positions and trades; return what was built."""
    from django.db import connection

    from agents.models import BenchmarkModel
    from arena.models import Agent, Cohort, Decision, Position, Trade
    from markets.models import Market
    from markets.services import markets_sync_top
    from markets.sources import RecordedSource

    clock = time.perf_counter()
    synced = markets_sync_top(limit=catalogue, source=RecordedSource())
    ids = [m.polymarket_id for m in synced.markets]
    markets = list(
        Market.objects.filter(polymarket_id__in=ids)
        .order_by("polymarket_id")
        .values_list("pk", "outcomes", "outcome_prices")
    )
    sync_seconds = time.perf_counter() - clock

    clock = time.perf_counter()
    llms = list(
        BenchmarkModel.objects.filter(active=True, kind=BenchmarkModel.Kind.LLM).order_by(
            "display_order"
        )
    )
    cohort_list = []
    for k in range(cohorts):
        week = LAST_WEEK_START - timedelta(weeks=k)
        cohort_list.append(
            Cohort(
                number=k + 1,
                week_start=week,
                started_at=datetime(week.year, week.month, week.day, tzinfo=UTC),
            )
        )
    Cohort.objects.bulk_create(cohort_list)
    cohort_rows = list(Cohort.objects.order_by("number").values_list("pk", "week_start"))
    spent = positions_per_agent * Decimal("50.00")
    Agent.objects.bulk_create(
        [
            Agent(cohort_id=cohort_id, model=model, cash=Decimal("10000.00") - spent)
            for cohort_id, _ in cohort_rows
            for model in llms
        ],
        batch_size=2000,
    )
    agents = list(
        Agent.objects.order_by("cohort__number", "model__display_order").values_list(
            "pk", "cohort_id", "cohort__week_start"
        )
    )
    Decision.objects.bulk_create(
        [
            Decision(
                agent_id=agent_id,
                cohort_id=cohort_id,
                week_start=week,
                status=Decision.Status.DONE,
                action=Decision.Action.BET,
            )
            for agent_id, cohort_id, week in agents
        ],
        batch_size=2000,
    )

    rng = random.Random(seed)
    positions: list[Position] = []
    for number, (agent_id, _, week) in enumerate(agents):
        opened = datetime(week.year, week.month, week.day, 0, 5, tzinfo=UTC)
        start = number * positions_per_agent
        for j in range(positions_per_agent):
            market_pk, outcomes, prices = markets[(start + j) % len(markets)]
            binary = [str(o).lower() for o in outcomes] == ["yes", "no"]
            index = rng.randrange(len(outcomes)) if outcomes else 0
            price = _side_price(outcomes, prices, index)
            cost = Decimal("50.00")
            positions.append(
                Position(
                    agent_id=agent_id,
                    market_id=market_pk,
                    side=("YES", "NO")[index] if binary else str(outcomes[index]),
                    outcome_index=index,
                    shares=(cost / price).quantize(Decimal("0.000001")),
                    cost_basis=cost,
                    last_price=price,
                    opened_at=opened,
                )
            )
    Position.objects.bulk_create(positions, batch_size=5000)
    # One executed BUY per position (order i of its agent's decision: an order executes
    # once), a third of them Brier-scored. Written in one
    # INSERT … SELECT: bulk_create spends ~0.5 ms a row in Python on this 26-column table.
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO {Trade._meta.db_table} (
                decision_id, agent_id, order_index, try_number, kind, status, reject_reason,
                market_id, position_id, requested_market_id, requested_position_id, side,
                requested_amount, price, shares, amount, cash_before, cash_after,
                implied_confidence, brier_score, side_won, scored_at, created_at)
            SELECT d.id, p.agent_id,
                ROW_NUMBER() OVER (PARTITION BY p.agent_id ORDER BY p.id) - 1,
                1, 'BUY', 'executed', '',
                p.market_id, p.id, m.polymarket_id, '', p.side,
                p.cost_basis, p.last_price, p.shares, p.cost_basis, 10000.00, 9950.00,
                0.02,
                CASE WHEN p.id % 3 = 0 THEN (p.id % 97) / 100.0 END,
                CASE WHEN p.id % 3 = 0 THEN p.id % 2 = 0 END,
                CASE WHEN p.id % 3 = 0 THEN p.opened_at END,
                p.opened_at
            FROM {Position._meta.db_table} p
            JOIN {Decision._meta.db_table} d ON d.agent_id = p.agent_id
            JOIN {Market._meta.db_table} m ON m.id = p.market_id
            """
        )
    # Statistics for the bulk-loaded tables, as autovacuum gathers them after a load this size:
    # without them PostgreSQL plans the tick's INSERT … SELECT for tables of a few rows.
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return {
        "catalogue": len(markets),
        "sync_seconds": sync_seconds,
        "build_seconds": time.perf_counter() - clock,
        "cohorts": len(cohort_rows),
        "agents": len(agents),
        "positions": Position.objects.filter(status=Position.Status.OPEN).count(),
        "trades": Trade.objects.count(),
        "held_markets": Position.objects.values("market_id").distinct().count(),
    }


def set_active_cohorts(count: int) -> None:
    """Leave the first `count` cohorts active and complete the others."""
    from arena.models import Cohort

    Cohort.objects.filter(number__lte=count).update(status=Cohort.Status.ACTIVE, completed_at=None)
    Cohort.objects.filter(number__gt=count).update(
        status=Cohort.Status.COMPLETED, completed_at=FIRST_TICK
    )


def gamma_handler(records: dict[str, dict[str, Any]]) -> Any:
    """Answer GET /markets?id=…&id=… from `records`, as Gamma does (a list, unknown ids absent);
    each record is encoded once, so serving costs little more than a join."""
    from tests.replay import Reply, Request

    encoded = {pid: json.dumps(record).encode() for pid, record in records.items()}

    def handle(request: Request) -> Reply:
        ids = request.query.get("id")
        if not ids:
            return Reply.json({"type": "validation error", "error": "no id"}, 422)
        return Reply(body=b"[" + b",".join(encoded[i] for i in ids if i in encoded) + b"]")

    return handle


def _prices_moved(record: dict[str, Any]) -> dict[str, Any]:
    """The record with its outcome prices listed in reverse order: every price moves (but a
    market priced the same on every outcome)."""
    prices = record.get("outcomePrices")
    listed = json.loads(prices) if isinstance(prices, str) else prices
    if not isinstance(listed, list):
        return record
    return {**record, "outcomePrices": json.dumps(listed[::-1])}


def explain(sql: str, params: list[Any]) -> list[str]:
    from django.db import connection

    prefix = (
        "EXPLAIN QUERY PLAN " if connection.vendor == "sqlite" else "EXPLAIN (ANALYZE, BUFFERS) "
    )
    with connection.cursor() as cursor:
        cursor.execute(prefix + sql, params)
        rows = cursor.fetchall()
    if connection.vendor == "sqlite":
        return [" ".join(str(c) for c in row[1:]) for row in rows]
    return [str(row[0]) for row in rows]


SNAPSHOT_COLUMNS = (
    "agent_id",
    "snapshot_timestamp",
    "cash",
    "positions_value",
    "total_value",
    "total_pnl",
    "total_pnl_percent",
    "brier_score",
    "resolved_bets",
    "prices_stale",
    "created_at",
)


def insert_year(*, agent_ids: list[int], slots: int = YEAR_SLOTS) -> None:
    """Write a year of 10-minute snapshots for each agent, slot by slot (as ticks interleave
    them). Raw SQL: COPY on PostgreSQL, executemany on SQLite; bulk_create spends ~150 µs a
    row in Python, minutes for these rows, which is not what is measured here."""
    from django.db import connection, transaction

    from arena.models import PortfolioSnapshot

    adapt = connection.ops.adapt_datetimefield_value
    created = adapt(FIRST_TICK)
    start = Decimal("10000.00")
    cash = Decimal("8500.00")

    def rows() -> Any:
        for n in range(slots):
            slot = adapt(YEAR_START + timedelta(minutes=10 * n))
            for agent_id in agent_ids:
                total = start + Decimal((n * 7 + agent_id) % 2000 - 1000) / 10
                pnl = total - start
                yield (
                    agent_id,
                    slot,
                    cash,
                    total - cash,
                    total,
                    pnl,
                    (pnl / start * 100).quantize(Decimal("0.0001")),
                    None,
                    0,
                    False,
                    created,
                )

    table = PortfolioSnapshot._meta.db_table
    columns = ", ".join(SNAPSHOT_COLUMNS)
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row in rows():
                    copy.write_row(row)
        else:
            placeholders = ", ".join(["%s"] * len(SNAPSHOT_COLUMNS))
            sql = f"INSERT INTO {table} ({columns}) VALUES ({placeholders})"
            chunk: list[tuple[Any, ...]] = []
            for row in rows():
                chunk.append(row)
                if len(chunk) == 50_000:
                    cursor.executemany(sql, chunk)
                    chunk = []
            cursor.executemany(sql, chunk)


def reference_write(slots: Any, *, commit: bool) -> tuple[Callable[[], int], Callable[[], None]]:
    """The reference set-based statement the tick's write is compared with: one INSERT …
    SELECT writing the same snapshot rows (one per agent of an active cohort, positions summed
    in the database) at each agent's stored last trade price, with none of `position_mark`'s
    rules (no JSON prices, no fallbacks, no Brier aggregate, no rollup). With `commit` it is
    committed, as the tick's write is (the same durable work: on PostgreSQL a commit waits for
    the WAL flush, on SQLite it may checkpoint the WAL), and its rows are deleted afterwards by
    the second function, untimed; without, it is rolled back (the statement alone). Either way
    the rows never reach the curves."""
    from django.db import connection, transaction

    from arena.models import Agent, Cohort, PortfolioSnapshot, Position

    sql = f"""
        INSERT INTO {PortfolioSnapshot._meta.db_table} (
            agent_id, snapshot_timestamp, cash, positions_value, total_value, total_pnl,
            total_pnl_percent, brier_score, resolved_bets, prices_stale, created_at)
        SELECT a.id, %s, a.cash, COALESCE(v.value, 0), a.cash + COALESCE(v.value, 0),
               a.cash + COALESCE(v.value, 0) - c.starting_balance, 0, NULL, 0, %s, %s
        FROM {Agent._meta.db_table} a
        JOIN {Cohort._meta.db_table} c ON c.id = a.cohort_id
        LEFT JOIN (
            SELECT agent_id, SUM(shares * last_price) AS value
            FROM {Position._meta.db_table} WHERE status = 'open' GROUP BY agent_id
        ) v ON v.agent_id = a.id
        WHERE c.status = 'active'
    """
    written_at: list[datetime] = []

    def run() -> int:
        adapt = connection.ops.adapt_datetimefield_value
        at = next(slots)
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, [adapt(at), False, adapt(FIRST_TICK)])
            written: int = cursor.rowcount
            transaction.set_rollback(not commit)
        written_at.append(at)
        return written

    def clean_up() -> None:
        PortfolioSnapshot.objects.filter(snapshot_timestamp__in=written_at).delete()
        written_at.clear()

    return run, clean_up


def diagnostics(repeat: int) -> dict[str, Any]:
    """Two reads of the tick (100 active cohorts) as arena/services.py writes them, next to the
    same reads as the README suggests; both versions are replicated here, labelled."""
    from arena.models import Cohort, Position
    from arena.valuation import position_mark
    from markets.models import Market

    open_active = Position.objects.filter(
        status=Position.Status.OPEN, agent__cohort__status=Cohort.Status.ACTIVE
    )
    # held_market_ids(): DISTINCT, but Position's default ordering (agent → cohort week,
    # model kind and order; opened_at) is added to the SELECT DISTINCT.
    held_as_written = open_active.values_list("market__polymarket_id", flat=True).distinct()
    held_unordered = held_as_written.order_by()
    mark_fields = (
        "agent_id",
        "side",
        "shares",
        "cost_basis",
        "last_price",
        "market__outcomes",
        "market__outcome_prices",
        "market__last_open_prices",
        "market__closed",
    )

    def marks_as_written() -> int:
        values: dict[int, Decimal] = {}
        for (
            agent_id,
            side,
            shares,
            cost,
            last,
            outcomes,
            prices,
            last_open,
            closed,
        ) in open_active.values_list(*mark_fields).iterator(chunk_size=5000):
            price = position_mark(
                side=side,
                outcomes=outcomes,
                prices=prices,
                last_open_prices=last_open,
                closed=closed,
                last_price=last,
                shares=shares,
                cost_basis=cost,
            )
            values[agent_id] = values.get(agent_id, Decimal(0)) + shares * price
        return len(values)

    def marks_suggested() -> int:
        markets = {
            pk: rest
            for pk, *rest in Market.objects.filter(
                positions__status=Position.Status.OPEN,
                positions__agent__cohort__status=Cohort.Status.ACTIVE,
            )
            .order_by()
            .distinct()
            .values_list("pk", "outcomes", "outcome_prices", "last_open_prices", "closed")
        }
        values: dict[int, Decimal] = {}
        for agent_id, market_id, side, shares, cost, last in (
            open_active.order_by()
            .values_list(
                "agent_id",
                "market_id",
                "side",
                "shares",
                "cost_basis",
                "last_price",
            )
            .iterator(chunk_size=5000)
        ):
            outcomes, prices, last_open, closed = markets[market_id]
            price = position_mark(
                side=side,
                outcomes=outcomes,
                prices=prices,
                last_open_prices=last_open,
                closed=closed,
                last_price=last,
                shares=shares,
                cost_basis=cost,
            )
            values[agent_id] = values.get(agent_id, Decimal(0)) + shares * price
        return len(values)

    return {
        "held_rows_as_written": len(list(held_as_written)),
        "held_rows_unordered": len(list(held_unordered)),
        # .all(): a fresh queryset each time, not the result cache of the first evaluation
        "held_as_written": _measure(lambda: len(set(held_as_written.all())), repeat=repeat),
        "held_unordered": _measure(lambda: len(set(held_unordered.all())), repeat=repeat),
        "marks_as_written": _measure(marks_as_written, repeat=repeat),
        "marks_suggested": _measure(marks_suggested, repeat=repeat),
    }


def child(repeat: int) -> dict[str, Any]:
    """Migrate the database in DATABASE_URL, measure it, return the figures."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forecaster.settings")
    import django

    django.setup()

    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0, interactive=False)
    figures = measure_database(repeat)
    connection.close()
    return figures


def measure_database(
    repeat: int,
    *,
    cohorts: int = COHORTS,
    positions_per_agent: int = POSITIONS_PER_AGENT,
    catalogue: int = CATALOGUE,
    scales: tuple[int, ...] = SCALES,
    year_slots: int = YEAR_SLOTS,
) -> dict[str, Any]:
    """Build the data on the database Django is set up with (migrated, its lineup seeded) and
    measure the tick and the reads (module docstring); return the figures. The keywords
    shrink the data: `scales` are counts of active cohorts, at most `cohorts`."""
    from django.conf import settings
    from django.db import connection

    from arena.models import Agent, PortfolioSnapshot, Position, SnapshotTick
    from arena.selectors import curves as curves_module
    from arena.selectors.curves import value_series
    from arena.selectors.ticks import held_market_ids
    from arena.services.marking import snapshots_take
    from arena.services.rollup import rollup_rebuild
    from markets.parsing import parse_markets
    from markets.services import markets_refresh, markets_upsert
    from markets.sources import GammaSource, demo_records
    from tests.replay import ReplayServer

    figures: dict[str, Any] = {"vendor": connection.vendor, "version": _server_version()}
    figures["data"] = build_data(
        cohorts=cohorts, positions_per_agent=positions_per_agent, catalogue=catalogue
    )

    slots = iter(FIRST_TICK + timedelta(minutes=10 * n) for n in range(100_000))

    def tick(refresh: bool) -> Callable[[], dict[str, Any]]:
        def run() -> dict[str, Any]:
            report = snapshots_take(now=next(slots), refresh=refresh)
            assert not report.skipped, report.summary()
            assert not report.refresh_error, report.summary()
            return {"written": report.written, "refreshed": report.refreshed}

        return run

    server = ReplayServer().start()
    server.route("GET", "/markets", gamma_handler(demo_records()))
    settings.MARKET_SOURCE = "gamma"
    settings.POLYMARKET_GAMMA_URL = server.url
    try:
        per_scale = []
        for count in scales:
            set_active_cohorts(count)
            before = len(server.requests)
            committed, clean_committed = reference_write(slots, commit=True)
            alone, clean_alone = reference_write(slots, commit=False)
            measured = _measure_alternately(
                {
                    "full": tick(True),
                    "write": tick(False),
                    "reference": committed,
                    "statement": alone,
                },
                repeat=repeat,
            )
            clean_committed()
            clean_alone()
            requests_per_tick = (len(server.requests) - before) / (repeat + 1)
            full, write = measured["full"], measured["write"]
            reference = {name: measured[name] for name in ("reference", "statement")}
            for figure in reference.values():
                assert figure["result"] == write["result"]["written"]
            per_scale.append(
                {
                    "cohorts": count,
                    "agents": full["result"]["written"],
                    "positions": Position.objects.filter(
                        status=Position.Status.OPEN, agent__cohort__number__lte=count
                    ).count(),
                    "refreshed": full["result"]["refreshed"],
                    "requests": requests_per_tick,
                    "full": {k: full[k] for k in ("median", "min", "queries")},
                    "write": {k: write[k] for k in ("median", "min", "queries")},
                    **{
                        name: {k: figure[k] for k in ("median", "min", "queries")}
                        for name, figure in reference.items()
                    },
                }
            )
        figures["scales"] = per_scale

        # The refresh at the largest scale (100 cohorts), taken apart.
        held: set[str] = held_market_ids()
        ids = sorted(held)
        source = GammaSource()
        records = source.fetch_markets_by_ids(ids)
        batch = parse_markets(records)
        # Every price moved, back and forth from one upsert to the next: each writes every row.
        moved = cycle([parse_markets([_prices_moved(r) for r in records]).markets, batch.markets])
        parts = {
            "held": _measure(held_market_ids, repeat=repeat),
            "fetch": _measure(lambda: source.fetch_markets_by_ids(ids), repeat=repeat),
            "parse": _measure(lambda: parse_markets(records), repeat=repeat),
            "upsert": _measure(
                lambda: markets_upsert(markets=batch.markets, include_raw=False), repeat=repeat
            ),
            "upsert_moved": _measure(
                lambda: markets_upsert(markets=next(moved), include_raw=False), repeat=repeat
            ),
        }
        markets_upsert(markets=batch.markets, include_raw=False)  # the catalogue as served
        parts["refresh"] = _measure(lambda: markets_refresh(polymarket_ids=held), repeat=repeat)
        figures["refresh_parts"] = {
            k: {x: v[x] for x in ("median", "queries")} for k, v in parts.items()
        }
        figures["refresh_markets"] = len(ids)
        figures["refresh_records"] = len(records)
    finally:
        server.stop()
    figures["ticks"] = SnapshotTick.objects.count()
    figures["diagnostics"] = diagnostics(repeat)

    # --- a year of snapshots for one agent, among the other agents of its cohort --------------
    cohort_agents = list(
        Agent.objects.filter(cohort__number=1).select_related("model").order_by("pk")
    )
    agent = cohort_agents[0]
    clock = time.perf_counter()
    insert_year(agent_ids=[a.pk for a in cohort_agents], slots=year_slots)
    insert_seconds = time.perf_counter() - clock
    # The year went in by COPY, past the tick: its hourly and daily rollups are rebuilt, as
    # `manage.py rebuild_snapshot_rollup` would, and both tables analysed, as autovacuum would
    # after so many new rows (with no statistics for the rollup, the planner read a month of
    # it in 60 ms rather than 5).
    clock = time.perf_counter()
    rollup_rows = rollup_rebuild(agent_ids=[a.pk for a in cohort_agents])
    rollup_seconds = time.perf_counter() - clock
    with connection.cursor() as cursor:
        cursor.execute(
            "ANALYZE"
            if connection.vendor == "sqlite"
            else "ANALYZE arena_portfoliosnapshot, arena_agentsnapshotrollup"
        )
    year_end = YEAR_START + timedelta(minutes=10 * year_slots)
    table = PortfolioSnapshot._meta.db_table
    raw_sql = (
        f"SELECT snapshot_timestamp, total_value FROM {table} "
        "WHERE agent_id = %s AND snapshot_timestamp >= %s AND snapshot_timestamp < %s "
        "ORDER BY snapshot_timestamp"
    )

    adapt = connection.ops.adapt_datetimefield_value  # as the ORM stores them (text on SQLite)
    raw_params = [agent.pk, adapt(YEAR_START), adapt(year_end)]

    def raw_range() -> int:
        with connection.cursor() as cursor:
            cursor.execute(raw_sql, raw_params)
            return len(cursor.fetchall())

    def curves(agents: list[Agent], range_key: str = "ALL") -> Callable[[], list[int]]:
        return lambda: [len(s.points) for s in value_series(agents=agents, range_key=range_key)]

    # Diagnostic (README): the same ≤400-point curve thinned in SQL, ROW_NUMBER() kept every
    # step-th row, so 400 rows cross to Python instead of 52,560.
    thin_sql = (
        f"SELECT snapshot_timestamp, total_value FROM (SELECT snapshot_timestamp, total_value, "
        f"ROW_NUMBER() OVER (ORDER BY snapshot_timestamp) AS rn FROM {table} "
        "WHERE agent_id = %s) numbered WHERE (rn - 1) %% %s = 0 ORDER BY snapshot_timestamp"
    )

    def thinned() -> int:
        count = PortfolioSnapshot.objects.filter(agent=agent).count()
        step = max(1, -(-count // 400))
        with connection.cursor() as cursor:
            cursor.execute(thin_sql, [agent.pk, step])
            return len(cursor.fetchall())

    def off(bucket: timedelta, span: timedelta) -> str | None:
        return None

    def from_snapshots(read: Callable[[], Any]) -> Callable[[], Any]:
        """`read` with the rollup switched off: the curves as the snapshots alone give them."""

        def run() -> Any:
            rollup_resolution = curves_module._rollup_resolution
            curves_module._rollup_resolution = off
            try:
                return read()
            finally:
                curves_module._rollup_resolution = rollup_resolution

        return run

    same = {
        key: value_series(agents=cohort_agents, range_key=key)
        == from_snapshots(partial(value_series, agents=cohort_agents, range_key=key))()
        for key in ("1W", "1M", "3M", "ALL")
    }
    reads = {
        "one_agent": _measure(curves([agent]), repeat=repeat),
        "cohort": _measure(curves(cohort_agents), repeat=repeat),
        "cohort_1m": _measure(curves(cohort_agents, "1M"), repeat=repeat),
        "cohort_raw": _measure(from_snapshots(curves(cohort_agents)), repeat=repeat),
        "cohort_1m_raw": _measure(from_snapshots(curves(cohort_agents, "1M")), repeat=repeat),
        "last_week": _measure(curves([agent], "1W"), repeat=repeat),
        "raw": _measure(raw_range, repeat=repeat),
        "thinned": _measure(thinned, repeat=repeat),
    }
    figures["year"] = {
        "rows_agent": PortfolioSnapshot.objects.filter(agent=agent).count(),
        "rows_total": PortfolioSnapshot.objects.count(),
        "cohort_agents": len(cohort_agents),
        "insert_seconds": insert_seconds,
        "rollup_rows": rollup_rows,
        "rollup_seconds": rollup_seconds,
        "rollup_equals_snapshots": same,
        "reads": {
            k: {"median": v["median"], "queries": v["queries"], "result": v["result"]}
            for k, v in reads.items()
        },
    }
    curve_query = (
        PortfolioSnapshot.objects.filter(agent__in=[agent])
        .order_by("agent_id", "snapshot_timestamp")
        .values_list("agent_id", "snapshot_timestamp", "total_value")
    )
    if connection.vendor == "postgresql":
        curve_plan = curve_query.explain(analyze=True, buffers=True).splitlines()
    else:
        curve_plan = curve_query.explain().splitlines()
    figures["plans"] = {
        "raw": explain(raw_sql, raw_params),
        "value_curves": curve_plan,
    }
    return figures


# --- parent: one child per database, then the tables --------------------------------------------


def run_child(database_url: str, repeat: int) -> dict[str, Any]:
    return harness.run_child(__file__, database_url, CHILD_FLAG, "--repeat", str(repeat))


def postgres_database(action: str) -> None:
    harness.postgres_database(POSTGRES_URL, action)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms"


def print_database(name: str, figures: dict[str, Any], repeat: int) -> None:
    data = figures["data"]
    print(f"== {name} ==")
    print(
        f"data: {data['cohorts']} cohorts, {data['agents']} agents, {data['positions']:,} open "
        f"positions over {data['held_markets']} of {data['catalogue']} catalogue markets, "
        f"{data['trades']:,} trades (catalogue sync {data['sync_seconds']:.1f} s, "
        f"bulk build {data['build_seconds']:.1f} s)"
    )
    header = (
        f"{'cohorts':>7} | {'agents':>6} | {'positions':>9} | {'markets':>7} | {'GETs':>4} | "
        f"{'tick (refresh)':>14} | {'q':>3} | {'write only':>11} | {'q':>3} | {'refresh share':>13}"
    )
    print(f"snapshots_take, median of {repeat} ticks (each a new slot); queries from one more tick")
    print(header)
    print("-" * len(header))
    for s in figures["scales"]:
        share = s["full"]["median"] - s["write"]["median"]
        print(
            f"{s['cohorts']:>7} | {s['agents']:>6} | {s['positions']:>9,} | {s['refreshed']:>7} | "
            f"{s['requests']:>4.0f} | {_ms(s['full']['median']):>14} | {s['full']['queries']:>3} | "
            f"{_ms(s['write']['median']):>11} | {s['write']['queries']:>3} | {_ms(share):>13}"
        )
    parts = figures["refresh_parts"]
    labels = {
        "held": "held-market ids query",
        "fetch": f"HTTP fetch by id ({figures['refresh_markets']} ids, batches of 50, localhost)",
        "parse": f"parse_markets ({figures['refresh_records']} records)",
        "upsert": "markets_upsert(include_raw=False), the same records",
        "upsert_moved": "markets_upsert(include_raw=False), every price moved",
        "refresh": "markets_refresh, whole",
    }
    print("the price refresh at 100 cohorts, taken apart (median):")
    for key, label in labels.items():
        print(f"  {label:<62} {_ms(parts[key]['median']):>11}  {parts[key]['queries']:>2} q")
    diag = figures["diagnostics"]
    print("diagnostics at 100 cohorts (the tick's reads as written vs as suggested, median):")
    print(
        f"  held-market ids, as written: {_ms(diag['held_as_written']['median'])} "
        f"({diag['held_rows_as_written']:,} rows out of SELECT DISTINCT); with .order_by(): "
        f"{_ms(diag['held_unordered']['median'])} ({diag['held_rows_unordered']:,} rows)"
    )
    print(
        f"  read + mark 21,000 positions, as written (market JSON per row, default ordering): "
        f"{_ms(diag['marks_as_written']['median'])}; markets read once + .order_by(): "
        f"{_ms(diag['marks_suggested']['median'])}"
    )
    print(
        "the tick's write against the reference set-based INSERT … SELECT, committed as the "
        "write is (median, same run; the statement alone, rolled back, in brackets):"
    )
    for s in figures["scales"]:
        ratio = s["write"]["median"] / s["reference"]["median"]
        alone = s["write"]["median"] / s["statement"]["median"]
        whole = s["full"]["median"] / s["reference"]["median"]
        verdict = "within" if ratio <= TARGET_WRITE_RATIO else "OVER"
        print(
            f"  {s['positions']:>6,} positions: write {_ms(s['write']['median'])}, reference "
            f"{_ms(s['reference']['median'])}: {ratio:.1f}× ({verdict} {TARGET_WRITE_RATIO:.0f}×)"
            f" [statement {_ms(s['statement']['median'])}: {alone:.1f}×]; whole tick (refresh "
            f"and write) {_ms(s['full']['median'])}: {whole:.1f}×"
        )
    worst = max(s["write"]["median"] for s in figures["scales"])
    verdict = "under" if worst < TARGET_WRITE_SECONDS else "OVER"
    target = f"{TARGET_WRITE_SECONDS:.0f} s"
    print(f"snapshot write at 100 cohorts: {_ms(worst)} ({verdict} the {target} target)")

    year = figures["year"]
    reads = year["reads"]
    print(
        f"a year of snapshots: {year['rows_agent']:,} rows for the agent, {year['rows_total']:,} "
        f"in the table ({year['cohort_agents']} agents × a year + the ticks above); "
        f"inserted in {year['insert_seconds']:.1f} s; rollup rebuilt in "
        f"{year['rollup_seconds']:.1f} s ({year['rollup_rows']:,} hour and day rows)"
    )
    print(f"  rollup curves equal the snapshots' curves: {year['rollup_equals_snapshots']}")
    rows = [
        ("value_series(agents=[agent], ALL), a year", "one_agent"),
        (f"value_series({year['cohort_agents']} cohort agents, ALL), a year", "cohort"),
        (f"value_series({year['cohort_agents']} cohort agents, 1M)", "cohort_1m"),
        ("  the same ALL from the snapshots (rollup off)", "cohort_raw"),
        ("  the same 1M from the snapshots (rollup off)", "cohort_1m_raw"),
        ("value_series(agents=[agent], 1W)", "last_week"),
        ("raw range query (agent_id, snapshot_timestamp), a year", "raw"),
        ("diagnostic: count + ROW_NUMBER()-thinned query, a year", "thinned"),
    ]
    for label, key in rows:
        r = reads[key]
        result = r["result"]
        what = f"{result:,} rows" if isinstance(result, int) else f"points {result}"
        print(f"  {label:<58} {_ms(r['median']):>11}  {r['queries']} q  ({what})")
    cohort = reads["cohort"]["median"]
    verdict = "under" if cohort < TARGET_COHORT_CHART_SECONDS else "OVER"
    print(f"  cohort chart over a year: {_ms(cohort)} ({verdict} the 50 ms target)")
    print("  plan of the raw range query:")
    for line in figures["plans"]["raw"]:
        print(f"    {line}")
    print("  plan of value_curves' query:")
    for line in figures["plans"]["value_curves"]:
        print(f"    {line}")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument(CHILD_FLAG, action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.repeat), default=str))
        return

    started = time.perf_counter()
    results: list[tuple[str, dict[str, Any]]] = []
    with tempfile.TemporaryDirectory(prefix="bench_tick_") as tmp:
        sqlite = run_child(f"sqlite:///{tmp}/bench.sqlite3", args.repeat)
        results.append((f"SQLite {sqlite['version']} (temporary file)", sqlite))
    if not args.no_postgres:
        postgres_database("create")
        try:
            postgres = run_child(POSTGRES_URL, args.repeat)
        finally:
            postgres_database("drop")
        results.append((f"PostgreSQL {postgres['version']}", postgres))
    print(f"Mark-to-market tick and snapshot reads; {os.cpu_count()} CPUs.")
    print()
    for name, figures in results:
        print_database(name, figures, args.repeat)
    print(f"total bench time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
