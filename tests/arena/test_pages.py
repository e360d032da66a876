"""The main pages: leaderboard, cohorts, cohort, agent and decision pages, over data
the engine produced by running the embedded demo for two simulated weeks; every value
escaped; a constant number of queries as the data grows.

The demo runs once for the module inside a transaction that is rolled back at the end, so no
other module sees its rows; each test runs in a savepoint of it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext, override_settings
from django.utils.html import escape

from agents.models import BenchmarkModel
from arena.demo import DemoReport, demo_run
from arena.models import (
    Agent,
    Cohort,
    Decision,
    DecisionAttempt,
    PortfolioSnapshot,
    Position,
    Trade,
)
from arena.selectors import standings as standings_selectors
from forecaster.templatetags.figures import money
from markets.models import Market
from tests.arena.conftest import snapshot_cache_clear
from tests.arena.factories import CohortFactory

# A fixed "now" keeps the demo's data the same whatever day the suite runs.
UNTIL = datetime(2026, 9, 16, 12, 0, tzinfo=UTC)
SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"
BADGE = r'<span class="badge {0}"[^>]*>{0}</span>'


def new_cohort(**kwargs: Any) -> Cohort:
    cohort: Cohort = CohortFactory.create(**kwargs)
    return cohort


@pytest.fixture(scope="module")
def demo(django_db_setup: None, django_db_blocker: Any) -> Iterator[DemoReport]:
    snapshot_cache_clear()
    with (
        django_db_blocker.unblock(),
        override_settings(OPENROUTER_API_KEY="", MARKET_SOURCE="demo"),
    ):
        outer = transaction.atomic()
        outer.__enter__()
        try:
            yield demo_run(weeks=2, tick=timedelta(hours=12), until=UNTIL)
        finally:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)
            snapshot_cache_clear()


@pytest.fixture
def world(demo: DemoReport, db: None) -> DemoReport:
    return demo


def page(client: Client, url: str, status: int = 200) -> str:
    response = client.get(url)
    assert response.status_code == status, url
    return response.content.decode()


def tables(html: str) -> list[str]:
    return re.findall(r"<table.*?</table>", html, flags=re.S)


def rows(table: str) -> list[str]:
    return re.findall(r"<tr>.*?</tr>", table.split("<tbody>", 1)[1], flags=re.S)


# ------------------------------------------------------------------------- the demo ran


def test_the_demo_fill_made_cohorts_decisions_and_snapshots(world: DemoReport) -> None:
    assert world.cohorts == 2
    assert Cohort.objects.count() == 2
    assert Decision.objects.filter(status=Decision.Status.DONE).exists()
    assert PortfolioSnapshot.objects.values("snapshot_timestamp").distinct().count() > 2


# --------------------------------------------------------------------------- leaderboard


def test_leaderboard_ranks_the_llms_and_shows_the_baselines_apart(
    world: DemoReport, client: Client
) -> None:
    html = page(client, "/")
    # The forecast panel's table leads (the demo runs v2), then the v1 table: the main
    # board's ranked models, then its provisional ones (too few bets or weeks).
    assert html.index('id="headline-panel"') < html.index('id="bets-table"')
    ranked_table, provisional_table = tables(html.partition('id="bets-table"')[2])[:2]
    assert "main-board" in ranked_table
    assert "main-board provisional" in provisional_table
    llm_table = ranked_table + provisional_table
    board_rows = [r for r in rows(ranked_table) + rows(provisional_table) if "colspan" not in r]
    # The baselines' table follows the ranked boards (the demo's outside team has its own).
    baseline_table = tables(html.partition("<h2>Baselines")[2])[0]
    llms = list(BenchmarkModel.objects.filter(kind="llm", active=True))
    baselines = list(BenchmarkModel.objects.filter(kind="baseline", active=True))
    assert len(board_rows) == len(llms) == 7
    assert len(rows(baseline_table)) == len(baselines) == 2
    for model in llms:
        assert escape(model.display_name) in llm_table
        assert escape(model.display_name) not in baseline_table
    for model in baselines:
        assert escape(model.display_name) not in llm_table
        row = next(r for r in rows(baseline_table) if escape(model.display_name) in r)
        assert re.search(BADGE.format("baseline"), row)
    assert "not ranked" in html
    assert "a baseline's figures can still change after its cohort completed" in html

    # ranked by pooled Brier of resolved bets, lower first, models without one last
    scores: dict[int, list[float]] = {m.pk: [] for m in llms}
    for model_id, score in Trade.objects.filter(
        kind="BUY", status="executed", brier_score__isnull=False, agent__model__kind="llm"
    ).values_list("agent__model_id", "brier_score"):
        assert score is not None
        scores[model_id].append(score)
    assert any(scores.values()), "the demo resolved no bet of an LLM"

    def key(m: BenchmarkModel) -> tuple[bool, float, int]:
        s = scores[m.pk]
        return (not s, sum(s) / len(s) if s else 0.0, m.display_order)

    expected = [m.display_name for m in sorted(llms, key=key)]
    shown = [
        next(m.display_name for m in llms if f">{escape(m.display_name)}</a>" in r)
        for r in board_rows
    ]
    assert shown == expected
    ranked = [r for r in rows(ranked_table) if "colspan" not in r]
    ranks = [re.search(r"<td>(\d+)</td>", r) for r in ranked]
    assert [int(m.group(1)) for m in ranks if m] == list(range(1, len(ranked) + 1))
    assert not re.search(r"<td>\d+</td>\s*<td><a", provisional_table)  # never ranked
    # offline agents answered: every LLM row says so
    assert len(re.findall(BADGE.format("offline"), llm_table)) == len(llms)
    assert "never pooled" in html  # and the note under the table says what that means


def test_leaderboard_ranked_by_return(world: DemoReport, client: Client) -> None:
    html = page(client, "/?sort=return")
    assert "Ranked by average return" in html


# ------------------------------------------------------------------------------ cohorts


def test_cohort_list_lists_every_cohort(world: DemoReport, client: Client) -> None:
    html = page(client, "/cohorts/")
    for cohort in Cohort.objects.all():
        assert f'href="/cohorts/{cohort.number}/"' in html
        assert cohort.get_status_display() in html


def test_cohort_page_has_a_value_chart_with_a_line_per_agent_and_the_standings(
    world: DemoReport, client: Client
) -> None:
    for cohort in Cohort.objects.all():
        html = page(client, f"/cohorts/{cohort.number}/")
        agents = list(cohort.agents.select_related("model"))
        chart = re.search(
            r'<script id="value-chart-data" type="application/json">(.*?)</script>', html, re.S
        )
        assert chart, "no value chart"
        labels = [s["label"] for s in json.loads(chart.group(1))["series"]]
        assert len(labels) == len(agents)  # a line per agent
        for agent in agents:
            assert any(label.startswith(agent.model.display_name) for label in labels)
        standings = next(t for t in tables(html) if "Total value" in t)
        for agent in agents:
            row = next(r for r in rows(standings) if f"/agents/{agent.pk}/" in r)
            assert money(agent.cash) in row
            if cohort.status == Cohort.Status.COMPLETED:
                # nothing open: the fixed final value is the cash
                assert not agent.positions.filter(status="open").exists()
                assert row.count(money(agent.cash)) == 2  # cash and total value
            else:
                # the live standing equals the last tick's snapshot: nothing moved since
                latest = PortfolioSnapshot.objects.filter(agent=agent).latest("snapshot_timestamp")
                assert money(latest.total_value) in row


def test_agent_page_shows_positions_and_trades(world: DemoReport, client: Client) -> None:
    agent = (
        Agent.objects.filter(trades__status="executed", positions__status="settled")
        .distinct()
        .first()
    )
    assert agent is not None
    html = page(client, f"/cohorts/{agent.cohort.number}/agents/{agent.pk}/")
    assert 'id="value-chart-data"' in html
    positions = next(t for t in tables(html) if "Cost basis" in t)
    assert len(rows(positions)) == agent.positions.count()
    trades = next(t for t in tables(html) if "Confidence" in t)
    assert len(rows(trades)) == agent.trades.count()
    for decision in agent.decisions.all():
        assert f'href="/decisions/{decision.pk}/"' in html


def test_an_agents_open_positions_add_up_to_its_positions_value(
    world: DemoReport, client: Client
) -> None:
    """Each open position shows the side-correct price it is marked at and its value; the
    values add up to the positions value the standings give (each cut to the cent)."""
    agent = Agent.objects.filter(positions__status="open").distinct().first()
    assert agent is not None
    (standing,) = standings_selectors.agent_standings(agents=Agent.objects.filter(pk=agent.pk))
    rows_ = standings_selectors.agent_positions(agent=agent)
    open_rows = [r for r in rows_ if r.value_now is not None]
    assert len(open_rows) == agent.positions.filter(status="open").count() > 0
    total = sum((r.value_now for r in open_rows if r.value_now is not None), Decimal(0))
    assert abs(total - standing.positions_value) < Decimal("0.01")
    html = page(client, f"/cohorts/{agent.cohort.number}/agents/{agent.pk}/")
    for row in open_rows:
        assert money(row.value_now) in html


def test_decision_page_shows_prompts_raw_response_parsed_decision_and_trades(
    world: DemoReport, client: Client
) -> None:
    decision = (
        Decision.objects.filter(action="BET", trades__status="executed")
        .exclude(agent__model__kind="baseline")
        .distinct()
        .first()
    )
    assert decision is not None
    html = page(client, f"/decisions/{decision.pk}/")
    assert decision.system_prompt
    assert escape(decision.system_prompt) in html
    assert decision.user_prompt
    assert escape(decision.user_prompt) in html
    for attempt in decision.attempts.all():
        assert attempt.raw_response
        assert escape(attempt.raw_response) in html
    assert decision.parsed is not None
    for bet in decision.parsed["bets"]:
        assert (
            escape(f"BET {bet['side']} {money(bet['amount'])} on market {bet['market_id']}") in html
        )
    assert 'id="parsed-decision"' in html
    trade_table = next(t for t in tables(html) if "Cash before" in t)
    assert len(rows(trade_table)) == decision.trades.count()
    assert "executed" in trade_table


def test_an_offline_decision_names_the_model_it_stands_in_for_never_as_called(
    world: DemoReport, client: Client
) -> None:
    decision = Decision.objects.filter(responder="offline").exclude(requested_model="").first()
    assert decision is not None
    html = page(client, f"/decisions/{decision.pk}/")
    assert f"standing in for {decision.requested_model}, which was not called" in html
    assert "· called" not in html


def test_a_baseline_decision_page_renders(world: DemoReport, client: Client) -> None:
    decision = Decision.objects.filter(agent__model__kind="baseline").first()
    assert decision is not None
    html = page(client, f"/decisions/{decision.pk}/")
    assert re.search(BADGE.format("baseline"), html)


def test_unknown_cohort_agent_or_decision_is_a_404(world: DemoReport, client: Client) -> None:
    page(client, "/cohorts/999999/", 404)
    page(client, "/decisions/999999999/", 404)
    first, second = Cohort.objects.order_by("number")
    page(client, f"/cohorts/{first.number}/agents/999999999/", 404)
    other = second.agents.first()
    assert other is not None
    page(client, f"/cohorts/{first.number}/agents/{other.pk}/", 404)


@pytest.mark.parametrize("debug", [True, False])
@pytest.mark.parametrize(
    "url",
    ["/models/no-such-model/", "/cohorts/999999/", "/markets/no-such-market/",
     "/decisions/999999999/", "/data/releases/no-such-release/"],
)  # fmt: skip
def test_an_unknown_page_is_the_sites_own_404_in_every_mode(
    world: DemoReport, client: Client, settings: Any, url: str, debug: bool
) -> None:
    settings.DEBUG = debug
    html = page(client, url, 404)
    assert "<title>Not found · Forecaster Arena</title>" in html
    assert "Back to the leaderboard" in html


# ----------------------------------------------------------------------------- banner


@pytest.mark.parametrize("url", ["/", "/cohorts/", "/markets/"])
def test_demo_data_banner_shows_while_the_demo_source_is_in_use(
    db: None, client: Client, settings: Any, url: str
) -> None:
    settings.MARKET_SOURCE = "demo"
    assert "Demo data" in page(client, url)
    settings.MARKET_SOURCE = "gamma"
    assert "Demo data" not in page(client, url)


# ------------------------------------------------------------------------ hostile text


@pytest.fixture
def hostile(db: None) -> Decision:
    """A market whose question is a script tag, and a decision whose reasoning, raw response
    and parsed payload carry an <img onerror> — all stored verbatim, as upstream sent them."""
    cohort = new_cohort()
    model = BenchmarkModel.objects.get(internal_id="gpt-5.1")
    agent = Agent.objects.create(cohort=cohort, model=model)
    market = Market.objects.create(
        polymarket_id="66600666",
        question=SCRIPT,
        event_title=SCRIPT,
        description=IMG,
        outcomes=["Yes", "No"],
        outcome_prices=["0.5", "0.5"],
        last_open_prices=["0.5", "0.5"],
    )
    decision = Decision.objects.create(
        agent=agent,
        cohort=cohort,
        week_start=cohort.week_start,
        status=Decision.Status.DONE,
        action=Decision.Action.BET,
        reasoning=f"I think {IMG} so",
        parsed={
            "action": "BET",
            "reasoning": IMG,
            "bets": [{"market_id": market.polymarket_id, "side": "YES", "amount": "100"}],
            "sells": [],
        },
        responder=Decision.Responder.OFFLINE,
        system_prompt=f"system {SCRIPT}",
        user_prompt=f"user {IMG}",
        error=f"odd {IMG}",
    )
    DecisionAttempt.objects.create(
        decision=decision,
        number=1,
        responder="offline",
        request_messages=[{"role": "user", "content": IMG}],
        raw_response=f'{{"reasoning": "{IMG}"}}',
        response_text=IMG,
        parse_error=f"bad {IMG}",
        started_at=datetime(2030, 1, 6, tzinfo=UTC),
    )
    DecisionAttempt.objects.create(
        decision=decision,
        number=2,
        responder="offline",
        request_messages=[{"role": "user", "content": IMG}],
        raw_response=IMG,
        response_text=IMG,
        valid=True,
        started_at=datetime(2030, 1, 6, tzinfo=UTC),
    )
    position = Position.objects.create(
        agent=agent,
        market=market,
        side="YES",
        outcome_index=0,
        shares=Decimal("200"),
        cost_basis=Decimal("100.00"),
        opened_at=datetime(2030, 1, 6, tzinfo=UTC),
    )
    Trade.objects.create(
        decision=decision,
        agent=agent,
        order_index=0,
        kind="BUY",
        status="executed",
        market=market,
        position=position,
        side="YES",
        price=Decimal("0.5"),
        shares=Decimal("200"),
        amount=Decimal("100.00"),
        created_at=datetime(2030, 1, 6, tzinfo=UTC),
    )
    Trade.objects.create(
        decision=decision,
        agent=agent,
        order_index=1,
        kind="BUY",
        status="rejected",
        reject_reason=f"unknown market {SCRIPT}",
        requested_market_id=IMG[:64],
        side=IMG,
        created_at=datetime(2030, 1, 6, tzinfo=UTC),
    )
    return decision


def assert_escaped(html: str) -> None:
    assert SCRIPT not in html
    assert IMG not in html
    assert "<img" not in html
    assert "onerror=alert(1)>" not in html


def test_hostile_text_is_escaped_on_every_page(hostile: Decision, client: Client) -> None:
    agent = hostile.agent
    number = agent.cohort.number
    decision_page = page(client, f"/decisions/{hostile.pk}/")
    agent_page = page(client, f"/cohorts/{number}/agents/{agent.pk}/")
    cohort_page = page(client, f"/cohorts/{number}/")
    market_page = page(client, "/markets/66600666/")
    for html in (decision_page, agent_page, cohort_page, market_page):
        assert_escaped(html)
    assert escape(SCRIPT) in agent_page  # the position's market question
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in decision_page  # the trade's market
    assert "&lt;img src=x onerror=alert(1)&gt;" in decision_page  # reasoning, raw response
    assert escape(f'{{"reasoning": "{IMG}"}}') in decision_page
    assert escape(IMG) in cohort_page  # the decision's reasoning in the list
    assert escape(SCRIPT) in market_page
    assert "&lt;script&gt;" in page(client, "/markets/?q=script")


# ---------------------------------------------------------------------- query counts


def grow(cohorts: int) -> Cohort:
    """Add `cohorts` cohorts, each with every lineup model, positions, scored bets, decisions
    and a day of snapshots; return the last one."""
    markets = list(Market.objects.filter(resolution="open", closed=False)[:6])
    models = list(BenchmarkModel.objects.all())
    cohort = None
    for _ in range(cohorts):
        cohort = new_cohort()
        for model in models:
            agent = Agent.objects.create(cohort=cohort, model=model, cash=Decimal("9000"))
            decision = Decision.objects.create(
                agent=agent,
                cohort=cohort,
                week_start=cohort.week_start,
                status="done",
                action="BET",
                reasoning="grow",
            )
            for i, market in enumerate(markets):
                position = Position.objects.create(
                    agent=agent,
                    market=market,
                    side="YES",
                    outcome_index=0,
                    shares=Decimal("100"),
                    cost_basis=Decimal("50"),
                    opened_at=cohort.started_at,
                )
                Trade.objects.create(
                    decision=decision,
                    agent=agent,
                    order_index=i,
                    kind="BUY",
                    status="executed",
                    market=market,
                    position=position,
                    side="YES",
                    price=Decimal("0.5"),
                    shares=Decimal("100"),
                    amount=Decimal("50"),
                    implied_confidence=0.02,
                    brier_score=0.25,
                    side_won=bool(i % 2),
                    created_at=cohort.started_at,
                )
            PortfolioSnapshot.objects.bulk_create(
                PortfolioSnapshot(
                    agent=agent,
                    snapshot_timestamp=cohort.started_at + timedelta(minutes=10 * k),
                    cash=Decimal("9000"),
                    positions_value=Decimal("300"),
                    total_value=Decimal("9300"),
                    total_pnl=Decimal("-700"),
                    total_pnl_percent=Decimal("-7"),
                )
                for k in range(144)
            )
    assert cohort is not None
    return cohort


def count_queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return len(queries.captured_queries)


def test_leaderboard_and_cohort_page_queries_stay_constant_as_cohorts_grow(
    world: DemoReport, client: Client, django_assert_max_num_queries: Any
) -> None:
    # the running demo cohort: agents with open positions, like the big one grown below
    small = Cohort.objects.filter(status="active", agents__positions__status="open").first()
    assert small is not None
    board_before = count_queries(client, "/")
    cohort_before = count_queries(client, f"/cohorts/{small.number}/")

    big = grow(4)

    assert count_queries(client, "/") == board_before
    assert count_queries(client, f"/cohorts/{big.number}/") == cohort_before
    with django_assert_max_num_queries(15):
        client.get("/")
    with django_assert_max_num_queries(15):
        client.get(f"/cohorts/{big.number}/")
    with django_assert_max_num_queries(15):
        client.get("/cohorts/")


def test_a_models_agents_of_completed_cohorts_read_completed_not_active(
    world: DemoReport, client: Client
) -> None:
    html = page(client, "/models/gpt-5.1/")
    agents = next(t for t in tables(html) if "<th>Agent</th>" in t)
    completed = set(
        Cohort.objects.filter(completed_at__isnull=False).values_list("number", flat=True)
    )
    assert completed, "the demo completed no cohort"
    for row in rows(agents):
        number = int(re.search(r">Cohort (\d+)</a>", row).group(1))  # type: ignore[union-attr]
        if number in completed:
            assert ">Cohort completed</a>" in row
            assert ">Active</a>" not in row
        else:
            assert ">Cohort completed</a>" not in row
