"""Measure the engine's own time per agent for a weekly decision, on SQLite and PostgreSQL.

Run from the repository root: .venv/bin/python bench/decision_run.py [--no-postgres]

One weekly decision = `decision_run`: claim the decision row, read the agent's open positions,
build the prompt of the run's 500 frozen markets, ask the model, parse the answer, execute its
trades, record everything. The model answers instantly, so what is measured is the project's
own cost. Two responders:

- offline: the deterministic offline agents (settings.OPENROUTER_API_KEY = "");
- openrouter: the real OpenRouter client (agents/clients.py) against a local ReplayServer
  (tests/replay.py, a real HTTP server on 127.0.0.1) answering POST /chat/completions at once
  with the recorded body chat_completion_ok_json_content_with_reasoning.json, its
  `choices[0].message.content` replaced by a valid BET on 3 real markets of the run's snapshot.

Each responder is measured for agents holding 0, 10 and 50 open positions (created through the
ORM on distinct markets of the snapshot), one cohort of the 7 lineup LLMs per case, to show that
the queries per agent do not grow with the positions. Per agent: wall time and query count
(one CaptureQueriesContext around decision_run; its overhead is included and is negligible).

The snapshot comes from `run_prepare(source=RecordedSource())` (the embedded recorded markets,
no network); run_prepare is timed apart, since it runs once per run, and so is the cold read of
the snapshot (`FrozenMarkets.load`, once per worker process per run). Every decision_run below
finds the snapshot cached, as every agent after the first does in a worker.

Settings are read at django.setup(), so each database runs in a child process with its own
DATABASE_URL: a temporary SQLite file, and postgres://postgres@127.0.0.1:5432/bench_decisions
(created and dropped here; override with BENCH_DECISIONS_POSTGRES_URL). Both are migrated first.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import harness

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: make the project (and tests.replay) importable

POSTGRES_URL = os.environ.get(
    "BENCH_DECISIONS_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/bench_decisions"
)
CHILD_FLAG = "--child"
RECORDED_COMPLETION = (
    ROOT / "agents/recordings/openrouter/chat_completion_ok_json_content_with_reasoning.json"
)
# Sunday 2026-02-01 00:05 UTC: the week after the recorded listing (2026-01-31).
NOW = datetime(2026, 2, 1, 0, 5, tzinfo=UTC)
POSITION_COUNTS = (0, 10, 50)
RESPONDERS = ("offline", "openrouter")
BET_MARKETS = 3
TARGET_SECONDS = 0.5


# --- child: one database, configured by DATABASE_URL before django.setup() ---------------------


def _server_version() -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT sqlite_version()")
        else:
            cursor.execute("SHOW server_version")
        return str(cursor.fetchone()[0]).split()[0]


def _timed(run: Any) -> tuple[Any, float, int]:
    """Return (result, seconds, queries) of one call of `run`."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        clock = time.perf_counter()
        result = run()
        seconds = time.perf_counter() - clock
    return result, seconds, len(captured.captured_queries)


def _tradable(view: Any) -> bool:
    """A binary market whose YES price leaves room on both sides (bets and positions use it)."""
    yes = view.yes_price
    return view.is_binary and yes is not None and Decimal("0.05") <= yes <= Decimal("0.95")


def _completion_body(bets: list[dict[str, Any]]) -> bytes:
    """The recorded completion, its content replaced by a BET on `bets`."""
    body = json.loads(RECORDED_COMPLETION.read_text(encoding="utf-8"))
    body["choices"][0]["message"]["content"] = json.dumps(
        {
            "action": "BET",
            "bets": bets,
            "reasoning": "These three prices look wrong to me; small stakes on each.",
        },
        indent=2,
    )
    return json.dumps(body).encode()


def child() -> dict[str, Any]:
    """Migrate the database in DATABASE_URL, measure it, return the figures."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forecaster.settings")
    import django

    django.setup()

    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0, interactive=False)
    figures = measure_database()
    connection.close()
    return figures


def measure_database(
    *,
    position_counts: tuple[int, ...] = POSITION_COUNTS,
    responders: tuple[str, ...] = RESPONDERS,
    agents_per_case: int | None = None,
) -> dict[str, Any]:
    """Measure on the database Django is set up with (migrated, its lineup seeded): one case
    per responder and count of open positions, each the lineup's LLM agents of a cohort of its
    own (the first `agents_per_case` of them when given); return the figures."""
    from django.conf import settings
    from django.db import connection

    from agents.models import BenchmarkModel
    from agents.parsing import parse_decision
    from agents.prompts import build_messages
    from agents.types import DecisionContext
    from arena.models import Agent, Decision, Position, SnapshotMarket, Trade
    from arena.services.cohorts import cohort_start
    from arena.services.decisions.context import portfolio_view
    from arena.services.decisions.run import decision_run
    from arena.services.frozen import _FROZEN_CACHE, FrozenMarkets, run_prepare
    from arena.weeks import cohort_week_start
    from markets.sources import RecordedSource, demo_records
    from tests.replay import ReplayServer, Reply

    source = RecordedSource()
    demo_records()  # the recordings are read once per process; keep that out of the timings
    figures: dict[str, Any] = {"vendor": connection.vendor, "version": _server_version()}

    # run_prepare: once per run. Empty catalogue first, then a re-sync.
    prepare: list[dict[str, Any]] = []
    first, seconds, queries = _timed(lambda: run_prepare(now=NOW, source=source))
    prepare.append({"label": "empty catalogue, nothing held", "s": seconds, "q": queries})
    _, seconds, queries = _timed(lambda: run_prepare(now=NOW, source=source))
    prepare.append({"label": "full catalogue, nothing held", "s": seconds, "q": queries})

    # Markets to bet on and to hold: tradable binary markets of the snapshot's universe.
    frozen_first = FrozenMarkets.load(first)
    tradable = [v.market_id for v in frozen_first.universe if _tradable(v)]
    bet_ids = tradable[:BET_MARKETS]
    held_ids = tradable[BET_MARKETS : BET_MARKETS + max(position_counts)]
    assert len(held_ids) == max(position_counts), f"only {len(tradable)} tradable markets"
    market_pk = dict(
        SnapshotMarket.objects.filter(run=first, polymarket_id__in=held_ids).values_list(
            "polymarket_id", "market_id"
        )
    )

    # One cohort of the lineup per (responder, positions) case; distinct past Sundays.
    llms = list(
        BenchmarkModel.objects.filter(active=True, kind=BenchmarkModel.Kind.LLM).order_by(
            "display_order"
        )
    )
    week = cohort_week_start(NOW)
    cases: list[tuple[str, int, list[int]]] = []
    for number, (responder, count) in enumerate(
        (r, c) for r in responders for c in position_counts
    ):
        cohort, _ = cohort_start(
            week_start=week - timedelta(weeks=number + 1), now=NOW - timedelta(weeks=number + 1)
        )
        agents = list(
            Agent.objects.filter(cohort=cohort, model__in=llms).order_by("model__display_order")
        )[:agents_per_case]
        positions = []
        for agent in agents:
            for pid in held_ids[:count]:
                view = frozen_first.views[pid]
                price = view.yes_price
                assert price is not None
                cost = Decimal("50.00")
                positions.append(
                    Position(
                        agent=agent,
                        market_id=market_pk[pid],
                        side="YES",
                        outcome_index=0,
                        shares=(cost / price).quantize(Decimal("0.000001")),
                        cost_basis=cost,
                        last_price=price,
                        opened_at=NOW - timedelta(days=3),
                    )
                )
        Position.objects.bulk_create(positions, batch_size=2000)
        Agent.objects.filter(pk__in=[a.pk for a in agents]).update(
            cash=Decimal("10000.00") - count * Decimal("50.00")
        )
        cases.append((responder, count, [a.pk for a in agents]))

    # The run the decisions see: with positions held, it refreshes the held markets too.
    run, seconds, queries = _timed(lambda: run_prepare(now=NOW, source=source))
    held_count = SnapshotMarket.objects.filter(run=run, rank__isnull=True).count()
    prepare.append(
        {
            "label": f"full catalogue, {len(held_ids)} markets held",
            "s": seconds,
            "q": queries,
        }
    )
    figures["prepare"] = prepare
    figures["snapshot_markets"] = SnapshotMarket.objects.filter(run=run).count()
    figures["universe"] = run.universe_size
    figures["held_outside_universe"] = held_count

    # The cold read of the snapshot: once per worker process per run.
    _FROZEN_CACHE.clear()
    frozen, seconds, queries = _timed(lambda: FrozenMarkets.load(run))
    figures["frozen_load"] = {"s": seconds, "q": queries}

    # The pure-Python parts, for scale: the 500-market prompt, and parsing the model's answer.
    empty = portfolio_view(
        agent=Agent.objects.select_related("cohort").get(pk=cases[0][2][0]), frozen=frozen
    )
    context = DecisionContext(
        as_of=NOW,
        week_start=run.week_start,
        cohort_number=1,
        portfolio=empty,
        markets=frozen.universe,
    )
    clock = time.perf_counter()
    for _ in range(10):
        messages = build_messages(context)
    figures["build_messages"] = {
        "s": (time.perf_counter() - clock) / 10,
        "chars": sum(len(m["content"]) for m in messages),
        "markets": len(frozen.universe),
    }
    bets = [{"market_id": pid, "side": "YES", "amount": 100} for pid in bet_ids]
    reply_body = _completion_body(bets)
    text = json.loads(reply_body)["choices"][0]["message"]["content"]
    clock = time.perf_counter()
    for _ in range(100):
        parse_decision(text, markets=frozen.views, position_ids=set())
    figures["parse"] = {"s": (time.perf_counter() - clock) / 100}

    # The decisions.
    rows = []
    server = ReplayServer().start()
    server.route("POST", "/chat/completions", Reply(body=reply_body))
    try:
        for responder, count, agent_ids in cases:
            if responder == "openrouter":
                settings.OPENROUTER_BASE_URL = server.url
                settings.OPENROUTER_API_KEY = "sk-or-bench-key"
            else:
                settings.OPENROUTER_API_KEY = ""
            measured: list[dict[str, Any]] = []
            for agent_id in agent_ids:
                outcome, seconds, queries = _timed(
                    lambda agent_id=agent_id: decision_run(
                        agent_id=agent_id, run_id=run.pk, now=NOW
                    )
                )
                decision = Decision.objects.get(pk=outcome.decision_id)
                assert decision.responder == responder, (decision.responder, responder)
                measured.append(
                    {
                        "s": seconds,
                        "q": queries,
                        "status": outcome.status,
                        "action": decision.action,
                        "executed": outcome.executed,
                        "rejected": outcome.rejected,
                        "prompt_chars": len(decision.system_prompt) + len(decision.user_prompt),
                        "open": Position.objects.filter(
                            agent_id=agent_id, status=Position.Status.OPEN
                        ).count(),
                    }
                )
            rows.append({"responder": responder, "positions": count, "agents": measured})
    finally:
        server.stop()
    figures["rows"] = rows
    figures["openrouter_requests"] = len(server.requests_to("/chat/completions"))
    figures["trades"] = Trade.objects.count()
    return figures


# --- parent: one child per database, then the tables --------------------------------------------


def run_child(database_url: str) -> dict[str, Any]:
    return harness.run_child(__file__, database_url, CHILD_FLAG)


def postgres_database(action: str) -> None:
    harness.postgres_database(POSTGRES_URL, action)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def _span(values: list[int]) -> str:
    low, high = min(values), max(values)
    return str(low) if low == high else f"{low}–{high}"


def print_database(name: str, figures: dict[str, Any]) -> None:
    print(f"== {name} ==")
    print(
        f"snapshot: {figures['snapshot_markets']} markets frozen "
        f"({figures['universe']} ranked + {figures['held_outside_universe']} held outside)"
    )
    for step in figures["prepare"]:
        print(f"run_prepare ({step['label']}): {_ms(step['s'])}, {step['q']} queries")
    frozen = figures["frozen_load"]
    print(
        f"FrozenMarkets.load, cold (once per worker per run): {_ms(frozen['s'])}, {frozen['q']} q"
    )
    prompt = figures["build_messages"]
    print(
        f"build_messages, {prompt['markets']} markets, no position: {_ms(prompt['s'])} "
        f"({prompt['chars']:,} chars); parse_decision of the BET: {_ms(figures['parse']['s'])}"
    )
    header = (
        f"{'responder':<11} | {'positions':>9} | {'agents':>6} | {'median':>9} | {'max':>9} | "
        f"{'queries':>7} | {'trades exec/rej':>15} | {'actions':<14} | {'prompt chars':>15}"
    )
    print(header)
    print("-" * len(header))
    for row in figures["rows"]:
        agents = row["agents"]
        seconds = [a["s"] for a in agents]
        actions: dict[str, int] = {}
        for a in agents:
            actions[a["action"]] = actions.get(a["action"], 0) + 1
        trades = f"{sum(a['executed'] for a in agents)}/{sum(a['rejected'] for a in agents)}"
        print(
            f"{row['responder']:<11} | {row['positions']:>9} | {len(agents):>6} | "
            f"{_ms(statistics.median(seconds)):>9} | {_ms(max(seconds)):>9} | "
            f"{_span([a['q'] for a in agents]):>7} | {trades:>15} | "
            f"{' '.join(f'{k}×{v}' for k, v in sorted(actions.items())):<14} | "
            f"{_span([a['prompt_chars'] for a in agents]):>15}"
        )
    # Queries per agent against what it did: constant per number of trades executed.
    by_trades: dict[tuple[str, int], set[int]] = {}
    for row in figures["rows"]:
        for a in row["agents"]:
            by_trades.setdefault((row["responder"], a["executed"]), set()).add(a["q"])
    print(
        "queries per agent by trades executed (all position counts together): "
        + "; ".join(
            f"{responder} {n} trades → {sorted(q)}"
            for (responder, n), q in sorted(by_trades.items())
        )
    )
    worst = max(a["s"] for row in figures["rows"] for a in row["agents"])
    verdict = "under" if worst < TARGET_SECONDS else "OVER"
    print(f"slowest agent: {_ms(worst)} ({verdict} the {TARGET_SECONDS} s target)")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument(CHILD_FLAG, action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child()))
        return

    started = time.perf_counter()
    results: list[tuple[str, dict[str, Any]]] = []
    with tempfile.TemporaryDirectory(prefix="bench_decisions_") as tmp:
        sqlite = run_child(f"sqlite:///{tmp}/bench.sqlite3")
        results.append((f"SQLite {sqlite['version']} (temporary file)", sqlite))
    if not args.no_postgres:
        postgres_database("create")
        try:
            postgres = run_child(POSTGRES_URL)
        finally:
            postgres_database("drop")
        results.append((f"PostgreSQL {postgres['version']}", postgres))
    print(
        f"Weekly decision per agent, model answering instantly; {os.cpu_count()} CPUs. "
        "Queries include BEGIN/SAVEPOINT/COMMIT as Django logs them."
    )
    print()
    for name, figures in results:
        print_database(name, figures)
    print(f"total bench time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
