"""Methodology v2 (docs/methodology.md): every answer states its probabilities, on each bet and
on each question of the week's forecast panel, and each panel forecast is stored with the
reference price b it is scored against, then scored by proper rules when its market resolves.
A v1 cohort runs on by v1's rules."""

from __future__ import annotations

import csv
import io
import json
import math
from datetime import timedelta
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents.models import BenchmarkModel
from agents.types import PanelForecast as StatedForecast
from arena.models import (
    Cohort,
    Decision,
    DecisionRun,
    PanelForecast,
    SnapshotMarket,
    Trade,
)
from arena.selectors.panel import PanelComparison, model_say_do, panel_board
from arena.selectors.releases import cohorts_final
from arena.services.cohorts import cohort_start
from arena.services.decisions.run import RunReport, decision_run, decisions_run_all
from arena.services.forecasts import NO_VALID_ANSWER, forecasts_write, questions_asked
from arena.services.frozen import FrozenMarkets, run_prepare
from arena.services.settlement import market_settle, markets_to_check
from arena.views.headline import panel_says
from markets.resolution import Verdict
from markets.sources import RecordedSource
from scoring.statistics import Interval
from tests.arena.conftest import COHORT_AT, RUN_AT, WEEK
from tests.replay import OPENROUTER_RECORDINGS, ReplayServer, Reply

pytestmark = pytest.mark.django_db

COMPLETIONS = "/chat/completions"
OK_RECORDING = OPENROUTER_RECORDINGS / "chat_completion_ok_json_content_with_reasoning.json"


@pytest.fixture
def v2(settings: Any) -> None:
    settings.METHODOLOGY_VERSION = "v2"
    settings.MARKET_UNIVERSE_SIZE = 100


@pytest.fixture
def cohort(v2: None) -> Cohort:
    cohort, created = cohort_start(week_start=WEEK, now=COHORT_AT)
    assert created
    return cohort


@pytest.fixture
def run(cohort: Cohort) -> DecisionRun:
    return run_prepare(now=RUN_AT, source=RecordedSource())


def completion(content: str) -> Reply:
    """The project's real recorded OpenRouter completion with only its content replaced."""
    body = json.loads(OK_RECORDING.read_text())
    body["choices"][0]["message"]["content"] = content
    return Reply.json(body)


def run_of(report: RunReport) -> DecisionRun:
    assert report.run_id is not None, report.summary()
    return DecisionRun.objects.get(pk=report.run_id)


def csv_rows(response: Any) -> list[dict[str, str]]:
    assert response.status_code == 200
    body = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(body)))


def yes_price(run: DecisionRun, market_id: str) -> Decimal:
    row = SnapshotMarket.objects.get(run=run, polymarket_id=market_id)
    return Decimal(str(row.outcome_prices[0]))


def test_new_cohorts_take_the_methodology_the_setting_names(settings: Any) -> None:
    settings.METHODOLOGY_VERSION = "v2"
    assert cohort_start(week_start=WEEK, now=COHORT_AT)[0].methodology_version == "v2"


def test_a_v2_week_asks_every_agent_the_panel_and_keeps_each_forecast_with_its_b(
    cohort: Cohort,
) -> None:
    run = run_of(decisions_run_all(now=RUN_AT, source=RecordedSource()))
    assert len(run.panel) >= 5
    decisions = list(Decision.objects.filter(cohort=cohort).select_related("agent__model"))
    assert decisions
    assert all(d.status == Decision.Status.DONE for d in decisions)
    for decision in decisions:
        assert decision.prompt_version == "v3"
        assert "Methodology version: v2" in decision.system_prompt
        panel_part = decision.user_prompt.split("FORECAST PANEL")[1].split("DECISION")[0]
        assert [line.split("|")[0] for line in panel_part.splitlines()[3:] if line] == run.panel
        rows = list(PanelForecast.objects.filter(decision=decision).order_by("position"))
        assert [r.market.polymarket_id for r in rows] == run.panel, decision.agent
        for row in rows:
            assert row.reference == PanelForecast.Reference.SNAPSHOT
            assert row.reference_price == yes_price(run, row.market.polymarket_id)
            assert row.run_id == run.pk
            assert row.week_start == WEEK
    follower = PanelForecast.objects.filter(decision__agent__model__internal_id="baseline-market")
    for row in follower:  # the market follower states the market's price
        assert row.probability is not None
        assert row.reference_price is not None
        assert abs(row.probability - row.reference_price) <= Decimal("0.0005")
    bets = Trade.objects.filter(decision__cohort=cohort, kind=Trade.Kind.BUY)
    assert bets.exists()
    assert not bets.filter(stated_probability__isnull=True).exists()


def test_every_run_of_the_week_asks_the_same_panel_at_its_own_prices(
    run: DecisionRun, settings: Any
) -> None:
    settings.MARKET_UNIVERSE_SIZE = 5  # the retry's top markets no longer hold the panel
    again = run_prepare(now=RUN_AT, source=RecordedSource())
    assert (again.panel_seed, again.panel) == (run.panel_seed, run.panel)
    frozen = FrozenMarkets.load(again)
    assert [view.market_id for view in frozen.panel] == run.panel
    assert len(frozen.universe) == 5


def bet_and_forecasts(
    market_id: str, panel: list[str], *, probability: object = 0.61, forecasts: int | None = None
) -> str:
    bet: dict[str, object] = {"market_id": market_id, "side": "YES", "amount": 300}
    if probability is not None:
        bet["probability"] = probability
    stated = [{"market_id": pid, "probability": 0.3} for pid in panel[:forecasts]]
    return json.dumps(
        {"action": "BET", "bets": [bet], "forecasts": stated, "reasoning": "Priced too low."}
    )


def test_an_answer_missing_forecasts_trades_and_records_each_missing_question(
    run: DecisionRun, cohort: Cohort, openrouter_server: ReplayServer
) -> None:
    market_id = run.panel[0]
    openrouter_server.route(
        "POST", COMPLETIONS, completion(bet_and_forecasts(market_id, run.panel, forecasts=2))
    )
    agent = cohort.agents.get(model__internal_id="gpt-5.1")

    decision_run(agent_id=agent.pk, run_id=run.pk, now=RUN_AT)

    trade = Trade.objects.get(decision__agent=agent)
    assert trade.status == Trade.Status.EXECUTED
    assert trade.stated_probability == Decimal("0.61")
    rows = list(PanelForecast.objects.filter(agent=agent).order_by("position"))
    assert [r.probability for r in rows[:2]] == [Decimal("0.3"), Decimal("0.3")]
    assert all(r.probability is None and r.problem == "missing" for r in rows[2:])
    assert len(rows) == len(run.panel)


@pytest.mark.parametrize("probability", [None, "0.7", 1, 0, 1.5])
def test_a_bet_without_a_valid_probability_is_asked_again_then_held_with_every_question_imputed(
    run: DecisionRun,
    cohort: Cohort,
    openrouter_server: ReplayServer,
    settings: Any,
    probability: object,
) -> None:
    settings.DECISION_PARSE_RETRIES = 1
    body = bet_and_forecasts(run.panel[0], run.panel, probability=probability)
    openrouter_server.route("POST", COMPLETIONS, completion(body))
    agent = cohort.agents.get(model__internal_id="gpt-5.1")

    decision_run(agent_id=agent.pk, run_id=run.pk, now=RUN_AT)

    decision = Decision.objects.get(agent=agent)
    assert decision.parse_failed
    assert decision.action == Decision.Action.HOLD
    retry = openrouter_server.requests_to(COMPLETIONS)[1].json()["messages"][-1]["content"]
    assert "probability" in retry
    assert "YOUR PREVIOUS RESPONSE WAS INVALID" in retry
    assert not Trade.objects.filter(decision=decision).exists()
    rows = PanelForecast.objects.filter(decision=decision)
    assert rows.count() == len(run.panel)
    assert {(r.probability, r.problem) for r in rows} == {(None, NO_VALID_ANSWER)}


def test_panel_forecasts_are_scored_when_their_market_resolves_and_hold_the_release_back(
    cohort: Cohort,
) -> None:
    run = run_of(decisions_run_all(now=RUN_AT, source=RecordedSource()))
    question = run.panel[0]
    assert question in markets_to_check()  # though maybe nobody bet on it
    Cohort.objects.filter(pk=cohort.pk).update(status=Cohort.Status.COMPLETED, completed_at=RUN_AT)
    assert not cohorts_final().filter(pk=cohort.pk).exists()

    assert market_settle(
        polymarket_id=question, verdict=Verdict("resolved", "Yes", 0, "resolved YES")
    )

    rows = list(PanelForecast.objects.filter(market__polymarket_id=question))
    assert len(rows) == cohort.agents.count()
    for row in rows:
        stated = row.probability if row.probability is not None else row.reference_price
        assert stated is not None
        p = float(stated)
        assert row.outcome == 1
        assert row.scored_at is not None
        assert row.brier_score == pytest.approx((p - 1) ** 2)
        assert row.log_score == pytest.approx(-math.log(p))


def test_the_forecasts_export_recomputes_each_models_panel_brier(
    cohort: Cohort, client: Client
) -> None:
    run = run_of(decisions_run_all(now=RUN_AT, source=RecordedSource()))
    for question in run.panel[:3]:
        market_settle(polymarket_id=question, verdict=Verdict("resolved", "No", 1, "resolved NO"))

    rows = csv_rows(client.get("/api/v1/exports/forecasts.csv"))

    assert len(rows) == PanelForecast.objects.count()
    scored = [r for r in rows if r["brier"]]
    assert len(scored) == 3 * cohort.agents.count()
    for row in scored:
        p = float(row["probability"] or row["b"])
        assert row["imputed"] == ("true" if not row["probability"] else "false")
        assert float(row["brier"]) == pytest.approx((p - int(row["outcome"])) ** 2)


def test_the_decision_and_market_pages_show_the_stated_probabilities(
    cohort: Cohort, client: Client
) -> None:
    run = run_of(decisions_run_all(now=RUN_AT, source=RecordedSource()))
    decision = Decision.objects.get(
        agent__cohort=cohort, agent__model__internal_id="baseline-market"
    )

    market_settle(polymarket_id=run.panel[0], verdict=Verdict("resolved", "Yes", 0, "recorded"))
    page = client.get(reverse("arena:decision", args=[decision.pk])).content.decode()
    market = client.get(reverse("arena:market", args=[run.panel[0]])).content.decode()
    model = client.get(reverse("arena:model", args=["gpt-5.1"])).content.decode()

    assert 'id="panel-forecasts"' in page
    assert page.count("<tr><td>") >= len(run.panel)
    assert 'id="model-forecasts"' in market
    assert "Market follower" in market or "baseline-market" in market
    assert 'id="say-and-do"' in model
    assert "over 1 resolved question" in model  # its panel Brier, from the one resolved
    assert "Bets with a stated probability" in model
    say_do = model[model.index('id="say-and-do"') :]
    assert say_do.count('<svg class="diagram reliability"') == 2  # the panel's and the bets'
    assert '<svg class="diagram weekly-brier"' in say_do
    assert '<svg class="diagram cumulative-alpha"' in say_do  # panel Alpha, week by week
    assert "Week of " in say_do


def test_the_market_beside_a_models_forecasts_is_read_on_the_same_forecasts(
    cohort: Cohort,
) -> None:
    run = run_of(decisions_run_all(now=RUN_AT, source=RecordedSource()))
    for index, question in enumerate(run.panel[:4]):
        winner = ("Yes", 0) if index % 2 else ("No", 1)
        market_settle(polymarket_id=question, verdict=Verdict("resolved", *winner, "recorded"))
    model = BenchmarkModel.objects.get(internal_id="gpt-5.1")

    (figures,) = model_say_do(model=model, offline=set())

    stated = PanelForecast.objects.filter(
        agent__model=model, outcome__isnull=False, probability__isnull=False
    )
    pairs = zip(figures.panel_reliability, figures.panel_market_reliability, strict=True)
    panel = [(own.count, market.count) for own, market in pairs]
    assert sum(n for n, _ in panel) == sum(n for _, n in panel) == stated.count() > 0
    market_mean = (
        sum((m.mean_forecast or 0) * m.count for m in figures.panel_market_reliability)
        / stated.count()
    )
    b = [float(row.reference_price) for row in stated if row.reference_price is not None]
    assert market_mean == pytest.approx(sum(b) / len(b))
    assert sum(b.count for b in figures.bet_reliability) == sum(
        m.count for m in figures.bet_market_reliability
    )


def test_a_v1_cohort_is_asked_and_scored_as_before(settings: Any) -> None:
    settings.METHODOLOGY_VERSION = "v1"
    cohort, _ = cohort_start(week_start=WEEK, now=COHORT_AT)
    decisions_run_all(now=RUN_AT, source=RecordedSource())
    decisions = Decision.objects.filter(cohort=cohort)
    assert {d.prompt_version for d in decisions} == {"v2"}
    assert not any("FORECAST PANEL" in d.user_prompt for d in decisions)
    assert not PanelForecast.objects.exists()
    assert not Trade.objects.filter(stated_probability__isnull=False).exists()


def test_the_panel_leaderboard_recomputes_from_the_forecasts_export(
    cohort: Cohort, client: Client
) -> None:
    run = run_of(decisions_run_all(now=RUN_AT, source=RecordedSource()))
    for index, question in enumerate(run.panel[:6]):
        winner = ("Yes", 0) if index % 2 else ("No", 1)
        market_settle(polymarket_id=question, verdict=Verdict("resolved", *winner, "recorded"))

    board = panel_board()
    rows = csv_rows(client.get("/api/v1/exports/forecasts.csv"))

    # One forecast per model and question: the mean of its agents' stated ones, else b.
    questions: dict[tuple[str, str], list[dict[str, str]]] = {}
    for row in rows:
        if row["brier"]:
            questions.setdefault((row["model"], row["market_id"]), []).append(row)
    recomputed: dict[str, list[tuple[float, float]]] = {}
    for (model, _), answers in questions.items():
        stated = [float(a["probability"]) for a in answers if a["probability"]]
        b = sum(float(a["b"]) for a in answers) / len(answers)
        p = sum(stated) / len(stated) if stated else b
        x = int(answers[0]["outcome"])
        recomputed.setdefault(model, []).append(((p - x) ** 2, (b - x) ** 2 - (p - x) ** 2))
    shown = [r for r in board.llms + board.references if r.model is not None]
    assert len(shown) == len(recomputed) == cohort.agents.count()
    for panel_row in shown:
        assert panel_row.model is not None
        figures = recomputed[panel_row.model.internal_id]
        assert panel_row.scores.questions == len(figures) == 6
        assert panel_row.brier.estimate == pytest.approx(sum(f[0] for f in figures) / 6)
        assert panel_row.alpha.estimate == pytest.approx(sum(f[1] for f in figures) / 6)
        assert panel_row.brier.low is None  # one week: too few clusters for an interval
        assert panel_row.murphy is not None
        assert panel_row.murphy.count == 6
        assert panel_row.murphy.brier == pytest.approx(panel_row.brier.estimate)
    assert any(r.label == "LLM crowd" for r in board.references)

    # Every pair of ranked LLM rows, on the same six questions, first − second per question;
    # one week of questions: too early to call any difference.
    ranked = [r for r in board.llms if r.ranked]
    assert len(board.comparisons) == len(ranked) * (len(ranked) - 1) // 2
    by_label = {r.label: recomputed[r.model.internal_id] for r in ranked if r.model is not None}
    for pair in board.comparisons:
        first, second = by_label[pair.first], by_label[pair.second]
        mean_first, mean_second = sum(f[0] for f in first) / 6, sum(f[0] for f in second) / 6
        assert pair.difference.estimate == pytest.approx(mean_first - mean_second)
        assert pair.questions == 6
        assert pair.verdict == "too early to tell"

    page = client.get("/", {"view": "panel"}).content.decode()
    assert 'id="panel-leaderboard"' in page
    assert "6 resolved questions" in page
    assert 'id="panel-comparisons"' in page

    # The default page leads with the panel's table, then the v1 table in its v1 order; one
    # week of questions: too early to call the two best apart.
    home = client.get("/").content.decode()
    assert home.index('id="headline-panel"') < home.index('id="bets-table"')
    says = home[home.index('id="what-the-panel-shows"') :]
    assert "Too early to tell" in says[: says.index("</p>")]
    # `rank` is the table's own: the ranked real rows 1, 2, …, in the order of their Brier.
    api_rows = client.get("/api/v1/forecasts/leaderboard").json()["llms"]
    real = [r for r in api_rows if r["ranked"] and not r["offline"]]
    assert [r["rank"] for r in real] == list(range(1, len(real) + 1))
    assert [r["brier"]["estimate"] for r in real] == sorted(r["brier"]["estimate"] for r in real)
    assert all(r["rank"] is None for r in api_rows if not r["ranked"])


def test_the_api_lists_forecasts_by_run_agent_and_market_and_gives_the_panel_figures(
    cohort: Cohort, client: Client
) -> None:
    run = run_of(decisions_run_all(now=RUN_AT, source=RecordedSource()))
    question = run.panel[0]
    market_settle(polymarket_id=question, verdict=Verdict("resolved", "Yes", 0, "recorded"))
    agent = cohort.agents.get(model__internal_id="baseline-market")

    by_run = client.get("/api/v1/forecasts", {"run": run.pk, "page_size": 100}).json()
    by_agent = client.get("/api/v1/forecasts", {"agent": agent.pk, "page_size": 100}).json()
    by_market = client.get("/api/v1/forecasts", {"market": question}).json()
    unknown = client.get("/api/v1/forecasts", {"market": "999999999"})
    board = client.get("/api/v1/forecasts/leaderboard").json()

    assert by_run["count"] == len(run.panel) * cohort.agents.count()
    assert [r["market_id"] for r in by_agent["results"]] == run.panel
    assert {r["market_id"] for r in by_market["results"]} == {question}
    assert all(r["outcome"] == 1 and r["brier"] is not None for r in by_market["results"])
    assert unknown.status_code == 422
    assert board["questions"] == 1
    follower = next(r for r in board["references"] if r["model"] == "baseline-market")
    assert follower["alpha"]["estimate"] == pytest.approx(0.0, abs=1e-12)  # it states b
    assert follower["coverage"] == 1.0


def test_the_leaderboard_reads_the_cohorts_of_one_methodology_when_asked(
    cohort: Cohort, client: Client
) -> None:
    decisions_run_all(now=RUN_AT, source=RecordedSource())

    v1 = client.get("/api/v1/leaderboard", {"cohorts": "v1"}).json()["rows"]
    v2 = client.get("/api/v1/leaderboard", {"cohorts": "v2"}).json()["rows"]
    page = client.get("/", {"cohorts": "v2"}).content.decode()

    assert v1
    assert all(row["cohorts"] == 0 for row in v1)  # the week's one cohort runs v2
    assert {row["cohorts"] for row in v2} == {1}
    assert "over the cohorts of methodology v2 only" in page


def test_a_later_rounds_question_already_settled_is_kept_but_never_scored_nor_waited_for(
    cohort: Cohort,
) -> None:
    run = run_of(decisions_run_all(now=RUN_AT, source=RecordedSource()))
    settled = run.panel[0]
    market_settle(polymarket_id=settled, verdict=Verdict("resolved", "Yes", 0, "early"))
    decision = Decision.objects.filter(cohort=cohort).first()
    assert decision is not None
    stated = [StatedForecast(market_id=pid, probability=Decimal("0.9")) for pid in run.panel]

    # Asked again in a later round (a retry), after the market settled: the answer may know.
    forecasts_write(
        decision=decision,
        run_id=run.pk,
        questions=questions_asked(FrozenMarkets.load(run)),
        stated=stated,
    )

    row = PanelForecast.objects.get(decision=decision, market__polymarket_id=settled)
    assert row.probability == Decimal("0.9")  # kept, as stated
    assert row.reference_price is None  # never scored
    assert row.scored_at is not None  # nothing waits for it
    assert row.brier_score is None
    assert (
        settled not in markets_to_check()
        or PanelForecast.objects.filter(market__polymarket_id=settled, scored_at__isnull=True)
        .exclude(decision=decision)
        .exists()
    )


def test_a_question_is_asked_in_one_week_only(cohort: Cohort, settings: Any) -> None:
    settings.MARKET_UNIVERSE_SIZE = 500
    first = run_prepare(now=RUN_AT, source=RecordedSource())
    next_week = run_prepare(
        now=RUN_AT + timedelta(days=7), source=RecordedSource(), week_start=WEEK + timedelta(7)
    )
    assert first.panel
    assert next_week.panel
    assert not set(first.panel) & set(next_week.panel)


def _board(comparison: PanelComparison) -> Any:
    """A panel board of two ranked real rows, A ahead of B, compared as `comparison`."""
    rows = [SimpleNamespace(label=label, ranked=True, offline=False) for label in ("A", "B")]
    return SimpleNamespace(llms=rows, comparisons=[comparison])


def _pair(*, weeks: int, holm_p: float, estimate: float, needed: float | None) -> PanelComparison:
    return PanelComparison(
        first="A",
        second="B",
        offline=False,
        questions=20 * weeks,
        weeks=weeks,
        difference=Interval(estimate, None, None, None, clusters=weeks, count=20 * weeks),
        p_value=holm_p,
        holm_p=holm_p,
        questions_needed=needed,
    )


def test_the_panel_headline_says_too_early_under_ten_weeks_however_small_the_p_value() -> None:
    verdict, more = panel_says(_board(_pair(weeks=4, holm_p=0.001, estimate=-0.05, needed=200)))

    assert verdict.startswith("Too early to tell")
    # 200 questions at 20 a week: 10 weeks in all, 6 more than the 4 so far.
    assert "about 6 more weeks" in more


def test_the_panel_headline_names_the_better_model_only_when_holm_says_so() -> None:
    shown, after = panel_says(_board(_pair(weeks=12, holm_p=0.01, estimate=0.03, needed=100)))
    not_shown, _ = panel_says(_board(_pair(weeks=12, holm_p=0.2, estimate=-0.03, needed=900)))

    assert shown.startswith("B forecast better than A")
    assert after == ""  # separated: no forecast of when they would be
    assert "not distinguishable yet" in not_shown


def test_the_panel_headline_says_a_long_time_rather_than_count_past_two_years() -> None:
    _, soon = panel_says(_board(_pair(weeks=12, holm_p=0.2, estimate=-0.03, needed=900)))
    _, late = panel_says(_board(_pair(weeks=12, holm_p=0.2, estimate=-0.001, needed=90_000)))

    assert "in about 33 more weeks of questions" in soon  # 900 at 20 a week: 45, 12 so far
    assert "in more than two years of questions" in late
