"""Hostile input: hostile market records are refused with a reason or stored safely,
and what is stored renders escaped; hostile parameters on the market pages and API get a 4xx
or a valid page, never a 500.

Every record goes the real way: the Gamma client reads one crafted listing page from a
127.0.0.1 replay server (`tests/replay.py`) and `markets_sync_top` parses and stores it.
Each hostile record is a real recorded market with one thing changed, so whatever it is
refused for is that one thing; the page is written by hand (`tests.hostile.render`) where
JSON cannot say the hostile value (1e400, a 5,000-digit integer).
"""

from __future__ import annotations

import copy
import json
from typing import Any
from urllib.parse import quote

import pytest
from django.test import Client
from django.test.utils import override_settings

from markets.models import Market, MarketSyncRun
from markets.parsing import DESCRIPTION_MAX
from markets.services import SyncResult, markets_refresh, markets_sync_top
from tests.api.helpers import assert_envelope
from tests.hostile import MEGABYTE, Raw, render
from tests.markets.conftest import TOP_500, gamma_json
from tests.replay import ReplayServer, Reply, Request
from tests.worlds import ModuleWorld, module_world

pytestmark = pytest.mark.django_db

SCRIPT = "<script>alert(1)</script>"
ESCAPED_SCRIPT = "&lt;script&gt;alert(1)&lt;/script&gt;"
DEEP = "[" * 100_000  # past any JSON parser's recursion limit

# record key → (what changes in a real record, what the refusal says)
REFUSED: dict[str, tuple[dict[str, Any], str]] = {
    "no id": ({"id": None}, "record without an id"),
    "markup id": ({"id": SCRIPT}, "is not a Polymarket id"),
    "40-digit id": ({"id": "1" * 40}, "is not a Polymarket id"),
    "megabyte question": ({"question": "Will " + "x" * MEGABYTE}, "over 1,000"),
    "NUL in question": ({"question": "Will it\x00 happen?"}, "holds a NUL character"),
    "lone surrogate": ({"description": "rules \ud800"}, "holds a lone surrogate"),
    "NaN price": ({"outcomePrices": '["NaN", "0.5"]'}, "is not finite"),
    "NaN token price": ({"outcomePrices": "[NaN, 0.5]"}, "is not finite"),
    "Infinity price": ({"outcomePrices": '["Infinity", "0"]'}, "is not finite"),
    "abc price": ({"outcomePrices": '["abc", "0.5"]'}, "'abc' is not a number"),
    "negative price": ({"outcomePrices": '["-0.1", "1.1"]'}, "outside [0, 1]"),
    "price over 1": ({"outcomePrices": '["1.5", "0"]'}, "outside [0, 1]"),
    "1e400 price": ({"outcomePrices": "[1e400, 0]"}, "outside [0, 1]"),
    "null price": ({"outcomePrices": '["0.4", null]'}, "outcome price is None"),
    "one price for two": ({"outcomePrices": '["0.5"]'}, "1 prices for 2 outcomes"),
    "two prices for three": (
        {"outcomes": '["Yes", "No", "Maybe"]', "outcomePrices": '["0.5", "0.5"]'},
        "2 prices for 3 outcomes",
    ),
    "truncated outcomes": ({"outcomes": '["Yes", "No"'}, "outcomes is not valid JSON"),
    "deep outcomes": ({"outcomes": DEEP}, "outcomes is nested too deeply"),
    "object outcomes": ({"outcomes": '{"Yes": 1}'}, "outcomes is not a list"),
    "number outcomes": ({"outcomes": 12}, "neither a list nor a JSON string"),
    "object outcome": ({"outcomes": '["Yes", {"No": 1}]'}, "is not a name"),
    "long outcome": ({"outcomes": json.dumps(["Yes", "N" * 300])}, "longer than 255"),
    "negative volume": ({"volume": "-5", "volumeNum": -5}, "negative volume"),
    "NaN volume": ({"volume": "NaN", "volumeNum": Raw("NaN")}, "is not finite"),
    "1e400 volume": ({"volume": Raw("1e400"), "volumeNum": Raw("1e400")}, "is not finite"),
    "1e20 volume": ({"volume": "1e20"}, "is not below 10^14"),
    "5,000-digit volume": ({"volume": Raw("9" * 5000)}, "is not below 10^14"),
    "negative liquidity": ({"liquidity": "-1"}, "negative liquidity"),
    "year 9999": ({"endDate": "9999-12-31T23:59:59Z"}, "outside the years 2000–2099"),
    "year 9999 west of UTC": ({"endDate": "9999-12-31T23:00:00-05:00"}, "out of range"),
    "unparseable date": ({"endDate": "next Tuesday"}, "is not an ISO date"),
    "numeric date": ({"endDate": 1e12}, "is not a date"),
    "NaN elsewhere": ({"spread": Raw("NaN")}, "holds nan, which JSON cannot"),
    "Infinity elsewhere": ({"spread": Raw("-Infinity")}, "holds -inf, which JSON cannot"),
    "5,000 digits elsewhere": ({"spread": Raw("7" * 5000)}, "holds a Decimal"),
    "200 KB field": ({"image": "x" * 200_000}, "characters, over 100,000"),
    "NUL in a key": ({"x\x00": 1}, "holds a NUL character"),
}

# record key → what changes; each is stored (the cases' own tests say how)
STORED: dict[str, dict[str, Any]] = {
    "markup everywhere": {
        "question": f"{SCRIPT} Will <b>it</b> happen?",
        "description": f"Rules {SCRIPT}</div><textarea>",
        "outcomes": json.dumps([f"{SCRIPT}Yes", "<i>No</i>"]),
        "category": f"{SCRIPT}Cat",
        "slug": '"><script>alert(1)</script>',
        "events": [{"id": "1", "title": f"{SCRIPT} event", "slug": "e"}],
    },
    "megabyte description": {"description": "D" * MEGABYTE},
    "odd tags": {"category": None, "events": [{"tags": 5}]},
    "category with line breaks": {"category": "Sports\n\tand\r\ngames"},
}


def _records() -> list[Any]:
    """The crafted page: the refused records, the stored ones, a repeat of the first stored
    id, a record that is not an object, then three plain real markets."""
    real = gamma_json(TOP_500)
    cases = [*REFUSED.values(), *((changes, "") for changes in STORED.values())]
    records: list[Any] = [{**real[i], **changes} for i, (changes, _) in enumerate(cases)]
    for record in records:  # "no id" drops the key instead of sending null
        if record.get("id") is None:
            del record["id"]
    duplicate = {**real[len(REFUSED)], "question": "the same id again"}
    plain = real[len(cases) : len(cases) + 3]
    return [*records, duplicate, "junk", *plain]


RECORDS = _records()
REFUSED_IDS = {key: str(RECORDS[i].get("id", "?")) for i, key in enumerate(REFUSED)}
STORED_IDS = {key: str(RECORDS[len(REFUSED) + i]["id"]) for i, key in enumerate(STORED)}
PLAIN_IDS = [str(r["id"]) for r in RECORDS[-3:]]


@module_world()
def hostile_sync() -> SyncResult:
    """The crafted page synced through the Gamma client and `markets_sync_top`, from a
    replay server of its own: once for the module (tests/worlds.py)."""
    body = render(RECORDS).encode("utf-8", "surrogatepass")
    with ReplayServer() as gamma_server:
        gamma_server.route("GET", "/markets", Reply(body=body))
        with override_settings(POLYMARKET_GAMMA_URL=gamma_server.url, MARKET_SOURCE="gamma"):
            return markets_sync_top(limit=500)


@pytest.fixture
def synced(db: None, hostile_sync: ModuleWorld[SyncResult], settings: Any) -> SyncResult:
    """The crafted page synced: the sync's result, the test's own copy. The test runs with
    the Gamma source configured, as the sync did (the pages say so: no "Demo data")."""
    settings.MARKET_SOURCE = "gamma"
    return copy.deepcopy(hostile_sync.value)


def test_the_hostile_page_is_synced_with_every_other_record_stored(synced: SyncResult) -> None:
    assert synced.ok, synced.error
    stored = set(Market.objects.values_list("polymarket_id", flat=True))
    assert stored == {*STORED_IDS.values(), *PLAIN_IDS}
    run = MarketSyncRun.objects.get()
    assert (run.status, run.fetched, run.created) == ("ok", len(RECORDS), len(stored))
    # every refused record, the repeat and the non-object
    assert run.rejected == len(REFUSED) + 2 == len(run.rejections)
    assert f"{len(REFUSED) + 2} rejected" in synced.summary()


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_hostile_record_is_refused_with_its_reason_on_the_sync_run(
    synced: SyncResult, case: str
) -> None:
    reason = REFUSED[case][1]
    rejections = MarketSyncRun.objects.get().rejections
    filed = [r for r in rejections if r["id"] == REFUSED_IDS[case] and reason in r["reason"]]
    assert len(filed) == 1, rejections
    assert len(filed[0]["reason"]) < 300  # a reason quotes the hostile value, cut short


def test_a_refresh_by_id_refuses_the_same_records_and_stores_the_rest(
    gamma_server: ReplayServer,
) -> None:
    with_ids = [r for r in RECORDS if isinstance(r, dict) and "id" in r]

    def by_id(request: Request) -> Reply:
        asked = set(request.query.get("id", []))
        return Reply(body=render([r for r in with_ids if str(r["id"]) in asked]).encode())

    gamma_server.route("GET", "/markets", by_id)
    result = markets_refresh(polymarket_ids=[str(r["id"]) for r in with_ids])
    assert result.ok, result.error
    stored = set(Market.objects.values_list("polymarket_id", flat=True))
    assert stored == {*STORED_IDS.values(), *PLAIN_IDS}
    # every refused record but the one without an id (never asked for), and the repeat
    assert len(result.rejections) == len(REFUSED)


def test_the_repeated_id_and_the_non_object_are_refused(synced: SyncResult) -> None:
    reasons = {r["reason"] for r in MarketSyncRun.objects.get().rejections}
    assert f"market {STORED_IDS['markup everywhere']}: duplicate id" in reasons
    assert "record 'junk': not a JSON object" in reasons
    assert Market.objects.get(polymarket_id=STORED_IDS["markup everywhere"]).question != (
        "the same id again"
    )


def test_markup_is_stored_verbatim(synced: SyncResult) -> None:
    market = Market.objects.get(polymarket_id=STORED_IDS["markup everywhere"])
    changes = STORED["markup everywhere"]
    assert market.question == changes["question"]
    assert market.description == changes["description"]
    assert market.outcomes == json.loads(changes["outcomes"])
    assert market.category == f"{SCRIPT}Cat"
    assert market.slug == changes["slug"]
    assert market.event_title == f"{SCRIPT} event"


def test_a_megabyte_description_is_cut_where_it_is_stored(synced: SyncResult) -> None:
    market = Market.objects.get(polymarket_id=STORED_IDS["megabyte description"])
    cut = f"{'D' * DESCRIPTION_MAX} … [cut at 20,000 of 1,000,000 characters]"
    assert market.description == cut
    assert market.raw["description"] == cut
    assert market.raw["question"] == RECORDS[len(REFUSED) + 1]["question"]


def test_odd_categories_are_read_as_one_line_or_general(synced: SyncResult) -> None:
    assert Market.objects.get(polymarket_id=STORED_IDS["odd tags"]).category == "General"
    lines = Market.objects.get(polymarket_id=STORED_IDS["category with line breaks"])
    assert lines.category == "Sports and games"


def _html(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def test_stored_hostile_markets_render_escaped_on_the_pages(
    synced: SyncResult, client: Client
) -> None:
    markup = STORED_IDS["markup everywhere"]
    for url in ("/markets/", f"/markets/{markup}/", f"/markets/?category={quote(SCRIPT)}Cat"):
        html = _html(client, url)
        assert "<script>alert" not in html
        assert "<b>it</b>" not in html
        assert "<i>No</i>" not in html
        assert ESCAPED_SCRIPT in html
    detail = _html(client, f"/markets/{markup}/")
    assert "&lt;/div&gt;&lt;textarea&gt;" in detail  # the description, as text
    assert "https://polymarket.com/market/%22%3E%3Cscript%3E" in detail  # the slug's link
    big = _html(client, f"/markets/{STORED_IDS['megabyte description']}/")
    assert "[cut at 20,000 of 1,000,000 characters]" in big
    assert len(big) < 100_000


def test_stored_hostile_markets_are_plain_json_data_in_the_api(
    synced: SyncResult, client: Client
) -> None:
    """The API returns the stored text as JSON strings, whole: it is data, and the response
    says it is JSON and must not be sniffed as a page."""
    markup = Market.objects.get(polymarket_id=STORED_IDS["markup everywhere"])
    listing = client.get("/api/v1/markets", {"page_size": 100})
    detail = client.get(f"/api/v1/markets/{markup.polymarket_id}")
    for response in (listing, detail):
        assert response.status_code == 200
        assert response["Content-Type"].startswith("application/json")
        assert response["X-Content-Type-Options"] == "nosniff"
    (row,) = [m for m in listing.json()["results"] if m["polymarket_id"] == markup.polymarket_id]
    body = detail.json()
    for shown in (row, body):
        assert shown["question"] == markup.question
        assert shown["outcomes"] == markup.outcomes
        assert shown["category"] == markup.category
    assert body["description"] == markup.description
    big = client.get(f"/api/v1/markets/{STORED_IDS['megabyte description']}")
    assert big.status_code == 200
    assert len(big.json()["description"]) < DESCRIPTION_MAX + 100


def test_a_body_nested_too_deeply_fails_the_sync_cleanly(gamma_server: ReplayServer) -> None:
    gamma_server.route("GET", "/markets", Reply(body=DEEP.encode()))
    result = markets_sync_top(limit=500)
    assert not result.ok
    assert "nested too deeply" in result.error
    assert MarketSyncRun.objects.get().status == "failed"


# --------------------------------------------------------------------- hostile parameters

# Query values, already percent-encoded: long, NUL, invalid UTF-8, right-to-left override,
# emoji, negative, huge, not-a-number, SQL and wildcards.
HOSTILE_VALUES = [
    "x" * 5000,
    "%00",
    "a%00b",
    "%ED%A0%80",  # a lone surrogate, as UTF-8 bytes
    "%FF%FE",
    quote("\u202eevil"),
    quote("🦄🔥"),
    "-1",
    "0",
    "9" * 30,
    "1e400",
    "NaN",
    quote("' OR 1=1 --"),
    "%25",
    "_",
    "",
]
PAGE_PARAMETERS = ["q", "category", "status", "sort", "page"]
API_PARAMETERS = ["q", "category", "status", "sort", "held", "page", "page_size"]


@pytest.fixture
def catalogue(synced: SyncResult) -> None:
    """The hostile page synced: hostile markets to find, filter and sort."""


@pytest.mark.parametrize("value", HOSTILE_VALUES)
@pytest.mark.parametrize("parameter", PAGE_PARAMETERS)
def test_hostile_parameters_on_the_catalogue_page_get_a_page(
    catalogue: None, client: Client, parameter: str, value: str
) -> None:
    response = client.get(f"/markets/?{parameter}={value}")
    assert response.status_code == 200
    assert "<script>alert" not in response.content.decode()


@pytest.mark.parametrize("value", HOSTILE_VALUES)
@pytest.mark.parametrize("parameter", API_PARAMETERS)
def test_hostile_parameters_on_the_market_api_get_a_4xx_or_a_page(
    catalogue: None, client: Client, parameter: str, value: str
) -> None:
    response = client.get(f"/api/v1/markets?{parameter}={value}")
    assert response.status_code in (200, 400, 422), response.content[:200]
    if response.status_code != 200:
        assert_envelope(response.json(), response.status_code)


@pytest.mark.parametrize("value", [v for v in HOSTILE_VALUES if v])
def test_hostile_market_ids_get_a_404_on_the_page(
    catalogue: None, client: Client, value: str
) -> None:
    assert client.get(f"/markets/{value}/").status_code == 404


@pytest.mark.parametrize("value", [v for v in HOSTILE_VALUES if v])
def test_hostile_market_ids_get_a_4xx_in_the_api(
    catalogue: None, client: Client, value: str
) -> None:
    response = client.get(f"/api/v1/markets/{value}")
    assert response.status_code in (404, 422)
    assert_envelope(response.json(), response.status_code)
