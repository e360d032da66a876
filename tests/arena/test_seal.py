"""The seal: no agent sees another's week before its own decision is final.

From Sunday 00:00 UTC until the outside window closes (01:00), every public surface shows the
arena as it stood at 00:00 (arena/seal.py). The world: cohort 1 started a week earlier and
holds positions; on the second Sunday cohort 2 starts at 00:00, the run at 00:05 has both
cohorts' lineups bet (and sell), and snapshots are taken at 00:10 and 00:20. The public reads
at 00:04, before anything of the week happened, and again at 00:30, under the seal: every
answer is the same. At 01:05 the seal has lifted and the week shows.

A test at the end enumerates the project's URL patterns: a public surface added later without
its place here fails it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
import time_machine
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils.html import escape

from arena.models import Agent, Decision, Position, SystemEvent, Trade
from arena.seal import public_view, seal_at
from arena.services.cohorts import cohort_start
from arena.services.decisions.run import decisions_run_all
from arena.services.marking import snapshots_take
from markets.sources import RecordedSource
from tests.arena.conftest import COHORT_AT, OFFLINE, RUN_AT, WEEK
from tests.arena.test_staff import VIEWERS, signed_in, staff_user
from tests.worlds import ModuleWorld, module_world

pytestmark = pytest.mark.django_db

WEEK_2 = WEEK + timedelta(days=7)
SEAL = datetime(WEEK_2.year, WEEK_2.month, WEEK_2.day, tzinfo=UTC)
BEFORE_THE_RUN = SEAL + timedelta(minutes=4)
SEALED = SEAL + timedelta(minutes=30)
LIFTED = SEAL + timedelta(minutes=65)

# The API's answers read before the week's run and again under the seal. Each is compared
# whole, after the keys that say when it was read are taken out.
API_ANSWERS = [
    "/api/v1/leaderboard",
    "/api/v1/leaderboard?baselines=include&outside=include",
    "/api/v1/analytics",
    "/api/v1/cohorts",
    "/api/v1/cohorts/1",
    "/api/v1/cohorts/2",
    "/api/v1/trades",
    "/api/v1/decisions",
    "/api/v1/models",
    "/api/v1/forecasts?page_size=100",
    "/api/v1/forecasts/leaderboard",
]
PER_AGENT = [
    "/api/v1/agents/{agent}",
    "/api/v1/agents/{agent}/positions",
    "/api/v1/agents/{agent}/trades",
    "/api/v1/agents/{agent}/series",
]
# Left out of the comparison: when the answer was read, and the prices each decision run froze
# (the week's run froze the market's prices at 00:05: the market's news, not an agent's).
WHEN_READ = {"computed_at", "generated_at", "now", "as_of", "price_history"}


@dataclass(frozen=True)
class SealWorld:
    answers: dict[str, Any]  # url → JSON read at 00:04, before the run
    pages: list[str]  # the pages read under the seal
    agents: list[int]
    markets: list[str]  # the markets the week's trades are in


def _read(client: Client, url: str) -> Any:
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code, response.content[:300])
    return _when_read_removed(response.json())


def _when_read_removed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _when_read_removed(v) for k, v in value.items() if k not in WHEN_READ}
    if isinstance(value, list):
        return [_when_read_removed(v) for v in value]
    return value


def _public_urls(agents: list[int], markets: list[str]) -> list[str]:
    urls = [*API_ANSWERS]
    urls += [u.format(agent=a) for u in PER_AGENT for a in agents]
    urls += [f"/api/v1/markets/{m}" for m in markets]
    return urls


def _pages(agents: list[int], markets: list[str]) -> list[str]:
    pages = ["/", "/cohorts/", "/cohorts/1/", "/cohorts/2/", "/models/", "/status/", "/markets/"]
    for agent in Agent.objects.select_related("cohort"):
        if agent.pk in agents:
            pages.append(f"/cohorts/{agent.cohort.number}/agents/{agent.pk}/")
    pages += [f"/markets/{m}/" for m in markets]
    return pages


# Methodology v2: the week's panel forecasts are sealed too.
@module_world(settings={**OFFLINE, "METHODOLOGY_VERSION": "v2"})
def seal_world() -> SealWorld:
    source = RecordedSource()
    with time_machine.travel(COHORT_AT, tick=False) as clock:
        cohort_start(week_start=WEEK, now=COHORT_AT)
        clock.move_to(RUN_AT)
        decisions_run_all(now=RUN_AT, source=source)
        for minutes in (10, 20, 30):
            snapshots_take(now=RUN_AT + timedelta(minutes=minutes), source=source, refresh=False)
        clock.move_to(SEAL)
        cohort_start(week_start=WEEK_2, now=SEAL)
        # What the public saw before the week's run: every answer read at 00:04.
        clock.move_to(BEFORE_THE_RUN)
        client = Client()
        agents = list(Agent.objects.values_list("pk", flat=True))
        held = set(Position.objects.values_list("market__polymarket_id", flat=True))
        answers = {url: _read(client, url) for url in _public_urls(agents, sorted(held))}
        pages = _pages(agents, sorted(held)[:6])
        clock.move_to(SEAL + timedelta(minutes=5))
        decisions_run_all(now=SEAL + timedelta(minutes=5), source=source)
        for minutes in (10, 20):
            snapshots_take(now=SEAL + timedelta(minutes=minutes), source=source, refresh=False)
        week = Trade.objects.filter(created_at__gte=SEAL, status=Trade.Status.EXECUTED)
        assert week.exists(), "the week's run made no trade: the world shows nothing"
        traded = sorted(set(week.values_list("market__polymarket_id", flat=True)))
    return SealWorld(answers=answers, pages=pages, agents=agents, markets=traded)


@pytest.fixture
def world(db: None, seal_world: ModuleWorld[SealWorld]) -> SealWorld:
    return seal_world.value


def week_trades() -> list[Trade]:
    return list(Trade.objects.filter(created_at__gte=SEAL).order_by("pk"))


def week_decisions() -> list[Decision]:
    return list(Decision.objects.filter(week_start=WEEK_2).order_by("pk"))


# ------------------------------------------------------------------------------ the rule


def test_the_seal_runs_from_sunday_midnight_until_the_outside_window_closes() -> None:
    assert seal_at(SEAL - timedelta(seconds=1)) is None
    assert seal_at(SEAL) == SEAL
    assert seal_at(SEAL + timedelta(minutes=59, seconds=59)) == SEAL
    assert seal_at(SEAL + timedelta(minutes=60)) is None
    assert seal_at(datetime(2026, 3, 18, 0, 30, tzinfo=UTC)) is None  # a Wednesday


def test_the_window_that_closes_the_seal_is_the_setting(settings: Any) -> None:
    settings.OUTSIDE_WINDOW_CLOSES_MINUTES = 90
    assert seal_at(SEAL + timedelta(minutes=80)) == SEAL


def test_the_engine_and_the_admin_read_everything(world: SealWorld) -> None:
    """Outside a public read nothing is sealed: the world's own queries saw the week."""
    with time_machine.travel(SEALED, tick=False):
        assert Trade.objects.filter(created_at__gte=SEAL).exists()
        with public_view():
            assert not Trade.objects.filter(created_at__gte=SEAL).exists()
            assert not Decision.objects.filter(week_start=WEEK_2).exists()


# -------------------------------------------------------------------- every surface, sealed


def test_every_api_answer_under_the_seal_is_the_one_before_the_weeks_run(
    world: SealWorld, client: Client
) -> None:
    with time_machine.travel(SEALED, tick=False):
        for url, before in world.answers.items():
            assert _read(client, url) == before, url


def test_no_page_under_the_seal_links_or_shows_the_weeks_records(
    world: SealWorld, client: Client
) -> None:
    hidden_decisions = {f"/decisions/{d.pk}/" for d in week_decisions()}
    with time_machine.travel(SEALED, tick=False):
        for url in world.pages:
            response = client.get(url)
            assert response.status_code == 200, url
            html = response.content.decode()
            assert "This week's decisions are sealed until 01:00 UTC" in html, url
            assert not hidden_decisions & set(re.findall(r"/decisions/\d+/", html)), url


def test_an_agents_cash_and_positions_under_the_seal_are_as_they_stood_at_midnight(
    world: SealWorld, client: Client
) -> None:
    trade = next(t for t in week_trades() if t.status == Trade.Status.EXECUTED)
    agent = Agent.objects.get(pk=trade.agent_id)
    first = min(
        (t for t in week_trades() if t.agent_id == agent.pk and t.cash_before is not None),
        key=lambda t: (t.created_at, t.pk),
    )
    with time_machine.travel(SEALED, tick=False):
        answer = client.get(f"/api/v1/agents/{agent.pk}").json()
        assert Decimal(answer["standing"]["cash"]) == first.cash_before
        assert Decimal(answer["standing"]["cash"]) != agent.cash
        shown = {p["id"] for p in answer["positions"]}
        assert not shown & {t.position_id for t in week_trades() if t.kind == "BUY"} - {
            p.pk for p in Position.objects.filter(opened_at__lt=SEAL)
        }


def test_a_market_the_week_traded_in_shows_none_of_the_weeks_trades_under_the_seal(
    world: SealWorld, client: Client
) -> None:
    week = {t.pk for t in week_trades()}
    with time_machine.travel(SEALED, tick=False):
        for market in world.markets:
            answer = client.get(f"/api/v1/markets/{market}").json()
            assert not {t["id"] for t in answer["trades"]} & week, market
            opened_at = [datetime.fromisoformat(h["opened_at"]) for h in answer["holders"]]
            assert all(at < SEAL for at in opened_at), market
            page = client.get(f"/markets/{market}/").content.decode()
            assert not {f"/decisions/{d.pk}/" for d in week_decisions()} & set(
                re.findall(r"/decisions/\d+/", page)
            ), market


def test_a_decision_of_the_week_is_not_found_under_the_seal(
    world: SealWorld, client: Client
) -> None:
    decision = week_decisions()[0]
    with time_machine.travel(SEALED, tick=False):
        assert client.get(f"/api/v1/decisions/{decision.pk}").status_code == 404
        assert client.get(f"/decisions/{decision.pk}/").status_code == 404


def test_the_downloads_pause_under_the_seal(world: SealWorld, client: Client) -> None:
    with time_machine.travel(SEALED, tick=False):
        for url in ("/api/v1/exports/trades.csv", "/api/v1/exports/manifest.json"):
            response = client.get(url)
            assert response.status_code == 503, url
            assert "sealed" in response.json()["error"]["message"]


def test_the_status_page_and_api_show_no_event_of_an_agent_since_midnight(
    world: SealWorld, client: Client
) -> None:
    since = SystemEvent.objects.filter(created_at__gte=SEAL).exclude(
        agent__isnull=True, decision__isnull=True, run__isnull=True
    )
    assert since.exists()
    with time_machine.travel(SEALED, tick=False):
        page = client.get("/status/").content.decode()
        status = json.dumps(client.get("/api/v1/status").json())
        for event in since:
            assert escape(event.message[:60]) not in page
            assert event.message[:60] not in status
    with time_machine.travel(LIFTED, tick=False):
        page = client.get("/status/").content.decode()
        assert any(escape(event.message[:60]) in page for event in since)


def test_staff_in_the_admin_see_the_week_under_the_seal(world: SealWorld) -> None:
    staff = signed_in(staff_user(VIEWERS))
    decision = week_decisions()[0]
    with time_machine.travel(SEALED, tick=False):
        page = staff.get(f"/admin/arena/decision/{decision.pk}/change/")
        assert page.status_code == 200
        listed = staff.get("/admin/arena/trade/").content.decode()
        trade = week_trades()[0]
        assert f"/admin/arena/trade/{trade.pk}/change/" in listed


# --------------------------------------------------------------------- after the window


def test_after_the_window_the_week_shows(world: SealWorld, client: Client) -> None:
    decision = week_decisions()[0]
    trade_ids = {t.pk for t in week_trades()}
    with time_machine.travel(LIFTED, tick=False):
        assert "decisions are sealed" not in client.get("/").content.decode()
        assert client.get(f"/api/v1/decisions/{decision.pk}").status_code == 200
        listed = client.get("/api/v1/trades?page_size=100").json()
        assert listed["count"] == Trade.objects.count()
        assert {t["id"] for t in listed["results"]} & trade_ids  # newest first: the week's
        assert client.get("/api/v1/exports/trades.csv").status_code == 200
        changed = [url for url, before in world.answers.items() if _read(client, url) != before]
        assert "/api/v1/trades" in changed
        assert "/api/v1/leaderboard" in changed


# ------------------------------------------------------------------------ every surface

# Every public URL pattern, and where the seal is tested on it: an answer compared whole
# (API_ANSWERS, PER_AGENT), a page (the pages test), a named test, or why it shows nothing of
# an agent's week. A pattern added later must be placed here.
SURFACES = {
    "api/v1/leaderboard": "API_ANSWERS",
    "api/v1/models": "API_ANSWERS",
    "api/v1/models/<path:internal_id>": "reads standings and analytics like /leaderboard",
    "api/v1/cohorts": "API_ANSWERS",
    "api/v1/cohorts/<number>": "API_ANSWERS",
    "api/v1/agents/<agent_id>/series": "PER_AGENT",
    "api/v1/agents/<agent_id>": "PER_AGENT",
    "api/v1/agents/<agent_id>/positions": "PER_AGENT",
    "api/v1/agents/<agent_id>/trades": "PER_AGENT",
    "api/v1/trades": "API_ANSWERS",
    "api/v1/decisions": "API_ANSWERS",
    "api/v1/decisions/<decision_id>": "test_a_decision_of_the_week_is_not_found_under_the_seal",
    "api/v1/markets": "lists markets with bet counts from the sealed trades",
    "api/v1/markets/<polymarket_id>": "test_a_market_the_week_traded_in_shows_none_of_the_wee…",
    "api/v1/resolutions": "markets' settlements: the market's news, not an agent's",
    "api/v1/commitments": "public by design under the seal: digests only (docs/engine.md)",
    "api/v1/status": "test_the_status_page_and_api_show_no_event_of_an_agent_since_midnight",
    "api/v1/exports/<dataset>": "test_the_downloads_pause_under_the_seal",
    "api/v1/analytics": "API_ANSWERS",
    "api/v1/forecasts": "API_ANSWERS",
    "api/v1/forecasts/leaderboard": "API_ANSWERS",
    "api/v1/analytics/models/<path:internal_id>": "the analytics of /api/v1/analytics",
    "api/v1/outside/<endpoint>": "an agent's own books, behind its token (test_outside_api)",
    "api/v1/openapi.json": "the schema: no record",
    "api/v1/docs": "the schema: no record",
    "api/v1/": "the API's index: no record",
    "favicon.ico": "a file",
    "": "the pages test (the leaderboard)",
    "markets/": "the pages test",
    "markets/<str:polymarket_id>/": "the pages test",
    "cohorts/": "the pages test",
    "cohorts/<int:number>/": "the pages test",
    "cohorts/<int:number>/agents/<int:agent_id>/": "the pages test",
    "decisions/<int:decision_id>/": "test_a_decision_of_the_week_is_not_found_under_the_seal",
    "models/": "the pages test",
    "models/<path:internal_id>/": "reads standings and analytics like the leaderboard",
    "methodology/": "text",
    "status/": "the pages test",
    "about/": "text and the lineup",
    "data/": "the releases of completed cohorts: no trade after completion",
    "data/releases/<str:name>/": "a release of a completed cohort",
    "data/releases/<str:name>/<str:filename>": "a release's file",
}


# Every route under these is placed by the entry above that names it with <...>.
PLACED_PREFIXES = ("api/v1/exports/", "api/v1/outside/")


def _routes(patterns: list[Any], prefix: str = "") -> list[str]:
    routes = []
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            routes += _routes(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            routes.append(prefix + str(pattern.pattern))
    return routes


def test_every_public_url_pattern_has_its_place_under_the_seal() -> None:
    unplaced = [
        route
        for route in _routes(get_resolver().url_patterns)
        if not route.startswith("admin/")
        and route not in SURFACES
        and not route.startswith(PLACED_PREFIXES)
    ]
    assert unplaced == [], f"public surfaces the seal is not tested on: {unplaced}"
