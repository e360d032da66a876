"""The suite's shape (its passes, its time budget, its markers) and the shared fixtures: replay
servers for the upstreams, fast retry settings.

`make test` runs two passes, one per database. The first (SQLite) runs every test; the
second (PostgreSQL, `--second-pass`) runs only what can behave differently on another
database: the tests that use the database, less those marked `one_pass` (the browser walk and
the production-mode checks, which test the site's own rendering, not the database's). A test
that uses no database cannot depend on one, so running it twice would only cost time.

Every test has a time budget (`--time-budget`, seconds of CPU time, for its setup and for its
call, each, and four times that of wall time; 0 turns it off; tests/budget.py). Fixtures a
module or the session shares (the test database, a module's world) are left out of the
setup's: whichever test comes first would pay for all. A test over the budget fails unless it
is marked `slow` with a reason, so the suite stays fast as it grows.

`make test` runs each pass as shards, each a share of the test files (`--shard K/N`,
tests/shards.py), in lanes at once, each lane a SQLite shard and a PostgreSQL shard in turn,
and the drills (`--shard drills`) in a lane of their own (.ci/suite).

State that many tests of a module read is built once for the module where it is costly
(tests/worlds.py: the module's world, in a transaction each test's own is nested in).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from typing import Any

import pytest

import tests.profiles  # noqa: F401  (loads the hypothesis profile before any test module)
from tests.budget import TimeBudget
from tests.replay import ReplayServer
from tests.schema_template import templates_install
from tests.shards import FileSeconds, Shard, shard_option
from tests.suite_clock import start_suite_clock
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
# Seconds of CPU time on the reference machine (tests/budget.py: a test that looks over it is
# judged again at the machine's speed of the moment). Run alone there, the most CPU an unmarked
# test's own setup or call took was under 2 s.
TIME_BUDGET_SECONDS = 6.0

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
# Pages rendered on every request: a test that changes a row in place and reads the page again
# expects the change, which production shows by the next tick (tests/arena/test_page_cache.py
# tests the cache itself).
NO_PAGE_CACHE = {"PAGE_CACHE_SECONDS": 0}
# New cohorts run methodology v1 unless a test asks for v2: the recorded model replies the
# suite replays answer v1's prompt (no stated probabilities), and a v1 cohort is still run by
# v1's rules. The v2 tests ask for "v2" (tests/arena/test_methodology_v2.py).
METHODOLOGY_V1 = {"METHODOLOGY_VERSION": "v1"}
# The collector's thresholds for a test process. A test process holds hundreds of thousands of
# long-lived objects (Django, numpy, hypothesis, the modules' worlds), and at the interpreter's
# defaults (700, 10, 10) the ORM's short-lived cycles set off a full collection over all of them
# every few hundred queries: a quarter of the CPU time of test_pages, test_charts, test_api,
# test_seal and test_engine_integrity (24.3 s → 18.4 s), and of `make test`'s wall time a ninth
# (362 s → 321 s). Young objects are still collected every 50,000 allocations; at these
# thresholds a full collection would almost never come on its own, so one is made after each
# test module instead (`pytest_runtest_teardown`), over what collection did not set apart
# (`pytest_collection_finish`): old garbage lives at most one module.
GC_THRESHOLDS = (50_000, 50, 1_000)


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
    group.addoption(
        "--shard",
        type=shard_option,
        default=None,
        metavar="K/N|drills",
        help="run only the K-th of N shards of the test files that are not drills, or "
        "(`--shard drills`) only the drills (tests/shards.py)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Send this pass's tasks to its own Celery queue (CELERY_TEST_QUEUE), which its workers,
    threads and processes alike (tests/worker_settings.py), consume."""
    gc.set_threshold(*GC_THRESHOLDS)
    budget = config.getoption("--time-budget")
    if budget:
        config.pluginmanager.register(TimeBudget(budget), "time-budget")
    shard = config.getoption("--shard")
    if shard is not None:
        database_pass = "postgres" if config.getoption("--second-pass") else "sqlite"
        config.pluginmanager.register(Shard(shard, database_pass), "shard")
    config.pluginmanager.register(FileSeconds(), "file-seconds")
    every_test = {
        **FAST_HASHING,
        **FAST_HTTP,
        **NO_API_RATE_LIMIT,
        **NO_PAGE_CACHE,
        **METHODOLOGY_V1,
    }
    config.pluginmanager.register(
        WorldsPlugin(settings=every_test, uses_database=uses_database), "worlds"
    )
    # Before any world is built: a run near a week's seal runs on a clock moved past it, and
    # the processes it starts inherit the moved clock (tests/suite_clock.py).
    os.environ.update(start_suite_clock())
    queue = os.environ.get("CELERY_TEST_QUEUE")
    if queue:
        from forecaster.celery import app

        app.conf.task_default_queue = queue


def restores_what_it_flushes(item: pytest.Item) -> bool:
    """Whether a transactional test is marked serialized_rollback. Its flush then recreates
    nothing, and the next such test restores the migrations' rows (content types, the lineup)
    into empty tables. A flush without it recreates the content types under new ids, and the
    next serialized test's restore then collides with them, in whatever shard follows it."""
    marker = item.get_closest_marker("django_db")
    transactional = bool(
        {"transactional_db", "live_server"} & set(getattr(item, "fixturenames", ()))
    ) or (marker is not None and marker.kwargs.get("transaction", False))
    return not transactional or (
        marker is not None and marker.kwargs.get("serialized_rollback", False)
    )


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection built (the modules, their constants and strategies) lives to the end: it
    is set apart, so the collections the tests set off no longer walk it."""
    gc.collect()
    gc.freeze()


# Modules between two full collections: each costs a walk of the whole heap (a tenth of a
# second in a shard's later modules), and three modules' garbage is held for little longer.
MODULES_A_FULL_COLLECTION = 3
_modules_ended = 0


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """A full collection every MODULES_A_FULL_COLLECTION test modules (their fixtures
    finalized), and at the last: the garbage their tests left in the oldest generation, which
    GC_THRESHOLDS leave alone, is freed, the connections and sockets in it closed. The
    younger generations are collected after every module. (What outlives a module is not
    set apart as collection's modules are: garbage it later becomes would never be
    collected, nor its connections closed, for a whole shard.)"""
    global _modules_ended
    if nextitem is not None and getattr(nextitem, "module", None) is getattr(item, "module", None):
        return
    _modules_ended += 1
    if nextitem is None or _modules_ended % MODULES_A_FULL_COLLECTION == 0:
        gc.collect()
    else:
        gc.collect(1)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        slow = item.get_closest_marker("slow")
        if slow is not None and not slow.kwargs.get("reason"):
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.slow needs reason='why'")
        if not restores_what_it_flushes(item):
            raise pytest.UsageError(
                f"{item.nodeid}: a transactional test needs "
                "@pytest.mark.django_db(transaction=True, serialized_rollback=True)"
            )
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
def _no_page_cache(settings: Any) -> None:
    """Every request renders its page (NO_PAGE_CACHE says why)."""
    for name, value in NO_PAGE_CACHE.items():
        setattr(settings, name, value)


@pytest.fixture(autouse=True)
def _methodology_v1(settings: Any) -> None:
    """New cohorts run v1 unless the test asks for v2 (METHODOLOGY_V1 says why)."""
    for name, value in METHODOLOGY_V1.items():
        setattr(settings, name, value)


@pytest.fixture(autouse=True)
def _empty_cache() -> Iterator[None]:
    """What one test left in the process's cache (the exports' manifests) is gone for the
    next, whose database was rolled back under it."""
    from django.core.cache import cache, caches

    cache.clear()
    caches["pages"].clear()
    yield
    cache.clear()
    caches["pages"].clear()


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
def django_db_modify_db_settings(
    django_db_modify_db_settings_parallel_suffix: None,
    django_db_use_migrations: bool,
    request: pytest.FixtureRequest,
) -> None:
    """On PostgreSQL, the test connections commit without waiting for the WAL to reach the
    disk (`synchronous_commit=off`): a crash of the test server loses nothing a test needs, and
    every commit, flush and TRUNCATE of the suite stops paying for a disk flush. What a test
    sees is unchanged: visibility, locks and constraints behave the same. Each shard of a pass
    has a test database of its own (test_<name>_shard<K>, or _sharddrills), as shards run at
    once. Each test database is a copy of the migrated one when a process before it migrated
    it."""
    from django.db import connections

    shard = request.config.getoption("--shard")
    for alias in connections:
        database = connections.settings[alias]
        if database["ENGINE"] == "django.db.backends.postgresql":
            if shard is not None:
                test = database.setdefault("TEST", {})
                test["NAME"] = f"{test.get('NAME') or 'test_' + database['NAME']}_shard{shard.tag}"
            options = database.setdefault("OPTIONS", {})
            options["options"] = f"{options.get('options', '')} -c synchronous_commit=off".strip()
    # Every process after the first of its database kind copies the migrated database instead
    # of migrating (tests/schema_template.py).
    cache_dir = request.config.rootpath / ".pytest_cache" / "schema"
    for connection in connections.all(initialized_only=False):
        templates_install(connection, cache_dir=cache_dir, migrations=django_db_use_migrations)
