"""Model pages and the finished leaderboard.

One lineup model, gpt-5.1, played two cohorts answered through OpenRouter and a third
answered by its offline stand-in; every figure below is computed by hand from the fixture:

- cohort 1, cash $10,500 (+5%): week 1 BET — first answer malformed ($0.002, 1,000 ms,
  Azure), second valid ($0.003, 3,000 ms, OpenAI); a won bet (Brier 0.09), a lost bet
  (0.49), a rejected order. Week 2 HOLD ($0.001, 2,000 ms, OpenAI).
- cohort 2, cash $9,000 (−10%): week 1 HOLD — the first call failed (API error, nothing
  known), the second answered validly at an unknown cost (4,000 ms, OpenAI). Week 2: both
  answers malformed ($0.004 + $0.004, 5,000 and 6,000 ms, the second from Azure), a default
  HOLD. An unresolved bet and a sell.
- cohort 3, offline, cash $12,000 (+20%): one BET answered offline, a won bet (0.01).

Real row: return (5 − 10) / 2 = −2.5% over 2 cohorts; Brier (0.09 + 0.49) / 2 = 0.29 over 2
resolved bets; win rate 1 / 2; HOLDs 2 of 3 valid answers (the default HOLD is not one);
malformed first answers 2 of 4 answered decisions; rejected 1 of 5 orders; USD per decision
(0.005 + 0.001 + 0.008) / 3 with 1 of unknown cost; p95 of six latencies = 6,000 ms;
providers OpenAI 3, Azure 2. The offline row keeps its own figures and makes no call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import resolve, reverse
from django.utils.html import escape

from agents.models import BenchmarkModel
from arena.models import Agent, Cohort, Decision, DecisionAttempt, PortfolioSnapshot, Trade
from arena.selectors import models as model_stats
from arena.selectors import standings
from arena.selectors.analytics.cache import model_analytics
from arena.views.diagrams import signed
from markets.models import Market
from tests.arena.factories import CohortFactory

SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"
BADGE = r'<span class="badge offline"[^>]*>offline</span>'


@dataclass(frozen=True)
class Lineup:
    model: BenchmarkModel
    first: Agent
    second: Agent
    offline: Agent
    baseline: Agent


_markets = iter(range(10**6))


def market(*, question: str = "Will it happen?", won: bool | None = None) -> Market:
    """A binary market: resolved YES (`won`), NO (not `won`), or open (None)."""
    resolved = won is not None
    created: Market = Market.objects.create(
        polymarket_id=f"77{next(_markets)}",
        question=question,
        outcomes=["Yes", "No"],
        outcome_prices=["1", "0"] if won else ["0", "1"] if resolved else ["0.5", "0.5"],
        closed=resolved,
        resolution=Market.Resolution.RESOLVED if resolved else Market.Resolution.OPEN,
        winning_outcome=("Yes" if won else "No") if resolved else "",
    )
    return created


def decision(agent: Agent, *, week: int, action: str, responder: str, **kw: Any) -> Decision:
    created: Decision = Decision.objects.create(
        agent=agent,
        cohort=agent.cohort,
        week_start=agent.cohort.week_start + timedelta(weeks=week),
        status=kw.pop("status", Decision.Status.DONE),
        action=action,
        responder=responder,
        **kw,
    )
    return created


def attempt(
    of: Decision,
    number: int,
    *,
    cost: str | None = None,
    latency: int | None = None,
    provider: str = "",
    parse_error: str = "",
    api_error: str = "",
    responder: str = Decision.Responder.OPENROUTER,
) -> None:
    DecisionAttempt.objects.create(
        decision=of,
        number=number,
        responder=responder,
        request_messages=[],
        cost_usd=None if cost is None else Decimal(cost),
        latency_ms=latency,
        upstream_provider=provider,
        parse_error=parse_error,
        api_error=api_error,
        valid=not parse_error and not api_error,
        started_at=of.cohort.started_at,
    )


def trade(
    of: Decision,
    index: int,
    *,
    kind: str = Trade.Kind.BUY,
    status: str = Trade.Status.EXECUTED,
    brier: float | None = None,
    won: bool | None = None,
    question: str = "Will it happen?",
) -> None:
    executed = status == Trade.Status.EXECUTED
    Trade.objects.create(
        decision=of,
        agent=of.agent,
        order_index=index,
        kind=kind,
        status=status,
        reject_reason="" if executed else "bet under $50",
        market=market(question=question, won=won) if executed else None,
        side="YES",
        price=Decimal("0.5") if executed else None,
        shares=Decimal("200") if executed else None,
        amount=Decimal("100.00") if executed else None,
        implied_confidence=0.5 if executed else None,
        brier_score=brier,
        side_won=won,
        created_at=of.cohort.started_at + timedelta(minutes=5 + index),
    )


def agent_of(model: BenchmarkModel, cohort: Cohort, cash: str) -> Agent:
    created: Agent = Agent.objects.create(cohort=cohort, model=model, cash=Decimal(cash))
    return created


OPENROUTER = Decision.Responder.OPENROUTER


@pytest.fixture
def lineup(db: None) -> Lineup:
    model = BenchmarkModel.objects.get(internal_id="gpt-5.1")
    c1, c2, c3 = CohortFactory.create_batch(3)

    first = agent_of(model, c1, "10500")
    bet = decision(first, week=0, action="BET", responder=OPENROUTER)
    attempt(bet, 1, cost="0.002", latency=1000, provider="Azure", parse_error="not JSON")
    attempt(bet, 2, cost="0.003", latency=3000, provider="OpenAI")
    trade(bet, 0, brier=0.09, won=True)
    trade(bet, 1, brier=0.49, won=False)
    trade(bet, 2, status=Trade.Status.REJECTED)
    hold = decision(first, week=1, action="HOLD", responder=OPENROUTER)
    attempt(hold, 1, cost="0.001", latency=2000, provider="OpenAI")

    second = agent_of(model, c2, "9000")
    hold = decision(second, week=0, action="HOLD", responder=OPENROUTER)
    attempt(hold, 1, api_error="502 Bad Gateway")
    attempt(hold, 2, cost=None, latency=4000, provider="OpenAI")
    default = decision(second, week=1, action="HOLD", responder=OPENROUTER, parse_failed=True)
    attempt(default, 1, cost="0.004", latency=5000, parse_error="cut off")
    attempt(default, 2, cost="0.004", latency=6000, provider="Azure", parse_error="cut off")
    trade(default, 0)  # unresolved
    trade(default, 1, kind=Trade.Kind.SELL)

    offline = agent_of(model, c3, "12000")
    answered = decision(offline, week=0, action="BET", responder=Decision.Responder.OFFLINE)
    attempt(answered, 1, latency=0, responder=Decision.Responder.OFFLINE)
    trade(answered, 0, brier=0.01, won=True)

    follower = BenchmarkModel.objects.get(internal_id="baseline-market")
    baseline = agent_of(follower, c1, "9000")  # −10%: worse than gpt-5.1's real return
    bet = decision(baseline, week=0, action="BET", responder=Decision.Responder.BASELINE)
    attempt(bet, 1, latency=0, responder=Decision.Responder.BASELINE)
    trade(bet, 0, brier=0.04, won=True)  # better than gpt-5.1's real Brier
    return Lineup(model, first, second, offline, baseline)


def rows_of(model: BenchmarkModel) -> tuple[standings.ModelRow, standings.ModelRow]:
    real, offline = standings.model_rows(model=model)
    return real, offline


def page(client: Client, url: str, status: int = 200) -> str:
    response = client.get(url)
    assert response.status_code == status, url
    return response.content.decode()


def count_queries(client: Client, url: str) -> int:
    cache.clear()  # the analytics' kept answer: every count measures the computation itself
    with CaptureQueriesContext(connection) as queries:
        page(client, url)
    return len(queries.captured_queries)


# ------------------------------------------------------------------------------ figures


def test_a_models_performance_is_pooled_over_its_real_cohorts(lineup: Lineup) -> None:
    real, _ = rows_of(lineup.model)
    assert not real.offline
    assert (real.cohorts, real.resolved_bets, real.wins) == (2, 2, 1)
    assert real.avg_return == Decimal("-2.5")
    assert real.brier == pytest.approx(0.29)
    assert real.win_rate == 0.5
    assert [s.agent.pk for s in real.agents] == [lineup.second.pk, lineup.first.pk]


def test_hold_share_counts_only_valid_answers(lineup: Lineup) -> None:
    real, _ = rows_of(lineup.model)
    assert (real.usage.holds, real.usage.valid_answers) == (2, 3)
    assert real.usage.hold_share == pytest.approx(2 / 3)


def test_a_malformed_first_answer_counts_even_when_the_retry_was_valid(lineup: Lineup) -> None:
    real, _ = rows_of(lineup.model)
    # a failed API call is not an answer: cohort 2's week-1 first answer is its valid 2nd
    assert (real.usage.malformed_first, real.usage.answered) == (2, 4)
    assert real.usage.malformed_rate == 0.5


def test_rejected_trades_are_a_share_of_every_order(lineup: Lineup) -> None:
    real, _ = rows_of(lineup.model)
    assert (real.usage.rejected, real.usage.orders) == (1, 5)
    assert real.usage.rejected_share == pytest.approx(0.2)


def test_usd_per_decision_leaves_out_and_counts_decisions_of_unknown_cost(
    lineup: Lineup,
) -> None:
    real, _ = rows_of(lineup.model)
    assert (real.usage.costed, real.usage.unknown_cost) == (3, 1)
    assert real.usage.cost == Decimal("0.014")
    assert real.usage.usd_per_decision == Decimal("0.014") / 3


def _real_row(model: BenchmarkModel) -> standings.ModelRow:
    (row,) = [r for r in standings.model_rows(model=model) if not r.offline]
    return row


def test_a_failed_call_costs_nothing_and_leaves_its_decision_costed(db: None) -> None:
    """A 502 is not billed: the retry's known cost is the decision's cost, not "unknown"."""
    model = BenchmarkModel.objects.get(internal_id="gpt-5.1")
    agent = agent_of(model, CohortFactory.create(), "10000")
    d = decision(agent, week=0, action="HOLD", responder=Decision.Responder.OPENROUTER)
    attempt(d, 1, api_error="502 Bad Gateway")
    attempt(d, 2, cost="0.003", latency=1000, provider="OpenAI")
    usage = _real_row(model).usage
    assert (usage.costed, usage.unknown_cost) == (1, 0)
    assert usage.usd_per_decision == Decimal("0.003")


def test_an_attempt_that_broke_before_any_reply_is_not_the_first_answer(db: None) -> None:
    model = BenchmarkModel.objects.get(internal_id="gpt-5.1")
    agent = agent_of(model, CohortFactory.create(), "10000")
    d = decision(agent, week=0, action="HOLD", responder=Decision.Responder.OPENROUTER)
    DecisionAttempt.objects.create(
        decision=d,
        number=1,
        responder=Decision.Responder.OPENROUTER,
        request_messages=[],
        error="ConnectionResetError",
        valid=False,
        started_at=d.cohort.started_at,
    )
    attempt(d, 2, cost="0.001", latency=900, parse_error="not JSON")
    attempt(d, 3, cost="0.001", latency=900)
    usage = _real_row(model).usage
    assert (usage.answered, usage.malformed_first) == (1, 1)


def test_an_offline_round_retried_through_openrouter_keeps_the_agent_offline(db: None) -> None:
    """`Decision.responder` names the latest round only; an earlier round answered offline
    still makes the agent offline, so none of its figures reaches the real row."""
    model = BenchmarkModel.objects.get(internal_id="gpt-5.1")
    agent = agent_of(model, CohortFactory.create(), "10000")
    d = decision(agent, week=0, action="BET", responder=Decision.Responder.OPENROUTER, tries=2)
    attempt(d, 1, latency=0, responder=Decision.Responder.OFFLINE, parse_error="bad")
    attempt(d, 2, cost="0.002", latency=800, provider="OpenAI")
    Trade.objects.create(
        decision=d,
        agent=agent,
        order_index=0,
        try_number=1,
        kind="BUY",
        status="rejected",
        reject_reason="x",
        created_at=d.cohort.started_at,
    )
    rows = standings.model_rows(model=model)
    assert [r.offline for r in rows] == [True]
    assert rows[0].usage.rejected == 1


def test_p95_latency_and_upstream_providers_of_the_calls(lineup: Lineup) -> None:
    real, _ = rows_of(lineup.model)
    assert sorted(real.usage.latencies) == [1000, 2000, 3000, 4000, 5000, 6000]
    assert real.usage.p95_latency_ms == 6000
    assert real.usage.providers_seen == [("OpenAI", 3), ("Azure", 2)]


def test_p95_is_the_nearest_rank_value() -> None:
    assert model_stats.p95([]) is None
    assert model_stats.p95([7]) == 7
    assert model_stats.p95(list(range(100, 0, -1))) == 95  # rank ⌈95⌉ of 1..100
    assert model_stats.p95(list(range(1, 21))) == 19  # rank ⌈19⌉ of 20
    assert model_stats.p95(list(range(1, 22))) == 20  # rank ⌈19.95⌉ of 21


def test_the_offline_stand_in_keeps_its_own_figures_and_makes_no_call(lineup: Lineup) -> None:
    _, offline = rows_of(lineup.model)
    assert offline.offline
    assert [s.agent.pk for s in offline.agents] == [lineup.offline.pk]
    assert (offline.cohorts, offline.resolved_bets, offline.wins) == (1, 1, 1)
    assert offline.avg_return == Decimal("20")
    assert offline.brier == pytest.approx(0.01)
    assert (offline.usage.valid_answers, offline.usage.holds) == (1, 0)
    assert (offline.usage.answered, offline.usage.malformed_first) == (1, 0)
    assert (offline.usage.costed, offline.usage.unknown_cost) == (0, 0)
    assert offline.usage.p95_latency_ms is None
    assert offline.usage.usd_per_decision is None


def test_the_leaderboard_rows_carry_the_same_figures(lineup: Lineup) -> None:
    llms, _ = standings.leaderboard()
    real, offline = [r for r in llms if r.model.pk == lineup.model.pk]
    assert (real.offline, offline.offline) == (False, True)
    assert real.usage.p95_latency_ms == 6000
    assert real.usage.malformed_rate == 0.5
    assert offline.usage.p95_latency_ms is None


# ------------------------------------------------------------------------- model pages


def test_the_model_page_shows_every_figure(lineup: Lineup, client: Client) -> None:
    html = page(client, "/models/gpt-5.1/")
    assert "<h1>GPT-5.2" in html
    figures, usage, agents = re.findall(r"<table.*?</table>", html, flags=re.S)[:3]
    # The bets' table is the one after its heading (the analytics section comes before it).
    bets = re.findall(r"<table.*?</table>", html.split("<h2>Bets</h2>")[1], flags=re.S)[0]
    real, offline = re.findall(r"<tr>.*?</tr>", figures.split("<tbody>")[1], flags=re.S)
    for text in (">−2.5%<", ">2<", ">0.2900<", ">50%<"):
        assert text in real
    assert not re.search(BADGE, real)
    assert re.search(BADGE, offline)
    assert ">+20%<" in offline
    assert ">0.0100<" in offline
    real_usage = re.findall(r"<tr>.*?</tr>", usage.split("<tbody>")[1], flags=re.S)[0]
    for text in ("66.67%", "50%", "20%", "$0.0047", "1 of unknown cost", "6,000 ms"):
        assert text in real_usage
    assert re.search(r"OpenAI <span[^>]*>\(3\)</span>, Azure <span[^>]*>\(2\)</span>", usage)
    for agent in (lineup.first, lineup.second, lineup.offline):
        assert f"/cohorts/{agent.cohort.number}/agents/{agent.pk}/" in agents
        assert ">Cohort " + str(agent.cohort.number) + "<" in agents
    assert ">+5%<" in agents
    assert ">−10%<" in agents
    assert ">+20%<" in agents
    assert ">won<" in bets
    assert ">lost<" in bets
    assert ">open<" in bets
    open_market = Trade.objects.filter(
        agent__model=lineup.model, kind="BUY", market__resolution="open"
    ).values_list("market_id", flat=True)[:1]
    Market.objects.filter(pk__in=list(open_market)).update(
        close_date=datetime(2020, 1, 1, tzinfo=UTC)
    )
    closed_bets = page(client, f"/models/{lineup.model.internal_id}/")
    assert ">closed, awaiting resolution<" in closed_bets  # not "open" past its close date
    assert ">0.0900<" in bets
    assert ">0.4900<" in bets
    assert "4 executed bets" in html  # 3 real buys and 1 offline; the sell is no bet


def test_the_model_page_lists_only_executed_buys(lineup: Lineup, client: Client) -> None:
    bets = list(model_stats.model_bets(model=lineup.model))
    assert len(bets) == 4  # the rejected order and the sell are not bets
    assert {t.agent_id for t in bets} == {lineup.first.pk, lineup.second.pk, lineup.offline.pk}


def test_the_model_page_overlays_the_value_curves_by_cohort(lineup: Lineup, client: Client) -> None:
    for agent in (lineup.first, lineup.second):
        for hours, value in ((0, "10000"), (6, agent.cash)):
            PortfolioSnapshot.objects.create(
                agent=agent,
                snapshot_timestamp=agent.cohort.started_at + timedelta(hours=hours),
                cash=Decimal(value),
                positions_value=Decimal(0),
                total_value=Decimal(value),
                total_pnl=Decimal(value) - 10000,
                total_pnl_percent=Decimal(0),
            )
    html = page(client, "/models/gpt-5.1/?range=ALL")
    for agent in (lineup.first, lineup.second):
        assert f"Cohort {agent.cohort.number}" in html.split("chart-summary", 1)[1]


def test_the_baseline_page_says_what_the_baseline_does(lineup: Lineup, client: Client) -> None:
    html = page(client, "/models/baseline-market/")
    assert "backs the favourite of the three highest-volume markets" in html
    assert "USD / decision" not in html  # a baseline calls no model


def test_the_model_list_shows_every_lineup_model(lineup: Lineup, client: Client) -> None:
    html = page(client, "/models/")
    for model in BenchmarkModel.objects.filter(active=True):
        assert f'href="{reverse("arena:model", args=[model.internal_id])}"' in html
    gpt = [r for r in re.findall(r"<tr>.*?</tr>", html, flags=re.S) if "/models/gpt-5.1/" in r]
    assert len(gpt) == 2  # real and offline, never pooled
    assert sum(bool(re.search(BADGE, r)) for r in gpt) == 1


def test_an_unknown_model_is_a_404(db: None, client: Client) -> None:
    page(client, "/models/no-such-model/", status=404)
    page(client, "/models/gpt-5.1/extra/", status=404)


def test_every_lineup_id_round_trips_through_the_url(db: None, client: Client) -> None:
    BenchmarkModel.objects.create(
        internal_id="openai/gpt-5.1:free",
        display_name="GPT free",
        openrouter_id="openai/gpt-5.1:free",
    )
    for model in BenchmarkModel.objects.all():
        url = reverse("arena:model", args=[model.internal_id])
        assert resolve(url).kwargs == {"internal_id": model.internal_id}
        assert f"<h1>{escape(model.display_name)}" in page(client, url)
    assert reverse("arena:model", args=["openai/gpt-5.1:free"]) == "/models/openai/gpt-5.1:free/"


def test_hostile_names_are_escaped_everywhere(lineup: Lineup, client: Client) -> None:
    BenchmarkModel.objects.filter(pk=lineup.model.pk).update(display_name=SCRIPT, provider=IMG)
    DecisionAttempt.objects.filter(upstream_provider="Azure").update(upstream_provider=IMG)
    Market.objects.update(question=SCRIPT)
    agent_page = f"/cohorts/{lineup.first.cohort.number}/agents/{lineup.first.pk}/"
    for url in ("/", "/models/", "/models/gpt-5.1/", agent_page):
        html = page(client, url)
        assert SCRIPT not in html, url
        assert IMG not in html, url
        assert escape(SCRIPT) in html, url


def test_model_names_link_to_the_model_page(lineup: Lineup, client: Client) -> None:
    link = f'<a href="/models/gpt-5.1/">{escape(lineup.model.display_name)}</a>'
    assert link in page(client, "/")
    assert link in page(client, "/models/")
    agent_page = page(client, f"/cohorts/{lineup.first.cohort.number}/agents/{lineup.first.pk}/")
    heading = re.search(r"<h1>.*?</h1>", agent_page, flags=re.S)
    assert heading is not None
    assert link in heading.group(0)


# ------------------------------------------------------------------------- leaderboard


def test_the_leaderboard_shows_counts_beside_means_and_the_usage_figures(
    lineup: Lineup, client: Client
) -> None:
    html = page(client, "/")
    # Two resolved bets each: every row is provisional, in the main board's second table.
    table = re.search(r'<table class="data main-board provisional">.*?</table>', html, re.S)
    assert table is not None
    head = re.search(r"<thead>.*?</thead>", table.group(0), flags=re.S)
    assert head is not None
    columns = re.findall(r"<th[^>]*>(.*?)</th>", head.group(0))
    names = [" ".join(re.sub(r"<[^>]+>", " ", c).split()) for c in columns]
    assert names[1:6] == [
        "Brier (95% interval)",
        "Bets / weeks",
        "Avg return",
        "Cohorts",
        "Win rate",
    ]
    for name in ("USD / decision", "p95 latency", "Malformed"):
        assert name in names
    real = next(
        r
        for r in re.findall(r"<tr>.*?</tr>", table.group(0), flags=re.S)
        if "/models/gpt-5.1/" in r and not re.search(BADGE, r)
    )
    cells = re.findall(r"<td[^>]*>(.*?)</td>", real, flags=re.S)
    # Its Brier with the count it is over beside it: 2 resolved bets, decided in one week.
    assert re.sub(r"<[^>]+>", "", cells[1]).startswith("0.2900")
    assert cells[2:6] == ["2 / 1", "−2.5%", "2", "50%"]
    assert cells[6].startswith("$0.0047")
    assert "(1 unknown)" in cells[6]
    assert cells[7:] == ["6,000 ms", "50%"]


def test_a_baseline_beating_the_best_real_model_is_explained(
    lineup: Lineup, client: Client
) -> None:
    llms, baselines = standings.leaderboard()
    (note,) = standings.baseline_notes(llms=llms, baselines=baselines)
    assert note.baseline.model.internal_id == "baseline-market"
    assert note.best_brier is not None
    assert note.best_brier.model.pk == lineup.model.pk
    assert not note.best_brier.offline  # the offline stand-in's 0.01 is not the mark
    assert note.best_return is None  # its −10% does not beat gpt-5.1's −2.5%
    html = re.sub(r"\s+", " ", page(client, "/"))
    assert (
        "Market follower</a>, a baseline that backs the favourite of the three highest-volume "
        "markets each week, staking so that its implied confidence equals the favourite's "
        "price, beats the best model on Brier score (0.0400 against GPT-5.2's 0.2900)."
    ) in html.replace("&#x27;", "'")


def test_with_no_real_model_the_baseline_is_measured_against_the_offline_stand_ins(
    lineup: Lineup, client: Client
) -> None:
    Decision.objects.filter(agent__model=lineup.model).update(responder=Decision.Responder.OFFLINE)
    llms, baselines = standings.leaderboard()
    (note,) = standings.baseline_notes(llms=llms, baselines=baselines)
    assert note.best_brier is not None
    assert note.best_brier.offline
    html = re.sub(r"\s+", " ", page(client, "/")).replace("&#x27;", "'")
    assert "(offline stand-in)'s" in html


# ---------------------------------------------------------------------- query counts


def grow(model_ids: list[str]) -> None:
    """Add a cohort with an agent of each model: decisions answered through OpenRouter with
    two attempts, bets scored and rejected, snapshots."""
    cohort: Cohort = CohortFactory.create()
    for internal_id in model_ids:
        agent = agent_of(BenchmarkModel.objects.get(internal_id=internal_id), cohort, "9500")
        for week in range(3):
            made = decision(agent, week=week, action="BET", responder=OPENROUTER)
            attempt(made, 1, cost="0.01", latency=900 + week, provider="P", parse_error="x")
            attempt(made, 2, cost="0.01", latency=1200, provider="Q")
            trade(made, 0, brier=0.25, won=True)
            trade(made, 1, status=Trade.Status.REJECTED)
        for hours in range(3):
            PortfolioSnapshot.objects.create(
                agent=agent,
                snapshot_timestamp=cohort.started_at + timedelta(hours=hours),
                cash=Decimal("9500"),
                positions_value=Decimal(0),
                total_value=Decimal("9500"),
                total_pnl=Decimal("-500"),
                total_pnl_percent=Decimal("-5"),
            )


def test_model_pages_and_leaderboard_keep_a_constant_number_of_queries(
    lineup: Lineup, client: Client
) -> None:
    urls = ["/", "/?sort=return", "/models/", "/models/gpt-5.1/", "/models/baseline-market/"]
    grow(["gpt-5.1", "baseline-market"])  # snapshots to draw, at the small size too
    before = {url: count_queries(client, url) for url in urls}
    for _ in range(3):
        grow(["gpt-5.1", "claude-opus-4.5", "grok-4", "baseline-market", "baseline-random"])
    after = {url: count_queries(client, url) for url in urls}
    assert after == before
    # 15 for the page's own figures and curve, 1 for the analytics' watermark, 8 to compute
    # the analytics when they are not kept (the completed cohorts' stamps among them).
    assert max(after.values()) <= 26


def test_the_model_page_draws_brier_alpha_and_return_cohort_by_cohort(
    lineup: Lineup, client: Client
) -> None:
    html = page(client, "/models/gpt-5.1/")
    strips = re.findall(r'<svg class="diagram cohort-strips".*?</svg>', html, flags=re.S)
    assert len(strips) == 2  # the model's, then its offline stand-in's
    (real_row, _) = model_analytics(model=lineup.model)
    alpha = {f.cohort: f.alpha for f in real_row.per_cohort}
    c1, c2 = lineup.first.cohort.number, lineup.second.cohort.number
    # Brier over cohort 1's two resolved bets, its Alpha, then both cohorts' returns: cohort
    # 2 has no resolved bet, so it leaves a gap in the Brier and Alpha strips.
    assert re.findall(r"<title>(Cohort \d+: [^<]*)</title>", strips[0]) == [
        f"Cohort {c1}: 0.290",
        f"Cohort {c1}: {signed(alpha[c1], 3)}",
        f"Cohort {c1}: +5.0",
        f"Cohort {c2}: −10.0",
    ]
    # The Agents table gives each cohort's Alpha beside its Brier.
    agents = html.split("<h2>Agents</h2>", 1)[1]
    first_row = next(r for r in re.findall(r"<tr>.*?</tr>", agents, re.S) if f">Cohort {c1}<" in r)
    assert f">{signed(alpha[c1])}<" in first_row


def test_the_models_page_draws_brier_against_cost_with_the_pareto_set(
    lineup: Lineup, client: Client
) -> None:
    # gpt-5.1: $0.0047 a decision at Brier 0.29. A dearer but more accurate model shares the
    # Pareto set with it; one dearer and less accurate than both is beaten on both.
    for internal_id, cost, brier in (("claude-opus-4.5", "0.02", 0.04), ("grok-4", "0.03", 0.49)):
        model = BenchmarkModel.objects.get(internal_id=internal_id)
        bet = decision(
            agent_of(model, lineup.first.cohort, "10000"),
            week=0,
            action="BET",
            responder=OPENROUTER,
        )
        attempt(bet, 1, cost=cost, latency=1000, provider="X")
        trade(bet, 0, brier=brier, won=brier < 0.25)

    html = page(client, "/models/")
    (chart,) = re.findall(r'<svg class="diagram cost-accuracy".*?</svg>', html, flags=re.S)
    marks = {name: kind for kind, name in re.findall(
        r'<circle class="pt (front|off)"[^>]*><title>([^:]+):', chart
    )}  # fmt: skip
    assert marks == {"GPT-5.2": "front", "Claude Opus 4.5": "front", "Grok 4.1": "off"}
    # The offline stand-in made no call: it has no cost, so no point.
    assert chart.count('<circle class="pt ') == 3


def test_the_models_page_says_why_there_is_no_cost_chart(db: None, client: Client) -> None:
    html = page(client, "/models/")
    assert "cost-accuracy" not in html
    assert "No model has both a known cost and a resolved bet yet" in html
