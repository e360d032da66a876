"""Quality bars: each public page issues a constant number of queries whatever the
data size. Every page is read over a small world, then over one three times larger (more
cohorts, markets, positions, trades, attempts, snapshots and events) and must issue exactly
the same number of queries — a query per row would show as a difference.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import NoReverseMatch, reverse

from tests.page_world import World, build_world

# Each public page, as its URL name and the arguments it takes from a world.
PAGES: dict[str, Callable[[World], tuple[str, list[object]]]] = {
    "leaderboard": lambda w: ("arena:leaderboard", []),
    "cohorts": lambda w: ("arena:cohorts", []),
    "cohort": lambda w: ("arena:cohort", [w.cohort.number]),
    "agent": lambda w: ("arena:agent", [w.cohort.number, w.agent.pk]),
    "decision": lambda w: ("arena:decision", [w.decision.pk]),
    "markets": lambda w: ("markets:list", []),
    "market": lambda w: ("arena:market", [w.market.polymarket_id]),
    "models": lambda w: ("arena:models", []),
    "model": lambda w: ("arena:model", [w.model.internal_id]),
    "methodology": lambda w: ("arena:methodology", []),
    "status": lambda w: ("arena:status", []),
    "about": lambda w: ("arena:about", []),
}


def url_of(page: str, world: World) -> str:
    name, args = PAGES[page](world)
    try:
        return reverse(name, args=args)
    except NoReverseMatch:
        pytest.fail(f"the {page} page has no URL named {name!r}")


def queries_for(client: Client, url: str) -> list[str]:
    # Answers kept until the data changes (the analytics) are computed afresh each time: the
    # larger world's request would otherwise compute what the smaller world's read as kept.
    cache.clear()
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200, url
    return [q["sql"] for q in queries.captured_queries]


@pytest.mark.parametrize("page", list(PAGES))
def test_each_public_page_issues_the_same_queries_at_three_times_the_data(
    db: None, client: Client, page: str
) -> None:
    small = build_world(scale=1)
    client.get(url_of(page, small))  # warm per-process caches (content types, sessions)
    before = queries_for(client, url_of(page, small))

    build_world(scale=1)  # more cohorts around the page's own
    large = build_world(scale=3)  # and three times the rows under the page's objects
    after = queries_for(client, url_of(page, large))

    assert len(after) == len(before), "\n".join(after)
    # The most a page issues is the model page's 27: its v1 figures, its analytics and its
    # methodology v2 figures (its panel forecasts and its stated bets).
    assert len(after) <= 27, f"{page}: {len(after)} queries"
