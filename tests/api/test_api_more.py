"""More of the JSON API: an agent with its positions and trades, decisions
(filtered, paginated) with prompts, attempts and raw responses, a market with its holders,
trades and scored bets, and the system's status. Every figure is the selector's figure (the
pages' own), every hostile parameter a 4xx in the envelope, every list a constant number of
queries whatever the data size.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from arena.api.records import AGENT_TRADES_SHOWN
from arena.models import Agent, Decision, DecisionRun, ResolutionCheck, SnapshotTick, Trade
from arena.selectors import listings, markets, standings
from arena.selectors import status as status_selectors
from markets.models import Market, MarketSyncRun
from tests.api.helpers import API, assert_envelope, get_json
from tests.page_world import World, build_world


@pytest.fixture
def world(db: None) -> World:
    return build_world(scale=2)


def money(value: Decimal | None) -> str | None:
    return None if value is None else format(value, "f")


# --- agents -------------------------------------------------------------------------------


def test_an_agent_has_its_standing_positions_marked_to_market_and_trades(
    world: World, client: Client
) -> None:
    body = get_json(client, f"{API}/agents/{world.agent.pk}")
    (standing,) = standings.agent_standings(agents=Agent.objects.filter(pk=world.agent.pk))
    assert body["standing"]["agent"] == world.agent.pk
    assert body["standing"]["model"] == world.model.internal_id
    assert Decimal(body["standing"]["total_value"]) == standing.total_value
    assert Decimal(body["standing"]["cash"]) == standing.cash

    rows = standings.agent_positions(agent=world.agent)
    assert [p["id"] for p in body["positions"]] == [r.position.pk for r in rows]
    for got, row in zip(body["positions"], rows, strict=True):
        assert got["market"] == row.position.market.polymarket_id
        assert got["status"] == row.position.status
        assert got["price_now"] == money(row.price_now)
        assert got["value_now"] == money(row.value_now)
    open_rows = [p for p in body["positions"] if p["status"] == "open"]
    assert open_rows
    assert all(p["price_now"] is not None for p in open_rows)
    assert all(p["price_now"] is None for p in body["positions"] if p["status"] != "open")

    # The latest trades, as the agent's page orders them; every one is counted.
    trades = list(standings.agent_trades(agent=world.agent)[:AGENT_TRADES_SHOWN])
    assert [t["id"] for t in body["trades"]] == [t.pk for t in trades]
    assert body["trades_count"] == world.agent.trades.count() == len(trades)
    rejected = next(t for t in body["trades"] if t["status"] == "rejected")
    assert rejected["market"] is None
    assert rejected["reject_reason"] == "plain text"
    executed = next(t for t in body["trades"] if t["kind"] == "BUY" and t["status"] == "executed")
    assert isinstance(executed["amount"], str)
    assert Decimal(executed["amount"]) == Decimal("50")
    assert Decimal(executed["price"]) == Decimal("0.4")


@pytest.mark.parametrize("agent_id", ["abc", "-1", "0", "1e3", str(2**40), "1;DROP TABLE"])
def test_a_hostile_agent_id_is_a_4xx_in_the_envelope(
    db: None, client: Client, agent_id: str
) -> None:
    response = client.get(f"{API}/agents/{agent_id}")
    assert 400 <= response.status_code < 500
    assert_envelope(response.json(), response.status_code)


def test_an_unknown_agent_is_a_404(db: None, client: Client) -> None:
    assert_envelope(get_json(client, f"{API}/agents/999999", 404), 404)


# --- decisions ----------------------------------------------------------------------------


def test_decisions_list_every_decision_newest_week_first(db: None, client: Client) -> None:
    for _ in range(2):
        build_world(scale=1)
    body = get_json(client, f"{API}/decisions?page_size=100")
    expected = list(listings.decision_list())
    assert body["count"] == Decision.objects.count() == len(expected)
    assert [d["id"] for d in body["results"]] == [d.pk for d in expected]
    weeks = [d["week_start"] for d in body["results"]]
    assert weeks == sorted(weeks, reverse=True)
    assert "system_prompt" not in body["results"][0]


def test_decisions_page_through_without_gap_or_repeat(db: None, client: Client) -> None:
    for _ in range(2):
        build_world(scale=1)
    seen: list[int] = []
    page = 1
    while True:
        body = get_json(client, f"{API}/decisions?page={page}&page_size=3")
        if not body["results"]:
            break
        seen += [d["id"] for d in body["results"]]
        page += 1
    assert seen == [d.pk for d in listings.decision_list()]
    assert len(set(seen)) == Decision.objects.count()


def test_decisions_filter_by_model_cohort_week_action_and_status(
    world: World, client: Client
) -> None:
    other = build_world(scale=1)
    Decision.objects.filter(pk=other.decision.pk).update(
        action=Decision.Action.HOLD, status=Decision.Status.SKIPPED
    )

    def ids(query: str) -> list[int]:
        return [
            d["id"] for d in get_json(client, f"{API}/decisions?page_size=100&{query}")["results"]
        ]

    # The second cohort's lineup holds the first world's model too (it is active).
    assert ids(f"model={world.model.internal_id}") == [
        d.pk for d in listings.decision_list(model=world.model)
    ]
    assert world.decision.pk in ids(f"model={world.model.internal_id}")
    assert set(ids(f"cohort={world.cohort.number}")) == set(
        world.cohort.decisions.values_list("pk", flat=True)
    )
    assert set(ids(f"week={other.cohort.week_start.isoformat()}")) == set(
        other.cohort.decisions.values_list("pk", flat=True)
    )
    assert ids("action=HOLD") == [other.decision.pk]
    assert ids("status=skipped") == [other.decision.pk]
    assert ids(f"model={other.model.internal_id}&action=BET") == []
    assert ids(f"model={other.model.internal_id}&action=HOLD") == [other.decision.pk]
    assert ids(f"cohort={world.cohort.number}&week={other.cohort.week_start.isoformat()}") == []


@pytest.mark.parametrize(
    "query",
    [
        "model=no-such-model",
        "cohort=424242",
        "cohort=abc",
        "cohort=-3",
        "week=2026-02-30",
        "week=yesterday",
        "action=BUY",
        "status=%27%20OR%201%3D1%20--",
        "model=%27%3B%20DROP%20TABLE%20arena_decision%3B%20--",
        "model=a%00b",
        "week=99999-01-01",
        "page=0",
        "page=-1",
        "page_size=1000000000",
        "page_size=0",
        f"page={10**12}",
    ],
)
def test_hostile_decision_filters_are_a_422_in_the_envelope(
    world: World, client: Client, query: str
) -> None:
    assert_envelope(get_json(client, f"{API}/decisions?{query}", 422), 422)


def test_a_decision_has_its_prompts_parsed_decision_attempts_and_trades(
    world: World, client: Client
) -> None:
    body = get_json(client, f"{API}/decisions/{world.decision.pk}")
    decision = standings.decision_detail(decision_id=world.decision.pk)
    assert body["id"] == decision.pk
    assert body["model"] == world.model.internal_id
    assert body["cohort"] == world.cohort.number
    assert body["system_prompt"] == decision.system_prompt == "system plain text"
    assert body["user_prompt"] == decision.user_prompt == "user plain text"
    assert body["parsed"] == decision.parsed
    attempts = sorted(decision.attempts.all(), key=lambda a: a.number)
    assert [a["number"] for a in body["attempts"]] == [a.number for a in attempts] == [1, 2, 3]
    for got, attempt in zip(body["attempts"], attempts, strict=True):
        assert got["responder"] == attempt.responder
        assert got["raw_response"] == attempt.raw_response
        assert got["parse_error"] == attempt.parse_error
        assert got["api_error"] == attempt.api_error
        assert got["latency_ms"] == attempt.latency_ms
        assert isinstance(got["cost_usd"], str)
        assert Decimal(got["cost_usd"]) == attempt.cost_usd
    assert {t["id"] for t in body["trades"]} == {t.pk for t in decision.trades.all()}


def test_decision_text_comes_back_verbatim_not_escaped(db: None, client: Client) -> None:
    hostile = build_world(text="<script>alert('x')</script> & \"quotes\"")
    body = get_json(client, f"{API}/decisions/{hostile.decision.pk}")
    assert body["reasoning"] == "<script>alert('x')</script> & \"quotes\""
    assert body["attempts"][0]["raw_response"] == body["reasoning"]


@pytest.mark.parametrize("decision_id", ["abc", "0", "-5", str(2**63)])
def test_a_hostile_decision_id_is_a_4xx(db: None, client: Client, decision_id: str) -> None:
    response = client.get(f"{API}/decisions/{decision_id}")
    assert 400 <= response.status_code < 500
    assert_envelope(response.json(), response.status_code)


def test_an_unknown_decision_is_a_404(db: None, client: Client) -> None:
    assert_envelope(get_json(client, f"{API}/decisions/999999", 404), 404)


# --- markets ------------------------------------------------------------------------------


def test_a_market_has_its_facts_status_holders_trades_and_scored_bets(
    world: World, client: Client
) -> None:
    body = get_json(client, f"{API}/markets/{world.market.polymarket_id}")
    market = markets.market_get(polymarket_id=world.market.polymarket_id)
    page = markets.market_page(market=market)
    assert body["polymarket_id"] == market.polymarket_id
    assert body["question"] == market.question
    assert body["outcomes"] == ["Yes", "No"]
    assert body["volume"] == format(market.volume, "f")
    assert body["status"] == market.status == "open"
    assert body["status_label"] == market.status_label == "Open"
    assert [(h["agent"], h["status"]) for h in body["holders"]] == [
        (h.position.agent_id, h.position.status) for h in page.holdings
    ]
    assert [t["id"] for t in body["trades"]] == [t.trade.pk for t in page.trades]
    assert [t["id"] for t in body["scored"]] == [t.trade.pk for t in page.scored]
    assert (body["holders_count"], body["trades_count"], body["scored_count"]) == (
        len(page.holdings),
        len(page.trades),
        len(page.scored),
    )
    assert any(h["model"] == world.model.internal_id for h in body["holders"])


def test_a_busy_market_shows_its_latest_trades_as_the_page_does(
    world: World, client: Client
) -> None:
    Trade.objects.bulk_create(
        Trade(
            decision=world.decision,
            agent=world.agent,
            market=world.market,
            order_index=100 + k,
            kind=Trade.Kind.BUY,
            status=Trade.Status.REJECTED,
            reject_reason=f"order {k}",
            created_at=datetime(2040, 6, 1, tzinfo=UTC) + timedelta(minutes=k),
        )
        for k in range(markets.LIST_LIMIT + 10)
    )
    body = get_json(client, f"{API}/markets/{world.market.polymarket_id}")
    page = markets.market_page(market=world.market)
    assert body["trades_count"] == len(page.trades) > markets.LIST_LIMIT
    assert [t["id"] for t in body["trades"]] == [t.trade.pk for t in page.trades_shown]
    assert len(body["trades"]) == markets.LIST_LIMIT
    assert body["trades"][-1]["reject_reason"] == f"order {markets.LIST_LIMIT + 9}"


def test_a_scored_market_lists_its_scored_bets(world: World, client: Client) -> None:
    scored_market = Market.objects.get(polymarket_id=world.market.polymarket_id.replace("-0", "-1"))
    Market.objects.filter(pk=scored_market.pk).update(
        resolution=Market.Resolution.RESOLVED, winning_outcome="Yes", closed=True
    )
    body = get_json(client, f"{API}/markets/{scored_market.polymarket_id}")
    assert body["status"] == "resolved"
    assert body["status_label"] == "Resolved: Yes"
    assert body["scored"]
    assert all(t["brier"] == pytest.approx(0.9604) for t in body["scored"])


@pytest.mark.parametrize("market_id", ["no-such", "1%27%20OR%201=1", "x" * 40, "%00"])
def test_an_unknown_or_hostile_market_id_is_a_4xx(db: None, client: Client, market_id: str) -> None:
    response = client.get(f"{API}/markets/{market_id}")
    assert response.status_code in (404, 422)
    assert_envelope(response.json(), response.status_code)


# --- status -------------------------------------------------------------------------------


def test_an_empty_system_has_no_last_runs_but_its_schedules(db: None, client: Client) -> None:
    body = get_json(client, f"{API}/status")
    found = status_selectors.system_status()
    assert body["last_sync"] is None
    assert body["last_run"] is None
    assert body["last_tick"] is None
    assert body["last_check"] is None
    assert [j["task"] for j in body["jobs"]] == [j.task for j in found.jobs]
    assert [j["name"] for j in body["jobs"]] == [j.name for j in found.jobs]


def test_status_shows_the_last_sync_run_tick_and_check_with_outcomes(
    world: World, client: Client
) -> None:
    at = datetime.now(UTC).replace(microsecond=0)
    MarketSyncRun.objects.create(
        source="gamma", requested=500, fetched=498, created=3, updated=495, rejected=2,
        status="ok", started_at=at - timedelta(seconds=20), finished_at=at,
    )  # fmt: skip
    SnapshotTick.objects.create(
        slot=at, markets_refreshed=12, snapshots_written=9, refresh_error="Gamma answered 503"
    )
    ResolutionCheck.objects.create(
        checked_at=at, markets_checked=9, resolved=["517310"], cancelled=["517311"],
        completed_cohorts=[3],
    )  # fmt: skip
    body = get_json(client, f"{API}/status")
    found = status_selectors.system_status()
    assert body["last_sync"]["fetched"] == 498
    assert body["last_sync"]["stale"] is False
    assert body["last_tick"]["refresh_error"] == "Gamma answered 503"
    assert body["last_check"] == {
        "checked_at": at.isoformat().replace("+00:00", "Z"),
        "markets_checked": 9,
        "resolved": ["517310"],
        "cancelled": ["517311"],
        "failed": [],
        "completed_cohorts": [3],
        "error": "",
        "ok": True,
    }
    assert found.last_run is not None
    run = body["last_run"]
    assert run["id"] == found.last_run.run.pk == DecisionRun.objects.latest("started_at").pk
    assert run["decisions"] == found.last_run.decisions
    assert run["by_status"] == dict(found.last_run.by_status)
    assert all(j["next_run_at"] is None or j["next_run_at"].endswith("Z") for j in body["jobs"])


# --- constant queries ---------------------------------------------------------------------


def _queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200, response.content
    return len(ctx.captured_queries)


@pytest.mark.parametrize(
    "url",
    [
        "/agents/{agent}",
        "/decisions?page_size=100",
        "/decisions?page_size=100&model={model}&cohort={cohort}&action=BET&status=done",
        "/decisions/{decision}",
        "/markets/{market}",
        "/status",
    ],
)
def test_every_endpoint_runs_a_constant_number_of_queries(
    db: None, client: Client, url: str
) -> None:
    counts = []
    for scale in (1, 4):
        world = build_world(scale=scale)
        filled = url.format(
            agent=world.agent.pk,
            model=world.model.internal_id,
            cohort=world.cohort.number,
            decision=world.decision.pk,
            market=world.market.polymarket_id,
        )
        counts.append(_queries(client, API + filled))
    assert counts[0] == counts[1]


def test_a_model_id_holding_a_nul_is_a_404_not_a_500(db: None, client: Client) -> None:
    assert_envelope(get_json(client, f"{API}/models/a%00b", 404), 404)
