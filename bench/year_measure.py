"""The API, analytics and tick benchmarks on the year `bench/year.py` wrote, without
regenerating it: `bench/api.py` and `bench/analytics.py` wipe any database that does not hold
the year their own generators write, and `bench/snapshot_tick.py` builds its own database. So
this calls their measuring functions (the same requests, the same timings, the same budgets)
on the year as it is.

    .venv/bin/python bench/year_measure.py {pages,api,analytics,tick} [--database URL]
"""

from __future__ import annotations

import argparse
import functools
import gc
import os
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, date, timedelta
from typing import Any

import year  # bench/year.py (its directory is on sys.path: run as a script)


def _print_budget(failures: list[str]) -> None:
    print(f"load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for failure in failures:
        print(f"OVER BUDGET: {failure}")
    if failures:
        sys.exit(1)
    print("every budget met")


def page_list(ranges: tuple[str, ...]) -> list[Any]:
    """bench/pages.py's pages on this year's heaviest objects; the decision page shows the
    decision with the most attempts of any responder (pages.py looks for an OpenRouter one,
    and here the LLM agents are the offline stand-ins)."""
    import pages
    from django.db.models import Count

    from arena.models import Decision

    heaviest = (
        Decision.objects.annotate(n=Count("attempts")).order_by("-n", "-week_start", "pk").first()
    )
    assert heaviest is not None, "no decisions: write the year first (bench/year.py)"
    original = Decision.objects.filter

    def openrouter_or_any(*args: Any, **kwargs: Any) -> Any:
        if kwargs == {"responder": Decision.Responder.OPENROUTER}:
            return original(pk=heaviest.pk)
        return original(*args, **kwargs)

    Decision.objects.filter = openrouter_or_any  # type: ignore[method-assign]
    try:
        return pages.pages(ranges)
    finally:
        del Decision.objects.filter


def measure_pages(url: str, requests: int) -> None:
    """bench/pages.py's pages and timings (its main would find no OpenRouter decision)."""
    year.environment(url)
    import django
    from django.conf import settings

    settings.STORAGES = {  # as pages.py: DEBUG off has no collectstatic manifest here
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    django.setup()
    import warnings

    warnings.filterwarnings("ignore", message="No directory at")
    from django.db import connection

    failures = run_pages(requests)
    connection.close()
    _print_budget(failures)


def run_pages(
    requests: int,
    *,
    warmups: int | None = None,
    ranges: tuple[str, ...] | None = None,
    only: str = "",
) -> list[str]:
    """measure_pages on the database Django is set up with; return what missed its budget.
    `warmups`, `ranges` (pages.py's by default) and `only` (the pages whose label has it, as
    pages.py's --only) shrink the run."""
    import pages

    warmups = pages.WARMUPS if warmups is None else warmups
    print("Server time per page (bench/pages.py's pages) on the year written through the services")
    print(f"data: {pages.table_counts()}")
    print(f"{warmups} warm-ups, then {requests} timed; budget p95 < {pages.BUDGET_MS:.0f} ms\n")
    header = (
        f"{'page':<44} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7} {'cpu p50':>7} {'queries':>7} "
        f"{'db ms':>6} {'KB':>5}"
    )
    print(header)
    print("-" * len(header))
    page_set = page_list(pages.RANGES if ranges is None else ranges)
    gc.collect()
    gc.freeze()
    failures: list[str] = []
    for page in page_set:
        if only and only not in page.label:
            continue
        result = pages.measure(page, requests=requests, warmups=warmups)
        if result.missing:
            print(f"{page.label:<44} {result.missing}")
            continue
        if result.status != 200:
            print(f"{page.label:<44} HTTP {result.status} at {result.url}")
            failures.append(f"{page.label} ({result.url}) answered HTTP {result.status}")
            continue
        over = result.p95 >= pages.BUDGET_MS
        print(
            f"{page.label:<44} {result.p50:>7.1f} {result.p95:>7.1f} {max(result.times_ms):>7.1f}"
            f" {statistics.median(result.cpu_ms):>7.1f} {result.queries:>7} {result.query_ms:>6.0f}"
            f" {result.bytes / 1024:>5.0f}{'  OVER' if over else ''}",
            flush=True,
        )
        if over:
            failures.append(f"{page.label} ({result.url}) p95 {result.p95:.1f} ms")
    return failures


def measure_api(url: str, requests: int, export_rows: int) -> None:
    """bench/api.py's endpoints and export; the "long agent" is the agent with the most
    snapshots (api.py writes one that lives the whole year; here none does)."""
    import api
    import harness

    api._environment(url)
    os.environ["OPENROUTER_API_KEY"] = ""
    api._setup()
    from django.db import connection

    def export(since: date) -> dict[str, Any]:
        connection.close()
        return harness.run_child(api.__file__, url, api.CHILD_FLAG, since.isoformat())

    failures = run_api(requests, export_rows, export)
    _print_budget(failures)


def run_api(
    requests: int,
    export_rows: int,
    export: Callable[[date], dict[str, Any]],
    *,
    warmups: int | None = None,
) -> list[str]:
    """measure_api on the database Django is set up with, `export(since)` streaming the export
    in a process of its own; return what missed its budget."""
    import api
    from django.db.models import Count

    from arena.models import Agent, PortfolioSnapshot

    warmups = api.WARMUPS if warmups is None else warmups
    agent = Agent.objects.annotate(n=Count("snapshots")).order_by("-n", "pk").first()
    assert agent is not None, "no agents: write the year first (bench/year.py)"
    print("The JSON API (bench/api.py's requests) on the year written through the services")
    print(
        f"longest-lived agent {agent.pk} ({agent.model.display_name}, cohort "
        f"{agent.cohort.number}): {agent.n:,} snapshots"
    )
    print(f"{warmups} warm-ups, then {requests} timed; budget p95 < {api.BUDGET_MS:.0f} ms\n")
    endpoints = api.api_endpoints(agent.pk)
    header = (
        f"{'endpoint':<44} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7} {'cpu p50':>7} "
        f"{'queries':>7} {'db ms':>6} {'KB':>5} {'points':>6}"
    )
    print(header)
    print("-" * len(header))
    gc.collect()
    gc.freeze()
    failures: list[str] = []
    for label, path, recompute in endpoints:
        result = api.measure(label, path, requests=requests, recompute=recompute, warmups=warmups)
        if result.status != 200:
            print(f"{label:<44} HTTP {result.status}")
            failures.append(f"{label} ({path}) answered HTTP {result.status}")
            continue
        over = result.p95 >= api.BUDGET_MS and not recompute
        print(
            f"{label:<44} {result.p50:>7.1f} {result.p95:>7.1f} {max(result.times_ms):>7.1f} "
            f"{statistics.median(result.cpu_ms):>7.1f} {result.queries:>7} "
            f"{result.query_ms:>6.0f} {result.bytes / 1024:>5.0f} "
            f"{'' if result.points is None else result.points:>6}{'  OVER' if over else ''}",
            flush=True,
        )
        if over:
            failures.append(f"{label} ({path}) p95 {result.p95:.1f} ms >= {api.BUDGET_MS:.0f} ms")
    since, expected = api.export_since(export_rows)
    total = PortfolioSnapshot.objects.count()
    print(f"\nexport: snapshots since {since} ({expected:,} of {total:,} rows), in a child process")
    figures = export(since)
    api._print_export(figures)
    if "error" in figures:
        failures.append(f"export: {figures['error']}")
    elif figures["rows"] != expected:
        failures.append(f"export: {figures['rows']:,} rows, expected {expected:,}")
    else:
        if figures["peak_rss_mb"] >= api.RSS_BUDGET_MB:
            failures.append(f"export: peak RSS {figures['peak_rss_mb']} MB")
        if figures["rows_per_s"] < api.ROWS_PER_S_BUDGET:
            failures.append(f"export: {figures['rows_per_s']:,} rows/s")
    return failures


def measure_analytics(url: str, runs: int) -> None:
    """bench/analytics.py's measures: compute_analytics cold per scope (and its peak RSS in a
    fresh process), analytics() served from the cache, model_analytics per model."""
    import analytics

    year.environment(url)
    import django

    django.setup()
    from django.db import connection

    failures = run_analytics(runs, functools.partial(analytics.measure_rss, url))
    connection.close()
    _print_budget(failures)


def run_analytics(runs: int, rss: Callable[[str], float | None]) -> list[str]:
    """measure_analytics on the database Django is set up with, `rss(scope)` giving the peak
    RSS growth in a fresh process; return what missed its budget."""
    import analytics

    print(
        "Leaderboard analytics (bench/analytics.py's measures) on the year written through "
        "the services"
    )
    print("data: " + ", ".join(f"{n:,} {label}" for label, n in analytics.data_counts().items()))
    print(f"budget: compute_analytics median < {analytics.BUDGET_MS:.0f} ms after a move\n")
    gc.collect()
    module = analytics._selectors()
    failures = analytics.measure_scopes(module, runs, rss)
    served = analytics.measure_served(module)
    print(
        f"{'analytics() served from the cache':<40} median {served['median']:.3f} ms, worst "
        f"{served['worst']:.3f} ms, {served['queries']} queries, {served['kb']:.0f} KB pickled; "
        f"the call that filled it {served['fill']:.0f} ms"
    )
    print("model_analytics(model=…), cold / warm:")
    for internal_id, cold, warm in analytics.measure_models(module):
        print(f"  {internal_id:<38} {cold:>7.0f} ms / {warm:.2f} ms")
    failures += _panel_board(runs)
    return failures


def _panel_board(runs: int) -> list[str]:
    """Methodology v2's panel figures of every row (the leaderboard's v2 view and
    /api/v1/forecasts/leaderboard), from the database: under analytics.BUDGET_MS too."""
    import analytics

    from arena.models import PanelForecast
    from arena.selectors.panel import panel_board

    times = []
    for _ in range(runs):
        started = time.perf_counter()
        board = panel_board()
        times.append((time.perf_counter() - started) * 1000)
    median = statistics.median(times)
    print(
        f"{'panel_board()':<40} median {median:.0f} ms, worst {max(times):.0f} ms ({runs} runs) "
        f"over {PanelForecast.objects.count():,} forecasts, {board.questions:,} resolved questions"
    )
    return [f"panel_board() median {median:.0f} ms"] if median >= analytics.BUDGET_MS else []


def measure_tick(url: str, ticks: int, season_weeks: int) -> None:
    """`snapshots_take` (with the refresh of the held markets, as production runs it) and
    `resolutions_check` at the next `ticks` 10-minute slots after the last one written: the
    year grows by those ticks, so a rerun measures the slots after them."""
    year.environment(url)
    import django

    django.setup()
    from django.db import connection

    run_tick(ticks, season_weeks)
    connection.close()
    _print_budget([])


def run_tick(ticks: int, season_weeks: int) -> list[dict[str, Any]]:
    """measure_tick on the database Django is set up with; return each slot's figures."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from arena import clock
    from arena.models import Cohort, PortfolioSnapshot, SnapshotTick
    from arena.selectors.ticks import agents_to_mark
    from arena.services.marking import snapshots_take
    from arena.services.settlement import resolutions_check
    from markets.demo import SimulatedSource

    weeks = Cohort.objects.count()
    start, end = year.year_bounds(weeks)
    source = SimulatedSource(
        start=start,
        last_sunday=start + timedelta(weeks=weeks - 1),
        seed=year.SEED,
        season=timedelta(weeks=season_weeks) if season_weeks else None,
    )
    last = SnapshotTick.objects.order_by("-slot").values_list("slot", flat=True).first()
    assert last is not None, "no ticks: write the year first (bench/year.py)"
    moment = last.astimezone(UTC) + year.TICK
    print("The 10-minute tick on the year written through the services")
    print(
        f"{PortfolioSnapshot.objects.count():,} snapshots, {SnapshotTick.objects.count():,} "
        f"ticks; {agents_to_mark().count()} agents to mark; first slot measured "
        f"{moment:%Y-%m-%d %H:%M}\n"
    )
    rows: list[dict[str, Any]] = []
    for _ in range(ticks):
        source.now = moment
        with clock.simulated(moment), CaptureQueriesContext(connection) as captured:
            began = time.perf_counter()
            check = resolutions_check(now=moment, source=source)
            checked = time.perf_counter()
            tick = snapshots_take(now=moment, source=source)
            done = time.perf_counter()
        tick_queries = len(captured.captured_queries)  # both calls
        rows.append(
            {
                "slot": moment,
                "check_ms": (checked - began) * 1000,
                "tick_ms": (done - checked) * 1000,
                "written": tick.written,
                "refreshed": tick.refreshed,
                "queries": tick_queries,
                "resolved": len(check.resolved),
            }
        )
        print(
            f"{moment:%Y-%m-%d %H:%M}: snapshots_take {rows[-1]['tick_ms']:6.1f} ms "
            f"({tick.written} snapshots, {tick.refreshed} markets refreshed), "
            f"resolutions_check {rows[-1]['check_ms']:6.1f} ms ({len(check.resolved)} resolved); "
            f"{tick_queries} queries for both",
            flush=True,
        )
        moment += year.TICK
    tick_ms = [r["tick_ms"] for r in rows]
    check_ms = [r["check_ms"] for r in rows]
    print(
        f"\nsnapshots_take: median {statistics.median(tick_ms):.1f} ms, best {min(tick_ms):.1f} "
        f"ms, worst {max(tick_ms):.1f} ms; resolutions_check: median "
        f"{statistics.median(check_ms):.1f} ms ({ticks} slots)"
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bench", choices=("pages", "api", "analytics", "tick"))
    parser.add_argument("--database", default=year.DEFAULT_URL)
    parser.add_argument("--requests", type=int, default=30, help="pages, api: timed requests")
    parser.add_argument("--export-rows", type=int, default=1_000_000, help="api: rows to export")
    parser.add_argument("--runs", type=int, default=7, help="analytics: timed cold runs")
    parser.add_argument("--ticks", type=int, default=6, help="tick: slots to measure")
    parser.add_argument(
        "--season-weeks",
        type=int,
        default=year.SEASON_WEEKS,
        help="tick: the market seasons the year was written with (bench/year.py)",
    )
    args = parser.parse_args()
    if args.bench == "pages":
        measure_pages(args.database, args.requests)
    elif args.bench == "api":
        measure_api(args.database, args.requests, args.export_rows)
    elif args.bench == "analytics":
        measure_analytics(args.database, args.runs)
    else:
        measure_tick(args.database, args.ticks, args.season_weeks)


if __name__ == "__main__":
    main()
