"""Measure methodology v2's figures on a generated year with a forecast panel of K = 20.

Run from the repository root:
    .venv/bin/python bench/panel.py [--database URL] [--weeks 52] [--runs 7] [--regenerate]
                                    [--drop]

The database is PostgreSQL by default: BENCH_PANEL_DATABASE_URL, else
postgres://postgres@127.0.0.1:5432/bench_panel (created when missing and kept, so the next run
reuses its year; --regenerate writes it again, --drop drops it at the end).

The year is bench/analytics.py's (52 weekly cohorts of the 9-model lineup, 3–5 weeks each,
~40,000 scored bets), every cohort on methodology v2:

- each week's run picks its panel by the real rule (`arena.services.frozen.run_panel`, K =
  PANEL_SIZE) over its 500 frozen markets, none asked by an earlier week's panel;
- each of the run's decisions forecasts every panel question. An LLM states P(YES) = b +
  skill × (x − b) + noise, x the outcome (0.5 while open), skill 0.02–0.14 and noise sigma
  0.04–0.10 by model, and leaves 3% of its questions out (imputed at b); the market follower
  states b and the random bettor a uniform probability;
- questions whose markets resolved are scored as `forecasts_score` scores them (Brier and
  log score of the stated p, else of b); cancelled ones keep no score;
- every executed bet states its probability: its implied confidence, kept inside (0, 1).

Measured in-process, DEBUG off, each call cold (nothing here is cached between calls):
`panel_board()` (the leaderboard's v2 view and /api/v1/forecasts/leaderboard) and
`model_say_do(model=…)` (a model page's v2 section) for each of the 9 models: one warm-up, then
`--runs` timed calls (best, median), then one inside CaptureQueriesContext (queries and their
database time). Budget: each median under 1,000 ms.

Exits with status 1 when a budget is missed, naming it.
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

import analytics  # bench/analytics.py: the year's generator
import pages as year  # bench/pages.py: its row writer, timestamps and environment

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: make the project importable

DEFAULT_URL = os.environ.get(
    "BENCH_PANEL_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/bench_panel"
)
BUDGET_MS = analytics.BUDGET_MS
SKILL = (0.14, 0.12, 0.10, 0.08, 0.06, 0.04, 0.02)  # by display order: per-model skill
NOISE = (0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.10)
MISSING = 0.03  # the share of questions an LLM leaves out
LIQUID = Decimal("50000")  # the generated markets carry no book; every one counts as liquid
PROBABILITY = Decimal("0.000001")
EDGE = Decimal("0.000001")  # a stated probability is kept this far inside (0, 1)


def _stated(value: float) -> Decimal:
    """`value` as a stored probability: 6 places, strictly inside (0, 1)."""
    clamped = min(max(Decimal(str(value)), EDGE), Decimal(1) - EDGE)
    return clamped.quantize(PROBABILITY, ROUND_HALF_EVEN)


def add_panel(*, seed: int = 23) -> dict[str, Any]:
    """Turn the generated year into methodology v2's (module docstring); return the rows
    written and the seconds."""
    from django.db import transaction
    from django.utils import timezone

    from agents.models import BenchmarkModel
    from arena.models import Cohort, Decision, DecisionRun, PanelForecast, SnapshotMarket, Trade
    from arena.services.frozen import run_panel

    clock = time.perf_counter()
    rng = random.Random(seed)
    now = timezone.now()
    llms = list(
        BenchmarkModel.objects.filter(active=True, kind=BenchmarkModel.Kind.LLM).order_by(
            "display_order"
        )
    )
    skill = {m.pk: (SKILL[i % len(SKILL)], NOISE[i % len(NOISE)]) for i, m in enumerate(llms)}
    written = 0
    with transaction.atomic():
        Cohort.objects.update(methodology_version="v2")
        Decision.objects.update(prompt_version="v3")
        SnapshotMarket.objects.update(liquidity=LIQUID)
        asked: set[str] = set()
        for run in DecisionRun.objects.order_by("week_start"):
            frozen = list(SnapshotMarket.objects.filter(run=run).select_related("market"))
            run.panel_seed, run.panel = run_panel(run.week_start, frozen, asked_before=asked)
            run.save(update_fields=["panel_seed", "panel"])
            asked.update(run.panel)
            questions = [row for row in frozen if row.polymarket_id in set(run.panel)]
            decisions = Decision.objects.filter(run=run).values_list(
                "pk", "agent_id", "agent__model_id", "agent__model__internal_id"
            )
            rows = []
            for decision_id, agent_id, model_id, internal_id in decisions:
                for position, row in enumerate(questions):
                    rows.append(
                        _forecast(row, rng, now=now, skill=skill.get(model_id), kind=internal_id)
                        | {"decision_id": decision_id, "agent_id": agent_id, "run_id": run.pk,
                           "week_start": run.week_start, "position": position}
                    )  # fmt: skip
            PanelForecast.objects.bulk_create(
                [PanelForecast(**row) for row in rows], batch_size=2000
            )
            written += len(rows)
        stated = []
        for trade in Trade.objects.filter(implied_confidence__isnull=False).only(
            "pk", "implied_confidence"
        ):
            trade.stated_probability = _stated(float(trade.implied_confidence or 0))
            stated.append(trade)
        Trade.objects.bulk_update(stated, ["stated_probability"], batch_size=2000)
    return {"forecasts": written, "bets": len(stated), "seconds": time.perf_counter() - clock}


def _forecast(
    row: Any, rng: random.Random, *, now: Any, skill: tuple[float, float] | None, kind: str
) -> dict[str, Any]:
    """One agent's answer to one panel question, scored when its market has resolved."""
    from scoring.panel import log_score

    market = row.market
    b = Decimal(str(row.outcome_prices[0]))
    resolved = market.resolution == "resolved"
    x = (1 if market.winning_outcome == market.outcomes[0] else 0) if resolved else None
    probability: Decimal | None
    if kind == "baseline-market":
        probability = _stated(float(b))
    elif kind == "baseline-random":
        probability = _stated(rng.uniform(0.0, 1.0))
    elif rng.random() < MISSING:
        probability = None
    else:
        lean, sigma = skill or (0.0, 0.1)
        target = 0.5 if x is None else x
        probability = _stated(float(b) + lean * (target - float(b)) + rng.gauss(0, sigma))
    fields: dict[str, Any] = {
        "market_id": market.pk,
        "probability": probability,
        "problem": "" if probability is not None else "no forecast for this question",
        "reference_price": b,
        "reference": "snapshot",
        "created_at": now,
    }
    if market.resolution in ("resolved", "cancelled"):
        fields["scored_at"] = now
    if x is not None:
        p = float(probability if probability is not None else b)
        fields |= {
            "outcome": x,
            "brier_score": (p - x) ** 2,
            "log_score": log_score(forecast=p, outcome=x),
        }
    return fields


def has_panel() -> bool:
    from arena.models import PanelForecast

    return PanelForecast.objects.exists()


def _timed(call: Callable[[], Any], runs: int) -> dict[str, Any]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    call()  # warm-up: imports, the ORM's compiled queries, the database's pages
    times = []
    for _ in range(runs):
        clock = time.perf_counter()
        call()
        times.append((time.perf_counter() - clock) * 1000)
    with CaptureQueriesContext(connection) as captured:
        result = call()
    return {
        "best": min(times),
        "median": statistics.median(times),
        "worst": max(times),
        "queries": len(captured.captured_queries),
        "db_ms": sum(float(q["time"]) for q in captured.captured_queries) * 1000,
        "result": result,
    }


def run(
    *, weeks: int, runs: int, regenerate: bool = False, catalogue: int = analytics.CATALOGUE
) -> list[str]:
    """On the database Django is set up with (migrated): write the year and its panel unless
    they are there, then measure and print; return what missed its budget."""
    from agents.models import BenchmarkModel
    from arena.models import Agent, PanelForecast
    from arena.selectors import standings
    from arena.selectors.panel import model_say_do, panel_board

    if regenerate or not analytics.has_year(weeks) or not has_panel():
        year.clear()
        print(f"writing {weeks} weeks of data …", flush=True)
        generated = analytics.generate(weeks=weeks, catalogue=catalogue)
        added = add_panel()
        print(
            f"generated in {generated['seconds']} s, the panel in {added['seconds']:.1f} s "
            f"({added['forecasts']:,} forecasts, {added['bets']:,} bets with a stated probability)"
        )
    else:
        print("data reused (--regenerate writes it again)")
    print("Methodology v2's panel figures, in-process, on a generated year")
    for line in year.facts():
        print(line)
    scored = PanelForecast.objects.filter(brier_score__isnull=False).count()
    print(f"data: {PanelForecast.objects.count():,} panel forecasts, {scored:,} scored")
    print(f"budget: median < {BUDGET_MS:.0f} ms per call")
    print()
    over: list[str] = []

    def report(label: str, figures: dict[str, Any], what: str) -> None:
        flag = "  OVER" if figures["median"] >= BUDGET_MS else ""
        print(
            f"{label:<44} best {figures['best']:.0f} ms, median {figures['median']:.0f} ms, "
            f"worst {figures['worst']:.0f} ms ({runs} runs); {figures['queries']} queries "
            f"({figures['db_ms']:.0f} ms in the database); {what}{flag}",
            flush=True,
        )
        if flag:
            over.append(f"{label} median {figures['median']:.0f} ms >= {BUDGET_MS:.0f} ms")

    board = _timed(panel_board, runs)
    result = board["result"]
    report(
        "panel_board()",
        board,
        f"{result.questions:,} resolved questions, {len(result.llms)} LLM rows, "
        f"{len(result.comparisons)} pairs",
    )
    for model in BenchmarkModel.objects.filter(active=True).order_by("-kind", "display_order"):
        offline = standings.offline_agent_ids(
            Agent.objects.filter(model=model).values_list("pk", flat=True)
        )
        figures = _timed(functools.partial(model_say_do, model=model, offline=offline), runs)
        rows = figures["result"]
        bets = sum(r.say_do.bets for r in rows if r.say_do is not None)
        report(f"model_say_do({model.internal_id})", figures, f"{bets:,} stated bets")
    return over


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default=DEFAULT_URL, help="sqlite:///… or postgres://…")
    parser.add_argument("--weeks", type=int, default=52, help="weekly cohorts (52: a year)")
    parser.add_argument("--runs", type=int, default=7, help="timed runs per call")
    parser.add_argument("--regenerate", action="store_true", help="write the year again")
    parser.add_argument("--drop", action="store_true", help="drop the PostgreSQL database after")
    args = parser.parse_args()
    postgres = analytics.database_ready(args.database, regenerate=args.regenerate)
    from django.db import connection

    over = run(weeks=args.weeks, runs=args.runs, regenerate=args.regenerate)
    connection.close()
    print(f"load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.drop and postgres:
        year._drop_postgres_database(args.database)
    print()
    for line in over:
        print(f"OVER BUDGET: {line}")
    if over:
        sys.exit(1)
    print(f"panel figures: median under {BUDGET_MS:.0f} ms for every call measured")


if __name__ == "__main__":
    main()
