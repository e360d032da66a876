"""The tick's price refresh writes only the held markets whose record changed, and keeps when
it heard them all once, on the tick's row (`SnapshotTick.refreshed_at`): a held market heard
unchanged still counts as heard then on its page (`market_heard_at`)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
import time_machine
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from arena.models import Agent, Position, SnapshotTick
from arena.selectors.markets import market_page
from arena.services.marking import snapshots_take
from markets.models import Market
from markets.parsing import parse_market
from markets.services import markets_upsert
from tests.arena.factories import AgentFactory
from tests.markets.conftest import by_id_handler, gamma_json
from tests.replay import ReplayServer, Reply

NOW = datetime(2030, 6, 2, 12, 3, 41, tzinfo=UTC)
SLOT = datetime(2030, 6, 2, 12, 0, tzinfo=UTC)
OPENED = datetime(2030, 6, 1, tzinfo=UTC)
SYNCED = datetime(2030, 5, 31, 9, 0, tzinfo=UTC)  # when the catalogue sync wrote the market


@pytest.fixture
def held(db: None) -> tuple[Agent, Market]:
    """An agent holding 1,000 YES shares of the real open market 1303407, stored at 0.03."""
    markets_upsert(markets=[parse_market(gamma_json("market_open.json"))], now=SYNCED)
    stored = Market.objects.get(polymarket_id="1303407")
    agent: Agent = AgentFactory.create(cash=Decimal("9970.00"))
    Position.objects.create(
        agent=agent,
        market=stored,
        side="YES",
        outcome_index=0,
        shares=Decimal("1000"),
        cost_basis=Decimal("30.00"),
        last_price=Decimal("0.03"),
        opened_at=OPENED,
    )
    return agent, stored


def _market_writes(captured: CaptureQueriesContext) -> list[str]:
    writes = re.compile(r'\s*(UPDATE|INSERT INTO)\s+"?markets_market"?\s', re.IGNORECASE)
    return [q["sql"] for q in captured.captured_queries if writes.match(q["sql"])]


def test_a_tick_hearing_its_markets_unchanged_writes_none_and_keeps_when_it_heard(
    held: tuple[Agent, Market], gamma_server: ReplayServer, client: Client
) -> None:
    _, stored = held
    gamma_server.route("GET", "/markets", by_id_handler([gamma_json("market_open.json")]))

    with CaptureQueriesContext(connection) as captured:
        report = snapshots_take(now=NOW)

    assert (report.refreshed, report.written, report.refresh_error) == (1, 1, "")
    assert _market_writes(captured) == []
    tick = SnapshotTick.objects.get(slot=SLOT)
    assert (tick.refreshed_at, tick.not_refreshed, tick.markets_refreshed) == (NOW, [], 1)
    stored.refresh_from_db()
    assert stored.last_synced_at == SYNCED  # the row as the sync wrote it
    # … and the market still counts as heard at the tick, on its page and in its history
    page = market_page(market=stored, now=NOW + timedelta(minutes=5))
    assert page.heard_at == NOW
    assert page.price_points[-1].at == NOW
    with time_machine.travel(NOW + timedelta(minutes=5)):
        html = client.get(reverse("arena:market", args=[stored.polymarket_id])).content.decode()
    assert f"<dt>Last synced</dt><dd>{NOW:%Y-%m-%d %H:%M} UTC</dd>" in html


def test_a_price_the_tick_hears_changed_is_written_stamped_with_the_tick(
    held: tuple[Agent, Market], gamma_server: ReplayServer
) -> None:
    _, stored = held
    moved = {**gamma_json("market_open.json"), "outcomePrices": json.dumps(["0.045", "0.955"])}
    gamma_server.route("GET", "/markets", by_id_handler([moved]))

    with CaptureQueriesContext(connection) as captured:
        snapshots_take(now=NOW)

    assert len(_market_writes(captured)) == 1
    stored.refresh_from_db()
    assert (str(stored.price), stored.last_synced_at) == ("0.045000", NOW)
    assert market_page(market=stored, now=NOW).heard_at == NOW


def test_a_held_market_the_refresh_did_not_bring_back_was_not_heard_then(
    held: tuple[Agent, Market], gamma_server: ReplayServer
) -> None:
    _, stored = held
    gamma_server.route("GET", "/markets", by_id_handler([]))  # Gamma returns no record

    report = snapshots_take(now=NOW)

    assert (report.refreshed, report.refresh_error) == (0, "")
    tick = SnapshotTick.objects.get(slot=SLOT)
    assert (tick.refreshed_at, tick.not_refreshed) == (NOW, [stored.polymarket_id])
    assert market_page(market=stored, now=NOW).heard_at == SYNCED


def test_a_tick_counts_only_for_a_market_held_when_it_ran(
    held: tuple[Agent, Market], gamma_server: ReplayServer
) -> None:
    _, stored = held
    gamma_server.route("GET", "/markets", by_id_handler([gamma_json("market_open.json")]))
    snapshots_take(now=NOW)
    later = NOW + timedelta(hours=1)
    Position.objects.filter(market=stored).update(opened_at=later)  # as if bought after it

    assert market_page(market=stored, now=later).heard_at == SYNCED


def test_a_failed_refresh_records_no_time_heard(
    held: tuple[Agent, Market], gamma_server: ReplayServer, settings: Any
) -> None:
    _, stored = held
    settings.HTTP_MAX_RETRIES = 0
    gamma_server.route("GET", "/markets", Reply.json({"error": "internal"}, 500))

    report = snapshots_take(now=NOW)

    assert report.refresh_error
    assert SnapshotTick.objects.get(slot=SLOT).refreshed_at is None
    assert market_page(market=stored, now=NOW).heard_at == SYNCED
