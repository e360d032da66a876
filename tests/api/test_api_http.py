"""The API's HTTP hygiene: ETag with 304 on GETs, per-client rate limiting with 429
and `Retry-After` in the error envelope, CORS open for reading, and the envelope for the
unknown paths and wrong methods Django answers itself; the HTML site keeps its own behaviour.
"""

from __future__ import annotations

import hashlib
import logging
import os
import uuid
from typing import Any

import pytest
import redis
import time_machine
from django.core.cache.backends.redis import RedisCache
from django.test import Client

from tests.api.helpers import API, assert_envelope
from tests.page_world import World, build_world


@pytest.fixture(autouse=True)
def count_prefix(settings: Any) -> str:
    """Each test counts under a key prefix of its own in the api_rate cache (Redis when
    REDIS_URL is set, as in production), so no count carries over from another test or run."""
    prefix = f"test-{uuid.uuid4().hex}"
    settings.CACHES = {
        **settings.CACHES,
        "api_rate": {**settings.CACHES["api_rate"], "KEY_PREFIX": prefix},
    }
    return prefix


@pytest.fixture
def world(db: None) -> World:
    return build_world(scale=1)


# ETag and 304


def test_a_get_carries_a_strong_etag_of_its_body(world: World, client: Client) -> None:
    response = client.get(f"{API}/leaderboard")
    assert response.status_code == 200
    etag = response["ETag"]
    assert not etag.startswith("W/")
    assert etag == f'"{hashlib.md5(response.content, usedforsecurity=False).hexdigest()}"'
    assert client.get(f"{API}/leaderboard")["ETag"] == etag  # same data, same tag


def test_a_matching_if_none_match_answers_304_without_a_body(world: World, client: Client) -> None:
    etag = client.get(f"{API}/cohorts")["ETag"]
    again = client.get(f"{API}/cohorts", HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304
    assert again.content == b""
    assert again["ETag"] == etag
    assert again["Access-Control-Allow-Origin"] == "*"
    stale = client.get(f"{API}/cohorts", HTTP_IF_NONE_MATCH='"not-the-tag"')
    assert stale.status_code == 200
    assert stale.json()


def test_the_bets_export_still_streams_and_gets_no_etag(world: World, client: Client) -> None:
    response = client.get(f"{API}/exports/bets.csv")
    assert response.status_code == 200
    assert response.streaming
    assert not response.has_header("ETag")
    assert response["Access-Control-Allow-Origin"] == "*"
    body = b"".join(response.streaming_content)  # type: ignore[attr-defined]
    header = body.decode().splitlines()[0]
    assert header.startswith("trade_id,model,model_kind,cohort,")


# Rate limiting


def test_over_the_limit_a_client_gets_429_with_retry_after(
    world: World, client: Client, settings: Any
) -> None:
    settings.API_RATE_LIMIT = 3
    settings.API_RATE_WINDOW_SECONDS = 60
    with time_machine.travel("2026-11-23 12:00:10Z", tick=False):
        for _ in range(3):
            assert client.get(f"{API}/status").status_code == 200
        limited = client.get(f"{API}/status")
        assert limited.status_code == 429
        assert limited["Retry-After"] == "50"  # to the window's end, 12:01:00
        assert limited["Content-Type"].startswith("application/json")
        assert_envelope(limited.json(), 429, "rate_limited")
        assert "50 seconds" in limited.json()["error"]["message"]
        assert limited["Access-Control-Allow-Origin"] == "*"  # a browser client can read it
        # Another client has its own count.
        assert client.get(f"{API}/status", REMOTE_ADDR="10.0.0.2").status_code == 200
    # The next window starts a fresh count.
    with time_machine.travel("2026-11-23 12:01:00Z", tick=False):
        assert client.get(f"{API}/status").status_code == 200


def test_the_rate_limit_counts_api_requests_only(
    world: World, client: Client, settings: Any
) -> None:
    settings.API_RATE_LIMIT = 1
    assert client.get(f"{API}/status").status_code == 200
    assert client.get(f"{API}/status").status_code == 429
    for _ in range(3):
        assert client.get("/").status_code == 200  # the site's pages are not limited


@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="counts are shared through Redis")
def test_every_process_counts_against_one_limit_in_redis(
    world: World, client: Client, settings: Any, count_prefix: str
) -> None:
    settings.API_RATE_LIMIT = 2
    assert client.get(f"{API}/status").status_code == 200
    # What another web process sees: the count is in Redis, not in this process's memory.
    server = redis.Redis.from_url(settings.REDIS_URL, decode_responses=True)
    stored = [str(key) for key in server.keys(f"{count_prefix}:*api-rate:*")]
    assert len(stored) == 1
    key = stored[0].split(":", 2)[2]  # Django's stored key is "<prefix>:<version>:<key>"
    other_process = RedisCache(settings.REDIS_URL, {"KEY_PREFIX": count_prefix})
    assert other_process.get(key) == 1
    other_process.incr(key)  # that process serves one request
    assert client.get(f"{API}/status").status_code == 429


def test_an_unreachable_counter_lets_requests_through_and_says_so(
    world: World, client: Client, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    settings.API_RATE_LIMIT = 1
    settings.CACHES = {
        **settings.CACHES,
        "api_rate": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",  # nothing listens on port 1
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        },
    }
    with caplog.at_level(logging.WARNING, logger="forecaster.http"):
        for _ in range(2):
            assert client.get(f"{API}/status").status_code == 200
    assert "rate limit not counted" in caplog.text


def test_a_zero_limit_turns_rate_limiting_off(client: Client, settings: Any, db: None) -> None:
    settings.API_RATE_LIMIT = 0
    for _ in range(5):
        assert client.get(f"{API}/status").status_code == 200


# CORS


@pytest.mark.parametrize("method", ["get", "head"])
def test_reads_are_open_to_every_origin(world: World, client: Client, method: str) -> None:
    response = getattr(client, method)(f"{API}/leaderboard", HTTP_ORIGIN="https://x.example")
    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == "*"
    assert not response.has_header("Access-Control-Allow-Credentials")
    if method == "head":
        assert response.content == b""


def test_a_preflight_is_answered_204_with_the_read_methods(client: Client, db: None) -> None:
    response = client.options(
        f"{API}/leaderboard",
        HTTP_ORIGIN="https://x.example",
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="GET",
    )
    assert response.status_code == 204
    assert response["Access-Control-Allow-Origin"] == "*"
    assert response["Access-Control-Allow-Methods"] == "GET, HEAD, OPTIONS"
    assert not response.has_header("Access-Control-Allow-Credentials")


def test_the_site_pages_carry_no_cors_header_nor_etag(world: World, client: Client) -> None:
    response = client.get("/", HTTP_ORIGIN="https://x.example")
    assert response.status_code == 200
    assert not response.has_header("Access-Control-Allow-Origin")
    assert not response.has_header("ETag")


# The error envelope for what Django answers itself


@pytest.mark.parametrize("path", ["/nowhere", "/leaderboard/extra/bits", "/exports/bets.xml"])
def test_an_unknown_api_path_answers_404_in_the_envelope(
    client: Client, db: None, path: str
) -> None:
    response = client.get(f"{API}{path}")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    assert_envelope(response.json(), 404, "not_found")
    assert response["Access-Control-Allow-Origin"] == "*"


@pytest.mark.parametrize("method", ["post", "put", "delete"])
def test_a_wrong_method_answers_405_in_the_envelope(
    world: World, client: Client, method: str
) -> None:
    response = getattr(client, method)(f"{API}/leaderboard")
    assert response.status_code == 405
    assert_envelope(response.json(), 405, "method_not_allowed")
    assert "GET" in response["Allow"]
    assert not response.has_header("Access-Control-Allow-Origin")  # reads only


def test_the_sites_own_404_stays_html(client: Client, db: None) -> None:
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")
    assert not response.has_header("Access-Control-Allow-Origin")


def test_a_preflight_names_the_methods_each_endpoint_takes(client: Client, db: None) -> None:
    read = client.options(f"{API}/leaderboard")
    submit = client.options(f"{API}/outside/cohorts/1/decision")
    unknown = client.options(f"{API}/nowhere")
    assert (read.status_code, submit.status_code, unknown.status_code) == (204, 204, 204)
    assert read["Allow"] == "GET, HEAD, OPTIONS"
    assert submit["Allow"] == "POST, OPTIONS"  # a submission is POSTed, never read
    assert unknown["Allow"] == "GET, HEAD, OPTIONS"


# Parameters as the schema declares them


def test_a_parameter_given_twice_is_a_422_naming_it(world: World, client: Client) -> None:
    cohort = world.cohort.number
    once = client.get(f"{API}/decisions", {"cohort": cohort})
    twice = client.get(f"{API}/decisions?cohort={cohort}&cohort={cohort + 1}&page=1&page=1")
    assert once.status_code == 200
    assert twice.status_code == 422
    body = twice.json()
    assert_envelope(body, 422)
    assert body["error"]["message"] == (
        "parameter given more than once: cohort, page; each takes one value"
    )


@pytest.mark.parametrize(
    "path",
    [
        "/resolutions?until=0",
        "/resolutions?since=1700000000",
        "/resolutions?since=2026-1-5",
        "/decisions?week=20260104",
        "/exports/bets.csv?until=0",
        "/commitments?week=0",
        "/resolutions?since=%D9%A2%D9%A0%D9%A2%D9%A6-01-05",  # Arabic-Indic digits
    ],
)
def test_a_day_written_as_a_number_is_a_422_not_a_unix_timestamp(
    client: Client, db: None, path: str
) -> None:
    response = client.get(f"{API}{path}")
    assert response.status_code == 422
    body = response.json()
    assert_envelope(body, 422)
    assert "YYYY-MM-DD" in body["error"]["message"]


def test_a_day_written_yyyy_mm_dd_is_read(client: Client, db: None) -> None:
    response = client.get(f"{API}/resolutions?since=2026-01-04&until=2026-01-10")
    assert response.status_code == 200


def test_an_error_envelope_may_not_be_framed_either(client: Client, db: None) -> None:
    for response in (client.get(f"{API}/nowhere"), client.get(f"{API}/decisions?page=0")):
        assert response.status_code in (404, 422)
        assert response["X-Frame-Options"] == "DENY"
