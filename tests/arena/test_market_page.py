"""A market's page: which agents hold which side at what entry, every
trade on it, its price history while held (from the frozen run prices), each bet's Brier
after resolution, and a market past its close date that has not resolved says "closed,
awaiting resolution" — here and in the catalogue.

The positions and trades come from the engine (trade_buy / trade_sell / trade_reject and
market_settle) on the run frozen from the project's real Gamma recordings.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
import time_machine
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import resolve, reverse
from django.utils.html import escape

from agents.types import MarketView
from arena import clock
from arena.models import Agent, Cohort, Decision, DecisionRun, Position, SnapshotMarket, Trade
from arena.selectors import markets as market_selectors
from arena.selectors.markets import market_page
from arena.services.decisions.lifecycle import decision_claim
from arena.services.frozen import FrozenMarkets
from arena.services.settlement import market_settle
from arena.services.trades import trade_buy, trade_reject, trade_sell
from markets.models import Market
from markets.resolution import Verdict
from markets.selectors import MarketFilter, market_list
from tests.arena.conftest import RUN_AT, WEEK, shared_week
from tests.arena.factories import BetOrderFactory, SellOrderFactory

# Pages are read a day after the run: positions opened a minute after it are still held.
PAGE_AT = RUN_AT + timedelta(days=1)
BOUGHT_AT = RUN_AT + timedelta(minutes=1)


cohort, run = shared_week()


@pytest.fixture(autouse=True)
def _page_day() -> Iterator[None]:
    with time_machine.travel(PAGE_AT, tick=False):
        yield


def page(client: Client, polymarket_id: str) -> str:
    response = client.get(f"/markets/{polymarket_id}/")
    assert response.status_code == 200
    return response.content.decode()


def table(html: str, table_id: str) -> str:
    match = re.search(rf'<table[^>]*id="{table_id}".*?</table>', html, flags=re.S)
    assert match, f"no table {table_id}"
    return match.group(0)


def rows(html: str) -> list[str]:
    return re.findall(r"<tr>.*?</tr>", html.split("<tbody>", 1)[1], flags=re.S)


def buy(
    decision: Decision,
    frozen: FrozenMarkets,
    market: MarketView,
    side: str,
    amount: str,
    index: int,
) -> Trade:
    with clock.simulated(BOUGHT_AT):
        return trade_buy(
            decision=decision,
            order=BetOrderFactory.build(
                market_id=market.market_id, side=side, amount=Decimal(amount)
            ),
            frozen=frozen,
            index=index,
        )


def decision_of(agent: Agent) -> Decision:
    claimed = decision_claim(agent=agent, week_start=WEEK, now=RUN_AT)
    assert claimed is not None
    return claimed


def freeze(market_id: str, at: datetime, yes: str) -> DecisionRun:
    """Store a decision run at `at` that froze the market with YES at `yes`."""
    market = Market.objects.get(polymarket_id=market_id)
    run = DecisionRun.objects.create(week_start=WEEK, started_at=at, source="demo")
    SnapshotMarket.objects.create(
        run=run,
        market=market,
        rank=1,
        polymarket_id=market.polymarket_id,
        question=market.question,
        category=market.category,
        outcomes=market.outcomes,
        outcome_prices=[yes, str(1 - Decimal(yes))],
        volume=market.volume,
        close_date=market.close_date,
    )
    return run


# ------------------------------------------------------------------------ holders and trades


def test_holders_show_each_agents_side_shares_average_entry_and_cost_basis(
    client: Client,
    decision: Decision,
    other_decision: Decision,
    frozen: FrozenMarkets,
    binary: MarketView,
) -> None:
    yes = buy(decision, frozen, binary, "YES", "500", 0)
    no = buy(other_decision, frozen, binary, "NO", "300", 0)
    holdings = table(page(client, binary.market_id), "holdings")
    assert len(rows(holdings)) == 2
    for trade in (yes, no):
        position = Position.objects.select_related("agent__model", "agent__cohort").get(
            trades=trade
        )
        agent = position.agent
        row = next(r for r in rows(holdings) if escape(agent.model.display_name) in r)
        assert f"<td>{position.side}</td><td>Open</td>" in row
        assert f"{position.shares:,.2f}" in row
        assert f"{(position.avg_entry_price or 0) * 100:.2f}%" in row  # cost basis ÷ shares
        assert f"${position.cost_basis:,.2f}" in row
        assert f'href="/cohorts/{agent.cohort.number}/agents/{agent.pk}/"' in row
        assert f'href="/cohorts/{agent.cohort.number}/"' in row


def test_every_trade_on_the_market_is_listed_including_rejected_ones_with_their_reason(
    client: Client,
    decision: Decision,
    frozen: FrozenMarkets,
    binary: MarketView,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bought = buy(decision, frozen, binary, "YES", "500", 0)
    with clock.simulated(BOUGHT_AT + timedelta(minutes=1)):
        rejected = trade_reject(
            decision=decision,
            order=BetOrderFactory.build(market_id=binary.market_id, amount=Decimal("10")),
            reason="bet $10.00 is under the $50 minimum",
            index=1,
            try_number=1,
        )
    with clock.simulated(BOUGHT_AT + timedelta(minutes=2)):
        sold = trade_sell(
            decision=decision,
            order=SellOrderFactory.build(
                position_id=str(bought.position_id), percentage=Decimal("50")
            ),
            frozen=frozen,
            index=2,
        )
    trades = rows(table(page(client, binary.market_id), "market-trades"))
    assert len(trades) == 3
    first, second, third = trades  # oldest first
    assert "executed" in first
    assert "Buy" in first
    assert f"${bought.amount:,.2f}" in first
    assert '<span class="neg">rejected:</span>' in second
    assert "bet $10.00 is under the $50 minimum" in second
    assert "asked $10.00" in second
    assert rejected.status == Trade.Status.REJECTED
    assert "Sell" in third
    assert f"${sold.amount:,.2f}" in third
    for row in trades:
        assert f'href="/decisions/{decision.pk}/"' in row

    # A market every cohort buys gathers hundreds of trades: the page shows the latest ones.
    monkeypatch.setattr(market_selectors, "LIST_LIMIT", 2)
    html = page(client, binary.market_id)
    latest = rows(table(html, "market-trades"))
    assert latest == trades[1:]
    assert "Showing the latest 2 of 3." in html


def test_an_offline_agents_rows_carry_the_offline_badge(
    client: Client, decision: Decision, frozen: FrozenMarkets, binary: MarketView
) -> None:
    buy(decision, frozen, binary, "YES", "500", 0)
    Decision.objects.filter(pk=decision.pk).update(responder=Decision.Responder.OFFLINE)
    html = page(client, binary.market_id)
    for table_id in ("holdings", "market-trades"):
        (row,) = rows(table(html, table_id))
        assert '<span class="badge offline">offline</span>' in row


# ------------------------------------------------------------------------------- resolution


def test_resolved_market_shows_each_bets_brier_implied_confidence_and_side_won(
    client: Client,
    decision: Decision,
    other_decision: Decision,
    frozen: FrozenMarkets,
    binary: MarketView,
) -> None:
    buy(decision, frozen, binary, "YES", "500", 0)  # 500 / 2,500 max bet: confidence 0.2
    buy(other_decision, frozen, binary, "NO", "300", 0)  # 300 / 2,500: confidence 0.12
    assert market_settle(
        polymarket_id=binary.market_id,
        verdict=Verdict("resolved", "Yes", 0, "test: YES won"),
        now=PAGE_AT,
    )
    html = page(client, binary.market_id)
    assert "Resolved: Yes" in html
    scored = rows(table(html, "scored-bets"))
    assert len(scored) == 2
    yes_row = next(r for r in scored if "<td>YES</td>" in r)
    no_row = next(r for r in scored if "<td>NO</td>" in r)
    # YES bet: f = 0.2, o = 1 → (0.2 − 1)² = 0.64; NO bet: f = 1 − 0.12 = 0.88 → 0.0144
    assert "20%" in yes_row
    assert '<span class="pos">won</span>' in yes_row
    assert "0.6400" in yes_row
    assert "12%" in no_row
    assert '<span class="neg">lost</span>' in no_row
    assert "0.0144" in no_row
    holdings = rows(table(html, "holdings"))
    assert all("<td>Settled</td>" in r for r in holdings)


def test_cancelled_market_says_refunded_and_scores_no_bet(
    client: Client, decision: Decision, frozen: FrozenMarkets, binary: MarketView
) -> None:
    buy(decision, frozen, binary, "YES", "500", 0)
    assert market_settle(
        polymarket_id=binary.market_id,
        verdict=Verdict("cancelled", None, None, "test: ambiguous"),
        now=PAGE_AT,
    )
    html = page(client, binary.market_id)
    assert "Cancelled — refunded" in html
    assert "every open position was refunded its cost basis" in html
    assert 'id="scored-bets"' not in html
    (holding,) = rows(table(html, "holdings"))
    assert "<td>Cancelled (refunded)</td>" in holding
    assert "$500.00" in holding  # the settlement: the cost basis back


# --------------------------------------------------------------------------------- status

CLOSES = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def closing_market(db: None) -> Market:
    market: Market = Market.objects.create(
        polymarket_id="990001",
        question="Will the close date pass?",
        outcomes=["Yes", "No"],
        outcome_prices=["0.4", "0.6"],
        price=Decimal("0.4"),
        volume=Decimal("1000"),
        close_date=CLOSES,
    )
    return market


@pytest.mark.parametrize(
    ("now", "label", "status"),
    [
        (CLOSES - timedelta(seconds=1), "Open", "open"),
        (CLOSES, "Closed, awaiting resolution", "closed"),
        (CLOSES + timedelta(days=200), "Closed, awaiting resolution", "closed"),
    ],
)
def test_a_market_past_its_close_date_not_resolved_says_closed_awaiting_resolution(
    client: Client, closing_market: Market, now: datetime, label: str, status: str
) -> None:
    with time_machine.travel(now, tick=False):
        assert closing_market.status == status
        html = page(client, closing_market.polymarket_id)
        listing = client.get("/markets/", {"q": closing_market.polymarket_id}).content.decode()
        pid = closing_market.polymarket_id
        filtered = client.get("/markets/", {"status": status, "q": pid}).content.decode()
        other = "open" if status == "closed" else "closed"
        excluded = client.get("/markets/", {"status": other, "q": pid}).content.decode()
    assert f'<dd id="market-status">{label}</dd>' in html
    assert f"<td>{label}</td>" in listing
    assert f'href="/markets/{closing_market.polymarket_id}/"' in filtered
    assert f'href="/markets/{closing_market.polymarket_id}/"' not in excluded


def test_a_resolved_market_past_its_close_date_shows_its_outcome(
    client: Client, closing_market: Market
) -> None:
    Market.objects.filter(pk=closing_market.pk).update(
        resolution=Market.Resolution.RESOLVED, winning_outcome="No", closed=True
    )
    with time_machine.travel(CLOSES + timedelta(days=3), tick=False):
        html = page(client, closing_market.polymarket_id)
    assert '<dd id="market-status">Resolved: No' in html


def test_the_status_filter_and_the_rows_status_are_one_definition(db: None) -> None:
    """Whatever the flags and dates, the database filter picks exactly the markets whose own
    status says "closed, awaiting resolution" (and "open" the rest of the unresolved ones)."""
    cases = [
        (closed, resolution, close_date)
        for closed in (False, True)
        for resolution in Market.Resolution.values
        for close_date in (None, CLOSES - timedelta(days=1), CLOSES, CLOSES + timedelta(days=1))
    ]
    for n, (closed, resolution, close_date) in enumerate(cases):
        Market.objects.create(
            polymarket_id=f"98{n:04d}",
            question=f"case {n}",
            outcomes=["Yes", "No"],
            closed=closed,
            resolution=resolution,
            winning_outcome="Yes" if resolution == Market.Resolution.RESOLVED else "",
            close_date=close_date,
        )
    markets = Market.objects.filter(polymarket_id__startswith="98")
    for status in Market.Status.values:
        filtered = market_list(filters=MarketFilter(status=status, q=""), now=CLOSES)
        assert {m.pk for m in filtered if m.polymarket_id.startswith("98")} == {
            m.pk for m in markets if m.status_at(CLOSES) == status
        }, status


# ---------------------------------------------------------------------------- price history


def test_price_history_is_the_frozen_run_prices_while_the_market_was_held(
    client: Client, decision: Decision, frozen: FrozenMarkets, binary: MarketView, run: DecisionRun
) -> None:
    before = freeze(binary.market_id, RUN_AT - timedelta(days=7), "0.3100")  # nobody held it
    bought = buy(decision, frozen, binary, "YES", "500", 0)  # at the frozen price of `run`
    held = freeze(binary.market_id, RUN_AT + timedelta(hours=6), "0.4200")
    Market.objects.filter(polymarket_id=binary.market_id).update(
        last_synced_at=RUN_AT + timedelta(hours=9), outcome_prices=["0.4400", "0.5600"]
    )
    with clock.simulated(RUN_AT + timedelta(hours=12)):
        trade_sell(
            decision=decision,
            order=SellOrderFactory.build(position_id=str(bought.position_id)),
            frozen=frozen,
            index=1,
        )
    after = freeze(binary.market_id, RUN_AT + timedelta(hours=18), "0.9000")  # sold by then

    result = market_page(market=Market.objects.get(polymarket_id=binary.market_id))
    assert [(p.at, p.run_id) for p in result.price_points] == [
        (RUN_AT, run.pk),  # the run whose decision bought it: the price the bet saw
        (RUN_AT + timedelta(hours=6), held.pk),
        (RUN_AT + timedelta(hours=9), None),  # the latest sync, inside the held time
    ]
    (line,) = result.price_lines
    assert line.label == "Yes"
    assert [price for _, price in line.points] == [
        binary.yes_price,
        Decimal("0.4200"),
        Decimal("0.4400"),
    ]
    assert before.pk not in {p.run_id for p in result.price_points}
    assert after.pk not in {p.run_id for p in result.price_points}

    html = page(client, binary.market_id)
    chart = re.search(r'<script id="price-chart-data" type="application/json">(.*?)</script>', html)
    assert chart, "the price chart's data"
    data = json.loads(chart.group(1))
    assert data["kind"] == "price"
    assert data["x"] == [int(p.at.timestamp()) for p in result.price_points]
    assert data["series"][0]["label"] == "Yes"
    assert data["series"][0]["y"] == [float(binary.yes_price or 0), 0.42, 0.44]
    points = rows(table(html, "price-points"))
    assert len(points) == 3
    assert "decision run" in points[0]
    assert f"{(binary.yes_price or 0) * 100:.2f}%" in points[0]
    assert "42.00%" in points[1]
    assert "58.00%" in points[1]
    assert "latest sync" in points[2]
    assert "44.00%" in points[2]


def test_a_market_no_agent_traded_has_no_price_history(
    client: Client, binary: MarketView, run: DecisionRun
) -> None:
    html = page(client, binary.market_id)
    assert "No agent has traded this market" in html
    assert "No agent has held this market." in html
    assert "No trade on this market." in html


def test_a_multi_outcome_market_draws_each_outcome_an_agent_bet_on(
    decision: Decision, frozen: FrozenMarkets, multi: MarketView
) -> None:
    outcome, price = next(
        (o, p) for o, p in zip(multi.outcomes, multi.prices, strict=True) if p and 0 < p < 1
    )
    buy(decision, frozen, multi, outcome, "100", 0)
    result = market_page(market=Market.objects.get(polymarket_id=multi.market_id))
    (line,) = result.price_lines
    assert line.label == outcome
    assert line.points == [(RUN_AT, price)]


# ------------------------------------------------------------------------ the catalogue facts


def test_market_page_shows_the_catalogue_facts_prices_and_rules(
    client: Client, run: DecisionRun
) -> None:
    html = page(client, "559687")  # Oprah 2028, frozen from the real listing
    assert "Will Oprah Winfrey win the 2028 Democratic presidential nomination?</h1>" in html
    assert '<td>Yes</td><td class="num">0.85%</td>' in html
    assert '<td>No</td><td class="num">99.15%</td>' in html
    assert "Democratic Presidential Nominee 2028" in html  # the event
    assert "2028-11-07 00:00 UTC" in html
    assert "$31,724,012.57" in html
    assert "Resolution rules" in html
    assert (
        'href="https://polymarket.com/market/'
        'will-oprah-winfrey-win-the-2028-democratic-presidential-nomination"'
    ) in html
    assert '<dd id="market-status">Open</dd>' in html


def test_unknown_market_is_404(client: Client, db: None) -> None:
    assert client.get("/markets/999999999/").status_code == 404
    assert client.get("/markets/no-such-id/").status_code == 404


HOSTILE = [
    "<script>alert(1)</script>",
    "</textarea><b>x</b>",
    "x" * 100_000,
    "\u202eright-to-left\u200f mark",
    "rocket 🚀 falls 📉",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_market_and_rejection_text_renders_escaped(
    client: Client, decision: Decision, frozen: FrozenMarkets, binary: MarketView, text: str
) -> None:
    buy(decision, frozen, binary, "YES", "500", 0)
    with clock.simulated(BOUGHT_AT):
        trade_reject(
            decision=decision,
            order=BetOrderFactory.build(market_id=binary.market_id),
            reason=text,
            index=1,
            try_number=1,
        )
    Market.objects.filter(polymarket_id=binary.market_id).update(
        question=text, event_title=text, description=text, resolution_note=text
    )
    html = page(client, binary.market_id)
    assert escape(text) in html
    assert "<script>alert(1)" not in html
    assert "</textarea><b>" not in html
    assert html.count(escape(text)) >= 4  # heading, event, rules, rejection reason


# ---------------------------------------------------------------------------------- queries


def _page_queries(client: Client, polymarket_id: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        page(client, polymarket_id)
    return len(queries)


def test_the_page_runs_the_same_few_queries_whatever_the_data_size(
    client: Client, cohort: Cohort, frozen: FrozenMarkets, binary: MarketView
) -> None:
    agents = list(cohort.agents.select_related("model").order_by("pk"))
    untraded = _page_queries(client, binary.market_id)
    first = decision_of(agents[0])
    buy(first, frozen, binary, "YES", "500", 0)
    small = _page_queries(client, binary.market_id)

    for n, agent in enumerate(agents[1:7]):
        decision = decision_of(agent)
        buy(decision, frozen, binary, "NO" if n % 2 else "YES", "200", 0)
        buy(decision, frozen, binary, "YES", "100", 1)
        with clock.simulated(BOUGHT_AT):
            trade_reject(
                decision=decision,
                order=BetOrderFactory.build(market_id=binary.market_id),
                reason="test",
                index=2,
                try_number=1,
            )
    for hours in range(1, 12):
        freeze(binary.market_id, RUN_AT + timedelta(hours=hours), "0.5")
    Decision.objects.filter(agent=agents[3]).update(responder=Decision.Responder.OFFLINE)
    large = _page_queries(client, binary.market_id)
    html = page(client, binary.market_id)
    assert len(rows(table(html, "market-trades"))) == 1 + 6 * 3
    assert len(rows(table(html, "price-points"))) == 12
    # market, positions, trades, offline, run prices, the last tick that heard it, the
    # panel's forecasts of it (methodology v2; the models of them only when there are some)
    assert untraded == small == large == 7


def test_market_page_route_is_arenas(db: None) -> None:
    assert reverse("arena:market", args=["559687"]) == "/markets/559687/"
    assert resolve("/markets/559687/").view_name == "arena:market"
