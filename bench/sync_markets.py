"""Measure the catalogue sync of 500 real Polymarket markets on SQLite and PostgreSQL.

Run from the repository root: .venv/bin/python bench/sync_markets.py [--repeat N] [--no-postgres]

It parses the recorded Gamma listing of 500 active markets
(markets/recordings/gamma/markets_active_limit500_2026-01-31.json) with `parse_markets` and
upserts it with `markets_upsert`, timing each step apart, into an empty table (first sync) and
into a full one (re-sync); then it times the whole `markets_sync_top` with the embedded
`RecordedSource` the same two ways. Each figure is the median of N runs; the query count comes
from one more run under CaptureQueriesContext, so the timings carry no capture overhead.

Settings are read once, at django.setup(), so each database runs in a child process of this
script with its own DATABASE_URL: a temporary SQLite file, and postgres://postgres@127.0.0.1:5432/
bench_sync (created and dropped here; override with BENCH_POSTGRES_URL). Both are migrated first.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import harness

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: make the project importable

RECORDING = ROOT / "markets/recordings/gamma/markets_active_limit500_2026-01-31.json"
POSTGRES_URL = os.environ.get("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/bench_sync")
CHILD_FLAG = "--child"

# (key, label) in the order the table prints them.
ROWS = (
    ("load", "read + json.loads the recording"),
    ("parse", "parse_markets (500 records)"),
    ("upsert_first", "markets_upsert, empty table"),
    ("upsert_again", "markets_upsert, re-sync"),
    ("upsert_again_no_raw", "markets_upsert(include_raw=False), re-sync"),
    ("sync_first", "markets_sync_top(demo), empty table"),
    ("sync_again", "markets_sync_top(demo), re-sync"),
)


# --- child: one database, configured by DATABASE_URL before django.setup() ---------------------


def _measure(
    run: Callable[[], Any], *, repeat: int, before: Callable[[], None] | None = None
) -> dict[str, Any]:
    """Time `run` `repeat` times (each after `before`), then count its queries once more."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    seconds = []
    for _ in range(repeat):
        if before:
            before()
        clock = time.perf_counter()
        run()
        seconds.append(time.perf_counter() - clock)
    if before:
        before()
    with CaptureQueriesContext(connection) as captured:
        run()
    return {
        "median": statistics.median(seconds),
        "min": min(seconds),
        "queries": len(captured.captured_queries),
    }


def _server_version() -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT sqlite_version()")
        else:
            cursor.execute("SHOW server_version")
        return str(cursor.fetchone()[0]).split()[0]


def child(repeat: int) -> dict[str, Any]:
    """Migrate the database in DATABASE_URL, measure every row of ROWS, return the figures."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forecaster.settings")
    import django

    django.setup()

    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0, interactive=False)
    results = measure_database(repeat)
    connection.close()
    return results


def measure_database(repeat: int, *, limit: int = 500) -> dict[str, Any]:
    """Measure every row of ROWS on the database Django is set up with (migrated, its
    catalogue empty), the first `limit` records of the recording; return the figures."""
    from django.db import connection

    from markets.models import Market, MarketSyncRun
    from markets.parsing import parse_markets
    from markets.services import markets_sync_top, markets_upsert
    from markets.sources import RecordedSource, demo_records

    def empty_catalogue() -> None:
        # Plain DELETEs: the ORM's cascade collector would also read every table that points
        # at markets (arena's), which is not what a first sync meets.
        with connection.cursor() as cursor:
            for model in (Market, MarketSyncRun):
                cursor.execute(f"DELETE FROM {connection.ops.quote_name(model._meta.db_table)}")

    records = json.loads(RECORDING.read_text(encoding="utf-8"))[:limit]
    batch = parse_markets(records)
    source = RecordedSource()
    demo_records()  # the recordings are read once per process; keep that out of the timings

    results: dict[str, Any] = {
        "vendor": connection.vendor,
        "version": _server_version(),
        "records": len(records),
        "parsed": len(batch.markets),
        "rejected": len(batch.rejections),
    }
    results["load"] = _measure(
        lambda: json.loads(RECORDING.read_text(encoding="utf-8")), repeat=repeat
    )
    results["parse"] = _measure(lambda: parse_markets(records), repeat=repeat)
    results["upsert_first"] = _measure(
        lambda: markets_upsert(markets=batch.markets), repeat=repeat, before=empty_catalogue
    )
    results["upsert_again"] = _measure(lambda: markets_upsert(markets=batch.markets), repeat=repeat)
    if "include_raw" in inspect.signature(markets_upsert).parameters:
        results["upsert_again_no_raw"] = _measure(
            lambda: markets_upsert(markets=batch.markets, include_raw=False), repeat=repeat
        )
    assert Market.objects.count() == len(batch.markets)

    synced = markets_sync_top(limit=limit, source=source)
    results["synced"] = len(synced.markets)
    results["sync_first"] = _measure(
        lambda: markets_sync_top(limit=limit, source=source), repeat=repeat, before=empty_catalogue
    )
    results["sync_again"] = _measure(
        lambda: markets_sync_top(limit=limit, source=source), repeat=repeat
    )
    return results


# --- parent: one child per database, then the table ---------------------------------------------


def run_child(database_url: str, repeat: int) -> dict[str, Any]:
    return harness.run_child(__file__, database_url, CHILD_FLAG, "--repeat", str(repeat))


def postgres_database(action: str) -> None:
    harness.postgres_database(POSTGRES_URL, action)


def print_table(columns: list[tuple[str, dict[str, Any]]], repeat: int) -> None:
    first = columns[0][1]
    print(
        f"{first['records']} recorded records: {first['parsed']} parse, "
        f"{first['rejected']} refused; markets_sync_top keeps {first['synced']} "
        f"(open, of the demo recordings). Median of {repeat} runs; queries from one run"
        " (BEGIN and COMMIT included, as Django logs them)."
    )
    label_width = max(len(label) for _, label in ROWS)
    header = f"{'':<{label_width}}" + "".join(f" | {name:>20}" for name, _ in columns)
    print(header)
    print("-" * len(header))
    for key, label in ROWS:
        if any(key not in figures for _, figures in columns):
            continue  # a measurement this version of the services cannot make
        cells = []
        for _, figures in columns:
            row = figures[key]
            queries = "" if key in ("load", "parse") else f"{row['queries']:>3} q"
            cells.append(f" | {row['median'] * 1000:>9.1f} ms {queries:>6}")
        print(f"{label:<{label_width}}" + "".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument(CHILD_FLAG, action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.repeat)))
        return

    columns: list[tuple[str, dict[str, Any]]] = []
    with tempfile.TemporaryDirectory(prefix="bench_sync_") as tmp:
        sqlite = run_child(f"sqlite:///{tmp}/bench.sqlite3", args.repeat)
        columns.append((f"SQLite {sqlite['version']}", sqlite))
    if not args.no_postgres:
        postgres_database("create")
        try:
            postgres = run_child(POSTGRES_URL, args.repeat)
        finally:
            postgres_database("drop")
        columns.append((f"PostgreSQL {postgres['version']}", postgres))
    print_table(columns, args.repeat)


if __name__ == "__main__":
    main()
