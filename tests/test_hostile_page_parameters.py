"""Hostile input: every public HTML page answers hostile parameters with a valid page
or a 4xx, never a 500, and never echoes a parameter's markup raw.

The catalogue (/markets/) is swept in tests/markets/test_hostile_records.py; this sweeps the
other pages over the same HOSTILE_VALUES (NUL bytes, lone surrogates as UTF-8, numbers too big
for any column, SQL, unicode), plus a script tag, repeated parameters and unknown ones, in the
query string and in the path. PostgreSQL refuses a NUL in any string it is sent: run this file
with a PostgreSQL DATABASE_URL as well as on SQLite.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote

import pytest
from django.test import Client

from tests.markets.test_hostile_records import HOSTILE_VALUES
from tests.page_world import World, build_world, published_release

SCRIPT = "<script>alert(1)</script>"
VALUES = [*HOSTILE_VALUES, quote(SCRIPT), "%0A", quote("a/b"), "%C3%28"]
# Path segments: every value but the empty one (an empty segment is another URL), and text
# over any column's length.
SEGMENTS = [*(v for v in VALUES if v), "x" * 10_000, quote("é/ü/🦄"), "%00%00"]


@pytest.fixture
def world(db: None) -> World:
    world = build_world(scale=1)
    published_release(world.cohort)
    return world


def release_name(w: World) -> str:
    return f"cohort-{w.cohort.number}-v1"


# page → (its URL in the world, the query parameters its view reads)
PAGES: dict[str, tuple[Callable[[World], str], list[str]]] = {
    "leaderboard": (lambda w: "/", ["sort", "cohorts", "view"]),
    "cohorts": (lambda w: "/cohorts/", []),
    "cohort": (lambda w: f"/cohorts/{w.cohort.number}/", ["range"]),
    "agent": (lambda w: f"/cohorts/{w.cohort.number}/agents/{w.agent.pk}/", ["range"]),
    "decision": (lambda w: f"/decisions/{w.decision.pk}/", []),
    "market": (lambda w: f"/markets/{w.market.polymarket_id}/", []),
    "models": (lambda w: "/models/", []),
    "model": (lambda w: f"/models/{w.model.internal_id}/", ["range"]),
    "data": (lambda w: "/data/", ["page", "cohort"]),
    "release": (lambda w: f"/data/releases/{release_name(w)}/", []),
    "methodology": (lambda w: "/methodology/", []),
    "status": (lambda w: "/status/", []),
    "about": (lambda w: "/about/", []),
}

# page → its URL with one path segment replaced by a hostile one
PATHS: dict[str, Callable[[World, str], str]] = {
    "cohort number": lambda w, v: f"/cohorts/{v}/",
    "cohort number of an agent": lambda w, v: f"/cohorts/{v}/agents/{w.agent.pk}/",
    "agent id": lambda w, v: f"/cohorts/{w.cohort.number}/agents/{v}/",
    "decision id": lambda w, v: f"/decisions/{v}/",
    "model id": lambda w, v: f"/models/{v}/",
    "model id under a real one": lambda w, v: f"/models/{w.model.internal_id}/{v}/",
    "market id": lambda w, v: f"/markets/{v}/",
    "release name": lambda w, v: f"/data/releases/{v}/",
    "release file name": lambda w, v: f"/data/releases/{release_name(w)}/{v}",
    "file name of no release": lambda w, v: f"/data/releases/{v}/README.md",
}


def failures_of(client: Client, urls: list[str], *, found: bool) -> list[str]:
    """Return what is wrong with each URL's answer: a 5xx, a 200 where none may be found, or
    the script tag echoed raw; an empty list when every answer is right."""
    wrong = []
    for url in urls:
        response = client.get(url)
        status = response.status_code
        if not (status == 200 and found or 400 <= status < 500):
            wrong.append(f"{status} for {url[:120]}")
        elif response.get("Content-Type", "").startswith("text/html"):
            if "<script>alert" in response.content.decode(errors="replace"):
                wrong.append(f"raw script echoed for {url[:120]}")
    return wrong


@pytest.mark.parametrize(
    ("page", "parameter"),
    [(page, parameter) for page, (_, parameters) in PAGES.items() for parameter in parameters],
)
def test_hostile_values_of_a_page_parameter_get_a_page_or_a_4xx(
    world: World, client: Client, page: str, parameter: str
) -> None:
    url = PAGES[page][0](world)
    urls = [f"{url}?{parameter}={value}" for value in VALUES]
    assert failures_of(client, urls, found=True) == []


@pytest.mark.parametrize("page", PAGES)
def test_repeated_and_unknown_parameters_get_a_page_or_a_4xx(
    world: World, client: Client, page: str
) -> None:
    url_of, parameters = PAGES[page]
    url = url_of(world)
    script = quote(SCRIPT)
    urls = [
        f"{url}?{script}=1",
        f"{url}?unknown=%00&x%00=1&%FF=%FE",
        f"{url}?{'&'.join(f'p{i}=1' for i in range(500))}",
        *(
            f"{url}?{parameter}=%00&{parameter}=1&{parameter}={script}&{parameter}="
            for parameter in parameters
        ),
    ]
    assert failures_of(client, urls, found=True) == []


@pytest.mark.parametrize("segment", PATHS)
def test_hostile_path_segments_get_a_4xx(world: World, client: Client, segment: str) -> None:
    urls = [PATHS[segment](world, value) for value in SEGMENTS]
    assert failures_of(client, urls, found=False) == []


def test_the_real_pages_of_the_sweep_are_found(world: World, client: Client) -> None:
    # Otherwise a sweep answered 404 everywhere would pass for a page that never rendered.
    for page, (url_of, _) in PAGES.items():
        assert client.get(url_of(world)).status_code == 200, page
