"""The browser walk's fixtures: a site served by pytest-django's live server over a small
deterministic demo, and Debian's chromium driven by Playwright (nothing is downloaded).

The data is filled once per module and committed — the live server reads it on its own
connection under PostgreSQL — then wiped at the end of the module, and the lineup seeded by the
migrations restored as TransactionTestCase's serialized rollback restores it. The tests are
marked `django_db` only so that pytest-django creates the test database; each runs in a
transaction it rolls back, and writes nothing.

Playwright's sync API drives its event loop from this thread, which makes Django take every
ORM call here for one made from async code (SynchronousOnlyOperation). No coroutine of ours
touches the database, so the check is switched off for the module (DJANGO_ALLOW_ASYNC_UNSAFE,
as Django's docs advise for Playwright) and put back after it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import time_machine
from django.core.management import call_command
from django.db import connections
from django.test.utils import override_settings

from arena.demo import demo_run
from arena.models import Agent, Cohort, Decision, Trade
from tests.arena.conftest import snapshot_cache_clear
from tests.page_world import World, build_world

CHROMIUM = shutil.which("chromium") or (
    "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
)
# The demo's clock: a Wednesday of its third week, the same whatever day the suite runs.
UNTIL = datetime(2026, 9, 16, 12, 0, tzinfo=UTC)
# Full-page screenshots are for people to look at, so they are taken only when asked for
# (`make screenshots`): PNG-encoding every page at both widths is a quarter of the walk's time.
SCREENSHOTS = (
    Path(os.environ["BROWSER_SCREENSHOTS"]).resolve()
    if os.environ.get("BROWSER_SCREENSHOTS")
    else None
)
# The markup and the shapes that break layouts: a 100 KB unbroken word, RTL, emoji.
HOSTILE = (
    "<script>alert(1)</script></textarea><b>x \u202edesrever\u202c \u200fמימין\u200f 🦄🔥 "
    + "W" * 100_000
)


@dataclass(frozen=True)
class Site:
    url: str
    cohort: str  # a cohort page with agents, decisions and snapshots
    agent: str  # an LLM agent of it with executed trades
    decision: str  # a decision of that agent with executed trades
    market: str  # a market that decision traded
    hostile: World  # a world whose every stored text is HOSTILE


def _end_server_sessions() -> None:
    """End the PostgreSQL sessions the live server's request threads left open, so that the
    test database can be dropped at the end of the run (pytest-django otherwise warns that it
    "is being accessed by other users")."""
    for alias in connections:
        connection = connections[alias]
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )


def _restore_seeded_rows() -> None:
    """Empty every table and put back what the migrations seeded (the lineup)."""
    for alias in connections:
        connection = connections[alias]
        # As TransactionTestCase does: the serialized rows include the content types, and
        # the sequences run on past the restored primary keys.
        call_command(
            "flush",
            verbosity=0,
            interactive=False,
            database=alias,
            reset_sequences=False,
            inhibit_post_migrate=True,
        )
        contents = getattr(connection, "_test_serialized_contents", None)
        assert contents, "the walk's tests must be marked django_db(serialized_rollback=True)"
        connection.creation.deserialize_db_from_string(contents)


def _pick(base: str) -> dict[str, str]:
    decision = (
        Decision.objects.filter(
            action="BET", trades__status=Trade.Status.EXECUTED, agent__model__kind="llm"
        )
        .order_by("-week_start", "pk")
        .select_related("agent__cohort")
        .first()
    )
    assert decision is not None, "the demo made no executed bet"
    agent: Agent = decision.agent
    cohort: Cohort = agent.cohort
    trade = decision.trades.filter(status=Trade.Status.EXECUTED).select_related("market").first()
    assert trade is not None
    assert trade.market is not None
    return {
        "cohort": f"{base}/cohorts/{cohort.number}/",
        "agent": f"{base}/cohorts/{cohort.number}/agents/{agent.pk}/",
        "decision": f"{base}/decisions/{decision.pk}/",
        "market": f"{base}/markets/{trade.market.polymarket_id}/",
    }


@pytest.fixture(scope="module")
def site(django_db_setup: None, django_db_blocker: Any) -> Iterator[Site]:
    from pytest_django.live_server_helper import LiveServer

    snapshot_cache_clear()
    async_unsafe = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    # The clock stands at UNTIL (ticking) for the data and the pages alike.
    with (
        django_db_blocker.unblock(),
        override_settings(OPENROUTER_API_KEY="", MARKET_SOURCE="demo", DEBUG=False),
        time_machine.travel(UNTIL, tick=True),
    ):
        server = None
        try:
            demo_run(weeks=6, tick=timedelta(hours=12), until=UNTIL)
            server = LiveServer("localhost")
            server._live_server_modified_settings.enable()
            walk = _pick(server.url)  # from the demo, before the hostile world joins it
            yield Site(url=server.url, hostile=build_world(scale=1, text=HOSTILE), **walk)
        finally:
            if server is not None:
                server._live_server_modified_settings.disable()
                server.stop()
                _end_server_sessions()
            _restore_seeded_rows()
            snapshot_cache_clear()
            if async_unsafe is None:
                del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]
            else:
                os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = async_unsafe


@pytest.fixture(scope="module")
def browser(site: Site) -> Iterator[Any]:
    """Chromium, started after the site's data is in and closed before it is wiped: while
    Playwright's sync API runs, its event loop makes Django refuse database calls on this
    thread (SynchronousOnlyOperation)."""
    from playwright.sync_api import sync_playwright

    assert CHROMIUM is not None
    with sync_playwright() as p:
        chromium = p.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="session")
def screenshots() -> Path | None:
    """Where the walk saves its screenshots, or None: none is taken."""
    if SCREENSHOTS is not None:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS
