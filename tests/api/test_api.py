"""The JSON API at /api/v1/: read-only endpoints that answer with the
figures of the pages' own selectors, money as decimal strings, stable ids, one error envelope
for every 4xx, docs served without network, and a constant number of queries per list.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from agents.models import BenchmarkModel
from arena.api.records_schemas import RETURN_PLACES
from arena.models import Agent, Cohort, DecisionAttempt
from arena.selectors import curves, standings
from tests.api.helpers import API, assert_envelope, get_json
from tests.page_world import World, build_world


@pytest.fixture
def world(db: None) -> World:
    return build_world(scale=2)


def return_of(value: Decimal | None) -> str | None:
    return None if value is None else format(value.quantize(RETURN_PLACES), "f")


def row_figures(row: standings.ModelRow) -> dict[str, object]:
    return {
        "model": row.model.internal_id,
        "display_name": row.model.display_name,
        "baseline": row.model.is_baseline,
        "outside": row.model.is_outside,
        "admitted": row.model.is_outside and row.model.admitted_to_main_board,
        "offline": row.offline,
        "brier": row.brier,
        "avg_return": return_of(row.avg_return),
        "win_rate": row.win_rate,
        "resolved_bets": row.resolved_bets,
        "cohorts": row.cohorts,
    }


@pytest.mark.parametrize("sort", ["brier", "return"])
def test_the_leaderboard_equals_the_pages_leaderboard_row_by_row(
    world: World, client: Client, sort: str
) -> None:
    body = get_json(client, f"{API}/leaderboard?sort={sort}")
    llms, baselines = standings.leaderboard(sort=sort)
    assert body["sort"] == sort
    assert len(body["rows"]) == len(llms) + len(baselines)
    for got, row in zip(body["rows"], llms + baselines, strict=True):
        assert {key: got[key] for key in row_figures(row)} == row_figures(row)
    # LLM rows first, then the baselines, each flagged.
    flags = [r["baseline"] for r in body["rows"]]
    assert flags == sorted(flags)
    assert any(r["model"] == world.model.internal_id for r in body["rows"])


def test_the_leaderboard_defaults_to_brier(world: World, client: Client) -> None:
    assert get_json(client, f"{API}/leaderboard")["sort"] == "brier"


def test_models_list_every_row_of_the_models_page(world: World, client: Client) -> None:
    body = get_json(client, f"{API}/models")
    rows = standings.model_rows()
    assert (body["count"], body["page"], body["page_size"]) == (len(rows), 1, 100)
    assert [(r["model"], r["offline"]) for r in body["results"]] == [
        (r.model.internal_id, r.offline) for r in rows
    ]
    for got, row in zip(body["results"], rows, strict=True):
        assert {key: got[key] for key in row_figures(row)} == row_figures(row)


def test_models_are_paginated_like_every_list(world: World, client: Client) -> None:
    rows = standings.model_rows()
    first = get_json(client, f"{API}/models?page_size=2")
    second = get_json(client, f"{API}/models?page_size=2&page=2")

    assert first["count"] == second["count"] == len(rows)
    assert [r["model"] for r in first["results"] + second["results"]] == [
        r.model.internal_id for r in rows[:4]
    ]
    assert_envelope(get_json(client, f"{API}/models?page=0", 422), 422)


def test_a_model_says_what_the_lineup_keeps_of_it(world: World, client: Client) -> None:
    BenchmarkModel.objects.filter(pk=world.model.pk).update(
        upstream_model_id="provider/model-2026-01-15",
        release_date=date(2026, 1, 15),
        reasoning_mode=BenchmarkModel.ReasoningMode.BUDGET,
        reasoning_max_tokens=2000,
    )
    # What the replies said: every call of the model's agents answered as one version.
    calls = DecisionAttempt.objects.filter(decision__agent__model=world.model)
    calls.update(response_model="provider/model-2026-01-15-b")
    body = get_json(client, f"{API}/models/{world.model.internal_id}")
    page = client.get(f"/models/{world.model.internal_id}/").content.decode()

    assert body["versions_answering"] == [
        {
            "name": "provider/model-2026-01-15-b",
            "calls": calls.filter(responder="openrouter").count(),
        }
    ]
    assert "provider/model-2026-01-15-b" in page
    assert body["upstream_model_id"] == "provider/model-2026-01-15"
    assert body["release_date"] == "2026-01-15"
    assert (body["reasoning_mode"], body["reasoning_max_tokens"]) == ("budget", 2000)
    assert body["openrouter_id"] == world.model.openrouter_id
    assert "provider/model-2026-01-15" in page
    assert "2026-01-15" in page
    assert "reasons within the budget sent with each call (2,000 tokens)" in page


def test_a_model_with_its_agents(world: World, client: Client) -> None:
    body = get_json(client, f"{API}/models/{world.model.internal_id}")
    (row,) = standings.model_rows(model=world.model)
    assert body["model"] == world.model.internal_id
    (got,) = body["rows"]
    assert {key: got[key] for key in row_figures(row)} == row_figures(row)
    (agent,) = body["agents"]
    (standing,) = row.agents
    assert agent["agent"] == standing.agent.pk
    assert agent["cohort"] == world.cohort.number
    assert Decimal(agent["total_value"]) == standing.total_value


@pytest.mark.parametrize("internal_id", ["openai/gpt-5.1", "meta:llama-4", "a/b:c/d"])
def test_a_model_id_holding_slashes_and_colons_is_found(
    db: None, client: Client, internal_id: str
) -> None:
    BenchmarkModel.objects.create(
        internal_id=internal_id, display_name="Slashed", openrouter_id="x/y", display_order=99
    )
    body = get_json(client, f"{API}/models/{internal_id}")
    assert body["model"] == internal_id
    assert body["display_name"] == "Slashed"


def test_an_unknown_model_is_a_404_in_the_envelope(db: None, client: Client) -> None:
    assert_envelope(get_json(client, f"{API}/models/no/such:model", 404), 404, "not_found")


def test_cohorts_are_paginated_newest_first(db: None, client: Client) -> None:
    for _ in range(3):
        build_world(scale=1)
    newest_first = list(standings.cohort_list().values_list("number", flat=True))
    first = get_json(client, f"{API}/cohorts?page_size=2")
    second = get_json(client, f"{API}/cohorts?page=2&page_size=2")
    assert first["count"] == second["count"] == 3
    assert (first["page"], first["page_size"]) == (1, 2)
    assert [c["number"] for c in first["results"] + second["results"]] == newest_first
    beyond = get_json(client, f"{API}/cohorts?page=9&page_size=2")
    assert beyond["results"] == []
    assert beyond["count"] == 3


def test_a_cohort_page_row_has_its_fields_in_utc(world: World, client: Client) -> None:
    (cohort,) = get_json(client, f"{API}/cohorts")["results"]
    listed = standings.cohort_list().get()
    assert cohort == {
        "number": listed.number,
        "week_start": listed.week_start.isoformat(),
        "started_at": listed.started_at.isoformat().replace("+00:00", "Z"),
        "status": listed.status,
        "completed_at": None,
        "methodology_version": listed.methodology_version,
        "agent_count": listed.agent_count,  # type: ignore[attr-defined]
        "open_positions": listed.open_positions,  # type: ignore[attr-defined]
    }


def test_a_cohort_with_the_standings_of_its_page(world: World, client: Client) -> None:
    body = get_json(client, f"{API}/cohorts/{world.cohort.number}")
    rows = standings.agent_standings(agents=world.cohort.agents.all())
    assert body["number"] == world.cohort.number
    assert len(body["standings"]) == len(rows) >= 1
    for got, standing in zip(body["standings"], rows, strict=True):
        assert got == {
            "agent": standing.agent.pk,
            "cohort": world.cohort.number,
            "model": standing.agent.model.internal_id,
            "display_name": standing.agent.model.display_name,
            "baseline": standing.agent.model.is_baseline,
            "outside": standing.agent.model.is_outside,
            "cash": format(standing.cash, "f"),
            "positions_value": format(standing.positions_value, "f"),
            "total_value": format(standing.total_value, "f"),
            "return_percent": return_of(standing.return_percent),
            "brier": standing.brier,
            "resolved_bets": standing.resolved_bets,
            "open_positions": standing.open_positions,
            "offline": standing.offline,
            "status": standing.agent.status,
        }
        assert re.fullmatch(r"-?\d+\.\d{2}", got["cash"])


@pytest.mark.parametrize("range_key", ["1W", "ALL", "1D"])
def test_an_agents_series_is_the_charts_series(
    world: World, client: Client, range_key: str
) -> None:
    body = get_json(client, f"{API}/agents/{world.agent.pk}/series?range={range_key}")
    (series,) = curves.value_series(agents=[world.agent], range_key=range_key)
    assert body["agent"] == world.agent.pk
    assert body["range"] == range_key
    assert len(body["points"]) == len(series.points) >= 2
    for (at, value), (when, total) in zip(body["points"], series.points, strict=True):
        assert at == when.isoformat().replace("+00:00", "Z")
        assert Decimal(value) == total
        assert isinstance(value, str)


@pytest.mark.parametrize(
    "url",
    [
        "/cohorts?page_size=1000000000",
        "/cohorts?page_size=0",
        "/cohorts?page=-1",
        "/cohorts?page=abc",
        "/cohorts?page=99999999999999999999999",
        "/cohorts/abc",
        "/cohorts/-1",
        "/cohorts/99999999999999999999",
        "/cohorts/1%20OR%201=1",
        "/agents/abc/series",
        "/agents/0/series",
        "/agents/1/series?range=5Y",
        "/agents/1/series?range=%27;DROP%20TABLE",
        "/leaderboard?sort=alphabet",
    ],
)
def test_hostile_parameters_get_a_422_in_the_envelope(db: None, client: Client, url: str) -> None:
    assert_envelope(get_json(client, API + url, 422), 422, "unprocessable_entity")


@pytest.mark.parametrize("url", ["/cohorts/424242", "/agents/424242/series"])
def test_unknown_ids_get_a_404_in_the_envelope(db: None, client: Client, url: str) -> None:
    assert_envelope(get_json(client, API + url, 404), 404, "not_found")


def test_the_docs_page_loads_its_scripts_from_our_own_static_files(
    db: None, client: Client
) -> None:
    response = client.get(f"{API}/docs")
    assert response.status_code == 200
    html = response.content.decode()
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert any(a.endswith("swagger-ui-bundle.js") for a in assets)
    # ninja's own assets, and the demo banner's stylesheet: our static files, no CDN.
    assert all(a.startswith(("/static/ninja/", "/static/css/")) for a in assets), assets
    assert "cdn." not in html
    assert not re.search(r"<script[^>]+https?://", html)


def test_the_openapi_schema_lists_every_path(db: None, client: Client) -> None:
    schema = get_json(client, f"{API}/openapi.json")
    assert set(schema["paths"]) >= {
        f"{API}/leaderboard",
        f"{API}/models",
        f"{API}/models/{{internal_id}}",
        f"{API}/cohorts",
        f"{API}/cohorts/{{number}}",
        f"{API}/agents/{{agent_id}}/series",
    }


def test_the_nav_links_the_api_docs(world: World, client: Client) -> None:
    assert b'href="/api/v1/docs"' in client.get("/").content


@pytest.mark.django_db
@pytest.mark.parametrize("source", ["demo", "gamma"])
def test_the_api_docs_and_the_admin_say_demo_data_only_on_demo_data(
    admin_client: Client, settings: Any, source: str
) -> None:
    settings.MARKET_SOURCE = source
    docs = admin_client.get(f"{API}/docs")
    admin = admin_client.get("/admin/")
    assert docs.status_code == admin.status_code == 200
    for page in (docs.content.decode(), admin.content.decode()):
        shown = '<p class="demo-banner" role="note">Demo data:' in page
        assert shown is (source == "demo")
        assert "css/demo-banner" in page


LISTS: dict[str, Callable[[World], str]] = {
    "leaderboard": lambda w: "/leaderboard",
    "models": lambda w: "/models",
    "model": lambda w: f"/models/{w.model.internal_id}",
    "cohorts": lambda w: "/cohorts?page_size=100",
    "cohort": lambda w: f"/cohorts/{w.cohort.number}",
    "series": lambda w: f"/agents/{w.agent.pk}/series?range=ALL",
}


def queries_for(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(API + url)
    assert response.status_code == 200, response.content
    return len(queries.captured_queries)


@pytest.mark.parametrize("endpoint", list(LISTS))
def test_each_endpoint_issues_the_same_queries_at_three_times_the_data(
    db: None, client: Client, endpoint: str
) -> None:
    small = build_world(scale=1)
    before = queries_for(client, LISTS[endpoint](small))
    build_world(scale=1)
    large = build_world(scale=3)
    after = queries_for(client, LISTS[endpoint](large))
    assert after == before
    assert Cohort.objects.count() == 3
    assert Agent.objects.count() > 3
