"""Whole public pages kept until the data moves (arena/views/page_cache.py): a page asked
again is the same bytes without being rendered again, until a row is added, a decision moves
on, the lineup changes or the seal begins; what a request's path and query ask for is kept
apart; only a page answered 200 is kept; 0 seconds keeps nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from arena import clock
from arena.models import Decision, SystemEvent
from arena.services.events import event_record
from markets.models import Market
from tests.page_world import World, build_world

pytestmark = pytest.mark.django_db
# What a kept page costs: the watermark's one query.
WATERMARK_QUERIES = 1


@pytest.fixture
def world(settings: Any) -> World:
    settings.PAGE_CACHE_SECONDS = 600
    return build_world(scale=1)


def fetched(client: Client, path: str) -> tuple[int, bytes, int]:
    """(status, body, queries) of one GET."""
    with CaptureQueriesContext(connection) as queries:
        response = client.get(path)
    return response.status_code, response.content, len(queries)


def pages(world: World) -> list[str]:
    return [
        "/",
        reverse("arena:cohort", args=[world.cohort.number]),
        reverse("arena:agent", args=[world.cohort.number, world.agent.pk]),
        reverse("arena:decision", args=[world.decision.pk]),
        reverse("arena:model", args=[world.model.internal_id]),
        reverse("arena:models"),
        reverse("arena:market", args=[world.market.polymarket_id]),
    ]


def test_a_page_asked_again_is_the_same_bytes_for_the_watermarks_reads_only(
    world: World, client: Client
) -> None:
    for path in pages(world):
        status, first, rendering = fetched(client, path)
        assert status == 200, path
        status, again, kept = fetched(client, path)
        assert (status, again) == (200, first), path
        assert kept <= WATERMARK_QUERIES < rendering, path
    # The middleware still answers every request: its headers are on a kept page too.
    assert client.get("/").headers["X-Content-Type-Options"] == "nosniff"


def test_a_decision_moving_on_in_place_is_shown_at_once(world: World, client: Client) -> None:
    path = reverse("arena:decision", args=[world.decision.pk])
    Decision.objects.filter(pk=world.decision.pk).update(status=Decision.Status.RUNNING)
    fetched(client, path)
    # Finishing adds no row anywhere (a HOLD trades nothing): the page is rendered again.
    Decision.objects.filter(pk=world.decision.pk).update(status=Decision.Status.DONE)
    assert fetched(client, path)[2] > WATERMARK_QUERIES


def test_two_decisions_trading_places_in_place_are_shown_at_once(
    world: World, client: Client
) -> None:
    """One team's submission claimed while another's is reopened: each status keeps its count,
    but not its decisions."""
    one, other = Decision.objects.filter(cohort=world.cohort).order_by("pk")[:2]
    Decision.objects.filter(pk=one.pk).update(status=Decision.Status.AWAITING)
    Decision.objects.filter(pk=other.pk).update(status=Decision.Status.RUNNING)
    path = reverse("arena:decision", args=[one.pk])
    fetched(client, path)
    assert fetched(client, path)[2] <= WATERMARK_QUERIES
    Decision.objects.filter(pk=one.pk).update(status=Decision.Status.RUNNING)
    Decision.objects.filter(pk=other.pk).update(status=Decision.Status.AWAITING)
    assert fetched(client, path)[2] > WATERMARK_QUERIES


def test_a_row_added_or_the_lineup_changed_renders_the_page_again(
    world: World, client: Client
) -> None:
    path = reverse("arena:cohort", args=[world.cohort.number])
    fetched(client, path)
    assert fetched(client, path)[2] <= WATERMARK_QUERIES
    event_record(kind=SystemEvent.Kind.STAFF_ACTION, message="a staff operation")
    assert fetched(client, path)[2] > WATERMARK_QUERIES
    assert fetched(client, path)[2] <= WATERMARK_QUERIES
    world.model.display_name = "Renamed"
    world.model.save()
    status, body, queries = fetched(client, path)
    assert queries > WATERMARK_QUERIES
    assert b"Renamed" in body


def test_the_query_is_part_of_what_is_kept_and_only_200_is_kept(
    world: World, client: Client
) -> None:
    path = reverse("arena:cohort", args=[world.cohort.number])
    fetched(client, path + "?range=1M")
    status, _, queries = fetched(client, path + "?range=ALL")
    assert status == 200
    assert queries > WATERMARK_QUERIES
    # The parameters in another order ask for the same page.
    fetched(client, "/?sort=alpha&cohorts=completed")
    assert fetched(client, "/?cohorts=completed&sort=alpha")[2] <= WATERMARK_QUERIES
    # A decision the page cannot find answers 404 (its view's own answer): asked again, it is
    # looked up again.
    missing = reverse("arena:decision", args=[world.decision.pk + 999_999])
    assert fetched(client, missing)[0] == 404
    assert fetched(client, missing)[2] > WATERMARK_QUERIES


@pytest.mark.parametrize("query", ["?utm_source=feed", "?range=1M&range=ALL", "?range=1M&x=1"])
def test_a_query_the_page_does_not_read_is_rendered_and_not_kept(
    world: World, client: Client, query: str
) -> None:
    """Made-up queries would otherwise fill the cache with copies of one page and push out
    the pages visitors ask for."""
    path = reverse("arena:cohort", args=[world.cohort.number]) + query
    assert fetched(client, path)[0] == 200
    assert fetched(client, path)[2] > WATERMARK_QUERIES


def test_the_seal_beginning_is_another_page(world: World, client: Client) -> None:
    """A page read before Sunday 00:00 is not served under the seal; once it lifts, with
    nothing changed, the open page is the open page again."""
    sunday = datetime.combine(world.cohort.week_start, datetime.min.time(), UTC)
    sunday += timedelta(weeks=1)
    path = reverse("arena:cohort", args=[world.cohort.number])
    with clock.simulated(sunday - timedelta(minutes=5)):
        fetched(client, path)
        assert fetched(client, path)[2] <= WATERMARK_QUERIES
    with clock.simulated(sunday + timedelta(minutes=20)):
        assert fetched(client, path)[2] > WATERMARK_QUERIES
    with clock.simulated(sunday + timedelta(hours=2)):  # lifted, and nothing changed
        assert fetched(client, path)[2] <= WATERMARK_QUERIES


def test_no_seconds_keeps_nothing(world: World, client: Client, settings: Any) -> None:
    settings.PAGE_CACHE_SECONDS = 0
    path = reverse("arena:cohort", args=[world.cohort.number])
    fetched(client, path)
    assert fetched(client, path)[2] > WATERMARK_QUERIES


def test_a_change_saved_in_the_admin_renders_the_page_again(
    world: World, client: Client, django_user_model: Any
) -> None:
    """The admin logs every row it adds, changes or deletes (a row of its LogEntry), after
    saving it: a staff edit the engine records nowhere else shows at once."""
    path = reverse("arena:market", args=[world.market.polymarket_id])
    fetched(client, path)
    assert fetched(client, path)[2] <= WATERMARK_QUERIES
    staff = django_user_model.objects.create_superuser("staff", "staff@example.org", "pw")
    LogEntry.objects.create(
        user=staff,
        content_type=ContentType.objects.get_for_model(Market),
        object_id=str(world.market.pk),
        object_repr=str(world.market)[:200],
        action_flag=CHANGE,
        change_message="[]",
    )
    assert fetched(client, path)[2] > WATERMARK_QUERIES


def test_the_status_page_which_reads_the_clock_is_kept_a_minute_at_most(
    world: World, client: Client
) -> None:
    minute = datetime(2031, 3, 5, 12, 0, tzinfo=UTC)
    with time_machine.travel(minute + timedelta(seconds=5), tick=False):
        fetched(client, "/status/")
        assert fetched(client, "/status/")[2] <= WATERMARK_QUERIES
    with time_machine.travel(minute + timedelta(seconds=59), tick=False):
        assert fetched(client, "/status/")[2] <= WATERMARK_QUERIES
    with time_machine.travel(minute + timedelta(seconds=61), tick=False):
        assert fetched(client, "/status/")[2] > WATERMARK_QUERIES
