"""Measure the JSON API on a generated year: the leaderboard, a year-long agent's value series,
and the streamed snapshot export.

Run from the repository root:
    .venv/bin/python bench/api.py [--database URL] [--requests 30] [--export-rows 1000000]
                                  [--regenerate] [--drop]

The database is PostgreSQL: BENCH_API_DATABASE_URL, else
postgres://postgres@127.0.0.1:5432/bench_api (created when missing and kept, so the next run
reuses its year; --regenerate writes it again, --drop drops it at the end).

The year is `bench/pages.py`'s (52 weekly cohorts of the whole lineup, trades and Brier-scored
bets, ~1.9 M ten-minute snapshots; see its docstring), written by its own generator, plus one
long-running agent: the first LLM agent of cohort 1 gets a snapshot every 10 minutes from its
cohort's start to the end of the year (~52,000 rows, its rollup rebuilt with them), so "a
one-year series for one agent" has a year to read.

Measured through the real request path, in-process with Django's test Client (middleware,
ninja, schemas, the ETag hash), DEBUG off and the API's rate limit off (`API_RATE_LIMIT=0`):

- `GET /api/v1/leaderboard` (by Brier, by return, completed cohorts only) and
  `GET /api/v1/agents/{id}/series?range=…` for the year-long agent (ALL, 3M, 1M, 1W, 1D):
  3 warm-ups, `--requests` timed, then one more to count its queries. Budget: p95 < 100 ms.
  The leaderboard's answer is kept until the data moves (arena/api/records.py): each is timed as
  served (the budget) and recomputed (the cache emptied before each request; reported).
- `GET /api/v1/exports/snapshots.csv?since=DAY`, DAY the latest UTC day from which at least
  `--export-rows` snapshots follow, in a child process of its own so that its peak RSS
  (VmHWM) is the export's alone; the child consumes `streaming_content` and counts the
  rows. Budget: peak RSS < 200 MB and ≥ 100,000 rows/s. Until the snapshots export exists, a
  stand-in streams `PortfolioSnapshot.objects.values_list(…).iterator()` through `csv.writer`
  in a `StreamingHttpResponse` (labelled as such).

Exits with status 1 when a budget is missed, naming it.
"""

from __future__ import annotations

import argparse
import csv
import gc
import json
import math
import os
import resource
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import harness
import pages as year  # the generated year: bench/pages.py's writer and environment

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: make the project importable

DEFAULT_URL = os.environ.get(
    "BENCH_API_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/bench_api"
)
WEEKS = 52
BUDGET_MS = 100.0
RSS_BUDGET_MB = 200.0
ROWS_PER_S_BUDGET = 100_000
WARMUPS = 3
SERIES_RANGES = ("ALL", "3M", "1M", "1W", "1D")
YEAR_SLOTS = 50_000  # the long agent counts as written once it holds this many snapshots
EXPORT_PATH = "/api/v1/exports/snapshots.csv"
CHILD_FLAG = "--export-child"
STAND_IN_CHUNK = 2_000


def _environment(url: str) -> None:
    year._env_for(url)  # DEBUG off, production settings, as pages.py measures
    # No rate limit (30 requests a second from one client would meet it), and no Redis: the
    # API enqueues nothing and counts its rate in the per-process cache.
    os.environ.update({"API_RATE_LIMIT": "0", "REDIS_URL": ""})


def _setup() -> None:
    import django
    from django.conf import settings

    settings.STORAGES = {  # DEBUG off has no collectstatic manifest here (see pages.py)
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    django.setup()
    warnings.filterwarnings("ignore", message="No directory at")


# --- the generated year ------------------------------------------------------------------------


def long_agent() -> Any:
    """The year-long agent: cohort 1's first LLM agent in lineup order."""
    from agents.models import BenchmarkModel
    from arena.models import Agent

    return (
        Agent.objects.filter(cohort__number=1, model__kind=BenchmarkModel.Kind.LLM)
        .order_by("model__display_order", "pk")
        .first()
    )


def _long_agent_ready() -> bool:
    """Whether the year holds the long agent as `extend_long_agent` writes it (its last
    snapshot scored: the generator's own snapshots carry no Brier score)."""
    agent = long_agent()
    if agent is None or agent.snapshots.count() < YEAR_SLOTS:
        return False
    last = agent.snapshots.order_by("-snapshot_timestamp").first()
    return last is not None and last.brier_score is not None


def extend_long_agent() -> int:
    """Carry the long agent's snapshots on, every 10 minutes, to the year's last slot; return
    the rows written. Its value keeps wandering around where its cohort left it; its running
    Brier score is a full-precision float (sometimes exactly 0 or 1), so the export's float
    cells are exercised."""
    from django.db import connection, transaction
    from django.db.models import Max

    from arena.models import PortfolioSnapshot
    from arena.services.rollup import rollup_rebuild

    agent = long_agent()
    last = agent.snapshots.order_by("-snapshot_timestamp").first()
    end = PortfolioSnapshot.objects.aggregate(end=Max("snapshot_timestamp"))["end"]
    ts = year._ts_format()
    cash = float(last.cash)
    base = float(last.total_value)
    resolved = last.resolved_bets

    def rows() -> Iterator[tuple[Any, ...]]:
        at, i = last.snapshot_timestamp + year.SLOT, 0
        while at <= end:
            i += 1
            value = base + 350 * math.sin(i / 431) + 120 * math.sin(i / 37)
            pnl = value - 10_000
            brier = 0.0 if i % 997 == 0 else 1.0 if i % 991 == 0 else 0.2 + 0.1 * math.sin(i / 211)
            yield (
                agent.pk, ts(at), f"{cash:.2f}", f"{value - cash:.2f}", f"{value:.2f}",
                f"{pnl:.2f}", f"{pnl / 100:.4f}", brier, resolved, False, ts(at),
            )  # fmt: skip
            at += year.SLOT

    fields = ["agent_id", "snapshot_timestamp", "cash", "positions_value", "total_value",
              "total_pnl", "total_pnl_percent", "brier_score", "resolved_bets", "prices_stale",
              "created_at"]  # fmt: skip
    with transaction.atomic():
        written = year.Writer(PortfolioSnapshot, fields, now_text=ts(end)).write(rows())
    rollup_rebuild(agent_ids=[agent.pk])  # the rows went in past the tick that keeps it
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {PortfolioSnapshot._meta.db_table}")
    return written


def export_since(rows: int) -> tuple[date, int]:
    """Return the latest UTC day from which at least `rows` snapshots follow, and their count
    (every snapshot, from the first day, when the table holds fewer)."""
    from django.db.models import Count
    from django.db.models.functions import TruncDate

    from arena.models import PortfolioSnapshot

    per_day = (
        PortfolioSnapshot.objects.order_by()
        .annotate(day=TruncDate("snapshot_timestamp"))
        .values("day")
        .annotate(n=Count("pk"))
        .order_by("-day")
        .values_list("day", "n")
    )
    total, since = 0, None
    for day, n in per_day:
        total, since = total + n, day
        if total >= rows:
            break
    assert since is not None
    return since, total


# --- the request path ----------------------------------------------------------------------------


@dataclass
class Result:
    label: str
    url: str
    status: int = 0
    times_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)  # this process's CPU time per request
    queries: int = 0
    query_ms: float = 0.0
    bytes: int = 0
    points: int | None = None

    @property
    def p50(self) -> float:
        return statistics.median(self.times_ms)

    @property
    def p95(self) -> float:
        ordered = sorted(self.times_ms)
        return ordered[math.ceil(0.95 * len(ordered)) - 1]  # nearest rank


def measure(
    label: str, url: str, *, requests: int, recompute: bool = False, warmups: int = WARMUPS
) -> Result:
    """Time `requests` GETs of `url` after `warmups` untimed ones; with `recompute`, the cache
    is emptied before each (out of the timing), so each answer is computed afresh, as after a
    data change. An endpoint stops at its first answer that is not 200."""
    from django.core.cache import cache
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    result = Result(label, url)
    client = Client(raise_request_exception=False)  # a 500 is a figure, not the end
    for _ in range(warmups):
        result.status = client.get(url).status_code
        if result.status != 200:
            return result
    for _ in range(requests):
        if recompute:
            cache.clear()
        cpu, clock = time.process_time(), time.perf_counter()
        response = client.get(url)
        result.times_ms.append((time.perf_counter() - clock) * 1000)
        result.cpu_ms.append((time.process_time() - cpu) * 1000)
        result.status = response.status_code
        if result.status != 200:
            return result
    result.bytes = len(response.content)
    body = json.loads(response.content)
    if isinstance(body, dict) and "points" in body:
        result.points = len(body["points"])
    if recompute:
        cache.clear()
    with CaptureQueriesContext(connection) as captured:
        client.get(url)
    result.queries = len(captured.captured_queries)
    result.query_ms = sum(float(q["time"]) for q in captured.captured_queries) * 1000
    return result


# --- the export, in a child process --------------------------------------------------------------


def _rss_mb() -> float:
    """This process's resident set now."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def _peak_rss_mb() -> float:
    """This process's peak resident set: VmHWM, the high-water mark of its own address space.
    `getrusage(RUSAGE_SELF).ru_maxrss` is no good here: Linux carries the parent's mark into
    the child across the fork (or vfork) and exec, so it reports the bench's own peak (the
    generator's ~290 MB) instead of the export's."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024 / 1e6  # kB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6  # not Linux


def _stand_in(since: date) -> Any:
    """The snapshots export as the stand-in streams it: one chunked query through csv.writer."""
    from datetime import UTC, datetime

    from django.http import StreamingHttpResponse

    from arena.models import PortfolioSnapshot

    class Echo:
        def write(self, value: str) -> str:
            return value

    columns = ("agent", "model", "cohort", "snapshot_timestamp", "cash", "positions_value",
               "total_value", "total_pnl", "total_pnl_percent", "brier_score",
               "resolved_bets", "prices_stale")  # fmt: skip
    rows = (
        PortfolioSnapshot.objects.filter(
            snapshot_timestamp__gte=datetime.combine(since, datetime.min.time(), UTC)
        )
        .order_by("pk")
        .values_list(
            "agent_id",
            "agent__model__internal_id",
            "agent__cohort__number",
            "snapshot_timestamp",
            "cash",
            "positions_value",
            "total_value",
            "total_pnl",
            "total_pnl_percent",
            "brier_score",
            "resolved_bets",
            "prices_stale",
        )  # fmt: skip
        .iterator(chunk_size=STAND_IN_CHUNK)
    )

    def lines() -> Iterator[str]:
        writer = csv.writer(Echo(), lineterminator="\n")
        yield writer.writerow(columns)
        for row in rows:
            yield writer.writerow(
                [row[3].isoformat() if i == 3 else ("" if v is None else v)
                 for i, v in enumerate(row)]
            )  # fmt: skip

    return StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")


def export_child(since: date) -> dict[str, Any]:
    """Stream the export once and return its figures (run in a process of its own)."""
    from django.test import Client
    from django.urls import get_resolver

    rss_setup = _rss_mb()
    assert get_resolver().url_patterns  # loaded as a server has it: every view's imports
    gc.collect()
    gc.freeze()
    rss_start = _rss_mb()
    clock = time.perf_counter()
    response: Any = Client().get(EXPORT_PATH, {"since": since.isoformat()})
    how = "GET " + EXPORT_PATH
    if response.status_code == 404:
        how = "stand-in (values_list().iterator() through csv.writer; no HTTP route yet)"
        response = _stand_in(since)
    elif response.status_code != 200:
        return {"error": f"{EXPORT_PATH} answered HTTP {response.status_code}"}
    if not response.streaming:
        return {"error": f"{EXPORT_PATH} is not streamed", "how": how}
    first_chunk_ms = None
    lines = chunks = size = 0
    rss_samples: list[float] = []
    next_sample = 100_000
    for chunk in response.streaming_content:
        if first_chunk_ms is None:
            first_chunk_ms = (time.perf_counter() - clock) * 1000
        chunks += 1
        size += len(chunk)
        lines += chunk.count(b"\n")
        if lines >= next_sample:
            rss_samples.append(round(_rss_mb(), 1))
            next_sample += 200_000
    response.close()
    seconds = time.perf_counter() - clock
    rows = lines - 1  # the header
    return {
        "how": how,
        "rows": rows,
        "seconds": round(seconds, 2),
        "rows_per_s": round(rows / seconds),
        "mb": round(size / 1e6, 1),
        "chunks": chunks,
        "first_chunk_ms": round(first_chunk_ms or 0, 1),
        "rss_setup_mb": round(rss_setup, 1),
        "rss_start_mb": round(rss_start, 1),
        "rss_samples_mb": rss_samples,
        "peak_rss_mb": round(max([_peak_rss_mb(), _rss_mb(), *rss_samples]), 1),
    }


def _print_export(figures: dict[str, Any]) -> None:
    if "error" in figures:
        print(f"  {figures['error']}")
        return
    print(f"  {figures['how']}:")
    print(
        f"    {figures['rows']:,} rows, {figures['mb']} MB in {figures['seconds']} s: "
        f"{figures['rows_per_s']:,} rows/s (first chunk after {figures['first_chunk_ms']} ms, "
        f"{figures['chunks']:,} chunks)"
    )
    print(
        f"    RSS: {figures['rss_setup_mb']} MB after django.setup(), "
        f"{figures['rss_start_mb']} MB with the URLconf loaded, "
        f"{figures['rss_samples_mb']} MB along the stream; peak {figures['peak_rss_mb']} MB"
    )


# --- the run -------------------------------------------------------------------------------------


def api_endpoints(agent_id: int) -> list[tuple[str, str, bool]]:
    """(label, path, recompute) of every request measured: the leaderboards served and
    recomputed, and the agent's value series at every range."""
    # The leaderboard is kept until the data moves (arena/api/records.py): "served" is what requests
    # get between changes (the budget), "recomputed" what the first one after a change costs.
    leaderboards = [
        ("leaderboard", "/api/v1/leaderboard"),
        ("leaderboard, by return", "/api/v1/leaderboard?sort=return"),
        ("leaderboard, completed cohorts", "/api/v1/leaderboard?cohorts=completed"),
    ]
    series = f"/api/v1/agents/{agent_id}/series"
    return (
        [(f"{label}, served", url, False) for label, url in leaderboards]
        + [(f"{label}, recomputed", url, True) for label, url in leaderboards]
        + [
            (f"series {key}, agent {agent_id}", f"{series}?range={key}", False)
            for key in SERIES_RANGES
        ]
    )


def run(
    *,
    requests: int,
    export_rows: int,
    export: Callable[[date], dict[str, Any]] | None,
    regenerate: bool = False,
    weeks: int = WEEKS,
    catalogue: int = year.CATALOGUE,
    warmups: int = WARMUPS,
) -> list[str]:
    """On the database Django is set up with (migrated): write the year unless it is there,
    then measure and print every endpoint and, unless `export` is None, the export that
    `export(since)` streams (in a process of its own: `export_child`'s figures); return what
    missed its budget. `weeks` and the keywords after it shrink the run."""
    from arena.models import PortfolioSnapshot

    written: list[str] = []
    if regenerate or not year.has_year(weeks) or not _long_agent_ready():
        year.clear()
        print(f"writing {weeks} weeks of data (bench/pages.py's generator) …", flush=True)
        generated = year.generate(weeks=weeks, catalogue=catalogue)
        written.append(f"the year in {generated['seconds']} s")
        clock = time.perf_counter()
        rows = extend_long_agent()
        seconds = time.perf_counter() - clock
        written.append(f"{rows:,} snapshots for the long agent in {seconds:.1f} s")

    agent = long_agent()
    print("The JSON API on a generated year (Django test Client, in-process, DEBUG off)")
    for line in year.facts():
        print(line)
    print(f"data: {year.table_counts()}")
    print(
        f"year-long agent {agent.pk} ({agent.model.display_name}, cohort 1): "
        f"{agent.snapshots.count():,} snapshots"
    )
    print("; ".join(written) if written else "data reused (--regenerate writes it again)")
    print(f"{warmups} warm-ups, then {requests} timed; budget p95 < {BUDGET_MS:.0f} ms")
    print()

    endpoints = api_endpoints(agent.pk)
    header = (
        f"{'endpoint':<44} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7} {'cpu p50':>7} {'queries':>7} "
        f"{'db ms':>6} {'KB':>5} {'points':>6}"
    )
    print(header)
    print("-" * len(header))
    gc.collect()
    gc.freeze()  # as forecaster/wsgi.py does once the app is loaded
    failures: list[str] = []
    for label, url, recompute in endpoints:
        result = measure(label, url, requests=requests, recompute=recompute, warmups=warmups)
        if result.status != 200:
            print(f"{label:<44} HTTP {result.status}")
            failures.append(f"{label} ({url}) answered HTTP {result.status}")
            continue
        # A recomputed leaderboard is reported, not budgeted: one request per data change.
        over = result.p95 >= BUDGET_MS and not recompute
        print(
            f"{label:<44} {result.p50:>7.1f} {result.p95:>7.1f} {max(result.times_ms):>7.1f} "
            f"{statistics.median(result.cpu_ms):>7.1f} {result.queries:>7} "
            f"{result.query_ms:>6.0f} {result.bytes / 1024:>5.0f} "
            f"{'' if result.points is None else result.points:>6}{'  OVER' if over else ''}",
            flush=True,
        )
        if over:
            failures.append(f"{label} ({url}) p95 {result.p95:.1f} ms >= {BUDGET_MS:.0f} ms")

    if export is not None:
        since, expected = export_since(export_rows)
        total = PortfolioSnapshot.objects.count()
        print()
        print(f"export: snapshots since {since} ({expected:,} of {total:,} rows), in a child")
        print("process of its own (its peak RSS is the export's alone)")
        figures = export(since)
        _print_export(figures)
        if "error" in figures:
            failures.append(f"export: {figures['error']}")
        else:
            if figures["rows"] != expected:
                failures.append(f"export: {figures['rows']:,} rows, expected {expected:,}")
            if figures["peak_rss_mb"] >= RSS_BUDGET_MB:
                failures.append(
                    f"export: peak RSS {figures['peak_rss_mb']} MB >= {RSS_BUDGET_MB:.0f} MB"
                )
            if figures["rows_per_s"] < ROWS_PER_S_BUDGET:
                failures.append(
                    f"export: {figures['rows_per_s']:,} rows/s < {ROWS_PER_S_BUDGET:,} rows/s"
                )
    return failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default=DEFAULT_URL, help="postgres://…")
    parser.add_argument("--requests", type=int, default=30, help="timed requests per endpoint")
    parser.add_argument("--export-rows", type=int, default=1_000_000, help="rows to export")
    parser.add_argument("--regenerate", action="store_true", help="write the year again")
    parser.add_argument("--drop", action="store_true", help="drop the PostgreSQL database after")
    parser.add_argument("--no-export", action="store_true", help="skip the export")
    parser.add_argument(CHILD_FLAG, dest="child_since", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child_since:  # the export's own process (harness.run_child reads the last line)
        _environment(os.environ["DATABASE_URL"])
        _setup()
        print(json.dumps(export_child(date.fromisoformat(args.child_since))))
        return

    postgres = args.database.startswith("postgres")
    if postgres:
        year._ensure_postgres_database(args.database)
    _environment(args.database)
    _setup()
    from django.core.management import call_command
    from django.db import connection

    def export(since: date) -> dict[str, Any]:
        connection.close()
        return harness.run_child(__file__, args.database, CHILD_FLAG, since.isoformat())

    call_command("migrate", verbosity=0, interactive=False)
    failures = run(
        requests=args.requests,
        export_rows=args.export_rows,
        export=None if args.no_export else export,
        regenerate=args.regenerate,
    )
    connection.close()
    print(f"load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.drop and postgres:
        year._drop_postgres_database(args.database)
    print()
    for failure in failures:
        print(f"OVER BUDGET: {failure}")
    if failures:
        sys.exit(1)
    print("every budget met")


if __name__ == "__main__":
    main()
