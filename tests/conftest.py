"""The suite's shape (its passes, its time budget, its markers) and the shared fixtures: replay
servers for the upstreams, fast retry settings.

`make test` runs two passes at once, one per database. The first (SQLite) runs every test; the
second (PostgreSQL, `--second-pass`) runs only what can behave differently on another
database: the tests that use the database, less those marked `one_pass` (the browser walk and
the production-mode checks, which test the site's own rendering, not the database's). A test
that uses no database cannot depend on one, so running it twice would only cost time.

Every test has a time budget (`--time-budget`, seconds, for its setup and for its call, each;
0 turns it off). Fixtures a module or the session shares (the test database, a module's world)
are left out of the setup's: whichever test comes first would pay for all. A test over the
budget fails unless it is marked `slow` with a reason, so the suite stays fast as it grows. The
budget is calibrated for both passes running at once on two cores.

State that many tests of a module read is built once for the module where it is costly
(tests/worlds.py: the module's world, in a transaction each test's own is nested in).
"""

from __future__ import annotations

import os
import time
from collections.abc import Generator, Iterator
from typing import Any

import pytest

import tests.profiles  # noqa: F401  (loads the hypothesis profile before any test module)
from tests.replay import ReplayServer
from tests.worlds import WorldsPlugin

DATABASE_FIXTURES = frozenset(
    {
        "db",
        "transactional_db",
        "django_db_reset_sequences",
        "django_db_serialized_rollback",
        "live_server",
    }
)
# Calibrated on `make test` from a fresh clone, both passes at once on two cores: the slowest
# step of an unmarked test took 4.4 s there (a PostgreSQL race of two catalogue upserts), and
# these machines vary by up to ±50 % from run to run; 8 s keeps every unmarked test clear of it.
TIME_BUDGET_SECONDS = 8.0

# The settings every test runs with (the autouse fixtures below), and so every module's world
# is built with (tests/worlds.py).
FAST_HASHING = {"PASSWORD_HASHERS": ["django.contrib.auth.hashers.MD5PasswordHasher"]}
FAST_HTTP = {
    "HTTP_BACKOFF_SECONDS": 0.01,
    "HTTP_RETRY_AFTER_CAP_SECONDS": 1,
    "HTTP_CONNECT_TIMEOUT": 2,
    "HTTP_READ_TIMEOUT": 2,
}
NO_API_RATE_LIMIT = {"API_RATE_LIMIT": 0}


def uses_database(item: pytest.Item) -> bool:
    """Whether the test can touch the database: pytest-django refuses it to every other one."""
    fixtures = set(getattr(item, "fixturenames", ()))
    return item.get_closest_marker("django_db") is not None or bool(fixtures & DATABASE_FIXTURES)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("forecaster arena")
    group.addoption(
        "--second-pass",
        action="store_true",
        help="run only the tests that use the database and are not marked one_pass",
    )
    group.addoption(
        "--time-budget",
        type=float,
        default=float(os.environ.get("TEST_TIME_BUDGET", TIME_BUDGET_SECONDS)),
        help="seconds a test's setup, and its call, may each take unless it is marked slow "
        "(default %(default)s, or TEST_TIME_BUDGET; 0: no budget)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Send this pass's tasks to its own Celery queue (CELERY_TEST_QUEUE), which its workers,
    threads and processes alike (tests/worker_settings.py), consume."""
    budget = config.getoption("--time-budget")
    if budget:
        config.pluginmanager.register(TimeBudget(budget), "time-budget")
    every_test = {**FAST_HASHING, **FAST_HTTP, **NO_API_RATE_LIMIT}
    config.pluginmanager.register(
        WorldsPlugin(settings=every_test, uses_database=uses_database), "worlds"
    )
    queue = os.environ.get("CELERY_TEST_QUEUE")
    if queue:
        from forecaster.celery import app

        app.conf.task_default_queue = queue


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        slow = item.get_closest_marker("slow")
        if slow is not None and not slow.kwargs.get("reason"):
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.slow needs reason='why'")
    if not config.getoption("--second-pass"):
        return
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        once = item.get_closest_marker("one_pass") is not None
        (dropped if once or not uses_database(item) else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


class TimeBudget:
    """The per-test time budget, registered as a plugin of its own: a conftest's hooks see only
    the fixtures of its folder, and the test database is set up by the session's."""

    def __init__(self, budget: float) -> None:
        self.budget = budget
        self.shared_setup_seconds = 0.0  # of the test being set up: fixtures it shares

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        self.shared_setup_seconds = 0.0
        return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(
        self, fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest
    ) -> Generator[None, Any, Any]:
        """Time the fixtures a module or the session shares: the first test to need one pays
        for everyone's (the test database, a module's world), so the budget leaves it out."""
        began = time.perf_counter()
        try:
            return (yield)
        finally:
            if fixturedef.scope != "function":
                self.shared_setup_seconds += time.perf_counter() - began

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        shared = self.shared_setup_seconds if call.when == "setup" else 0.0
        spent = report.duration - shared
        if (
            call.when in ("setup", "call")
            and report.passed
            and spent > self.budget
            and item.get_closest_marker("slow") is None
        ):
            report.outcome = "failed"
            report.longrepr = (
                f"{call.when} took {spent:.1f} s, over the suite's budget of {self.budget:g} s "
                "a test: make it faster, or mark it @pytest.mark.slow(reason=...) saying why "
                "it cannot be"
            )
        return report


@pytest.fixture(autouse=True)
def _fast_hashing(settings: Any) -> None:
    """Staff logins in tests need no slow key stretching."""
    for name, value in FAST_HASHING.items():
        setattr(settings, name, value)


@pytest.fixture(autouse=True)
def _fast_http(settings: Any) -> None:
    """Keep the real retry logic but make its waits short, so the suite stays fast."""
    for name, value in FAST_HTTP.items():
        setattr(settings, name, value)


@pytest.fixture(autouse=True)
def _no_api_rate_limit(settings: Any) -> None:
    """The API's rate limit is tested on purpose (tests/api/test_api_http.py), off elsewhere:
    its counts (in Redis when REDIS_URL is set) would carry over from test to test."""
    for name, value in NO_API_RATE_LIMIT.items():
        setattr(settings, name, value)


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


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None) -> None:
    """On PostgreSQL, the test connections commit without waiting for the WAL to reach the
    disk (`synchronous_commit=off`): a crash of the test server loses nothing a test needs, and
    every commit, flush and TRUNCATE of the suite stops paying for a disk flush. What a test
    sees is unchanged: visibility, locks and constraints behave the same."""
    from django.db import connections

    for alias in connections:
        database = connections.settings[alias]
        if database["ENGINE"] == "django.db.backends.postgresql":
            options = database.setdefault("OPTIONS", {})
            options["options"] = f"{options.get('options', '')} -c synchronous_commit=off".strip()
