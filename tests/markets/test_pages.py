"""The public catalogue page (/markets/), filled from real Gamma records; the market's own page
is arena's (tests/arena/test_market_page.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
import time_machine
from django.test import Client

from markets.models import Market
from markets.parsing import GammaMarket, parse_market
from markets.services import markets_upsert
from tests.markets.conftest import TOP_500, gamma_json

pytestmark = pytest.mark.django_db

OPRAH = "559687"  # Elections, YES 0.0085, volume $31,724,013, closes 2028-11-07
CHELSEA = "559684"  # Elections, YES 0.0075, volume $30,805,336, closes 2028-11-07
GRIZZLIES = "553874"  # General, YES 0.0015, volume $29,430,321, closes 2026-07-01
DEPORT = "517311"  # General, YES 0.8615, volume $1,187,409, closes 2025-12-31
HOSTILE = "<script>alert(1)</script>"
# The day the listing was recorded: every market's status is read at a fixed "now".
RECORDED_AT = datetime(2026, 1, 31, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _recording_day() -> Iterator[None]:
    with time_machine.travel(RECORDED_AT, tick=False):
        yield


@pytest.fixture(scope="module")
def recorded() -> dict[str, GammaMarket]:
    """Every market of the real 500-record listing, parsed, by Polymarket id."""
    markets = [parse_market(record) for record in gamma_json(TOP_500)]
    return {m.polymarket_id: m for m in markets}


def upsert(*markets: GammaMarket) -> None:
    markets_upsert(markets=markets)


def listed(response: Any) -> list[str]:
    """Return the Polymarket ids the page links to, in the order it shows them."""
    return re.findall(r'href="/markets/([^/"]+)/"', response.content.decode())


@pytest.fixture
def four(recorded: dict[str, GammaMarket]) -> None:
    """Four real markets: Oprah open, Chelsea cancelled, Grizzlies closed, Deport resolved YES."""
    upsert(
        recorded[OPRAH],
        recorded[CHELSEA],
        replace(recorded[GRIZZLIES], closed=True),
        recorded[DEPORT],
    )
    Market.objects.filter(polymarket_id=CHELSEA).update(resolution=Market.Resolution.CANCELLED)
    Market.objects.filter(polymarket_id=DEPORT).update(
        resolution=Market.Resolution.RESOLVED, winning_outcome="Yes", closed=True
    )


def test_catalogue_shows_question_category_price_volume_and_close_date(
    client: Client, recorded: dict[str, GammaMarket]
) -> None:
    upsert(recorded[OPRAH], recorded[DEPORT])
    response = client.get("/markets/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "Will Oprah Winfrey win the 2028 Democratic presidential nomination?" in html
    assert "Elections" in html
    assert "0.85%" in html  # YES 0.0085, as a percentage like the prompts
    assert "$31,724,012.57" in html
    assert "2028-11-07" in html
    assert "Will Trump deport 250,000-500,000 people?" in html
    assert "86.15%" in html
    assert "$1,187,408.59" in html
    assert "2025-12-31" in html
    assert "2 markets" in html
    assert listed(response) == [OPRAH, DEPORT]  # highest volume first


def test_empty_catalogue_says_how_to_fill_it(client: Client) -> None:
    response = client.get("/markets/")
    assert response.status_code == 200
    assert "python manage.py sync_markets" in response.content.decode()


def test_search_matches_question_text_or_exact_id(client: Client, four: None) -> None:
    assert listed(client.get("/markets/", {"q": "oprah"})) == [OPRAH]
    assert listed(client.get("/markets/", {"q": CHELSEA})) == [CHELSEA]
    assert listed(client.get("/markets/", {"q": "NBA Finals"})) == [GRIZZLIES]
    response = client.get("/markets/", {"q": "nothing like this"})
    assert listed(response) == []
    assert "No markets match." in response.content.decode()


def test_category_filter_lists_only_that_category(client: Client, four: None) -> None:
    assert listed(client.get("/markets/", {"category": "Elections"})) == [OPRAH, CHELSEA]
    assert listed(client.get("/markets/", {"category": "General"})) == [GRIZZLIES, DEPORT]
    html = client.get("/markets/", {"category": "General"}).content.decode()
    assert '<option value="General" selected>General</option>' in html


@pytest.mark.parametrize(
    ("status", "expected", "label"),
    [
        ("open", [OPRAH], "Open"),
        ("closed", [GRIZZLIES], "Closed, awaiting resolution"),
        ("resolved", [DEPORT], "Resolved: Yes"),
        ("cancelled", [CHELSEA], "Cancelled — refunded"),
    ],
)
def test_status_filter_lists_only_that_status(
    client: Client, four: None, status: str, expected: list[str], label: str
) -> None:
    response = client.get("/markets/", {"status": status})
    assert listed(response) == expected
    assert f"<td>{label}</td>" in response.content.decode()


def test_sort_by_close_date_puts_the_soonest_first(client: Client, four: None) -> None:
    assert listed(client.get("/markets/")) == [OPRAH, CHELSEA, GRIZZLIES, DEPORT]
    # Deport closes 2025-12-31, Grizzlies 2026-07-01, both others 2028-11-07 (then by id).
    assert listed(client.get("/markets/", {"sort": "close"})) == [
        DEPORT,
        GRIZZLIES,
        CHELSEA,
        OPRAH,
    ]


def test_sixty_markets_are_paged_fifty_at_a_time_keeping_the_filters(
    client: Client, recorded: dict[str, GammaMarket]
) -> None:
    upsert(*list(recorded.values())[:60])
    first = client.get("/markets/")
    assert len(listed(first)) == 50
    assert "Page 1 of 2" in first.content.decode()
    second = client.get("/markets/", {"page": "2"})
    assert len(listed(second)) == 10
    assert set(listed(first)).isdisjoint(listed(second))
    # A month before the first of them reached its close date: all 60 are open.
    with time_machine.travel(datetime(2025, 12, 1, tzinfo=UTC), tick=False):
        filtered = client.get("/markets/", {"status": "open", "sort": "close"}).content.decode()
    assert "Page 1 of 2" in filtered
    assert 'href="?status=open&amp;sort=close&amp;page=2"' in filtered


@pytest.mark.parametrize(
    "params",
    [
        {"page": "abc"},
        {"page": "-1"},
        {"page": "99999"},
        {"status": "bogus"},
        {"sort": "drop"},
        {"sort": "-volume; DROP TABLE markets_market"},
        {"category": "no such category"},
        {"q": "%' OR 1=1 --"},
        {"q": "x" * 5000},
    ],
)
def test_bad_query_parameters_give_a_page_not_an_error(
    client: Client, four: None, params: dict[str, str]
) -> None:
    response = client.get("/markets/", params)
    assert response.status_code == 200


def test_unknown_status_and_sort_fall_back_to_all_markets_by_volume(
    client: Client, four: None
) -> None:
    response = client.get("/markets/", {"status": "bogus", "sort": "drop", "page": "abc"})
    assert listed(response) == [OPRAH, CHELSEA, GRIZZLIES, DEPORT]


def test_hostile_market_text_is_escaped_on_every_page(
    client: Client, recorded: dict[str, GammaMarket]
) -> None:
    upsert(
        replace(
            recorded[OPRAH],
            question=HOSTILE,
            category="<b>Cat</b>",
            description=f"Rules {HOSTILE}",
            outcomes=("<i>Yes</i>", "No"),
        )
    )
    for path in ("/markets/", f"/markets/{OPRAH}/"):
        html = client.get(path).content.decode()
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        assert "<script>alert(1)" not in html
        assert "<b>Cat</b>" not in html
        assert "<i>Yes</i>" not in html
        assert "&lt;b&gt;Cat&lt;/b&gt;" in html


@pytest.mark.parametrize("count", [5, 60])
def test_catalogue_page_runs_the_same_few_queries_whatever_the_count(
    client: Client,
    recorded: dict[str, GammaMarket],
    django_assert_num_queries: Any,
    count: int,
) -> None:
    upsert(*list(recorded.values())[:count])
    # count, the page's rows, the category list, the last sync run
    with django_assert_num_queries(4):
        response = client.get("/markets/")
    assert len(listed(response)) == min(count, 50)


def test_demo_banner_shows_only_with_demo_market_source(
    client: Client, settings: Any, recorded: dict[str, GammaMarket]
) -> None:
    upsert(recorded[OPRAH])
    settings.MARKET_SOURCE = "demo"
    assert "Demo data" in client.get("/markets/").content.decode()
    assert "Demo data" in client.get(f"/markets/{OPRAH}/").content.decode()
    settings.MARKET_SOURCE = "gamma"
    assert "Demo data" not in client.get("/markets/").content.decode()
    assert "Demo data" not in client.get(f"/markets/{OPRAH}/").content.decode()
