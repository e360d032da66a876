"""Measure the leaderboard analytics on a generated year of ~40,000 scored bets.

Run from the repository root:
    .venv/bin/python bench/analytics.py [--database URL] [--weeks 52] [--runs 7] [--regenerate]
                                        [--drop]

The database is PostgreSQL by default: BENCH_ANALYTICS_DATABASE_URL, else
postgres://postgres@127.0.0.1:5432/bench_analytics (created when missing and kept, so the next
run reuses its year; --regenerate writes it again, --drop drops it at the end).
`--database sqlite:////tmp/bench_analytics.sqlite3` measures SQLite (--regenerate deletes the
file first).

The year holds only what the analytics read, written with COPY on PostgreSQL (executemany on
SQLite) through bench/pages.py's `Writer`, ids assigned here:

- a catalogue of 6,000 markets over the year and the next 10 weeks (85% binary, the rest 3–5
  outcomes), each with a hidden true probability per outcome and its winner drawn from it;
  those closed more than a day ago are resolved (3% cancelled), the newest still open;
- one decision run a week freezing 500 markets (rank 1..500: the soonest-closing 650 open
  ones, the 500 with the most volume), each at a noisy price around its true probability;
- `--weeks` weekly cohorts (52: a year) of the 9-model lineup, running 3–5 weeks each (the
  last ones still active); each agent's decision per week: BET (93%, 19–37 bets on distinct
  markets of that week's snapshot) or HOLD;
- each bet a BUY trade and its own position. An LLM believes each outcome's true probability
  plus noise of its own (sigma 0.05–0.12 by model; the frozen price's noise is 0.10, so
  LLMs beat the price on average, each by its own margin), takes the side with the larger
  edge and stakes its belief: amount = belief × 25% of its cash, so the implied confidence
  is its belief. The market follower takes the favourite at its price; the random bettor a
  uniformly random side at a uniform confidence. Cash moves with every stake and comes back
  at settlement, so `cash_before` is the agent's cash at the bet.
- settled positions pay 1 a share on the winning side; their buys are scored with Brier
  (implied confidence − side won)²; cancelled markets refund and leave the bet unscored.

Measured in-process, DEBUG off, with the objects loaded at start-up frozen out of the
garbage collector's view as the web server's (forecaster/wsgi.py) are:

- `compute_analytics(cohorts=…)` for "all" and "completed", as after a move (a bet scored, a
  decision made: the answer is computed again, the completed cohorts' bets kept since the
  computation before, as between any two): one warm-up that keeps them, then `--runs` timed
  runs (best, median), then one more inside CaptureQueriesContext (queries, their database
  time). Budget: median < 1,000 ms. Then the same from nothing, the default cache (per
  process) emptied before each run (a fresh cache: the first computation after a restart),
  with no budget of its own.
- its peak RSS growth: in a fresh child process (as a worker meets it; in this process the
  generator's and earlier runs' freed memory stays resident and would hide it), the module
  imported and the database connected, VmHWM reset through /proc/self/clear_refs, one call,
  then VmHWM less the resident set before the call.
- `analytics()` as served from the cache (after one call fills it): median of 30 calls, the
  queries of one more, and the answer's pickled size (what the cache stores and loads).
- `model_analytics(model=…)` for each of the 9 models: cold (cache cleared) and warm.

Exits with status 1 when a budget is missed, naming it.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import random
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields, is_dataclass
from datetime import UTC, datetime, timedelta
from decimal import ROUND_DOWN, Decimal
from pathlib import Path
from typing import Any

import pages as year  # bench/pages.py: its row writer, timestamps and environment

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: make the project importable

DEFAULT_URL = os.environ.get(
    "BENCH_ANALYTICS_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/bench_analytics"
)
BUDGET_MS = 1000.0
CATALOGUE = 6_000
UNIVERSE = 500
NEAREST = 650  # the open markets closing soonest, of which the universe is the top by volume
AHEAD = timedelta(weeks=10)  # the catalogue closes up to this far past now
PRICE_NOISE = 0.10
LLM_NOISE = (0.05, 0.06, 0.07, 0.08, 0.09, 0.105, 0.12)  # by display order: per-model skill
SERVED_CALLS = 30
SCOPES = ("all", "completed")
CHILD_FLAG = "--rss-child"
MODULE = "arena.selectors.analytics.cache"
CENT = Decimal("0.01")
SHARE = Decimal("0.000001")
TICK = Decimal("0.001")


# --- the generated year ------------------------------------------------------------------------


@dataclass
class FakeMarket:
    pk: int
    category: str
    outcomes: list[str]
    truth: list[float]  # the hidden probability of each outcome
    volume: int
    close: datetime
    resolution: str = "open"
    winner: int | None = None
    resolved_at: datetime | None = None

    @property
    def binary(self) -> bool:
        return len(self.outcomes) == 2


@dataclass
class Book:
    """One agent's cash while its decisions are generated, and the payouts still to come."""

    cash: Decimal = Decimal("10000.00")
    due: list[tuple[datetime, Decimal]] = field(default_factory=list)
    held: set[int] = field(default_factory=set)

    def collect(self, moment: datetime) -> None:
        """Credit every payout settled by `moment`."""
        keep = []
        for at, value in self.due:
            if at <= moment:
                self.cash += value
            else:
                keep.append((at, value))
        self.due = keep


def _catalogue(
    rng: random.Random, *, first: datetime, now: datetime, count: int = CATALOGUE
) -> list[FakeMarket]:
    start = first - timedelta(weeks=1)
    span = (now + AHEAD - start).total_seconds()
    markets = []
    for pk in range(1, count + 1):
        if rng.random() < 0.85:
            outcomes = ["Yes", "No"]
            yes = rng.betavariate(0.9, 0.9) * 0.94 + 0.03
            truth = [yes, 1 - yes]
        else:
            outcomes = [f"Option {chr(65 + i)}" for i in range(rng.randint(3, 5))]
            weights = [rng.gammavariate(0.8, 1) + 0.02 for _ in outcomes]
            truth = [w / sum(weights) for w in weights]
        close = start + timedelta(seconds=rng.random() * span)
        market = FakeMarket(
            pk=pk,
            category=rng.choice(year.CATEGORIES),
            outcomes=outcomes,
            truth=truth,
            volume=int(rng.lognormvariate(11, 1.6)),
            close=close,
        )
        if close < now - timedelta(days=1):
            market.resolved_at = close + timedelta(hours=1)
            if rng.random() < 0.97:
                market.resolution = "resolved"
                market.winner = rng.choices(range(len(outcomes)), weights=truth)[0]
            else:
                market.resolution = "cancelled"
        markets.append(market)
    return markets


def _frozen_prices(m: FakeMarket, rng: random.Random) -> list[Decimal]:
    """The market's price at a run: its true probabilities plus noise, each in [0.03, 0.97]."""
    if m.binary:
        yes = min(max(m.truth[0] + rng.gauss(0, PRICE_NOISE), 0.03), 0.97)
        first = Decimal(str(yes)).quantize(TICK)
        return [first, Decimal(1) - first]
    noisy = [min(max(p + rng.gauss(0, PRICE_NOISE), 0.03), 0.97) for p in m.truth]
    return [Decimal(str(p / sum(noisy))).quantize(TICK) for p in noisy]


def _choose(
    m: FakeMarket, prices: list[Decimal], internal_id: str, noise: float, rng: random.Random
) -> tuple[int, float]:
    """The outcome an agent bets on and its belief that it wins (its stake's confidence)."""
    if internal_id == "baseline-random":
        return rng.randrange(len(m.outcomes)), rng.uniform(0.02, 0.98)
    if internal_id == "baseline-market":
        index = max(range(len(prices)), key=lambda i: prices[i])
        return index, float(prices[index])
    if m.binary:
        yes = min(max(m.truth[0] + rng.gauss(0, noise), 0.02), 0.98)
        belief = [yes, 1 - yes]
    else:
        noisy = [min(max(p + rng.gauss(0, noise), 0.02), 0.98) for p in m.truth]
        belief = [p / sum(noisy) for p in noisy]
    index = max(range(len(belief)), key=lambda i: belief[i] - float(prices[i]))
    return index, belief[index]


def generate(*, weeks: int, seed: int = 11, catalogue: int = CATALOGUE) -> dict[str, Any]:
    """Write the year (module docstring) with a catalogue of `catalogue` markets; return the
    rows written per table and the seconds."""
    from django.core.management.color import no_style
    from django.db import connection, transaction
    from django.utils import timezone

    from agents.models import BenchmarkModel
    from arena.models import Agent, Cohort, Decision, DecisionRun, Position, SnapshotMarket, Trade
    from markets.models import Market

    clock = time.perf_counter()
    rng = random.Random(seed)
    ts = year._ts_format()
    now = timezone.now().replace(second=0, microsecond=0)
    last_sunday = datetime.combine(
        (now - timedelta(days=(now.weekday() + 1) % 7)).date(), datetime.min.time(), UTC
    )
    first = last_sunday - timedelta(weeks=weeks - 1)
    now_text = ts(now)
    lineup = list(BenchmarkModel.objects.filter(active=True).order_by("-kind", "display_order"))
    llms = [m for m in lineup if not m.is_baseline]
    noise = {m.pk: LLM_NOISE[i % len(LLM_NOISE)] for i, m in enumerate(llms)}
    markets = _catalogue(rng, first=first, now=now, count=catalogue)
    counts: dict[str, Any] = {}

    def write(model: Any, columns: list[str], rows: Iterable[tuple[Any, ...]]) -> None:
        writer = year.Writer(model, columns, now_text=now_text)
        counts[model.__name__] = counts.get(model.__name__, 0) + writer.write(rows)

    # One run a week; the universe and its frozen prices.
    universes: list[list[FakeMarket]] = []
    prices: list[dict[int, list[Decimal]]] = []
    run_rows, frozen_rows = [], []
    by_close = sorted(markets, key=lambda m: m.close)
    for w in range(weeks):
        started = first + timedelta(weeks=w, minutes=5)
        nearest = [m for m in by_close if m.close > started + timedelta(days=1)][:NEAREST]
        universe = sorted(nearest, key=lambda m: -m.volume)[:UNIVERSE]
        universes.append(universe)
        prices.append({m.pk: _frozen_prices(m, rng) for m in universe})
        run_rows.append(
            (w + 1, started.date(), ts(started), ts(started + timedelta(minutes=25)), "gamma",
             len(universe))
        )  # fmt: skip
        for rank, m in enumerate(universe, start=1):
            frozen_rows.append(
                (w + 1, m.pk, rank, str(500_000 + m.pk), f"Market #{m.pk}", m.category,
                 json.dumps(m.outcomes), json.dumps([str(p) for p in prices[w][m.pk]]),
                 m.volume, ts(m.close), False)
            )  # fmt: skip
    last_price = {pk: p for week in prices for pk, p in week.items()}  # the latest run's

    cohort_rows, agent_rows, decision_rows, position_rows, trade_rows = [], [], [], [], []
    agent_pk = decision_pk = position_pk = 0
    for c in range(weeks):
        start = first + timedelta(weeks=c)
        end = start + timedelta(weeks=rng.randint(3, 5))
        completed = end <= now
        cohort_rows.append(
            (c + 1, c + 1, start.date(), ts(start), "completed" if completed else "active",
             ts(end) if completed else None)
        )  # fmt: skip
        for model in lineup:
            agent_pk += 1
            book = Book()
            k = 0
            while start + timedelta(weeks=k) < min(end, now) and c + k < weeks:
                w = c + k
                decided = start + timedelta(weeks=k, minutes=10)
                book.collect(decided)
                decision_pk += 1
                order = 0
                if rng.random() < 0.93:
                    candidates = [m for m in universes[w] if m.pk not in book.held]
                    for m in rng.sample(candidates, min(len(candidates), rng.randint(19, 37))):
                        index, belief = _choose(
                            m, prices[w][m.pk], model.internal_id, noise.get(model.pk, 0), rng
                        )
                        cash_before = book.cash
                        amount = (Decimal(str(belief)) * cash_before / 4).quantize(CENT, ROUND_DOWN)
                        if amount < 1:
                            continue
                        price = prices[w][m.pk][index]
                        shares = (amount / price).quantize(SHARE, ROUND_DOWN)
                        confidence = min(float(amount) / (0.25 * float(cash_before)), 1.0)
                        book.cash -= amount
                        book.held.add(m.pk)
                        position_pk += 1
                        side = ("YES", "NO")[index] if m.binary else m.outcomes[index]
                        # Settled by now: paid (or refunded) and scored; else still open.
                        settled = m.resolved_at if m.resolved_at and m.resolved_at <= now else None
                        closed_text = ts(settled) if settled is not None else None
                        won = m.resolution == "resolved" and m.winner == index
                        value: Decimal | None = None
                        score: float | None = None
                        if settled is None:
                            status = "open"
                        elif m.resolution == "cancelled":
                            status, value = "cancelled", amount
                        else:
                            status = "settled"
                            value = shares.quantize(CENT, ROUND_DOWN) if won else Decimal(0)
                            score = (confidence - float(won)) ** 2
                        if settled is not None and value is not None:
                            book.due.append((settled, value))
                        position_rows.append(
                            (position_pk, agent_pk, m.pk, side, index, status, shares, amount,
                             value - amount if value is not None else Decimal(0),
                             last_price[m.pk][index], value, ts(decided), closed_text)
                        )  # fmt: skip
                        trade_rows.append(
                            (decision_pk, agent_pk, order, "BUY", "executed", m.pk, position_pk,
                             str(500_000 + m.pk), side, amount, price, shares, amount,
                             cash_before, book.cash, confidence, score,
                             won if score is not None else None,
                             closed_text if score is not None else None, ts(decided))
                        )  # fmt: skip
                        order += 1
                llm = not model.is_baseline
                decision_rows.append(
                    (decision_pk, agent_pk, c + 1, (start + timedelta(weeks=k)).date(), w + 1,
                     "done", "BET" if order else "HOLD", "openrouter" if llm else "baseline",
                     model.openrouter_id or model.internal_id, "v1", 1, 1, ts(decided),
                     ts(decided + timedelta(minutes=1)), ts(decided),
                     json.dumps({"action": "BET" if order else "HOLD"}))
                )  # fmt: skip
                k += 1
            book.collect(now)
            agent_rows.append((agent_pk, c + 1, model.pk, book.cash, ts(start)))

    with transaction.atomic():
        write(
            Market,
            ["id", "polymarket_id", "question", "category", "outcomes", "outcome_prices",
             "price", "volume", "close_date", "closed", "active", "resolution",
             "winning_outcome", "resolved_at", "last_synced_at"],
            (
                (m.pk, str(500_000 + m.pk), f"Market #{m.pk}", m.category,
                 json.dumps(m.outcomes), json.dumps([str(p) for p in last_price.get(m.pk, [])]),
                 last_price[m.pk][0] if m.binary and m.pk in last_price else None, m.volume,
                 ts(m.close), m.close <= now, m.close > now, m.resolution,
                 m.outcomes[m.winner] if m.winner is not None else "",
                 ts(m.resolved_at) if m.resolved_at else None, now_text)
                for m in markets
            ),
        )  # fmt: skip
        write(
            DecisionRun,
            ["id", "week_start", "started_at", "finished_at", "source", "universe_size"],
            run_rows,
        )
        write(
            SnapshotMarket,
            ["run_id", "market_id", "rank", "polymarket_id", "question", "category", "outcomes",
             "outcome_prices", "volume", "close_date", "closed"],
            frozen_rows,
        )  # fmt: skip
        write(
            Cohort,
            ["id", "number", "week_start", "started_at", "status", "completed_at"],
            cohort_rows,
        )
        write(Agent, ["id", "cohort_id", "model_id", "cash", "created_at"], agent_rows)
        write(
            Decision,
            ["id", "agent_id", "cohort_id", "week_start", "run_id", "status", "action",
             "responder", "requested_model", "prompt_version", "tries", "parsed_try",
             "claimed_at", "finished_at", "created_at", "parsed"],
            decision_rows,
        )  # fmt: skip
        write(
            Position,
            ["id", "agent_id", "market_id", "side", "outcome_index", "status", "shares",
             "cost_basis", "realized_pnl", "last_price", "settlement_value", "opened_at",
             "closed_at"],
            position_rows,
        )  # fmt: skip
        write(
            Trade,
            ["decision_id", "agent_id", "order_index", "kind", "status", "market_id",
             "position_id", "requested_market_id", "side", "requested_amount", "price",
             "shares", "amount", "cash_before", "cash_after", "implied_confidence",
             "brier_score", "side_won", "scored_at", "created_at"],
            trade_rows,
        )  # fmt: skip
        if connection.vendor == "postgresql":
            models = [Market, DecisionRun, SnapshotMarket, Cohort, Agent, Decision, Position, Trade]
            with connection.cursor() as cursor:
                for statement in connection.ops.sequence_reset_sql(no_style(), models):
                    cursor.execute(statement)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # as autovacuum would have after a year
    return {**counts, "seconds": round(time.perf_counter() - clock, 1)}


def has_year(weeks: int) -> bool:
    """Whether the database holds a year this generator wrote for `weeks` cohorts."""
    from arena.models import Cohort, DecisionRun, SnapshotMarket, Trade

    # A run freezes at most UNIVERSE markets: fewer in the weeks of a long span whose
    # catalogue has fewer open markets left (two years: 51,984 of 52,000).
    return (
        Cohort.objects.count() == weeks
        and DecisionRun.objects.count() == weeks
        and 0 < SnapshotMarket.objects.count() <= weeks * UNIVERSE
        and Trade.objects.filter(brier_score__isnull=False).count() >= weeks * 9 * 40
    )


def data_counts() -> dict[str, int]:
    from django.db.models import Count, Q

    from arena.models import Agent, Cohort, Decision, Position, SnapshotMarket, Trade
    from markets.models import Market

    trades = Trade.objects.aggregate(
        buys=Count("pk", filter=Q(kind="BUY", status="executed")),
        scored=Count("pk", filter=Q(brier_score__isnull=False)),
        unscored=Count("pk", filter=Q(kind="BUY", status="executed", brier_score__isnull=True)),
    )
    return {
        "cohorts": Cohort.objects.count(),
        "completed cohorts": Cohort.objects.filter(status="completed").count(),
        "agents": Agent.objects.count(),
        "decisions": Decision.objects.count(),
        "markets": Market.objects.count(),
        "frozen markets": SnapshotMarket.objects.count(),
        "positions": Position.objects.count(),
        "bets": trades["buys"],
        "scored bets": trades["scored"],
        "unscored bets (open or cancelled)": trades["unscored"],
    }


# --- measuring ---------------------------------------------------------------------------------


def _rss_mb() -> float:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def _peak_growth_mb(call: Callable[[], Any]) -> float | None:
    """How far this process's resident set rose above where it stood while `call` ran, from
    VmHWM after resetting it (Linux's /proc/self/clear_refs); None where that is unavailable."""
    gc.collect()
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return None
    before = _rss_mb()
    call()
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024 / 1e6 - before
    return None


def rss_growth(scope: str) -> float | None:
    """The peak RSS growth of one cold `compute_analytics(cohorts=scope)` in this process."""
    from django.db import connection

    module = _selectors()
    connection.ensure_connection()
    _clear_caches()
    return _peak_growth_mb(lambda: module.compute_analytics(cohorts=scope))


def rss_child(scope: str) -> None:
    """In the child process: print (as JSON) the peak RSS growth of one cold
    `compute_analytics(cohorts=scope)`, the first call of a fresh process."""
    growth = rss_growth(scope)
    print(json.dumps({"growth": growth, "rss": _rss_mb()}))


def measure_rss(database: str, scope: str) -> float | None:
    """Run `rss_child` for `scope` in a fresh process on `database`; return its growth in MB."""
    import subprocess

    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--database", database,
         CHILD_FLAG, scope],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        return None
    growth: float | None = json.loads(done.stdout.strip().splitlines()[-1])["growth"]
    return growth


def _clear_caches() -> None:
    from django.core.cache import caches

    caches["default"].clear()


def _timed(call: Callable[[], Any]) -> tuple[float, Any]:
    clock = time.perf_counter()
    result = call()
    return (time.perf_counter() - clock) * 1000, result


def _summary(result: Any) -> str:
    """A short description of what the analytics returned, whatever its shape."""
    if is_dataclass(result):
        parts = []
        for f in fields(result):
            value = getattr(result, f.name)
            size = f" ({len(value)})" if isinstance(value, list | tuple | dict) else ""
            parts.append(f"{f.name}{size}")
        return f"{type(result).__name__}: {', '.join(parts)}"
    if isinstance(result, list | tuple | dict):
        return f"{type(result).__name__} of {len(result)}"
    return type(result).__name__


def _selectors() -> Any:
    """The analytics module (imported once Django is set up)."""
    import importlib

    return importlib.import_module(MODULE)


def measure_compute(module: Any, scope: str, runs: int, *, kept: bool) -> dict[str, Any]:
    """Time `compute_analytics(cohorts=scope)`: with `kept`, the completed cohorts' bets kept
    from the computation before (after a move); without, from an emptied cache. Return its
    figures."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    compute = module.compute_analytics
    _clear_caches()
    compute(cohorts=scope)  # warm-up: imports, the ORM's compiled queries, the database's pages
    times = []
    for _ in range(runs):
        if not kept:
            _clear_caches()
        elapsed, result = _timed(lambda: compute(cohorts=scope))
        times.append(elapsed)
    if not kept:
        _clear_caches()
    with CaptureQueriesContext(connection) as captured:
        compute(cohorts=scope)
    return {
        "best": min(times),
        "median": statistics.median(times),
        "worst": max(times),
        "queries": len(captured.captured_queries),
        "db_ms": sum(float(q["time"]) for q in captured.captured_queries) * 1000,
        "summary": _summary(result),
    }


def measure_scopes(module: Any, runs: int, rss: Callable[[str], float | None]) -> list[str]:
    """Measure and print `compute_analytics` for every scope, after a move and from nothing
    (`measure_compute`), `rss(scope)` giving the peak RSS growth of one from nothing in a
    fresh process; return what missed its budget (after a move)."""
    over: list[str] = []
    for scope in SCOPES:
        label = f"compute_analytics(cohorts={scope!r})"
        for kept in (True, False):
            figures = measure_compute(module, scope, runs, kept=kept)
            line = (
                f"{label:<40} {'after a move' if kept else 'from nothing'}: best "
                f"{figures['best']:.0f} ms, median {figures['median']:.0f} ms, worst "
                f"{figures['worst']:.0f} ms ({runs} runs); {figures['queries']} queries "
                f"({figures['db_ms']:.0f} ms in the database)"
            )
            if not kept:
                growth = rss(scope)
                line += "; peak RSS in a fresh process +" + (
                    f"{growth:.1f} MB" if growth is not None else "? (not measured)"
                )
            elif figures["median"] >= BUDGET_MS:
                line += "  OVER"
                over.append(f"{label} median {figures['median']:.0f} ms >= {BUDGET_MS:.0f} ms")
            print(line, flush=True)
            if kept:
                print(f"{'':<40} returned {figures['summary']}")
    return over


def measure_served(module: Any) -> dict[str, float]:
    """Time `analytics()` served from the cache, after one call fills it; count the queries
    of a served call and the pickled size of the cached answer."""
    import pickle

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    _clear_caches()
    fill, result = _timed(lambda: module.analytics())
    times = [_timed(lambda: module.analytics())[0] for _ in range(SERVED_CALLS)]
    with CaptureQueriesContext(connection) as captured:
        module.analytics()
    return {
        "fill": fill,
        "median": statistics.median(times),
        "worst": max(times),
        "queries": len(captured.captured_queries),
        "db_ms": sum(float(q["time"]) for q in captured.captured_queries) * 1000,
        "kb": len(pickle.dumps(result, pickle.HIGHEST_PROTOCOL)) / 1024,
    }


def measure_models(module: Any) -> list[tuple[str, float, float]]:
    """Time `model_analytics(model=…)` for every lineup model: cold, then warm."""
    from agents.models import BenchmarkModel

    rows = []
    for model in BenchmarkModel.objects.filter(active=True).order_by("-kind", "display_order"):
        _clear_caches()
        call = functools.partial(module.model_analytics, model=model)
        cold, _ = _timed(call)
        warm, _ = _timed(call)
        rows.append((model.internal_id, cold, warm))
    return rows


def run(
    *,
    weeks: int,
    runs: int,
    rss: Callable[[str], float | None],
    regenerate: bool = False,
    catalogue: int = CATALOGUE,
) -> list[str]:
    """On the database Django is set up with (migrated): write the year unless it is there,
    then measure and print the analytics, `rss(scope)` giving the peak RSS growth of a cold
    `compute_analytics` in a fresh process (`measure_rss`); return what missed its budget."""
    generated: dict[str, Any] | None = None
    if regenerate or not has_year(weeks):
        year.clear()
        print(f"writing {weeks} weeks of data …", flush=True)
        generated = generate(weeks=weeks, catalogue=catalogue)
    print("Leaderboard analytics, in-process, on a generated year")
    for line in year.facts():
        print(line)
    counts = data_counts()
    print("data: " + ", ".join(f"{n:,} {label}" for label, n in counts.items()))
    if generated is not None:
        print(f"generated in {generated['seconds']} s")
    else:
        print("data reused (--regenerate writes it again)")
    print(
        f"budget: compute_analytics median < {BUDGET_MS:.0f} ms after a move (the completed "
        "cohorts' bets kept, the answer computed again)"
    )
    print()

    gc.collect()
    module = _selectors()
    over = measure_scopes(module, runs, rss)
    served = measure_served(module)
    print(
        f"{'analytics() served from the cache':<40} median {served['median']:.3f} ms, "
        f"worst {served['worst']:.3f} ms ({SERVED_CALLS} calls), {served['queries']} "
        f"queries ({served['db_ms']:.1f} ms in the database), {served['kb']:.0f} KB "
        "pickled; the call that filled it "
        f"{served['fill']:.0f} ms"
    )
    print("model_analytics(model=…), cold / warm:")
    for internal_id, cold, warm in measure_models(module):
        print(f"  {internal_id:<38} {cold:>7.0f} ms / {warm:.2f} ms")
    return over


def database_ready(database: str, *, regenerate: bool) -> bool:
    """Make `database` ready for a year (created on PostgreSQL; on SQLite, deleted first when
    `regenerate`), set Django up on it with the default per-process cache (the analytics'
    cache is that one) and migrate it. Return whether it is PostgreSQL."""
    postgres = database.startswith("postgres")
    if postgres:
        year._ensure_postgres_database(database)
    elif regenerate and database.startswith("sqlite:///"):
        path = database.removeprefix("sqlite://")
        for suffix in ("", "-wal", "-shm"):
            Path(path + suffix).unlink(missing_ok=True)
    year._env_for(database)
    os.environ["REDIS_URL"] = ""
    import django

    django.setup()
    warnings.filterwarnings("ignore", message="No directory at")
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    return postgres


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default=DEFAULT_URL, help="sqlite:///… or postgres://…")
    parser.add_argument("--weeks", type=int, default=52, help="weekly cohorts (52: a year)")
    parser.add_argument("--runs", type=int, default=7, help="timed cold runs per scope")
    parser.add_argument("--regenerate", action="store_true", help="write the year again")
    parser.add_argument("--drop", action="store_true", help="drop the PostgreSQL database after")
    parser.add_argument(CHILD_FLAG, default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss_child:
        year._env_for(args.database)
        os.environ["REDIS_URL"] = ""
        import django

        django.setup()
        rss_child(args.rss_child)
        return

    postgres = database_ready(args.database, regenerate=args.regenerate)
    # As the web server does once it has loaded (forecaster/wsgi.py): what lives as long as
    # the process is not scanned by every full collection.
    gc.collect()
    gc.freeze()
    from django.db import connection

    over = run(
        weeks=args.weeks,
        runs=args.runs,
        regenerate=args.regenerate,
        rss=functools.partial(measure_rss, args.database),
    )
    connection.close()
    print(f"load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.drop and postgres:
        year._drop_postgres_database(args.database)
    print()
    for line in over:
        print(f"OVER BUDGET: {line}")
    if over:
        sys.exit(1)
    print(f"compute_analytics: median under {BUDGET_MS:.0f} ms in every scope measured")


if __name__ == "__main__":
    main()
