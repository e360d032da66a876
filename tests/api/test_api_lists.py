"""The API's lists: every trade (executed and rejected), the resolutions, the market
catalogue with the bets on each market, a market's price history while held, and an agent's
positions and trades, each paginated in a stable order (a maximum page size) and filtered;
an agent's own answer bounds its trades. Filters naming nothing known are a 422, a backwards
date range a 400, every hostile parameter a 4xx in the envelope, never a 500; each list runs
the same queries whatever the data size.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from arena.models import Agent, Decision, Position, Trade
from arena.selectors import markets as market_pages
from arena.selectors import standings
from markets import selectors as catalogue
from markets.models import Market
from tests.api.helpers import API, assert_envelope, get_json
from tests.page_world import World, build_world


@pytest.fixture
def world(db: None) -> World:
    return build_world(scale=2)


def every_page(client: Client, url: str, page_size: int = 3) -> list[dict[str, Any]]:
    """Read a paginated list to its end, checking each page's count and size."""
    rows: list[dict[str, Any]] = []
    page = 1
    joiner = "&" if "?" in url else "?"
    while True:
        body = get_json(client, f"{API}{url}{joiner}page={page}&page_size={page_size}")
        assert (body["page"], body["page_size"]) == (page, page_size)
        if not body["results"]:
            assert len(rows) == body["count"]
            return rows
        assert len(body["results"]) <= page_size
        rows += body["results"]
        page += 1


def ids(rows: list[dict[str, Any]], key: str = "id") -> list[Any]:
    return [row[key] for row in rows]


def newest_first(trades: list[Trade]) -> list[Trade]:
    """The trades lists' one order: the newest first, a decision's orders in their order, the
    newer id first among equals."""
    trades = sorted(trades, key=lambda t: t.pk, reverse=True)
    trades.sort(key=lambda t: t.order_index)
    trades.sort(key=lambda t: t.created_at, reverse=True)
    return trades


# --- trades -------------------------------------------------------------------------------


def test_trades_list_every_order_executed_and_rejected_in_one_order(
    world: World, client: Client
) -> None:
    build_world(scale=1)
    rows = every_page(client, "/trades")
    trades = newest_first(list(Trade.objects.all()))
    assert ids(rows) == [t.pk for t in trades]
    assert {r["status"] for r in rows} == {"executed", "rejected"}
    assert {r["kind"] for r in rows} == {"BUY", "SELL"}


def test_a_trade_row_names_its_agent_cohort_model_and_market(world: World, client: Client) -> None:
    rows = get_json(client, f"{API}/trades?agent={world.agent.pk}&page_size=100")["results"]
    buy = next(r for r in rows if r["kind"] == "BUY" and r["status"] == "executed")
    trade = Trade.objects.select_related("market").get(pk=buy["id"])
    assert trade.market is not None
    assert buy["agent"] == world.agent.pk
    assert buy["cohort"] == world.cohort.number
    assert buy["model"] == world.model.internal_id
    assert buy["market"] == trade.market.polymarket_id
    assert buy["amount"] == format(trade.amount, "f")
    assert buy["price"] == format(trade.price, "f")
    assert buy["offline"] is False
    rejected = next(r for r in rows if r["status"] == "rejected")
    assert rejected["market"] is None
    assert rejected["amount"] is None
    assert rejected["reject_reason"] == "plain text"


def test_an_offline_agents_trades_are_marked_offline(world: World, client: Client) -> None:
    Decision.objects.filter(agent=world.agent).update(responder=Decision.Responder.OFFLINE)
    rows = get_json(client, f"{API}/trades?cohort={world.cohort.number}&page_size=100")["results"]
    assert rows
    assert all(r["offline"] == (r["agent"] == world.agent.pk) for r in rows)


FILTERS: dict[str, tuple[Callable[[World], str], Callable[[World], dict[str, Any]]]] = {
    "model": (lambda w: f"model={w.model.internal_id}", lambda w: {"agent__model": w.model}),
    "cohort": (lambda w: f"cohort={w.cohort.number}", lambda w: {"agent__cohort": w.cohort}),
    "agent": (lambda w: f"agent={w.agent.pk}", lambda w: {"agent": w.agent}),
    "market": (lambda w: f"market={w.market.polymarket_id}", lambda w: {"market": w.market}),
    "kind": (lambda w: "kind=SELL", lambda w: {"kind": "SELL"}),
    "status": (lambda w: "status=rejected", lambda w: {"status": "rejected"}),
    "several": (
        lambda w: (
            f"cohort={w.cohort.number}&kind=BUY&status=executed&market={w.market.polymarket_id}"
        ),
        lambda w: {
            "agent__cohort": w.cohort,
            "kind": "BUY",
            "status": "executed",
            "market": w.market,
        },
    ),
}


@pytest.mark.parametrize("name", list(FILTERS))
def test_trades_filter_by_model_cohort_agent_market_kind_and_status(
    world: World, client: Client, name: str
) -> None:
    build_world(scale=1)  # another cohort, whose trades every filter but kind/status excludes
    query, lookups = FILTERS[name]
    rows = every_page(client, f"/trades?{query(world)}", page_size=7)
    expected = [t.pk for t in newest_first(list(Trade.objects.filter(**lookups(world))))]
    assert expected
    assert len(expected) < Trade.objects.count()
    assert ids(rows) == expected


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("model=no-such-model", "model"),
        ("cohort=424242", "cohort"),
        ("agent=424242", "agent"),
        ("market=999999999", "market"),
    ],
)
def test_a_trade_filter_naming_nothing_known_is_a_422(
    world: World, client: Client, query: str, field: str
) -> None:
    body = get_json(client, f"{API}/trades?{query}", 422)
    assert_envelope(body, 422)
    assert body["error"]["message"].startswith(f"{field}:")


# --- agents -------------------------------------------------------------------------------


def test_an_agents_positions_page_through_open_first_then_newest(
    world: World, client: Client
) -> None:
    rows = every_page(client, f"/agents/{world.agent.pk}/positions", page_size=1)
    positions = list(world.agent.positions.all())
    # Open first, then the newest opened, the newer id first among those opened together.
    positions.sort(key=lambda p: p.pk, reverse=True)
    positions.sort(key=lambda p: p.opened_at, reverse=True)
    positions.sort(key=lambda p: p.status != Position.Status.OPEN)
    assert ids(rows) == [p.pk for p in positions]
    expected = standings.agent_positions(agent=world.agent)
    for got, row in zip(rows, expected, strict=True):
        assert got["status"] == row.position.status
        assert got["value_now"] == (None if row.value_now is None else format(row.value_now, "f"))
    assert any(r["status"] == "open" for r in rows)
    assert any(r["status"] != "open" for r in rows)


def test_an_agents_trades_page_through_in_one_order_everywhere(
    world: World, client: Client
) -> None:
    rows = every_page(client, f"/agents/{world.agent.pk}/trades", page_size=1)
    assert ids(rows) == [t.pk for t in newest_first(list(world.agent.trades.all()))]
    listed = get_json(client, f"{API}/trades?agent={world.agent.pk}&page_size=100")["results"]
    assert rows == listed
    detail = get_json(client, f"{API}/agents/{world.agent.pk}")
    assert ids(detail["trades"]) == ids(rows)[:50]


def test_an_agent_shows_its_latest_trades_and_counts_them_all(world: World, client: Client) -> None:
    decision = world.decision
    Trade.objects.bulk_create(
        Trade(
            decision=decision,
            agent=world.agent,
            order_index=100 + k,
            kind=Trade.Kind.BUY,
            status=Trade.Status.REJECTED,
            reject_reason=f"order {k}",
            created_at=datetime(2040, 6, 1, tzinfo=UTC),  # after the world's own trades
        )
        for k in range(60)
    )
    body = get_json(client, f"{API}/agents/{world.agent.pk}")
    total = world.agent.trades.count()
    assert total > 60
    assert body["trades_count"] == total
    latest = list(standings.agent_trades(agent=world.agent)[:50])
    assert ids(body["trades"]) == [t.pk for t in latest]
    assert {t["reject_reason"] for t in body["trades"]} <= {f"order {k}" for k in range(60)}
    assert len(body["trades"]) == 50


@pytest.mark.parametrize("what", ["positions", "trades"])
def test_an_unknown_agents_lists_are_a_404(db: None, client: Client, what: str) -> None:
    assert_envelope(get_json(client, f"{API}/agents/999999/{what}", 404), 404)


# --- resolutions --------------------------------------------------------------------------

T1 = datetime(2031, 3, 1, 10, 0, tzinfo=UTC)
T2 = datetime(2031, 3, 2, 23, 59, 59, tzinfo=UTC)
T3 = datetime(2031, 3, 4, 0, 0, tzinfo=UTC)


@pytest.fixture
def resolved(world: World) -> dict[str, Market]:
    """Three markets of the world resolved at T1 and T3 and one cancelled at T2 (its
    positions refunded); the fourth still open."""
    markets = list(Market.objects.filter(polymarket_id__startswith=world.market.polymarket_id[:-1]))
    by_index = {m.polymarket_id.rsplit("-", 1)[1]: m for m in markets}
    for key, at in (("1", T1), ("3", T3)):
        Market.objects.filter(pk=by_index[key].pk).update(
            resolution=Market.Resolution.RESOLVED,
            winning_outcome="Yes",
            closed=True,
            resolved_at=at,
        )
    Market.objects.filter(pk=by_index["2"].pk).update(
        resolution=Market.Resolution.CANCELLED, closed=True, resolved_at=T2,
        resolution_note="ambiguous",
    )  # fmt: skip
    Position.objects.filter(market=by_index["2"]).update(status=Position.Status.CANCELLED)
    return {"t1": by_index["1"], "t2": by_index["2"], "t3": by_index["3"], "open": by_index["0"]}


def test_resolutions_list_resolved_and_cancelled_markets_newest_first_with_their_counts(
    resolved: dict[str, Market], client: Client
) -> None:
    rows = every_page(client, "/resolutions", page_size=2)
    expected = [resolved["t3"], resolved["t2"], resolved["t1"]]
    assert ids(rows, "polymarket_id") == [m.polymarket_id for m in expected]
    for got, market in zip(rows, expected, strict=True):
        settled = Position.objects.filter(
            market=market, status__in=[Position.Status.SETTLED, Position.Status.CANCELLED]
        ).count()
        scored = Trade.objects.filter(
            market=market, kind="BUY", status="executed", brier_score__isnull=False
        ).count()
        assert (got["positions_settled"], got["bets_scored"]) == (settled, scored)
        assert got["positions_settled"] > 0
    cancelled = rows[1]
    assert (cancelled["resolution"], cancelled["winning_outcome"]) == ("cancelled", "")
    assert cancelled["bets_scored"] == 0
    assert cancelled["resolution_note"] == "ambiguous"
    assert rows[0]["resolution"] == "resolved"
    assert rows[0]["winning_outcome"] == "Yes"
    assert rows[0]["bets_scored"] > 0
    assert rows[0]["resolved_at"] == "2031-03-04T00:00:00Z"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("resolution=cancelled", ["t2"]),
        ("resolution=resolved", ["t3", "t1"]),
        ("since=2031-03-02&until=2031-03-02", ["t2"]),  # both days included, to the last second
        ("since=2031-03-02", ["t3", "t2"]),
        ("until=2031-03-01", ["t1"]),
        ("since=2031-03-03&until=2031-03-03", []),
        ("since=0001-01-01&until=9999-12-31", ["t3", "t2", "t1"]),
        ("resolution=resolved&since=2031-03-02", ["t3"]),
    ],
)
def test_resolutions_filter_by_kind_and_utc_days(
    resolved: dict[str, Market], client: Client, query: str, expected: list[str]
) -> None:
    rows = get_json(client, f"{API}/resolutions?{query}&page_size=100")["results"]
    assert ids(rows, "polymarket_id") == [resolved[key].polymarket_id for key in expected]


def test_an_until_before_since_is_a_400_in_the_envelope(db: None, client: Client) -> None:
    body = get_json(client, f"{API}/resolutions?since=2031-03-02&until=2031-03-01", 400)
    assert_envelope(body, 400, "bad_request")
    assert "until" in body["error"]["message"]


# --- markets ------------------------------------------------------------------------------


def test_markets_list_the_catalogue_in_its_order_with_the_bets_on_each(
    world: World, client: Client
) -> None:
    Market.objects.create(polymarket_id="nobody-bet", question="Untouched?", volume=Decimal(5))
    rows = every_page(client, "/markets")
    assert ids(rows, "polymarket_id") == [m.polymarket_id for m in catalogue.market_list()]
    for row in rows:
        bets = Trade.objects.filter(
            market__polymarket_id=row["polymarket_id"], kind="BUY", status="executed"
        ).count()
        assert row["bets"] == bets
    held = next(r for r in rows if r["polymarket_id"] == world.market.polymarket_id)
    assert held["bets"] == world.cohort.agents.count()
    assert Decimal(held["volume"]) == world.market.volume
    assert held["status"] == "open"
    assert next(r for r in rows if r["polymarket_id"] == "nobody-bet")["bets"] == 0


def test_markets_held_true_lists_only_markets_agents_bet_on(world: World, client: Client) -> None:
    Market.objects.create(polymarket_id="nobody-bet", question="Untouched?", volume=Decimal(5))
    bet_on = set(
        Trade.objects.filter(kind="BUY", status="executed").values_list(
            "market__polymarket_id", flat=True
        )
    )
    held = every_page(client, "/markets?held=true")
    assert set(ids(held, "polymarket_id")) == bet_on
    assert all(r["bets"] > 0 for r in held)
    assert ids(every_page(client, "/markets?held=false"), "polymarket_id") == ["nobody-bet"]


def test_markets_filter_by_status_and_search(world: World, client: Client) -> None:
    Market.objects.filter(pk=world.market.pk).update(
        resolution=Market.Resolution.RESOLVED, winning_outcome="No", closed=True
    )
    resolved = get_json(client, f"{API}/markets?status=resolved")["results"]
    assert ids(resolved, "polymarket_id") == [world.market.polymarket_id]
    assert resolved[0]["status_label"] == "Resolved: No"
    found = get_json(client, f"{API}/markets?q={world.market.polymarket_id}")["results"]
    assert ids(found, "polymarket_id") == [world.market.polymarket_id]
    assert get_json(client, f"{API}/markets?q=no%20such%20question")["results"] == []


def test_a_market_has_its_price_history_while_held(world: World, client: Client) -> None:
    body = get_json(client, f"{API}/markets/{world.market.polymarket_id}")
    page = market_pages.market_page(market=world.market)
    assert page.price_points
    assert page.held_from is not None
    assert body["held_from"] == page.held_from.isoformat().replace("+00:00", "Z")
    assert body["held_until"] is None  # still held
    assert len(body["price_history"]) == len(page.price_points)
    for got, point in zip(body["price_history"], page.price_points, strict=True):
        assert got["at"] == point.at.isoformat().replace("+00:00", "Z")
        assert got["run"] == point.run_id
        assert got["source"] == point.source
        assert [(p["outcome"], p["price"]) for p in got["prices"]] == [
            (outcome, None if price is None else format(price, "f"))
            for outcome, price in point.prices
        ]


def test_a_market_nobody_held_has_no_price_history(db: None, client: Client) -> None:
    Market.objects.create(polymarket_id="nobody-bet", question="Untouched?", volume=Decimal(5))
    body = get_json(client, f"{API}/markets/nobody-bet")
    assert (body["held_from"], body["held_until"], body["price_history"]) == (None, None, [])


# --- hostile parameters -------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "/trades?page_size=1000000000",
        "/trades?page_size=0",
        "/trades?page=-1",
        f"/trades?page={10**12}",
        "/trades?agent=-1",
        "/trades?agent=abc",
        f"/trades?agent={2**40}",
        "/trades?cohort=0",
        "/trades?cohort=1%20OR%201=1",
        "/trades?model=a%00b",
        "/trades?model=" + "m" * 300,
        "/trades?market=%27%3B%20DROP%20TABLE%20arena_trade%3B%20--",
        "/trades?market=" + "9" * 40,
        "/trades?market=%00",
        "/trades?kind=buy",
        "/trades?status=%27%20OR%201%3D1%20--",
        "/resolutions?since=2026-02-30",
        "/resolutions?until=yesterday",
        "/resolutions?since=99999-01-01",
        "/resolutions?resolution=open",
        "/resolutions?resolution=%00",
        "/resolutions?page_size=1000000000",
        "/markets?page_size=1000000000",
        "/markets?page=abc",
        "/markets?held=maybe",
        "/markets?status=awaiting",
        "/markets?sort=%27;DROP%20TABLE",
        "/markets?q=a%00b",
        "/markets?q=" + "q" * 300,
        "/markets?category=" + "c" * 100,
        "/agents/-1/positions",
        "/agents/abc/trades",
        f"/agents/{2**40}/positions",
        "/agents/1/positions?page_size=1000000000",
        "/agents/1/trades?page=0",
    ],
)
def test_hostile_list_parameters_are_a_422_in_the_envelope(
    db: None, client: Client, url: str
) -> None:
    assert_envelope(get_json(client, API + url, 422), 422, "unprocessable_entity")


def test_sql_looking_search_text_is_only_text(world: World, client: Client) -> None:
    body = get_json(client, f"{API}/markets?q=%27%20OR%201%3D1%20--")
    assert body["results"] == []
    assert body["count"] == 0


# --- constant queries ---------------------------------------------------------------------

LISTS = [
    "/trades?page_size=100",
    "/trades?page_size=100&model={model}&cohort={cohort}&market={market}&kind=BUY",
    "/agents/{agent}/positions?page_size=100",
    "/agents/{agent}/trades?page_size=100",
    "/agents/{agent}",
    "/markets?page_size=100",
    "/markets?page_size=100&held=true",
    "/resolutions?page_size=100",
]


@pytest.mark.parametrize("url", LISTS)
def test_each_list_runs_the_same_queries_at_four_times_the_data(
    db: None, client: Client, url: str
) -> None:
    counts = []
    for scale in (1, 4):
        world = build_world(scale=scale)
        Market.objects.filter(polymarket_id__startswith=world.market.polymarket_id[:-1]).update(
            resolution=Market.Resolution.CANCELLED, resolved_at=T1
        )
        filled = url.format(
            agent=world.agent.pk,
            model=world.model.internal_id,
            cohort=world.cohort.number,
            market=world.market.polymarket_id,
        )
        with CaptureQueriesContext(connection) as queries:
            response = client.get(API + filled)
        assert response.status_code == 200, response.content
        assert len(response.json()) > 0
        counts.append(len(queries.captured_queries))
    assert counts[0] == counts[1]
    assert Agent.objects.count() > 2
