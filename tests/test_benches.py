"""Every benchmark script in bench/ at a tiny size, so that none rots unnoticed.

Each test calls the script's own generation and measuring functions in-process, on the test
database pytest-django migrated (the scripts' `main`s migrate a database of their own and
spawn a process per database around the same functions), and checks what they report: the
rows they wrote are the ones asked for, every page and endpoint answers, every figure they
print is a number. Timings are not judged here: the budgets are for the full sizes.
"""

from __future__ import annotations

import gc
import json
import re
import sys
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import time_machine
from django.apps import apps
from django.db import connection
from django.urls import reverse

BENCH = Path(__file__).resolve().parent.parent / "bench"
if str(BENCH) not in sys.path:
    sys.path.append(str(BENCH))  # the scripts import each other by their own names

import analytics  # noqa: E402
import api  # noqa: E402
import decision_run  # noqa: E402
import harness  # noqa: E402
import pages  # noqa: E402
import panel  # noqa: E402
import prompt_size  # noqa: E402
import run_cost  # noqa: E402
import snapshot_tick  # noqa: E402
import sync_markets  # noqa: E402
import year  # noqa: E402
import year_measure  # noqa: E402

# The generated years end "now": a Monday noon makes a week of cohorts a day and a half of
# ten-minute snapshots, the same size whatever day the suite runs.
MONDAY = datetime(2026, 3, 9, 12, 0, tzinfo=UTC)
NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
ONE_RANGE = ("1W",)  # the chart pages at one range: every page kind, a fraction of the requests


@pytest.fixture(autouse=True)
def _unfreeze() -> Iterator[None]:
    """The page, API and export benches freeze the process's objects out of the collector's
    view, as a server does once loaded; the test process takes them back, then sets apart
    again what it holds (tests/conftest.py froze its collected modules: one unfreeze thaws
    all). A bench that never froze leaves nothing to take back."""
    froze: list[bool] = []
    freeze = gc.freeze

    def freezing() -> None:
        froze.append(True)
        freeze()

    gc.freeze = freezing
    try:
        yield
    finally:
        gc.freeze = freeze
    if froze:
        gc.unfreeze()
        gc.collect()
        gc.freeze()


@pytest.fixture
def small_lineup() -> int:
    """Two of the lineup's LLMs left active with both baselines (every kind of agent the
    generators write, a fraction of the rows and requests); return the active count."""
    from agents.models import BenchmarkModel

    llms = BenchmarkModel.objects.filter(kind=BenchmarkModel.Kind.LLM).order_by("display_order")
    BenchmarkModel.objects.filter(pk__in=list(llms.values_list("pk", flat=True)[2:])).update(
        active=False
    )
    return BenchmarkModel.objects.filter(active=True).count()


@pytest.fixture
def _snapshot_cache() -> Iterator[None]:
    """The frozen markets each process keeps per run id: the tests roll their runs back, and
    SQLite hands the next run the same id."""
    from arena.services import frozen

    frozen._FROZEN_CACHE.clear()
    yield
    frozen._FROZEN_CACHE.clear()


def rows_under(output: str, header: str) -> list[str]:
    """The lines printed under the column header that starts with `header` (and its rule, if
    it has one), up to the first blank line."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header)) + 1
    if set(lines[start]) == {"-"}:
        start += 1
    rows = []
    for line in lines[start:]:
        if not line.strip():
            break
        rows.append(line)
    return rows


def figures_of(row: str, label_width: int = 44) -> list[float]:
    """The numbers of a table row, after its label column."""
    return [float(n.replace(",", "")) for n in NUMBER.findall(row[label_width:])]


def export_in_process(since: date) -> dict[str, Any]:
    """`api.export_child` in this process. It closes the streamed response once more, as a
    server would, which finishes the request: the connection is then closed, as any request
    closes one left outside autocommit, and the test's transaction with it."""
    with mock.patch.object(connection, "close_if_unusable_or_obsolete", return_value=None):
        figures: dict[str, Any] = api.export_child(since)
    return figures


def arena_tables() -> dict[str, Any]:
    """Every model whose table the generators write and `pages.clear` empties, by table."""
    return {
        model._meta.db_table: model
        for label in ("arena", "markets")
        for model in apps.get_app_config(label).get_models()
        if not model._meta.proxy
    }


# --- no database ----------------------------------------------------------------------------


@pytest.mark.drill
def test_harness_runs_a_child_on_its_database_and_reads_its_last_line(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(
        "import json, os, sys\n"
        "print('a line before the figures')\n"
        "print(json.dumps({'url': os.environ['DATABASE_URL'], 'args': sys.argv[1:]}))\n"
    )
    figures = harness.run_child(str(script), "sqlite:///bench.sqlite3", "--child", "3")
    assert figures == {"url": "sqlite:///bench.sqlite3", "args": ["--child", "3"]}

    script.write_text("raise SystemExit(4)\n")
    with pytest.raises(SystemExit, match="exit 4"):
        harness.run_child(str(script), "sqlite:///bench.sqlite3")


def test_prompt_size_prints_the_prompt_of_the_recorded_markets(
    capsys: pytest.CaptureFixture[str],
) -> None:
    prompt_size.main()
    printed = dict(
        line.split(":", 1) for line in capsys.readouterr().out.splitlines() if ":" in line
    )
    figure = {k.strip(): v.split()[0] for k, v in printed.items() if NUMBER.match(v.strip())}
    assert int(figure["markets"]) == 500
    system = int(figure["system prompt chars"].replace(",", ""))
    user = int(figure["user prompt chars"].replace(",", ""))
    section = int(figure["market section chars"].replace(",", ""))
    assert 0 < section < user
    assert int(figure["total chars (system + user)"].replace(",", "")) == system + user
    assert float(figure["chars per market"]) == pytest.approx(section / 500, abs=0.05)


def test_run_cost_prices_a_run_with_and_without_the_cache(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", ["run_cost.py", "--cohorts", "2"])
    run_cost.main()
    output = capsys.readouterr().out
    lineup = run_cost.lineup()
    assert f"run of 2 cohorts x {len(lineup)} LLM agents = {2 * len(lineup)} calls" in output
    rows = [row for row in rows_under(output, "model ") if "|" in row]
    by_model = {row.split("|")[0].strip(): row for row in rows}
    assert set(by_model) == {model for _, model in lineup} | {"total"}
    for row in rows:
        uncached, cached = (float(cell) for cell in row.split("|")[3:5])
        assert 0 <= cached <= uncached
    assert float(by_model["total"].split("|")[4]) > 0
    added = re.search(r"methodology v2 adds ~([\d,]+) completion tokens a call", output)
    assert added is not None, output
    assert int(added.group(1).replace(",", "")) > 0  # the panel's forecasts, at least


# --- on the test database ---------------------------------------------------------------------


@pytest.mark.django_db
def test_sync_markets_measures_every_step(capsys: pytest.CaptureFixture[str]) -> None:
    from markets.models import Market

    figures = sync_markets.measure_database(1, limit=40)
    assert figures["records"] == 40
    assert figures["parsed"] + figures["rejected"] == 40
    assert 0 < figures["synced"] <= 40
    assert Market.objects.count() == figures["synced"]
    for key, _ in sync_markets.ROWS:
        assert figures[key]["median"] >= 0
        if key not in ("load", "parse"):
            assert figures[key]["queries"] > 0, key
    sync_markets.print_table([("SQLite", json.loads(json.dumps(figures)))], 1)
    output = capsys.readouterr().out
    for _, label in sync_markets.ROWS:
        assert NUMBER.search(next(line for line in output.splitlines() if line.startswith(label)))


@pytest.mark.django_db
@pytest.mark.usefixtures("_snapshot_cache")
def test_decision_run_measures_each_responder_and_position_count(
    settings: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # Set here so that whatever the bench sets on top is undone after the test. The top 80
    # markets by volume hold the 5 tradable ones the bench bets on and holds.
    settings.MARKET_UNIVERSE_SIZE = 80
    settings.OPENROUTER_API_KEY = ""
    settings.OPENROUTER_BASE_URL = "http://127.0.0.1:9"

    figures = json.loads(
        json.dumps(decision_run.measure_database(position_counts=(0, 2), agents_per_case=1))
    )
    assert [(r["responder"], r["positions"]) for r in figures["rows"]] == [
        ("offline", 0),
        ("offline", 2),
        ("openrouter", 0),
        ("openrouter", 2),
    ]
    for row in figures["rows"]:
        (agent,) = row["agents"]
        assert agent["s"] > 0
        assert agent["q"] > 0
        assert agent["open"] >= row["positions"]
        if row["responder"] == "openrouter":
            assert agent["executed"] == decision_run.BET_MARKETS
    assert figures["openrouter_requests"] == 2
    assert [step["q"] > 0 for step in figures["prepare"]] == [True, True, True]
    assert figures["universe"] == 80
    decision_run.print_database("SQLite", figures)
    assert "slowest agent:" in capsys.readouterr().out


@pytest.mark.django_db
@pytest.mark.usefixtures("small_lineup")
def test_snapshot_tick_measures_the_tick_and_the_reads(
    settings: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from agents.models import BenchmarkModel
    from arena.models import AgentSnapshotRollup

    settings.MARKET_SOURCE = "demo"  # the bench points them at its Gamma stand-in
    settings.POLYMARKET_GAMMA_URL = "http://127.0.0.1:9"
    slots = 2 * 24 * 6  # two days of ten-minute slots
    llms = BenchmarkModel.objects.filter(active=True, kind=BenchmarkModel.Kind.LLM).count()

    figures = snapshot_tick.measure_database(
        1, cohorts=2, positions_per_agent=3, catalogue=20, scales=(1, 2), year_slots=slots
    )
    assert figures["data"]["agents"] == 2 * llms
    assert figures["data"]["positions"] == 2 * llms * 3
    assert [(s["cohorts"], s["agents"]) for s in figures["scales"]] == [(1, llms), (2, 2 * llms)]
    for scale in figures["scales"]:
        assert scale["refreshed"] > 0
        for part in ("full", "write", "reference", "statement"):
            assert scale[part]["queries"] > 0
    # The year's slots and the 8 ticks above: 2 scales x (whole tick, write only) x 2 runs.
    assert figures["year"]["rows_agent"] == slots + 8
    rolled = AgentSnapshotRollup.objects.filter(agent__cohort__number=1).count()
    assert figures["year"]["rollup_rows"] == rolled > 0
    assert set(figures["year"]["rollup_equals_snapshots"].values()) == {True}
    assert figures["year"]["reads"]["raw"]["result"] == slots
    parts = figures["refresh_parts"]  # the same records write nothing; moved prices do
    assert parts["upsert_moved"]["queries"] > parts["upsert"]["queries"]
    snapshot_tick.print_database("SQLite", json.loads(json.dumps(figures, default=str)), 1)
    out = capsys.readouterr().out
    assert "cohort chart over a year:" in out
    assert "whole tick (refresh and write)" in out


@pytest.mark.django_db
@pytest.mark.slow(reason="writes a week of the generated year, then 28 page requests: 1-2 s")
def test_pages_writes_a_week_serves_every_page_and_clears_every_table(
    capsys: pytest.CaptureFixture[str], small_lineup: int
) -> None:
    from agents.models import BenchmarkModel
    from arena.models import Agent, AgentSnapshotRollup, Cohort, PortfolioSnapshot
    from markets.models import Market

    lineup = BenchmarkModel.objects.count()
    with time_machine.travel(MONDAY, tick=True):
        over, failed = pages.run(
            weeks=1, requests=1, regenerate=True, catalogue=100, warmups=0, ranges=ONE_RANGE
        )
        every_page = pages.pages()
    output = capsys.readouterr().out
    assert failed == []
    assert (Cohort.objects.count(), Agent.objects.count()) == (1, small_lineup)
    assert Market.objects.count() == 100
    # A snapshot a slot from Sunday 00:00 to Monday 12:00, both included, for every agent.
    assert PortfolioSnapshot.objects.count() == small_lineup * (6 * 36 + 1)
    assert AgentSnapshotRollup.objects.exists()
    rows = rows_under(output, "page ")
    assert len(rows) == len(pages.pages(ONE_RANGE)) == 14
    for row in rows:
        # p50 … KB rendered, then p50, p95 and queries served: a number each, none "not built yet"
        assert len(figures_of(row)) == 10, row
    assert len(every_page) == 14 + 3 * (len(pages.RANGES) - 1)
    for page in every_page:  # at every range, each page's URL still resolves
        reverse(page.name, args=page.args)
    assert list(dict.fromkeys(result.page.label for result, _ in over)) == [
        row.split("  ")[0] for row in rows if row.endswith("OVER")
    ]

    # Cleared as a fresh database would be: committed rows, foreign keys checked first.
    connection.check_constraints()
    pages.clear()
    connection.check_constraints()
    for table, model in arena_tables().items():
        assert not model.objects.exists(), table
    assert BenchmarkModel.objects.count() == lineup


@pytest.mark.django_db
@pytest.mark.slow(reason="writes a week of the generated year, then 22 API requests: ~1 s")
@pytest.mark.usefixtures("small_lineup")
def test_api_measures_every_endpoint_and_the_export(capsys: pytest.CaptureFixture[str]) -> None:
    from arena.models import AgentSnapshotRollup

    exported: list[dict[str, Any]] = []

    def export(since: date) -> dict[str, Any]:
        exported.append(export_in_process(since))
        return exported[-1]

    with time_machine.travel(MONDAY, tick=True):
        failures = api.run(
            requests=1,
            export_rows=100,
            export=export,
            regenerate=True,
            weeks=1,
            catalogue=100,
            warmups=0,
        )
    output = capsys.readouterr().out
    # Only the budgets may be missed at this size (a tiny export has a slow first row).
    assert [f for f in failures if "HTTP" in f or "expected" in f or "error" in f] == []
    rows = rows_under(output, "endpoint ")
    assert len(rows) == 11
    for row in rows:
        assert len(figures_of(row)) >= 7, row
    (figures,) = exported
    assert figures["how"].startswith("GET ")
    assert figures["rows"] >= 100

    # The long agent carried on to the last slot, scored, its rollup with it.
    agent = api.long_agent()
    kept = agent.snapshots.order_by("snapshot_timestamp")[:100]
    cut = list(kept)[-1].snapshot_timestamp
    removed, _ = agent.snapshots.filter(snapshot_timestamp__gt=cut).delete()
    assert api.extend_long_agent() == removed
    last = agent.snapshots.order_by("-snapshot_timestamp").first()
    assert last is not None
    assert last.brier_score is not None
    rolled = AgentSnapshotRollup.objects.filter(agent=agent).order_by("-last_at").first()
    assert rolled is not None
    assert rolled.last_at == last.snapshot_timestamp


@pytest.mark.django_db
def test_analytics_measures_the_scored_bets_of_two_weeks(
    capsys: pytest.CaptureFixture[str], small_lineup: int
) -> None:
    with time_machine.travel(MONDAY + timedelta(days=2), tick=True):
        analytics.run(weeks=2, runs=1, rss=analytics.rss_growth, regenerate=True, catalogue=400)
    output = capsys.readouterr().out
    counts = analytics.data_counts()
    assert (counts["cohorts"], counts["agents"]) == (2, 2 * small_lineup)
    assert counts["scored bets"] > 0
    assert 0 < counts["frozen markets"] <= 2 * analytics.UNIVERSE
    lines = output.splitlines()
    computed = [line for line in lines if line.startswith("compute_analytics(")]
    # Each scope after a move (the completed cohorts' bets kept) and from nothing.
    assert len(computed) == 2 * len(analytics.SCOPES)
    assert len([line for line in computed if "after a move" in line]) == len(analytics.SCOPES)
    for line in computed:
        assert "? (not measured)" not in line
        # best, median, worst, runs, queries, database time (and from nothing, the RSS)
        assert len(NUMBER.findall(line.split(")", 1)[1])) >= 6, line
    models = lines[lines.index("model_analytics(model=…), cold / warm:") + 1 :]
    assert len([line for line in models if line.startswith("  ")]) == small_lineup


@pytest.mark.django_db
def test_panel_forecasts_every_runs_panel_and_measures_the_v2_figures(
    capsys: pytest.CaptureFixture[str], small_lineup: int
) -> None:
    from arena.models import Cohort, Decision, DecisionRun, PanelForecast, Trade

    with time_machine.travel(MONDAY + timedelta(days=2), tick=True):
        panel.run(weeks=3, runs=1, regenerate=True, catalogue=400)
    output = capsys.readouterr().out
    assert set(Cohort.objects.values_list("methodology_version", flat=True)) == {"v2"}
    for run in DecisionRun.objects.all():
        assert run.panel, "every week's run picked its panel by the real rule"
        decisions = Decision.objects.filter(run=run).count()
        assert PanelForecast.objects.filter(run=run).count() == decisions * len(run.panel)
    scored = PanelForecast.objects.filter(brier_score__isnull=False)
    assert scored.exists()
    for row in scored[:50]:
        p = row.probability if row.probability is not None else row.reference_price
        assert p is not None
        assert row.brier_score == pytest.approx((float(p) - (row.outcome or 0)) ** 2)
    bets = Trade.objects.filter(implied_confidence__isnull=False)
    assert not bets.filter(stated_probability__isnull=True).exists()
    lines = output.splitlines()
    board = [line for line in lines if line.startswith("panel_board()")]
    assert len(board) == 1
    assert len(NUMBER.findall(board[0].split(")", 1)[1])) >= 8, board[0]
    assert len([line for line in lines if line.startswith("model_say_do(")]) == small_lineup


@pytest.mark.django_db
@pytest.mark.slow(reason="decisions and ticks through the services, then 4 benches: 1-1.5 s")
@pytest.mark.usefixtures("_snapshot_cache")
def test_year_writes_through_the_services_resumes_and_measures(
    settings: Any, capsys: pytest.CaptureFixture[str], small_lineup: int
) -> None:
    from arena.models import Decision, PortfolioSnapshot, SnapshotTick

    settings.MARKET_UNIVERSE_SIZE = 40
    settings.OPENROUTER_API_KEY = ""
    active = small_lineup
    with time_machine.travel(MONDAY, tick=True):
        year.write(1, season_weeks=year.SEASON_WEEKS, ticks=6)
        assert "generated in" in capsys.readouterr().out
        year.generate(1, ticks=3)
        assert "resuming after the last tick written" in capsys.readouterr().out
        slots = list(SnapshotTick.objects.order_by("slot").values_list("slot", flat=True))
        assert len(slots) == 9
        assert {b - a for a, b in zip(slots, slots[1:], strict=False)} == {year.TICK}
        assert Decision.objects.count() == active
        assert PortfolioSnapshot.objects.count() == 9 * active

        # year_measure's benches on it; of the pages, the one it picks its own way.
        failures = year_measure.run_pages(1, warmups=0, ranges=ONE_RANGE, only="decision")
        assert [f for f in failures if "HTTP" in f] == []
        (row,) = rows_under(capsys.readouterr().out, "page ")
        assert row.startswith("decision ")
        assert len(figures_of(row)) == 7, row
        failures = year_measure.run_api(1, 10, export_in_process, warmups=0)
        assert [f for f in failures if "HTTP" in f or "expected" in f] == []
        assert len(rows_under(capsys.readouterr().out, "endpoint ")) == 11
        year_measure.run_analytics(1, lambda scope: None)  # a fresh process each: not here
        computed = [
            line
            for line in capsys.readouterr().out.splitlines()
            if line.startswith("compute_analytics(")
        ]
        assert len(computed) == 2 * len(analytics.SCOPES)
        ticks = year_measure.run_tick(2, year.SEASON_WEEKS)
    assert [t["written"] for t in ticks] == [active, active]
    assert ticks[0]["slot"] == slots[-1] + year.TICK
