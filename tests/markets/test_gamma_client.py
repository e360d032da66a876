"""The Gamma client and the sync, end to end against a 127.0.0.1 server replaying real records."""

from __future__ import annotations

import time
from typing import Any

import pytest

from markets.clients import GammaClient
from markets.exceptions import GammaUnavailable
from markets.models import Market, MarketSyncRun
from markets.services import markets_refresh, markets_sync_top
from tests.markets.conftest import TOP_500, by_id_handler, gamma_json, listing_handler
from tests.replay import GAMMA_RECORDINGS, ReplayServer, Reply

pytestmark = pytest.mark.django_db


def test_top_listing_asks_for_numeric_volume_order(gamma_listing: ReplayServer) -> None:
    GammaClient.from_settings().fetch_top_markets(500)
    (request,) = gamma_listing.requests_to("/markets")
    assert request.query["order"] == ["volumeNum"]
    assert request.query["ascending"] == ["false"]
    assert request.query["active"] == ["true"]
    assert request.query["closed"] == ["false"]


def test_top_listing_is_sorted_by_volume_whatever_order_gamma_sends(
    gamma_listing: ReplayServer,
) -> None:
    records = GammaClient.from_settings().fetch_top_markets(500)  # the recording is in id order
    volumes = [r["volumeNum"] for r in records]
    assert volumes == sorted(volumes, reverse=True)
    assert len(records) == 500


def test_sync_of_the_real_top_500_stores_every_market(gamma_listing: ReplayServer) -> None:
    result = markets_sync_top(limit=500)
    assert result.ok, result.error
    assert (result.created, result.updated, result.rejections) == (500, 0, [])
    assert Market.objects.count() == 500
    top = Market.objects.order_by("-volume").first()
    assert top is not None
    assert top.volume == max(Market.objects.values_list("volume", flat=True))
    run = MarketSyncRun.objects.get()
    assert (run.status, run.created, run.rejected) == ("ok", 500, 0)


def test_resync_updates_in_place_and_is_idempotent(gamma_listing: ReplayServer) -> None:
    markets_sync_top(limit=500)
    again = markets_sync_top(limit=500)
    # Heard again, nothing new: no market row is written.
    assert (again.created, again.updated, again.unchanged) == (0, 0, 500)
    assert Market.objects.count() == 500


def test_sync_takes_the_same_number_of_queries_for_50_and_500_markets(
    gamma_listing: ReplayServer, django_assert_num_queries: Any
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    counts = []
    for limit in (50, 500):
        Market.objects.all().delete()  # each sync writes every market it lists
        with CaptureQueriesContext(connection) as captured:
            markets_sync_top(limit=limit)
        counts.append(len(captured.captured_queries))
    assert counts[0] == counts[1]
    assert counts[1] <= 8


def test_sync_pages_past_500_and_drops_repeated_records(
    gamma_server: ReplayServer, top_500_records: list[dict[str, Any]]
) -> None:
    more = gamma_json("markets_open_order_volume_desc_offset0_limit100_2026-02-07.json")
    gamma_server.route("GET", "/markets", listing_handler(top_500_records + more))
    # The two recordings share 3 markets, so the combined listing repeats them.
    records = GammaClient.from_settings().fetch_top_markets(550)
    assert len(gamma_server.requests_to("/markets")) >= 2
    ids = [str(r["id"]) for r in records]
    assert len(set(ids)) == 550
    result = markets_sync_top(limit=550)
    assert Market.objects.count() == 550
    assert len(result.rejections) == len(ids) - 550
    assert all("duplicate id" in reason for _, reason in result.rejections)


def test_odd_records_are_rejected_with_reasons_and_the_rest_stored(
    gamma_server: ReplayServer, top_500_records: list[dict[str, Any]]
) -> None:
    placeholder = gamma_json("market_open_placeholder_missing_prices.json")
    broken = dict(top_500_records[1], outcomePrices='["0.5"]')
    records = [
        placeholder,
        top_500_records[0],
        broken,
        dict(top_500_records[0]),
        *top_500_records[2:10],
    ]
    gamma_server.route("GET", "/markets", Reply.json(records))
    result = markets_sync_top(limit=500)
    assert result.ok
    reasons = dict(result.rejections)
    assert "outcomePrices is missing" in reasons["502517"]
    assert "1 prices for 2 outcomes" in reasons[str(broken["id"])]
    assert "duplicate id" in reasons[str(top_500_records[0]["id"])]
    assert Market.objects.count() == 9
    assert "rejected" in result.summary()
    assert "3 rejected" in result.summary()
    assert MarketSyncRun.objects.get().rejected == 3


def test_rate_limited_then_success(gamma_server: ReplayServer) -> None:
    body = (GAMMA_RECORDINGS / TOP_500).read_bytes()
    gamma_server.route(
        "GET",
        "/markets",
        Reply(status=429, body=b'{"error":"rate limited"}', headers={"Retry-After": "1"}),
        Reply(body=body),
    )
    started = time.monotonic()
    result = markets_sync_top(limit=500)
    assert result.ok
    assert result.created == 500
    assert len(gamma_server.requests_to("/markets")) == 2
    assert time.monotonic() - started >= 0.9  # Retry-After: 1 was honoured


def test_server_errors_until_give_up_leave_the_catalogue_unchanged(
    gamma_listing: ReplayServer, settings: Any
) -> None:
    markets_sync_top(limit=500)
    before = list(Market.objects.values_list("polymarket_id", "price", "last_synced_at"))
    settings.HTTP_MAX_RETRIES = 2
    error_body = (GAMMA_RECORDINGS / "error_500_internal_error.json").read_bytes()
    gamma_listing.requests.clear()
    gamma_listing.route("GET", "/markets", Reply(status=500, body=error_body))
    result = markets_sync_top(limit=500)
    assert not result.ok
    assert "HTTP 500" in result.error or "too many 500 error" in result.error
    assert len(gamma_listing.requests_to("/markets")) == 3  # 1 + 2 retries
    assert list(Market.objects.values_list("polymarket_id", "price", "last_synced_at")) == before
    assert MarketSyncRun.objects.latest("started_at").status == "failed"


def test_timeout_is_retried_then_reported(gamma_server: ReplayServer, settings: Any) -> None:
    settings.HTTP_READ_TIMEOUT = 0.3
    settings.HTTP_MAX_RETRIES = 1
    gamma_server.route("GET", "/markets", Reply(body=b"[]", delay=1.0))
    result = markets_sync_top(limit=500)
    assert not result.ok
    assert "timed out" in result.error or "Read timed out" in result.error
    assert len(gamma_server.requests_to("/markets")) == 2
    assert Market.objects.count() == 0


def test_truncated_json_body_is_a_clear_failure(gamma_server: ReplayServer) -> None:
    body = (GAMMA_RECORDINGS / TOP_500).read_bytes()
    gamma_server.route("GET", "/markets", Reply(body=body[: len(body) // 2]))
    result = markets_sync_top(limit=500)
    assert not result.ok
    assert "not valid JSON" in result.error
    assert Market.objects.count() == 0


def test_by_id_fetch_reads_open_resolved_ambiguous_and_multi_outcome_markets(
    gamma_server: ReplayServer,
) -> None:
    files = {
        "1303407": "market_open.json",
        "522900": "market_resolved_yes.json",
        "681413": "market_closed_resolved_50_50.json",
        "1237864": "market_resolved_team_outcomes.json",
    }
    gamma_server.route("GET", "/markets", by_id_handler([gamma_json(f) for f in files.values()]))
    result = markets_refresh(polymarket_ids=[*files, "999999999"])
    assert result.ok
    stored = {m.polymarket_id: m for m in Market.objects.all()}
    assert set(stored) == set(files)  # the unknown id is simply absent
    assert not stored["1303407"].closed
    assert stored["1303407"].is_binary
    assert stored["522900"].closed
    assert stored["522900"].uma_resolution_status == "resolved"
    assert stored["681413"].outcome_prices == ["0.500000", "0.500000"]
    assert stored["1237864"].outcomes == ["Acend", "Bebop"]
    assert stored["1237864"].price is None
    # Resolution is settlement's business: a sync never marks a market resolved.
    assert {m.resolution for m in stored.values()} == {"open"}
    (request,) = gamma_server.requests_to("/markets")
    assert sorted(request.query["id"]) == sorted([*files, "999999999"])


def test_by_id_fetch_goes_in_batches(
    gamma_server: ReplayServer, top_500_records: list[dict[str, Any]]
) -> None:
    gamma_server.route("GET", "/markets", by_id_handler(top_500_records))
    ids = [str(r["id"]) for r in top_500_records[:120]]
    records = GammaClient.from_settings().fetch_markets_by_ids(ids)
    assert sorted(str(r["id"]) for r in records) == sorted(ids)
    assert len(gamma_server.requests_to("/markets")) == 3  # 50 + 50 + 20


def test_gamma_404_body_is_reported(gamma_server: ReplayServer, settings: Any) -> None:
    body = (GAMMA_RECORDINGS / "error_404_market_id_not_found.json").read_bytes()
    gamma_server.route("GET", "/markets", Reply(status=404, body=body))
    with pytest.raises(GammaUnavailable, match="HTTP 404.*id not found"):
        GammaClient.from_settings().fetch_top_markets(10)
