"""Shared fixtures: replay servers for the upstreams, fast retry settings."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.replay import ReplayServer


@pytest.fixture(autouse=True)
def _fast_hashing(settings: Any) -> None:
    """Staff logins in tests need no slow key stretching."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _fast_http(settings: Any) -> None:
    """Keep the real retry logic but make its waits short, so the suite stays fast."""
    settings.HTTP_BACKOFF_SECONDS = 0.01
    settings.HTTP_RETRY_AFTER_CAP_SECONDS = 1
    settings.HTTP_CONNECT_TIMEOUT = 2
    settings.HTTP_READ_TIMEOUT = 2


@pytest.fixture(autouse=True)
def _no_api_rate_limit(settings: Any) -> None:
    """The API's rate limit is tested on purpose (tests/api/test_api_http.py), off elsewhere:
    its counts (in Redis when REDIS_URL is set) would carry over from test to test."""
    settings.API_RATE_LIMIT = 0


@pytest.fixture(autouse=True)
def _empty_cache() -> Iterator[None]:
    """What one test left in the process's cache (the exports' manifests) is gone for the
    next, whose database was rolled back under it."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture(scope="session", autouse=True)
def _releases_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Data releases the demo and the tasks publish go to a temporary folder, never into the
    checkout's var/releases."""
    from django.test.utils import override_settings

    with override_settings(RELEASES_ROOT=tmp_path_factory.mktemp("releases")):
        yield


@pytest.fixture
def replay_server() -> Iterator[ReplayServer]:
    with ReplayServer() as server:
        yield server


@pytest.fixture
def gamma_server(replay_server: ReplayServer, settings: Any) -> ReplayServer:
    """A replay server standing in for Polymarket's Gamma API."""
    settings.POLYMARKET_GAMMA_URL = replay_server.url
    settings.MARKET_SOURCE = "gamma"
    return replay_server


@pytest.fixture
def openrouter_server(settings: Any) -> Iterator[ReplayServer]:
    """A replay server standing in for OpenRouter, with a key configured."""
    with ReplayServer() as server:
        settings.OPENROUTER_BASE_URL = server.url
        settings.OPENROUTER_API_KEY = "sk-or-test-key"
        yield server


@pytest.fixture
def celery_worker_on_redis(settings: Any) -> Iterator[Any]:
    """A real Celery worker thread consuming from the Redis broker in REDIS_URL.

    Tests that use it need `django_db(transaction=True)`: the worker thread has its own
    database connection and must see committed rows.
    """
    from celery.contrib.testing.worker import start_worker
    from django.conf import settings as django_settings

    from forecaster.celery import app

    if not django_settings.CELERY_BROKER_URL:
        pytest.fail("REDIS_URL must be set: Celery tests run against a real Redis broker")
    assert not app.conf.task_always_eager, "Celery tests never run eager"
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10) as worker:
        yield worker
