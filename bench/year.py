"""A year of history written through the services, then the other benchmarks on it.

`bench/pages.py`, `bench/api.py` and `bench/analytics.py` each write their own year straight
into the tables (fast, shaped for what they measure). This script writes one the way
production would have: the real engine over the embedded demo's market world
(`markets.demo.SimulatedSource`), on the simulated clock (`arena.clock.simulated`), as
`arena/demo.py` drives it for `make run`, but at production's cadence:

- every Sunday 00:00 a cohort starts (`cohort_start`: one agent per active lineup model);
- at 00:05 every agent decides (`decisions_run_all`: one frozen snapshot of the catalogue,
  then the real prompt → response → parse → execute path; `OPENROUTER_API_KEY=""` and
  `OFFLINE_AGENTS=1` make the LLM agents the offline stand-ins in `agents/offline.py`, which
  bet, sell and hold, and the baselines run as they do in production);
- every 10 minutes the tick (`snapshots_take`, refreshing the held markets from the source);
- every 30 minutes the resolution check (`resolutions_check`: settle, refund, complete the
  cohorts that hold nothing more) and the data releases that are due, first or next
  (`releases_publish_due`).

Cohorts stay active until their last position settles, so the number of agents marked per
tick is whatever the engine says it is. The market world comes in seasons (`--season-weeks`):
markets listed through the year and resolved within their season, so a cohort lives until its
season ends. Every simulated day the tables rewritten on every tick are `VACUUM (ANALYZE)`d:
the autovacuum a production server runs (docs/deploy.md), which this shared server has off.
The generator resumes after the last tick written when it was interrupted (the services are
idempotent and the source is a pure function of seed and clock).

Then each benchmark runs on that database in a child process of its own,
`bench/year_measure.py {pages,api,analytics,tick} --database URL`:
- pages, api, analytics: the pages, requests and measuring functions of `bench/pages.py`,
  `bench/api.py` and `bench/analytics.py` (their `main`s would wipe this database, or stop:
  none finds the shape its own generator writes: an OpenRouter decision, a year-long agent,
  40 scored bets per agent);
- tick: `snapshots_take` and `resolutions_check` timed at the next 10-minute slots after the
  year (`bench/snapshot_tick.py` builds its own database).

    .venv/bin/python bench/year.py [--database URL] [--weeks 52] [--regenerate] [--drop]
        [--only pages,api,analytics,tick] [--no-bench] [--season-weeks 13]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from datetime import time as dtime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: make the project importable

import pages  # noqa: E402 — bench/pages.py: the production environment and database helpers

DEFAULT_URL = os.environ.get(
    "BENCH_YEAR_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/bench_year"
)
SEED = 7
TICK = timedelta(minutes=10)
CHECK_EVERY = timedelta(minutes=30)  # settings: the resolution check at :07 and :37
BENCHES = ("pages", "api", "analytics", "tick")
# The demo world's market seasons (markets.demo.SimulatedSource(season=…)): a season's markets
# are listed at its start or in its first half and resolve before it ends, so a cohort lives
# until its season's end (1 to 13 weeks: a quarter) and markets are listed and resolved all
# year: ~3 M snapshots over 52 weeks (bench/README.md, section 7).
SEASON_WEEKS = 13
# Rewritten on every tick or check (the held markets' prices, the agents' rollups, cash and
# positions): vacuumed every simulated day, as autovacuum would keep them on a production
# server (docs/deploy.md: keep it on; this shared server runs with it off). The append-only
# snapshots only need their statistics and visibility map kept: weekly.
VACUUM_DAILY = (
    "markets_market",
    "arena_agentsnapshotrollup",
    "arena_agent",
    "arena_position",
    "arena_decision",
    "arena_cohort",
    "arena_snapshottick",
)
VACUUM_WEEKLY = ("arena_portfoliosnapshot", "arena_trade", "arena_resolutioncheck")


def environment(url: str) -> None:
    """pages.py's production settings (DEBUG off, offline agents), no API key, no Redis."""
    pages._env_for(url)
    os.environ.update({"OPENROUTER_API_KEY": "", "REDIS_URL": "", "API_RATE_LIMIT": "0"})


def year_bounds(weeks: int) -> tuple[datetime, datetime]:
    """The first cohort's Sunday and the end of the last cohort's week: the year ends at the
    last Sunday 00:00 UTC before now, or where the database's first cohort says it began."""
    from django.utils import timezone

    from arena.models import Cohort
    from arena.weeks import cohort_week_start

    first = Cohort.objects.order_by("number").first()
    if first is not None:
        start = first.started_at.astimezone(UTC)
    else:
        this_sunday = datetime.combine(cohort_week_start(timezone.now()), dtime(0), UTC)
        start = this_sunday - timedelta(weeks=weeks)
    return start, start + timedelta(weeks=weeks)


def has_year(weeks: int) -> bool:
    """Whether the generator finished a year of `weeks` cohorts here."""
    from arena.models import Cohort, SnapshotTick

    if Cohort.objects.count() != weeks:
        return False
    start, end = year_bounds(weeks)
    return SnapshotTick.objects.filter(slot__gte=end - TICK).exists()


@dataclass
class Progress:
    started: float = field(default_factory=time.perf_counter)
    ticks: int = 0
    snapshots: int = 0
    tick_s: float = 0.0
    check_s: float = 0.0
    decide_s: float = 0.0
    decisions: int = 0
    resolved: int = 0
    cancelled: int = 0
    completed: int = 0
    week_ticks: int = 0
    week_snapshots: int = 0
    week_tick_s: float = 0.0
    week_max_ms: float = 0.0
    vacuum_s: float = 0.0


def vacuum(tables: tuple[str, ...]) -> None:
    """VACUUM (ANALYZE) `tables`: the autovacuum this server does not run. Django's connection
    is in autocommit outside an atomic block, which VACUUM needs."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(f"VACUUM (ANALYZE) {connection.ops.quote_name(table)}")


def generate(
    weeks: int, *, seed: int = SEED, season_weeks: int = SEASON_WEEKS, ticks: int | None = None
) -> dict[str, Any]:
    """Write (or finish writing) the year through the services; print a line per week. With
    `ticks`, stop after that many ticks, as an interruption would (the next call resumes)."""
    from arena import clock
    from arena.models import Decision, SnapshotTick
    from arena.services.cohorts import cohort_start
    from arena.services.decisions.run import decisions_run_all
    from arena.services.marking import snapshots_take
    from arena.services.releases import releases_publish_due
    from arena.services.settlement import resolutions_check
    from markets.demo import SimulatedSource

    start, end = year_bounds(weeks)
    last_sunday = start + timedelta(weeks=weeks - 1)
    season = timedelta(weeks=season_weeks) if season_weeks else None
    source = SimulatedSource(start=start, last_sunday=last_sunday, seed=seed, season=season)
    last_tick = SnapshotTick.objects.order_by("-slot").values_list("slot", flat=True).first()
    moment = start if last_tick is None else last_tick.astimezone(UTC) + TICK
    if moment > start:
        print(f"resuming after the last tick written, {last_tick:%Y-%m-%d %H:%M}", flush=True)
    print(
        f"year: {start:%Y-%m-%d} → {end:%Y-%m-%d}, {weeks} cohorts, "
        f"{int((end - moment) / TICK):,} ticks to write",
        flush=True,
    )
    p = Progress()
    while moment < end and (ticks is None or p.ticks < ticks):
        offset = moment - start
        source.now = moment
        with clock.simulated(moment):
            if offset % timedelta(weeks=1) == timedelta(0):
                cohort_start(week_start=moment.date(), now=moment)
                decision_time = moment + timedelta(minutes=5)
                source.now = decision_time
                began = time.perf_counter()
                with clock.simulated(decision_time):
                    decisions_run_all(now=decision_time, source=source)
                p.decide_s += time.perf_counter() - began
                source.now = moment
            if offset % CHECK_EVERY == timedelta(0):
                began = time.perf_counter()
                check = resolutions_check(now=moment, source=source)
                releases_publish_due(now=moment)
                p.check_s += time.perf_counter() - began
                p.resolved += len(check.resolved)
                p.cancelled += len(check.cancelled)
                p.completed += len(check.completed_cohorts)
            began = time.perf_counter()
            tick = snapshots_take(now=moment, source=source)
            spent = time.perf_counter() - began
        p.ticks += 1
        p.snapshots += tick.written
        p.tick_s += spent
        p.week_ticks += 1
        p.week_snapshots += tick.written
        p.week_tick_s += spent
        p.week_max_ms = max(p.week_max_ms, spent * 1000)
        moment += TICK
        if (moment - start) % timedelta(days=1) == timedelta(0):
            began = time.perf_counter()
            weekly = (moment - start) % timedelta(weeks=1) == timedelta(0)
            vacuum(VACUUM_DAILY + (VACUUM_WEEKLY if weekly else ()))
            p.vacuum_s += time.perf_counter() - began
        if (moment - start) % timedelta(weeks=1) == timedelta(0):
            elapsed = time.perf_counter() - p.started
            done = (moment - start) / timedelta(weeks=1)
            print(
                f"week {done:>4.0f}/{weeks}: {p.week_snapshots / max(p.week_ticks, 1):6.1f} "
                f"agents/tick, tick mean {p.week_tick_s / max(p.week_ticks, 1) * 1000:6.1f} ms "
                f"max {p.week_max_ms:6.1f} ms; total {p.snapshots:,} snapshots, "
                f"{p.resolved} resolved, {p.completed} cohorts completed; "
                f"{elapsed:,.0f} s elapsed (decide {p.decide_s:.0f} s, check {p.check_s:.0f} s, "
                f"tick {p.tick_s:.0f} s, vacuum {p.vacuum_s:.0f} s); load {os.getloadavg()[0]:.2f}",
                flush=True,
            )
            p.week_ticks = p.week_snapshots = 0
            p.week_tick_s = p.week_max_ms = 0.0
    p.decisions = Decision.objects.count()
    return {
        "seconds": round(time.perf_counter() - p.started, 1),
        "ticks": p.ticks,
        "snapshots": p.snapshots,
        "tick_s": round(p.tick_s, 1),
        "check_s": round(p.check_s, 1),
        "decide_s": round(p.decide_s, 1),
        "vacuum_s": round(p.vacuum_s, 1),
        "resolved": p.resolved,
        "cancelled": p.cancelled,
        "completed": p.completed,
    }


def table_rows() -> list[tuple[str, int]]:
    """Rows per table of the arena and the catalogue (exact counts), largest first."""
    from django.apps import apps
    from django.db import connection

    counts = []
    with connection.cursor() as cursor:
        for label in ("arena", "markets", "agents"):
            for model in apps.get_app_config(label).get_models():
                if model._meta.proxy:
                    continue  # its concrete model's table, counted with that model
                table = model._meta.db_table
                cursor.execute(f"SELECT count(*) FROM {connection.ops.quote_name(table)}")  # noqa: S608 — our own table names
                counts.append((table, cursor.fetchone()[0]))
    return sorted(counts, key=lambda c: -c[1])


def database_size() -> str:
    from django.db import connection

    if connection.vendor != "postgresql":
        return "?"
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_size_pretty(pg_database_size(current_database()))")
        return str(cursor.fetchone()[0])


def run_bench(name: str, url: str, season_weeks: int) -> int:
    """Run one benchmark on the year in a child process; its output goes straight through."""
    command = ["bench/year_measure.py", name, "--database", url]
    if name == "tick":
        command += ["--season-weeks", str(season_weeks)]
    print(f"\n=== {name}: {' '.join(command)}", flush=True)
    began = time.perf_counter()
    done = subprocess.run([sys.executable, *command], cwd=ROOT, check=False)  # noqa: S603
    print(f"=== {name}: exit {done.returncode} in {time.perf_counter() - began:.0f} s", flush=True)
    return done.returncode


def write(weeks: int, *, season_weeks: int, ticks: int | None = None) -> None:
    """On the database Django is set up with (migrated): write the year unless it is there
    (`generate`), then print the rows per table."""
    for line in pages.facts():
        print(line)
    if has_year(weeks):
        print("year already written (--regenerate writes it again)")
    else:
        generated = generate(weeks, season_weeks=season_weeks, ticks=ticks)
        print(
            f"generated in {generated['seconds']:,} s: {generated['ticks']:,} ticks "
            f"({generated['tick_s']:,} s in snapshots_take), {generated['snapshots']:,} "
            f"snapshots, decisions {generated['decide_s']:,} s, resolution checks and releases "
            f"{generated['check_s']:,} s, vacuum {generated['vacuum_s']:,} s; "
            f"{generated['resolved']} markets resolved, "
            f"{generated['cancelled']} refunded, {generated['completed']} cohorts completed"
        )
    print(f"rows per table (database {database_size()}):")
    for table, rows in table_rows():
        if rows:
            print(f"  {table:<40} {rows:>12,}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default=DEFAULT_URL, help="postgres://… (or sqlite:///…)")
    parser.add_argument("--weeks", type=int, default=52, help="weekly cohorts (52: a year)")
    parser.add_argument("--regenerate", action="store_true", help="write the year again")
    parser.add_argument("--drop", action="store_true", help="drop the PostgreSQL database after")
    parser.add_argument("--only", default=",".join(BENCHES), help="benchmarks to run, by name")
    parser.add_argument("--no-bench", action="store_true", help="generate only")
    parser.add_argument(
        "--season-weeks",
        type=int,
        default=SEASON_WEEKS,
        help="length of the demo world's market seasons (0: one season over the whole run)",
    )
    args = parser.parse_args()

    postgres = args.database.startswith("postgres")
    if postgres:
        pages._ensure_postgres_database(args.database, drop_first=args.regenerate)
    elif args.regenerate and args.database.startswith("sqlite:///"):
        for suffix in ("", "-wal", "-shm"):
            Path(args.database.removeprefix("sqlite://") + suffix).unlink(missing_ok=True)
    environment(args.database)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0, interactive=False)
    print(f"A year through the services on {args.database.rpartition('@')[2]}")
    write(args.weeks, season_weeks=args.season_weeks)
    connection.close()
    if args.no_bench:
        return
    failed = [
        name
        for name in args.only.split(",")
        if name in BENCHES and run_bench(name, args.database, args.season_weeks) != 0
    ]
    print(f"\nload average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.drop and postgres:
        pages._drop_postgres_database(args.database)
    if failed:
        sys.exit(f"failed or over budget: {', '.join(failed)}")


if __name__ == "__main__":
    main()
