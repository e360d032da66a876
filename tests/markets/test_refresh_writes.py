"""A refresh writes only the markets whose record changed (`markets_upsert`): a market heard
again with nothing new is not written at all, and the refresh says when it heard them all
(`SyncResult.synced_at`). Values are compared as the database gives them back."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext

from markets.models import Market
from markets.services import SyncResult, markets_refresh
from tests.markets.conftest import by_id_handler, gamma_json
from tests.replay import ReplayServer

FIRST = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
SECOND = datetime(2026, 11, 27, 12, 10, tzinfo=UTC)
THIRD = datetime(2026, 11, 27, 12, 20, tzinfo=UTC)
# An open binary market and a closed one (UMA proposed): a closed market's whole record is
# kept on every refresh, as the evidence its resolution is read from.
OPEN, CLOSED = "market_open.json", "market_closed_uma_proposed.json"


def _market_writes(captured: CaptureQueriesContext) -> list[str]:
    """The statements that wrote to the market table (an UPDATE, or an upsert's INSERT)."""
    writes = re.compile(r'\s*(UPDATE|INSERT INTO)\s+"?markets_market"?\s', re.IGNORECASE)
    return [q["sql"] for q in captured.captured_queries if writes.match(q["sql"])]


def _refresh(
    server: ReplayServer, records: list[dict[str, Any]], now: datetime
) -> tuple[SyncResult, list[str]]:
    server.route("GET", "/markets", by_id_handler(records))
    with CaptureQueriesContext(connection) as captured:
        result = markets_refresh(polymarket_ids=[str(r["id"]) for r in records], now=now)
    assert result.ok, result.error
    return result, _market_writes(captured)


def _stamps() -> dict[str, tuple[Any, ...]]:
    rows = Market.objects.values_list("polymarket_id", "last_synced_at", "updated_at", "price")
    return {pid: (synced, updated, price) for pid, synced, updated, price in rows}


def test_a_second_refresh_of_unchanged_records_writes_no_market(
    db: None, gamma_server: ReplayServer
) -> None:
    records = [gamma_json(OPEN), gamma_json(CLOSED)]
    first, writes = _refresh(gamma_server, records, FIRST)
    assert (first.created, first.updated, first.unchanged) == (2, 0, 0)
    assert writes
    before = _stamps()

    again, writes = _refresh(gamma_server, records, SECOND)

    assert writes == []
    assert (again.created, again.updated, again.unchanged) == (0, 0, 2)
    assert [m.polymarket_id for m in again.markets] == sorted(str(r["id"]) for r in records)
    assert again.synced_at == SECOND  # heard now, though nothing was written
    assert _stamps() == before
    assert "0 new, 0 updated, 2 unchanged" in again.summary()


def test_a_changed_price_is_written_and_only_that_market(
    db: None, gamma_server: ReplayServer
) -> None:
    records = [gamma_json(OPEN), gamma_json(CLOSED)]
    _refresh(gamma_server, records, FIRST)
    moved = {**records[0], "outcomePrices": json.dumps(["0.045", "0.955"])}

    again, writes = _refresh(gamma_server, [moved, records[1]], SECOND)

    assert (again.created, again.updated, again.unchanged) == (0, 1, 1)
    assert len(writes) == 1
    stored = Market.objects.get(polymarket_id=str(moved["id"]))
    assert stored.outcome_prices == ["0.045000", "0.955000"]
    assert str(stored.price) == "0.045000"
    assert stored.last_open_prices == ["0.045000", "0.955000"]
    assert stored.last_synced_at == SECOND  # written: stamped with the refresh's time
    untouched = Market.objects.get(polymarket_id=str(records[1]["id"]))
    assert untouched.last_synced_at == FIRST


def test_a_volume_of_sixteen_digits_is_compared_as_stored(
    db: None, gamma_server: ReplayServer
) -> None:
    """SQLite keeps decimals as floating point (15 digits back): the stored volume is
    compared with the record's as the database would give it back, so an unchanged one is
    not rewritten on every refresh, and a change past the 15th digit still is."""
    record = {**gamma_json(OPEN), "volume": "1234567890.123456"}
    _refresh(gamma_server, [record], FIRST)

    again, writes = _refresh(gamma_server, [record], SECOND)
    assert (again.updated, writes) == (0, [])

    grown = {**record, "volume": "1234567890.223456"}
    third, writes = _refresh(gamma_server, [grown], THIRD)
    assert (third.updated, len(writes)) == (1, 1)
    assert Market.objects.get(polymarket_id=str(record["id"])).last_synced_at == THIRD


def test_a_closed_markets_record_is_written_when_any_value_in_it_changes_kind(
    db: None, gamma_server: ReplayServer
) -> None:
    """A closed market's stored record is its resolution's evidence: a refresh compares it
    whole, by kind as well as value (JSON's true is not 1, though Python's True == 1)."""
    record = {**gamma_json(CLOSED), "umaBondPaid": 1}
    _refresh(gamma_server, [record], FIRST)

    flagged = {**record, "umaBondPaid": True}
    again, writes = _refresh(gamma_server, [flagged], SECOND)

    assert (again.updated, len(writes)) == (1, 1)
    assert Market.objects.get(polymarket_id=str(record["id"])).raw["umaBondPaid"] is True
