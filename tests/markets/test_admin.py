"""Staff inspection of the catalogue in the admin, and the resync action against Gamma."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from markets.models import Market
from markets.parsing import GammaMarket, parse_market
from markets.services import markets_upsert
from tests.markets.conftest import TOP_500, by_id_handler, gamma_json
from tests.replay import ReplayServer, Reply

pytestmark = pytest.mark.django_db

OPRAH = "559687"  # Elections
CHELSEA = "559684"  # Elections
GRIZZLIES = "553874"  # General
DEPORT = "517311"  # General
HOSTILE = "<script>alert(1)</script>"
CHANGELIST = reverse("admin:markets_market_changelist")


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings: Any) -> None:
    """The admin user's password is hashed once per test; PBKDF2 would take seconds."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(scope="module")
def records() -> dict[str, dict[str, Any]]:
    """The real 500-record listing, by Polymarket id."""
    return {str(r["id"]): r for r in gamma_json(TOP_500)}


@pytest.fixture
def catalogue(records: dict[str, dict[str, Any]]) -> None:
    """Four real markets; Deport resolved YES."""
    markets: list[GammaMarket] = [
        parse_market(records[i]) for i in (OPRAH, CHELSEA, GRIZZLIES, DEPORT)
    ]
    markets_upsert(markets=markets)
    Market.objects.filter(polymarket_id=DEPORT).update(
        resolution=Market.Resolution.RESOLVED, winning_outcome="Yes", closed=True
    )


def listed(response: Any) -> set[str]:
    """Return the Polymarket ids in the changelist's first column."""
    return set(
        re.findall(r'<th class="field-polymarket_id"><a href="[^"]+">([^<]+)</a>', _html(response))
    )


def _html(response: Any) -> str:
    assert response.status_code == 200
    return str(response.content.decode())


def pk_of(polymarket_id: str) -> int:
    return int(Market.objects.values_list("pk", flat=True).get(polymarket_id=polymarket_id))


def test_changelist_lists_the_catalogue(admin_client: Client, catalogue: None) -> None:
    response = admin_client.get(CHANGELIST)
    assert listed(response) == {OPRAH, CHELSEA, GRIZZLIES, DEPORT}
    assert "Will Oprah Winfrey win the 2028 Democratic presidential nomination?" in _html(response)


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        ("oprah", {OPRAH}),
        ("Democratic presidential nomination", {OPRAH, CHELSEA}),
        (CHELSEA, {CHELSEA}),  # an exact id
        ("55968", set()),  # ids match exactly, not by prefix
    ],
)
def test_changelist_searches_by_question_and_by_id(
    admin_client: Client, catalogue: None, q: str, expected: set[str]
) -> None:
    assert listed(admin_client.get(CHANGELIST, {"q": q})) == expected


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"resolution__exact": "resolved"}, {DEPORT}),
        ({"resolution__exact": "open"}, {OPRAH, CHELSEA, GRIZZLIES}),
        ({"category": "Elections"}, {OPRAH, CHELSEA}),
        ({"category": "General"}, {GRIZZLIES, DEPORT}),
    ],
)
def test_changelist_filters_by_resolution_and_category(
    admin_client: Client, catalogue: None, params: dict[str, str], expected: set[str]
) -> None:
    assert listed(admin_client.get(CHANGELIST, params)) == expected


def test_change_page_shows_the_raw_gamma_record_as_escaped_json(
    admin_client: Client, records: dict[str, dict[str, Any]]
) -> None:
    record = {**records[OPRAH], "question": HOSTILE}
    markets_upsert(markets=[parse_market(record)])
    html = _html(admin_client.get(reverse("admin:markets_market_change", args=[pk_of(OPRAH)])))
    raw = re.search(r"<pre[^>]*>(.*?)</pre>", html, re.S)
    assert raw is not None, "the raw record is not in a <pre>"
    assert "&quot;question&quot;: &quot;&lt;script&gt;alert(1)&lt;/script&gt;&quot;" in raw[1]
    assert "&quot;conditionId&quot;: &quot;0xe06a7e94cf2fa8dc2085b7610fe16e9be1c" in raw[1]
    assert "<script>alert(1)" not in html


def test_staff_cannot_add_or_delete_markets(admin_client: Client, catalogue: None) -> None:
    pk = pk_of(OPRAH)
    assert admin_client.get(reverse("admin:markets_market_add")).status_code == 403
    assert admin_client.get(reverse("admin:markets_market_delete", args=[pk])).status_code == 403
    assert admin_client.post(reverse("admin:markets_market_delete", args=[pk])).status_code == 403
    html = _html(admin_client.get(CHANGELIST))
    assert 'value="delete_selected"' not in html
    assert reverse("admin:markets_market_add") not in html
    response = admin_client.post(
        CHANGELIST, {"action": "delete_selected", "_selected_action": [pk], "post": "yes"}
    )
    assert response.status_code in (200, 302)
    assert Market.objects.filter(pk=pk).exists()


def test_change_page_is_read_only_with_no_save_button(
    admin_client: Client, catalogue: None
) -> None:
    """Every field comes from Gamma; the only writes are the actions (resync, resolution)."""
    html = _html(admin_client.get(reverse("admin:markets_market_change", args=[pk_of(OPRAH)])))
    for control in ('name="_save"', 'name="_continue"', 'name="_addanother"', "deletelink"):
        assert control not in html
    assert 'class="closelink"' in html  # the submit row offers only Close
    before = Market.objects.get(polymarket_id=OPRAH)
    response = admin_client.post(
        reverse("admin:markets_market_change", args=[pk_of(OPRAH)]),
        {"question": "edited", "_save": "Save"},
    )
    assert response.status_code == 403
    assert Market.objects.get(polymarket_id=OPRAH).question == before.question


def test_resync_action_rereads_the_selected_markets_and_reports_the_summary(
    admin_client: Client,
    catalogue: None,
    records: dict[str, dict[str, Any]],
    gamma_server: ReplayServer,
) -> None:
    moved = {**records[OPRAH], "outcomePrices": json.dumps(["0.25", "0.75"])}
    gamma_server.route("GET", "/markets", by_id_handler([moved, records[CHELSEA]]))
    response = admin_client.post(
        CHANGELIST,
        {"action": "resync", "_selected_action": [pk_of(OPRAH), pk_of(CHELSEA)]},
        follow=True,
    )
    html = _html(response)
    assert re.search(
        r'<li class="success">Synced 2 markets from gamma in [0-9.]+s: 0 new, 1 updated, '
        r"1 unchanged, 0 rejected \(of 2 fetched\)</li>",
        html,
    ), html[html.find("messagelist") - 50 : html.find("messagelist") + 300]
    (request,) = gamma_server.requests_to("/markets")
    assert sorted(request.query["id"]) == sorted([OPRAH, CHELSEA])
    assert str(Market.objects.get(polymarket_id=OPRAH).price) == "0.250000"


def test_resync_action_reports_a_failed_fetch_as_an_error_and_changes_nothing(
    admin_client: Client, catalogue: None, gamma_server: ReplayServer, settings: Any
) -> None:
    settings.HTTP_MAX_RETRIES = 1
    gamma_server.route("GET", "/markets", Reply.json({"error": "internal"}, 500))
    before = Market.objects.get(polymarket_id=OPRAH)
    response = admin_client.post(
        CHANGELIST, {"action": "resync", "_selected_action": [pk_of(OPRAH)]}, follow=True
    )
    html = _html(response)
    assert (
        '<li class="error">Sync failed, catalogue unchanged: GET /markets answered HTTP 500' in html
    )
    after = Market.objects.get(polymarket_id=OPRAH)
    assert (after.price, after.last_synced_at) == (before.price, before.last_synced_at)


def test_resync_action_names_each_market_it_could_not_sync_and_why(
    admin_client: Client,
    catalogue: None,
    records: dict[str, dict[str, Any]],
    gamma_server: ReplayServer,
) -> None:
    odd = {**records[OPRAH], "outcomePrices": json.dumps(["0.25"])}  # one price, two outcomes
    gamma_server.route("GET", "/markets", by_id_handler([odd]))  # and Chelsea is not returned
    before = Market.objects.get(polymarket_id=OPRAH)
    response = admin_client.post(
        CHANGELIST,
        {"action": "resync", "_selected_action": [pk_of(OPRAH), pk_of(CHELSEA)]},
        follow=True,
    )
    html = _html(response)
    warning = re.search(r'<li class="warning">(.*?)</li>', html)
    assert warning is not None
    assert warning[1].startswith(f"2 not synced — {OPRAH}: market {OPRAH}: 1 prices for 2 outcomes")
    assert warning[1].endswith(f"; {CHELSEA}: not returned by gamma")
    assert Market.objects.get(polymarket_id=OPRAH).price == before.price


def test_hostile_question_is_escaped_in_the_changelist(
    admin_client: Client, records: dict[str, dict[str, Any]]
) -> None:
    markets_upsert(markets=[replace(parse_market(records[OPRAH]), question=HOSTILE)])
    html = _html(admin_client.get(CHANGELIST))
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>alert(1)" not in html
