"""Measure the server time of every public page on a generated year of the benchmark.

Run from the repository root:
    .venv/bin/python bench/pages.py [--database URL] [--weeks 52] [--requests 30] [--regenerate]

The database is PostgreSQL by default: BENCH_PAGES_DATABASE_URL, else
postgres://postgres@127.0.0.1:5432/bench_pages (created when missing, and kept: the year takes
a few minutes to write, so a second run reuses it; --regenerate writes it again, --drop drops
the database at the end). `--database sqlite:////tmp/bench_pages.sqlite3` measures SQLite.

The year, written with COPY on PostgreSQL (executemany on SQLite), ids assigned here:

- a catalogue of 5,000 markets (85% binary, the rest 3–6 outcomes, a ~2 KB Gamma record
  each), closing over the year and the next 16 weeks; those closed more than a day ago are
  resolved (3% cancelled); one long-lived, highest-volume market is bought by ~40% of agents;
- one decision run a week, each freezing its top-500 open markets (SnapshotMarket);
- `--weeks` weekly cohorts (52: a year), each with the whole active lineup (the LLMs and the
  baselines), running 2–6 weeks until its positions settle (the last ones still active);
- each agent's weekly decision for every week its cohort runs, with its attempts (an LLM's
  request holds the run's 500-market prompt, ~61 KB; 10% need a second attempt after an
  unparseable first answer) and 0–4 bets (a few rejected), some sells, positions settled at
  their market's resolution, bets scored with Brier;
- a portfolio snapshot every 10 minutes for every agent while its cohort runs (~2 M rows for
  52 cohorts × 9 agents × ~4 weeks), their hourly and daily rollup rebuilt from them
  (`rollup_rebuild`, which every tick keeps in production and the charts read), a
  SnapshotTick per slot, a market sync every 5 minutes,
  a resolution check every 30, the operations record (runs, cohorts, settlements) and a few
  determinism checks.

Pages are requested in-process through Django's test Client (the whole middleware, view and
template stack; no network, no browser) with DEBUG off, as production serves them (static
files are not hashed, which does not change the cost of a page). Each page gets 3 warm-up
requests, then `--requests` timed ones (p50, p95 nearest-rank, max), then one more to count
its queries. Before the timed requests the process's long-lived objects are frozen out of
the garbage collector's view (`gc.freeze()`), as `forecaster/wsgi.py` does in production.
A page whose URL does not resolve yet is printed as "not built yet". Each page is measured
twice: rendered on every request (PAGE_CACHE_SECONDS=0: what the first visitor after the
data moved waits), then as production serves it, kept whole until the data moves
(arena/views/page_cache.py: the timed requests are the kept page's, after the first warm-up
rendered it). The script exits with status 1 when a page's p95 is at or over 150 ms rendered
or 50 ms served.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import random
import secrets
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import ROUND_DOWN, Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: make the project importable

DEFAULT_URL = os.environ.get(
    "BENCH_PAGES_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/bench_pages"
)
BUDGET_MS = 150.0  # a page rendered (the first request after the data moved)
SERVED_BUDGET_MS = 50.0  # a page as served: kept whole until the data moves (page_cache.py)
WARMUPS = 3
CATALOGUE = 5_000
UNIVERSE = 500
SLOT = timedelta(minutes=10)
SYNC_EVERY = timedelta(minutes=5)
RESOLUTION_EVERY = timedelta(minutes=30)
RANGES = ("10M", "1H", "1D", "1W", "1M", "3M", "ALL")
CATEGORIES = (
    "Politics",
    "Crypto",
    "Sports",
    "Economics",
    "Tech",
    "Science",
    "World",
    "Culture",
    "Weather",
    "Elections",
    "Business",
    "Geopolitics",
)
SUBJECTS = (
    "the Federal Reserve cut rates",
    "Bitcoin close above $120,000",
    "the incumbent win the election",
    "a ceasefire be announced",
    "the film gross over $1bn",
    "the company announce layoffs",
    "the bill pass the Senate",
    "inflation print below 2.5%",
    "the team win the championship",
    "the launch succeed",
    "the merger be approved",
    "a new record temperature be set",
)
SYSTEM_PROMPT = (
    "You are a forecaster in a weekly prediction-market benchmark. You manage a $10,000 "
    "paper portfolio. Each week you may BET on markets, SELL positions, or HOLD. A bet may "
    "not exceed 25% of your cash. Answer with one JSON object and nothing else. "
) * 12  # ~3 KB, the size of the v1 system prompt


def _env_for(url: str) -> None:
    """Production settings (DEBUG off) on `url`, as the server runs; read at django.setup()."""
    os.environ.update(
        {
            "DATABASE_URL": url,
            "DJANGO_SETTINGS_MODULE": "forecaster.settings",
            "DEBUG": "0",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "testserver",
            "SECURE_SSL_REDIRECT": "0",
            "SECURE_HSTS_SECONDS": "0",
            "OFFLINE_AGENTS": "1",
            "LOG_LEVEL": "ERROR",
        }
    )


def _ensure_postgres_database(url: str, *, drop_first: bool = False) -> None:
    import psycopg
    from psycopg import sql

    base, _, name = url.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        if drop_first:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def _drop_postgres_database(url: str) -> None:
    import psycopg
    from psycopg import sql

    base, _, name = url.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


# --- writing rows at COPY speed --------------------------------------------------------------


class Writer:
    """Write rows of `model` whose first values are `fields` (attnames, in order); every other
    concrete column gets its model default (the database has none of Django's defaults)."""

    def __init__(self, model: Any, fields: list[str], *, now_text: str) -> None:
        from django.db import models

        concrete = {f.attname: f for f in model._meta.concrete_fields}
        unknown = set(fields) - set(concrete)
        if unknown:
            raise ValueError(f"{model.__name__} has no {sorted(unknown)}")
        self.model = model
        self.columns = [concrete[name].column for name in fields]
        self.extra: list[Any] = []
        for name, f in concrete.items():
            if name in fields or f.primary_key:
                continue  # an id not given is the database's to assign
            if f.has_default():
                value = f.get_default()
                if isinstance(value, dict | list):
                    value = json.dumps(value)
                elif isinstance(value, Decimal):
                    value = str(value)
            elif f.null:
                value = None
            elif isinstance(f, models.DateTimeField):
                value = now_text  # auto_now(_add) columns
            elif isinstance(f, models.CharField | models.TextField):
                value = ""
            else:
                raise ValueError(f"{model.__name__}.{name} needs a value")
            self.columns.append(f.column)
            self.extra.append(value)

    def write(self, rows: Iterable[tuple[Any, ...]]) -> int:
        from django.db import connection

        table = connection.ops.quote_name(self.model._meta.db_table)
        columns = ", ".join(connection.ops.quote_name(c) for c in self.columns)
        extra = tuple(self.extra)
        count = 0
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row + extra)
                        count += 1
            else:
                marks = ", ".join(["%s"] * len(self.columns))
                sql = f"INSERT INTO {table} ({columns}) VALUES ({marks})"  # noqa: S608
                chunk: list[tuple[Any, ...]] = []
                for row in rows:
                    chunk.append(row + extra)
                    if len(chunk) == 20_000:
                        cursor.executemany(sql, chunk)
                        count += len(chunk)
                        chunk = []
                cursor.executemany(sql, chunk)
                count += len(chunk)
        return count


def _ts_format() -> Callable[[datetime], str]:
    """Timestamps as the database stores them: naive UTC text on SQLite (as the ORM writes
    them, so range comparisons agree), with the offset on PostgreSQL."""
    from django.db import connection

    if connection.vendor == "sqlite":
        return lambda moment: moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
    return lambda moment: moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S+00")


# --- the generated year ------------------------------------------------------------------------


@dataclass
class FakeMarket:
    pk: int
    polymarket_id: str
    question: str
    category: str
    outcomes: list[str]
    prices: list[Decimal]
    volume: Decimal
    close: datetime
    resolution: str = "open"
    winner: int | None = None
    resolved_at: datetime | None = None

    @property
    def binary(self) -> bool:
        return self.outcomes == ["Yes", "No"]

    def settles_by(self, moment: datetime) -> bool:
        return self.resolved_at is not None and self.resolved_at <= moment


@dataclass
class Ledger:
    """One agent's book while its decisions are generated."""

    cash: Decimal = Decimal("10000.00")
    open: dict[int, dict[str, Any]] = field(default_factory=dict)  # position pk -> position


def _markets(
    rng: random.Random, *, first: datetime, now: datetime, count: int = CATALOGUE
) -> list[FakeMarket]:
    markets = []
    span = (now + timedelta(weeks=16) - first).total_seconds()
    for pk in range(1, count + 1):
        if rng.random() < 0.85:
            outcomes = ["Yes", "No"]
            yes = Decimal(rng.randint(2, 98)) / 100
            prices = [yes, Decimal(1) - yes]
        else:
            outcomes = [f"Option {chr(65 + i)}" for i in range(rng.randint(3, 6))]
            weights = [rng.random() + 0.05 for _ in outcomes]
            prices = [(Decimal(w / sum(weights)).quantize(Decimal("0.000001"))) for w in weights]
        close = first + timedelta(seconds=rng.random() * span)
        subject = rng.choice(SUBJECTS)
        market = FakeMarket(
            pk=pk,
            polymarket_id=str(500_000 + pk),
            question=f"Will {subject} by {close:%B %-d, %Y}? (#{pk})",
            category=rng.choice(CATEGORIES),
            outcomes=outcomes,
            prices=prices,
            volume=Decimal(int(rng.lognormvariate(11, 1.6))),
            close=close,
        )
        if close < now - timedelta(days=1):
            roll = rng.random()
            if roll < 0.95:
                market.resolution = "resolved"
                market.winner = rng.randrange(len(outcomes))
                market.resolved_at = close + timedelta(hours=1)
            elif roll < 0.98:
                market.resolution = "cancelled"
                market.resolved_at = close + timedelta(hours=1)
            # else: closed upstream, still awaiting resolution
        markets.append(market)
    hot = markets[0]  # the long-lived market most agents hold
    hot.outcomes, hot.prices = ["Yes", "No"], [Decimal("0.42"), Decimal("0.58")]
    hot.question = "Will the S&P 500 close the year above 7,000? (#1)"
    hot.volume = Decimal("250000000")
    hot.close = now + timedelta(weeks=30)
    hot.resolution, hot.winner, hot.resolved_at = "open", None, None
    return markets


def _gamma_record(m: FakeMarket) -> str:
    """A Gamma-like record of ~2 KB (the stored `raw`)."""
    return json.dumps(
        {
            "id": m.polymarket_id,
            "question": m.question,
            "description": "Resolution source: the official announcement. " * 30,
            "outcomes": json.dumps(m.outcomes),
            "outcomePrices": json.dumps([str(p) for p in m.prices]),
            "volume": str(m.volume),
            "endDate": m.close.isoformat(),
            "clobTokenIds": json.dumps([secrets.token_hex(16) for _ in m.outcomes]),
        }
    )


def _market_line(m: FakeMarket) -> str:
    if m.binary:
        prices = f"YES {m.prices[0] * 100:.0f}%"
    else:
        prices = "; ".join(f"{o} {p * 100:.0f}%" for o, p in zip(m.outcomes, m.prices, strict=True))
    cells = [m.polymarket_id, m.question, f"vol ${m.volume:,.0f}", f"closes {m.close:%Y-%m-%d}"]
    return " | ".join([*cells, prices])


def generate(*, weeks: int, seed: int = 7, catalogue: int = CATALOGUE) -> dict[str, Any]:
    """Write the year (module docstring) with a catalogue of `catalogue` markets; return
    counts and timings."""
    from django.core.management.color import no_style
    from django.db import connection, transaction
    from django.utils import timezone

    from agents.models import BenchmarkModel
    from arena.models import (
        Agent,
        Cohort,
        Decision,
        DecisionAttempt,
        DecisionRun,
        DeterminismCheck,
        PortfolioSnapshot,
        Position,
        ResolutionCheck,
        SnapshotMarket,
        SnapshotTick,
        SystemEvent,
        Trade,
    )
    from arena.services.rollup import rollup_rebuild
    from markets.models import Market, MarketSyncRun

    clock = time.perf_counter()
    rng = random.Random(seed)
    ts = _ts_format()
    now = timezone.now().replace(second=0, microsecond=0)
    now -= timedelta(minutes=now.minute % 10)  # the last tick's slot
    last_sunday = datetime.combine(
        (now - timedelta(days=(now.weekday() + 1) % 7)).date(), datetime.min.time(), UTC
    )
    first = last_sunday - timedelta(weeks=weeks - 1)
    now_text = ts(now)
    lineup = list(BenchmarkModel.objects.filter(active=True).order_by("-kind", "display_order"))
    markets = _markets(rng, first=first, now=now, count=catalogue)
    by_volume = sorted(markets, key=lambda m: -m.volume)
    counts: dict[str, Any] = {}

    def write(model: Any, fields: list[str], rows: Iterable[tuple[Any, ...]]) -> None:
        counts[model.__name__] = counts.get(model.__name__, 0) + Writer(
            model, fields, now_text=now_text
        ).write(rows)

    with transaction.atomic():
        # The catalogue.
        write(
            Market,
            [
                "id", "polymarket_id", "question", "description", "category", "outcomes",
                "outcome_prices", "last_open_prices", "price", "volume", "close_date", "closed",
                "active", "resolution", "winning_outcome", "resolved_at", "raw",
                "last_synced_at",
            ],
            (
                (
                    m.pk, m.polymarket_id, m.question, "Resolution rules. " * 25, m.category,
                    json.dumps(m.outcomes), json.dumps([str(p) for p in m.prices]),
                    json.dumps([str(p) for p in m.prices]),
                    str(m.prices[0]) if m.binary else None, str(m.volume), ts(m.close),
                    m.close <= now, m.close > now, m.resolution,
                    m.outcomes[m.winner] if m.winner is not None else "",
                    ts(m.resolved_at) if m.resolved_at else None, _gamma_record(m), now_text,
                )
                for m in markets
            ),
        )  # fmt: skip

        # One decision run a week, freezing its top-500 open markets.
        universes: list[list[FakeMarket]] = []
        run_rows = []
        snapshot_rows = []
        for w in range(weeks):
            started = first + timedelta(weeks=w, minutes=5)
            universe = [m for m in by_volume if m.close > started + timedelta(days=1)][:UNIVERSE]
            universes.append(universe)
            run_rows.append(
                (w + 1, started.date(), ts(started), ts(started + timedelta(minutes=25)),
                 "gamma", len(universe), f"synced {catalogue} markets")
            )  # fmt: skip
            for rank, m in enumerate(universe, start=1):
                snapshot_rows.append(
                    (w + 1, m.pk, rank, m.polymarket_id, m.question, m.category,
                     json.dumps(m.outcomes), json.dumps([str(p) for p in m.prices]),
                     str(m.volume), ts(m.close), False)
                )  # fmt: skip
        write(
            DecisionRun,
            ["id", "week_start", "started_at", "finished_at", "source", "universe_size",
             "sync_summary"],
            run_rows,
        )  # fmt: skip
        write(
            SnapshotMarket,
            ["run_id", "market_id", "rank", "polymarket_id", "question", "category", "outcomes",
             "outcome_prices", "volume", "close_date", "closed"],
            snapshot_rows,
        )  # fmt: skip
        prompts = ["\n".join(_market_line(m) for m in u) for u in universes]

        # Cohorts, agents, decisions, attempts, trades, positions.
        cohort_rows: list[tuple[Any, ...]] = []
        agent_rows: list[tuple[Any, ...]] = []
        decision_rows: list[tuple[Any, ...]] = []
        attempt_rows: list[tuple[Any, ...]] = []
        trade_rows: list[tuple[Any, ...]] = []
        position_rows: list[tuple[Any, ...]] = []
        event_rows: list[tuple[Any, ...]] = []
        spans: list[tuple[int, datetime, datetime]] = []  # agent pk, first slot, last slot
        finals: dict[int, Decimal] = {}
        agent_pk = decision_pk = position_pk = 0
        for c in range(weeks):
            start = first + timedelta(weeks=c)
            end = start + timedelta(weeks=rng.randint(2, 6))
            completed = end <= now
            cohort_rows.append(
                (c + 1, start.date(), ts(start), "completed" if completed else "active",
                 ts(end) if completed else None)
            )  # fmt: skip
            event_rows.append(("cohort_started", "info", f"Cohort {c + 1} started", c + 1, start))
            if completed:
                event_rows.append(
                    ("cohort_completed", "info", f"Cohort {c + 1} completed", c + 1, end)
                )
            for model in lineup:
                agent_pk += 1
                agent_rows.append((agent_pk, c + 1, model.pk))
                book = Ledger()
                llm = not model.is_baseline
                k = 0
                while start + timedelta(weeks=k) < min(end, now):
                    week = start + timedelta(weeks=k)
                    decided = week + timedelta(minutes=5)
                    run = c + k + 1 if c + k < weeks else None
                    for pos in [p for p in book.open.values() if p["market"].settles_by(decided)]:
                        _settle(pos, book, trade_rows)
                    decision_pk += 1
                    bets: list[tuple[FakeMarket, int, Decimal]] = []
                    sell: dict[str, Any] | None = None
                    universe = universes[c + k] if c + k < weeks else []
                    held = {p["market"].pk for p in book.open.values()}
                    if k == 0 and rng.random() < 0.4:
                        bets.append((markets[0], 0, Decimal(rng.randint(100, 600))))
                    candidates = [
                        m
                        for m in universe
                        if m.pk not in held
                        and m.close <= end - timedelta(hours=2)
                        and (m.resolution != "open" or m.close > now - timedelta(days=1))
                    ]
                    for m in rng.sample(candidates, min(len(candidates), rng.randint(0, 4))):
                        bets.append(
                            (m, rng.randrange(len(m.outcomes)), Decimal(rng.randint(50, 600)))
                        )
                    hot = [p for p in book.open.values() if p["market"].pk == 1]
                    last_week = start + timedelta(weeks=k + 1) >= end
                    if hot and last_week:
                        sell = hot[0]
                    elif book.open and k > 0 and rng.random() < 0.15:
                        sell = rng.choice(list(book.open.values()))
                    action = "SELL" if sell and not bets else ("BET" if bets else "HOLD")
                    order = 0
                    for m, index, amount in bets:
                        amount = min(amount, (book.cash / 4).quantize(Decimal("0.01"), ROUND_DOWN))
                        price = m.prices[index] if 0 < m.prices[index] < 1 else Decimal("0.5")
                        if rng.random() < 0.05 or amount < 1:
                            trade_rows.append(
                                _trade(decision_pk, agent_pk, order, "BUY", "rejected", m,
                                       None, m.outcomes[index], amount, None, None, None,
                                       book.cash, decided, reason="bet over 25% of cash")
                            )  # fmt: skip
                            order += 1
                            continue
                        shares = (amount / price).quantize(Decimal("0.000001"), ROUND_DOWN)
                        position_pk += 1
                        pos = {
                            "pk": position_pk,
                            "agent": agent_pk,
                            "market": m,
                            "index": index,
                            "side": ("YES", "NO")[index] if m.binary else m.outcomes[index],
                            "shares": shares,
                            "cost": amount,
                            "opened": decided,
                            "buy": len(trade_rows),
                            "rows": position_rows,
                        }
                        trade_rows.append(
                            _trade(decision_pk, agent_pk, order, "BUY", "executed", m,
                                   position_pk, pos["side"], amount, price, shares, amount,
                                   book.cash, decided,
                                   confidence=float(amount / (book.cash / 4)))
                        )  # fmt: skip
                        book.cash -= amount
                        book.open[position_pk] = pos
                        order += 1
                    if sell is not None and sell["pk"] in book.open:
                        m = sell["market"]
                        price = m.prices[sell["index"]]
                        proceeds = (sell["shares"] * price).quantize(Decimal("0.01"), ROUND_DOWN)
                        trade_rows.append(
                            _trade(decision_pk, agent_pk, order, "SELL", "executed", m,
                                   sell["pk"], sell["side"], None, price, sell["shares"],
                                   proceeds, book.cash, decided,
                                   released=sell["cost"], pnl=proceeds - sell["cost"])
                        )  # fmt: skip
                        book.cash += proceeds
                        _close(sell, book, "closed", decided, proceeds)
                    decision_rows.append(
                        (decision_pk, agent_pk, c + 1, week.date(), run, "done", action,
                         "done" if llm else "", model, decided, prompts[c + k] if llm and
                         c + k < weeks else "")
                    )  # fmt: skip
                    attempts = 2 if llm and rng.random() < 0.1 else 1
                    for number in range(1, attempts + 1):
                        attempt_rows.append(
                            _attempt(decision_pk, number, number == attempts, run, model,
                                     prompts[c + k] if llm and c + k < weeks else "",
                                     bets, action, decided, rng)
                        )  # fmt: skip
                    k += 1
                for pos in [p for p in book.open.values() if p["market"].settles_by(now)]:
                    _settle(pos, book, trade_rows)
                for pos in book.open.values():  # still open: written as they stand
                    _write_position(pos, "open", None, None)
                finals[agent_pk] = book.cash + sum(
                    (p["cost"] for p in book.open.values()), Decimal(0)
                )
                spans.append((agent_pk, start, min(end, now)))
                agent_rows[-1] = (*agent_rows[-1], str(book.cash))
        write(
            Cohort,
            ["id", "number", "week_start", "started_at", "status", "completed_at"],
            ((n, n, d, s, st, done) for n, d, s, st, done in cohort_rows),
        )
        write(Agent, ["id", "cohort_id", "model_id", "cash"], agent_rows)
        write(
            Decision,
            ["id", "agent_id", "cohort_id", "week_start", "run_id", "status", "action",
             "reasoning", "responder", "requested_model", "response_model",
             "upstream_provider", "prompt_version", "system_prompt", "user_prompt",
             "prompt_tokens", "completion_tokens", "cost_usd", "latency_ms", "tries",
             "parsed_try", "claimed_at", "finished_at", "created_at", "parsed"],
            (_decision_row(row, ts) for row in decision_rows),
        )  # fmt: skip
        write(
            DecisionAttempt,
            ["decision_id", "number", "run_id", "responder", "requested_model",
             "request_messages", "raw_response", "response_text", "response_model",
             "upstream_provider", "finish_reason", "prompt_tokens", "completion_tokens",
             "cost_usd", "latency_ms", "parse_error", "parsed", "valid", "started_at"],
            ((*row[:-1], ts(row[-1])) for row in attempt_rows),
        )  # fmt: skip
        write(
            Position,
            ["id", "agent_id", "market_id", "side", "outcome_index", "status", "shares",
             "cost_basis", "realized_pnl", "last_price", "settlement_value", "opened_at",
             "closed_at"],
            ((*row[:11], ts(row[11]), ts(row[12]) if row[12] else None)
             for row in position_rows),
        )  # fmt: skip
        write(
            Trade,
            ["decision_id", "agent_id", "order_index", "kind", "status", "reject_reason",
             "market_id", "position_id", "requested_market_id", "side", "requested_amount",
             "price", "shares", "amount", "cash_before", "cash_after", "implied_confidence",
             "cost_basis_released", "realized_pnl", "brier_score", "side_won", "scored_at",
             "created_at"],
            ((*row[:21], ts(row[21]) if row[21] else None, ts(row[22])) for row in trade_rows),
        )  # fmt: skip

        # Snapshots every 10 minutes while each cohort runs; one tick row per slot.
        slots = int((now - first) / SLOT) + 1
        slot_text = [ts(first + SLOT * n) for n in range(slots)]

        def snapshots() -> Iterator[tuple[Any, ...]]:
            for agent_id, begin, finish in spans:
                a = int((begin - first) / SLOT)
                b = int((finish - first) / SLOT)
                n = max(b - a, 1)
                final = float(finals[agent_id])
                phase = agent_id * 0.7
                for i in range(a, b + 1):
                    f = (i - a) / n
                    value = 10000 + (final - 10000) * f + 180 * math.sin(i / 97 + phase) * f
                    cash = 10000 - 2500 * f
                    pnl = value - 10000
                    yield (
                        agent_id, slot_text[i], f"{cash:.2f}", f"{value - cash:.2f}",
                        f"{value:.2f}", f"{pnl:.2f}", f"{pnl / 100:.4f}", None,
                        int(f * 6), False, slot_text[i],
                    )  # fmt: skip

        write(
            PortfolioSnapshot,
            ["agent_id", "snapshot_timestamp", "cash", "positions_value", "total_value",
             "total_pnl", "total_pnl_percent", "brier_score", "resolved_bets", "prices_stale",
             "created_at"],
            snapshots(),
        )  # fmt: skip
        write(
            SnapshotTick,
            ["slot", "markets_refreshed", "snapshots_written", "created_at"],
            ((slot_text[n], 600, 9 * 6, slot_text[n]) for n in range(slots)),
        )
        syncs = int((now - first) / SYNC_EVERY)
        write(
            MarketSyncRun,
            ["source", "requested", "fetched", "created", "updated", "rejected", "rejections",
             "status", "started_at", "finished_at"],
            (("gamma", 500, 500, 0, 500, 1, json.dumps([{"id": "0", "reason": "odd"}]), "ok",
              ts(first + SYNC_EVERY * n), ts(first + SYNC_EVERY * n + timedelta(seconds=4)))
             for n in range(syncs)),
        )  # fmt: skip
        checks = int((now - first) / RESOLUTION_EVERY)
        write(
            ResolutionCheck,
            ["checked_at", "markets_checked", "resolved"],
            (
                (ts(first + RESOLUTION_EVERY * n + timedelta(minutes=7)), 40, json.dumps([]))
                for n in range(checks)
            ),
        )
        for m in markets:
            if m.resolved_at is not None and m.resolved_at <= now:
                kind = "market_settled" if m.resolution == "resolved" else "market_cancelled"
                event_rows.append((kind, "info", f"{m.question} settled", None, m.resolved_at))
        for w in range(weeks):
            at = first + timedelta(weeks=w, minutes=5)
            event_rows.append(("run_started", "info", f"Run {w + 1} started", None, at))
            event_rows.append(
                ("run_finished", "info", f"Run {w + 1} finished", None, at + timedelta(minutes=25))
            )
        write(
            SystemEvent,
            ["kind", "level", "message", "cohort_id", "created_at", "data"],
            ((k, lv, msg, co, ts(at), "{}") for k, lv, msg, co, at in event_rows),
        )
        write(
            DeterminismCheck,
            ["decision_id", "requested_model", "response_model", "matches", "original",
             "repeated", "raw_response", "checked_at"],
            ((d[0], "openai/gpt-5.2", "openai/gpt-5.2", i % 5 != 0, '{"action": "HOLD"}',
              '{"action": "HOLD"}', "{}", ts(d[9] + timedelta(hours=1)))
             for i, d in enumerate(decision_rows[::40])),
        )  # fmt: skip
        if connection.vendor == "postgresql":
            models = [Market, DecisionRun, SnapshotMarket, Cohort, Agent, Decision,
                      DecisionAttempt, Position, Trade, PortfolioSnapshot, SnapshotTick,
                      MarketSyncRun, SystemEvent, DeterminismCheck, ResolutionCheck]  # fmt: skip
            with connection.cursor() as cursor:
                for statement in connection.ops.sequence_reset_sql(no_style(), models):
                    cursor.execute(statement)
    # The snapshots went in past the tick, which keeps their rollup: rebuilt as
    # `manage.py rebuild_snapshot_rollup` does, so the charts read what production reads.
    counts["AgentSnapshotRollup"] = rollup_rebuild()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # as autovacuum would have after a year
    return {**counts, "seconds": round(time.perf_counter() - clock, 1)}


def _trade(
    decision: int,
    agent: int,
    order: int,
    kind: str,
    status: str,
    market: FakeMarket,
    position: int | None,
    side: str,
    requested: Decimal | None,
    price: Decimal | None,
    shares: Decimal | None,
    amount: Decimal | None,
    cash_before: Decimal,
    at: datetime,
    *,
    reason: str = "",
    confidence: float | None = None,
    released: Decimal | None = None,
    pnl: Decimal | None = None,
) -> tuple[Any, ...]:
    executed = status == "executed"
    after = None
    if executed and amount is not None:
        after = cash_before - amount if kind == "BUY" else cash_before + amount
    return (
        decision, agent, order, kind, status, reason, market.pk, position,
        market.polymarket_id, side, requested, price, shares, amount,
        cash_before if executed else None, after, confidence, released, pnl,
        None, None, None, at,
    )  # fmt: skip


def _write_position(
    pos: dict[str, Any], status: str, closed: datetime | None, value: Decimal | None
) -> None:
    m: FakeMarket = pos["market"]
    pnl = (value - pos["cost"]) if value is not None and status != "open" else Decimal(0)
    pos["rows"].append(
        (pos["pk"], pos["agent"], m.pk, pos["side"], pos["index"], status,
         str(pos["shares"]), str(pos["cost"]), str(pnl), str(m.prices[pos["index"]]),
         str(value) if value is not None and status != "closed" else None,
         pos["opened"], closed)
    )  # fmt: skip


def _close(pos: dict[str, Any], book: Ledger, status: str, at: datetime, value: Decimal) -> None:
    book.open.pop(pos["pk"], None)
    _write_position(pos, status, at, value)


def _settle(pos: dict[str, Any], book: Ledger, trades: list[tuple[Any, ...]]) -> None:
    """Settle the position at its market's resolution; score its buy with Brier."""
    m: FakeMarket = pos["market"]
    assert m.resolved_at is not None
    if m.resolution == "cancelled":
        book.cash += pos["cost"]
        _close(pos, book, "cancelled", m.resolved_at, pos["cost"])
        return
    won = m.winner == pos["index"]
    value = pos["shares"].quantize(Decimal("0.01"), ROUND_DOWN) if won else Decimal(0)
    book.cash += value
    _close(pos, book, "settled", m.resolved_at, value)
    buy = list(trades[pos["buy"]])
    confidence = buy[16] or 0.0
    buy[19], buy[20], buy[21] = (confidence - float(won)) ** 2, won, m.resolved_at
    trades[pos["buy"]] = tuple(buy)


def _decision_row(row: tuple[Any, ...], ts: Callable[[datetime], str]) -> tuple[Any, ...]:
    pk, agent, cohort, week, run, status, action, reasoning, model, decided, prompt = row
    llm = not model.is_baseline
    return (
        pk, agent, cohort, week, run, status, action,
        "The market underprices the base rate; a modest position is warranted. " * 6
        if reasoning else "",
        "openrouter" if llm else "baseline",
        model.openrouter_id or model.internal_id,
        model.openrouter_id or model.internal_id,
        "Provider" if llm else "",
        "v1",
        SYSTEM_PROMPT if llm else "",
        prompt,
        len(prompt) // 4 if llm else None,
        900 if llm else None,
        "0.031200" if llm else None,
        14_000 if llm else 0,
        1, 1, ts(decided), ts(decided + timedelta(minutes=1)), ts(decided),
        json.dumps({"action": action}),
    )  # fmt: skip


def _attempt(
    decision: int,
    number: int,
    valid: bool,
    run: int | None,
    model: Any,
    prompt: str,
    bets: list[tuple[FakeMarket, int, Decimal]],
    action: str,
    at: datetime,
    rng: random.Random,
) -> tuple[Any, ...]:
    llm = not model.is_baseline
    answer = json.dumps(
        {
            "action": action,
            "bets": [
                {"market_id": m.polymarket_id, "side": m.outcomes[i], "amount": str(a)}
                for m, i, a in bets
            ],
            "reasoning": "Weighing the base rates against the current prices. " * 8,
        }
    )
    text = answer if valid else "I think the best course is to " + "consider " * 40
    raw = json.dumps(
        {
            "id": f"gen-{decision}-{number}",
            "model": model.openrouter_id,
            "choices": [
                {
                    "message": {
                        "content": text,
                        "reasoning": "Let me look at each market in turn. " * rng.randint(20, 90),
                    },
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": 900},
        }
    )
    messages = json.dumps(
        [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}]
        if llm
        else []
    )
    return (
        decision, number, run, "openrouter" if llm else "baseline",
        model.openrouter_id or model.internal_id, messages, raw if llm else answer, text,
        model.openrouter_id or model.internal_id, "Provider" if llm else "", "stop",
        len(prompt) // 4 if llm else None, 900 if llm else None,
        "0.015600" if llm else None, 7_000 if llm else 0,
        "" if valid else "no JSON object in the answer", answer if valid else None, valid, at,
    )  # fmt: skip


def has_year(weeks: int) -> bool:
    from arena.models import Cohort, PortfolioSnapshot

    return Cohort.objects.count() == weeks and PortfolioSnapshot.objects.exists()


def clear() -> None:
    """Remove everything the generator writes: every table of the arena's and the catalogue's
    models, read from the models so that a table a migration adds is emptied too. The lineup
    (agents' table, a migration's seed) stays; a proxy model names its concrete model's table
    (the outside agents are lineup rows), so proxies are left out."""
    from django.apps import apps
    from django.db import connection, transaction

    tables = sorted(
        {
            model._meta.db_table
            for label in ("arena", "markets")
            for model in apps.get_app_config(label).get_models()
            if model._meta.managed and not model._meta.proxy
        }
    )
    quoted = [connection.ops.quote_name(table) for table in tables]
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # No CASCADE: a table outside this list that refers to one of them stops the
            # clear rather than being emptied unasked.
            cursor.execute(f"TRUNCATE {', '.join(quoted)} RESTART IDENTITY")
        else:
            # SQLite checks foreign keys at the commit, so the order does not matter.
            for table in quoted:
                cursor.execute(f"DELETE FROM {table}")  # noqa: S608 — our own table names


# --- measuring ---------------------------------------------------------------------------------


@dataclass
class Page:
    label: str
    name: str
    args: tuple[Any, ...] = ()
    query: str = ""


@dataclass
class Result:
    page: Page
    url: str = ""
    status: int = 0
    times_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)  # this process's CPU time per request
    queries: int = 0
    query_ms: float = 0.0  # the database's time in the counted request
    bytes: int = 0
    missing: str = ""

    @property
    def p50(self) -> float:
        return statistics.median(self.times_ms)

    @property
    def p95(self) -> float:
        ordered = sorted(self.times_ms)
        return ordered[math.ceil(0.95 * len(ordered)) - 1]  # nearest rank


def pages(ranges: tuple[str, ...] = RANGES) -> list[Page]:
    """Every public page, on the data's heaviest objects; the chart pages at each of `ranges`."""
    from django.db.models import Count

    from agents.models import BenchmarkModel
    from arena.models import Agent, Cohort, Decision, Position
    from markets.models import Market

    old = Cohort.objects.order_by("number").first()
    recent = Cohort.objects.order_by("-number").first()
    assert old is not None
    assert recent is not None
    agent = (
        Agent.objects.filter(cohort=recent, model__kind=BenchmarkModel.Kind.LLM)
        .annotate(n=Count("trades"))
        .order_by("-n", "pk")
        .first()
    )
    assert agent is not None
    decision = (
        Decision.objects.filter(responder=Decision.Responder.OPENROUTER)
        .annotate(n=Count("attempts"))
        .order_by("-n", "-week_start", "pk")
        .first()
    )
    assert decision is not None
    held = (
        Position.objects.order_by()
        .values("market_id")
        .annotate(n=Count("pk"))
        .order_by("-n")
        .first()
    )
    assert held is not None
    market = Market.objects.get(pk=held["market_id"])
    model = BenchmarkModel.objects.filter(kind=BenchmarkModel.Kind.LLM).order_by("display_order")[0]
    result = [
        Page("leaderboard", "arena:leaderboard"),
        Page("leaderboard, by return", "arena:leaderboard", query="sort=return"),
        Page("cohorts", "arena:cohorts"),
    ]
    for cohort, when in ((old, "oldest"), (recent, "newest")):
        for key in ranges:
            result.append(
                Page(f"cohort {cohort.number} ({when}) {key}", "arena:cohort", (cohort.number,),
                     f"range={key}")
            )  # fmt: skip
    result += [
        Page(f"agent {agent.pk} (cohort {recent.number})", "arena:agent",
             (recent.number, agent.pk)),
        Page(f"decision {decision.pk} ({getattr(decision, 'n', 0)} attempts)", "arena:decision",
             (decision.pk,)),
        Page("markets", "markets:list"),
        Page(f"market {market.polymarket_id} ({held['n']} positions)", "arena:market",
             (market.polymarket_id,)),
        Page("models", "arena:models"),
    ]  # fmt: skip
    for key in ranges:
        result.append(
            Page(f"model {model.internal_id} {key}", "arena:model", (model.internal_id,),
                 f"range={key}")
        )  # fmt: skip
    result += [
        Page("methodology", "arena:methodology"),
        Page("status", "arena:status"),
        Page("about", "arena:about"),
    ]
    return result


def measure(page: Page, *, requests: int, warmups: int = WARMUPS, kept: bool = False) -> Result:
    """Time `requests` GETs of `page` after `warmups` untimed ones, then count the queries of
    one more; a page stops at its first answer that is not 200. `kept`: as production serves
    it, kept whole until the data moves; else rendered on every request."""
    from django.conf import settings
    from django.core.cache import caches
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import NoReverseMatch, reverse

    result = Result(page)
    try:
        result.url = reverse(page.name, args=page.args)
    except NoReverseMatch:
        result.missing = "not built yet"
        return result
    if page.query:
        result.url += "?" + page.query
    settings.PAGE_CACHE_SECONDS = 600 if kept else 0
    caches["pages"].clear()
    client = Client()
    for _ in range(warmups):
        result.status = client.get(result.url).status_code
        if result.status != 200:
            return result
    for _ in range(requests):
        cpu, clock = time.process_time(), time.perf_counter()
        response = client.get(result.url)
        result.times_ms.append((time.perf_counter() - clock) * 1000)
        result.cpu_ms.append((time.process_time() - cpu) * 1000)
        result.status = response.status_code
        if result.status != 200:
            return result
    result.bytes = len(response.content)
    with CaptureQueriesContext(connection) as captured:
        client.get(result.url)
    result.queries = len(captured.captured_queries)
    result.query_ms = sum(float(q["time"]) for q in captured.captured_queries) * 1000
    return result


def facts() -> list[str]:
    from django import get_version
    from django.db import connection

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = [
        f"machine: {os.cpu_count()} CPUs ({cpu}), load average {load}",
        f"Python {platform.python_version()}, Django {get_version()}, DEBUG off",
    ]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SHOW server_version")
            version = cursor.fetchone()[0]
            settings = []
            for name in ("shared_buffers", "work_mem", "effective_cache_size", "jit"):
                cursor.execute(f"SHOW {name}")
                settings.append(f"{name} {cursor.fetchone()[0]}")
            cursor.execute("SELECT pg_size_pretty(pg_database_size(current_database()))")
            size = cursor.fetchone()[0]
            lines.append(
                f"database: PostgreSQL {version} on {connection.settings_dict['HOST']}, "
                f"{', '.join(settings)}; size {size}"
            )
        else:
            cursor.execute("SELECT sqlite_version()")
            version = cursor.fetchone()[0]
            path = Path(connection.settings_dict["NAME"])
            size = path.stat().st_size / 1e6 if path.exists() else 0
            lines.append(f"database: SQLite {version}, file {path} ({size:,.0f} MB)")
    return lines


def table_counts() -> str:
    from arena.models import (
        Agent,
        Cohort,
        Decision,
        DecisionAttempt,
        PortfolioSnapshot,
        Position,
        SnapshotMarket,
        Trade,
    )
    from markets.models import Market

    parts = [
        (label, model.objects.count())
        for label, model in (
            ("cohorts", Cohort),
            ("agents", Agent),
            ("decisions", Decision),
            ("attempts", DecisionAttempt),
            ("trades", Trade),
            ("positions", Position),
            ("snapshots", PortfolioSnapshot),
            ("markets", Market),
            ("frozen markets", SnapshotMarket),
        )
    ]
    return ", ".join(f"{n:,} {label}" for label, n in parts)


def run(
    *,
    weeks: int,
    requests: int,
    regenerate: bool = False,
    only: str = "",
    catalogue: int = CATALOGUE,
    warmups: int = WARMUPS,
    ranges: tuple[str, ...] = RANGES,
) -> tuple[list[tuple[Result, float]], list[Result]]:
    """On the database Django is set up with (migrated): write the year unless it is there,
    then measure and print every page; return the pages over budget and those that failed.
    The keywords after `only` shrink the run (the catalogue, the warm-ups, the chart ranges)."""
    generated: dict[str, Any] | None = None
    if regenerate or not has_year(weeks):
        clear()
        print(f"writing {weeks} weeks of data …", flush=True)
        generated = generate(weeks=weeks, catalogue=catalogue)
    print("Server time per page (Django test Client, in-process), on a generated year")
    for line in facts():
        print(line)
    print(f"data: {table_counts()}")
    if generated is not None:
        print(f"generated in {generated['seconds']} s")
    else:
        print("data reused (--regenerate writes it again)")
    print(
        f"{warmups} warm-up requests, then {requests} timed, each page twice: rendered on every "
        f"request (budget p95 < {BUDGET_MS:.0f} ms), and served as production does, kept until "
        f"the data moves (budget p95 < {SERVED_BUDGET_MS:.0f} ms)"
    )
    print()
    header = (
        f"{'page':<44} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7} {'cpu p50':>7} {'queries':>7} "
        f"{'db ms':>6} {'KB':>5} {'served p50':>10} {'p95':>6} {'q':>2}"
    )
    print(header)
    print("-" * len(header))
    # As forecaster/wsgi.py does once the app is loaded: what lives as long as the process
    # (here also the generator's leftovers, collected first) is kept out of the collector's
    # full scans, which otherwise land on a few requests and make the p95.
    gc.collect()
    gc.freeze()
    over: list[tuple[Result, float]] = []
    failed: list[Result] = []
    for page in pages(ranges):
        if only and only not in page.label:
            continue
        result = measure(page, requests=requests, warmups=warmups)
        served = measure(page, requests=requests, warmups=warmups, kept=True)
        if result.missing:
            print(f"{page.label:<44} {result.missing}")
            continue
        if result.status != 200:
            print(f"{page.label:<44} HTTP {result.status} at {result.url}")
            failed.append(result)
            continue
        missed = [
            (r, b) for r, b in ((result, BUDGET_MS), (served, SERVED_BUDGET_MS)) if r.p95 >= b
        ]
        print(
            f"{page.label:<44} {result.p50:>7.1f} {result.p95:>7.1f} {max(result.times_ms):>7.1f}"
            f" {statistics.median(result.cpu_ms):>7.1f} {result.queries:>7} {result.query_ms:>6.0f}"
            f" {result.bytes / 1024:>5.0f} {served.p50:>10.1f} {served.p95:>6.1f}"
            f" {served.queries:>2}{'  OVER' if missed else ''}",
            flush=True,
        )
        over += missed
    return over, failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default=DEFAULT_URL, help="sqlite:///… or postgres://…")
    parser.add_argument("--weeks", type=int, default=52, help="weekly cohorts (52: a year)")
    parser.add_argument("--requests", type=int, default=30, help="timed requests per page")
    parser.add_argument("--regenerate", action="store_true", help="write the year again")
    parser.add_argument("--drop", action="store_true", help="drop the PostgreSQL database after")
    parser.add_argument("--only", default="", help="measure only pages whose label has this")
    args = parser.parse_args()

    postgres = args.database.startswith("postgres")
    if postgres:
        _ensure_postgres_database(args.database)
    _env_for(args.database)
    import django
    from django.conf import settings

    # DEBUG off serves hashed files from a collectstatic manifest; the bench has none, and
    # plain static URLs cost the same to render.
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    django.setup()
    # WhiteNoise warns that STATIC_ROOT was never collected; pages do not read it.
    warnings.filterwarnings("ignore", message="No directory at")
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0, interactive=False)
    over, failed = run(
        weeks=args.weeks, requests=args.requests, regenerate=args.regenerate, only=args.only
    )
    connection.close()
    print(f"load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.drop and postgres:
        _drop_postgres_database(args.database)
    print()
    for result in failed:
        print(f"FAILED: {result.page.label} ({result.url}) answered HTTP {result.status}")
    for result, budget in over:
        how = "served" if budget == SERVED_BUDGET_MS else "rendered"
        print(
            f"OVER BUDGET: {result.page.label} ({result.url}) {how}: p95 {result.p95:.1f} ms "
            f">= {budget:.0f} ms"
        )
    if over or failed:
        sys.exit(1)
    print(
        f"every page's p95 is under {BUDGET_MS:.0f} ms rendered and {SERVED_BUDGET_MS:.0f} ms "
        "served"
    )


if __name__ == "__main__":
    main()
