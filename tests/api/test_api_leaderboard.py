"""The API's leaderboard: ranked by a metric (brier, return, win_rate,
resolved_bets), over every cohort or only the completed ones, baselines in or out; the chosen
filters echoed. Each metric ranks in its own direction (a lower Brier is better; a higher
return, win rate or number of resolved bets is better), rows without the figure last, offline
stand-ins after every real row, baselines never ranked among the LLMs. The page's default
ranking is unchanged.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client

from arena.api.records_schemas import RETURN_PLACES, return_string
from arena.models import Agent, Cohort, Decision, SnapshotTick, Trade
from arena.selectors import standings
from tests.api.helpers import API, assert_envelope, get_json
from tests.page_world import World, build_world

# The figure each sort ranks by, and whether a higher one ranks first.
METRICS = {
    "brier": ("brier", False),
    "return": ("avg_return", True),
    "win_rate": ("win_rate", True),
    "resolved_bets": ("resolved_bets", True),
}
SORTS = [*METRICS, "alpha", "p_first", "cohorts", "cost", "latency", "malformed"]
"""Every order the leaderboard takes: METRICS, the analytics' Alpha and P(rank 1), and the usage
columns."""


def spread_figures(cohort: Cohort) -> None:
    """Give each LLM agent of the cohort its own Brier, win rate, number of resolved bets and
    cash (so its own return): every metric then orders the models differently. The first
    agent keeps no resolved bet, so it has no Brier and no win rate."""
    agents = list(cohort.agents.filter(model__kind="llm").order_by("pk"))
    for k, agent in enumerate(agents):
        scored = list(
            agent.trades.filter(brier_score__isnull=False)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        kept = scored[: k % (len(scored) + 1)]
        Trade.objects.filter(pk__in=set(scored) - set(kept)).update(brier_score=None, side_won=None)
        for j, pk in enumerate(kept):
            Trade.objects.filter(pk=pk).update(
                brier_score=((k * 7 + j * 3) % 10) / 10, side_won=(k + j) % 3 == 0
            )
        Agent.objects.filter(pk=agent.pk).update(cash=Decimal(8000 + (k * 577) % 3000))


@pytest.fixture
def world(db: None) -> World:
    world = build_world(scale=3)
    spread_figures(world.cohort)
    # One LLM agent answered by its offline stand-in: its model's row is an offline one.
    offline = world.cohort.agents.filter(model__kind="llm").exclude(pk=world.agent.pk).first()
    assert offline is not None
    Decision.objects.filter(agent=offline).update(responder=Decision.Responder.OFFLINE)
    return world


def figure(row: dict[str, Any], key: str) -> Any:
    value = row[key]
    return Decimal(value) if key == "avg_return" and value is not None else value


def identities(rows: list[dict[str, Any]]) -> list[tuple[str, bool]]:
    return [(r["model"], r["offline"]) for r in rows]


def selector_identities(rows: list[standings.ModelRow]) -> list[tuple[str, bool]]:
    return [(r.model.internal_id, r.offline) for r in rows]


@pytest.mark.parametrize("sort", list(METRICS))
def test_each_metric_ranks_the_real_llm_rows_in_its_own_direction(
    world: World, client: Client, sort: str
) -> None:
    body = get_json(client, f"{API}/leaderboard?sort={sort}")
    key, higher_first = METRICS[sort]
    real = [r for r in body["rows"] if not r["baseline"] and not r["offline"]]
    figures = [figure(r, key) for r in real]
    known = [f for f in figures if f is not None]
    assert len(set(known)) >= 3  # the ranking has something to order
    assert figures == known + [None] * (len(figures) - len(known))  # no figure: last
    assert known == sorted(known, reverse=higher_first)


@pytest.mark.parametrize("sort", list(METRICS))
def test_offline_rows_rank_after_the_real_ones_and_baselines_come_last_unranked(
    world: World, client: Client, sort: str
) -> None:
    rows = get_json(client, f"{API}/leaderboard?sort={sort}")["rows"]
    kinds = [(r["baseline"], r["offline"] and not r["baseline"]) for r in rows]
    assert kinds == sorted(kinds)  # real LLMs, then offline LLMs, then baselines
    assert any(offline for _, offline in kinds)
    baselines = [r["model"] for r in rows if r["baseline"]]
    assert baselines
    # The baselines keep the lineup's order whatever the metric: they are not ranked.
    _, by_brier = standings.leaderboard(sort="brier")
    assert baselines == [r.model.internal_id for r in by_brier]


@pytest.mark.parametrize("sort", list(METRICS))
def test_the_api_ranks_as_the_selector_does(world: World, client: Client, sort: str) -> None:
    body = get_json(client, f"{API}/leaderboard?sort={sort}")
    llms, baselines = standings.leaderboard(sort=sort)
    assert identities(body["rows"]) == selector_identities(llms + baselines)


def test_the_chosen_filters_are_echoed(world: World, client: Client) -> None:
    body = get_json(client, f"{API}/leaderboard?sort=win_rate&cohorts=completed&baselines=exclude")
    assert (body["sort"], body["cohorts"], body["baselines"]) == (
        "win_rate",
        "completed",
        "exclude",
    )
    default = get_json(client, f"{API}/leaderboard")
    assert (default["sort"], default["cohorts"], default["baselines"]) == (
        "brier",
        "all",
        "include",
    )


def test_the_default_is_the_leaderboard_page_ranking(world: World, client: Client) -> None:
    rows = get_json(client, f"{API}/leaderboard")["rows"]
    page = client.get("/")
    assert page.status_code == 200
    shown = page.context["llms"] + page.context["baselines"]
    assert identities(rows) == selector_identities(shown)
    assert (
        rows
        == get_json(client, f"{API}/leaderboard?sort=brier&cohorts=all&baselines=include")["rows"]
    )


def test_excluding_baselines_leaves_the_llm_ranking_as_it_was(world: World, client: Client) -> None:
    included = get_json(client, f"{API}/leaderboard?sort=return")["rows"]
    excluded = get_json(client, f"{API}/leaderboard?sort=return&baselines=exclude")["rows"]
    assert not any(r["baseline"] for r in excluded)
    assert excluded == [r for r in included if not r["baseline"]]
    assert len(excluded) < len(included)


def test_completed_cohorts_only_counts_every_figure_from_their_agents_alone(
    db: None, client: Client
) -> None:
    done = build_world(scale=2)
    running = build_world(scale=2)
    spread_figures(running.cohort)  # the running cohort's figures differ from the done one's
    Cohort.objects.filter(pk=done.cohort.pk).update(
        status=Cohort.Status.COMPLETED, completed_at=datetime(2031, 3, 1, tzinfo=UTC)
    )
    rows = get_json(client, f"{API}/leaderboard?cohorts=completed")["rows"]
    by_model = {r["model"]: r for r in rows if not r["offline"]}

    # Every model of the done cohort: its figures are those of its one agent there.
    done_standings = standings.agent_standings(agents=done.cohort.agents.all())
    assert done_standings
    for standing in done_standings:
        got = by_model[standing.agent.model.internal_id]
        assert got["cohorts"] == 1
        assert got["resolved_bets"] == standing.resolved_bets
        assert got["brier"] == standing.brier
        assert got["win_rate"] == standing.win_rate
        assert got["avg_return"] == format(standing.return_percent.quantize(RETURN_PLACES), "f")

    # The running cohort's own model has no completed cohort: an empty row.
    fresh = by_model[running.model.internal_id]
    assert (fresh["cohorts"], fresh["resolved_bets"], fresh["brier"], fresh["avg_return"]) == (
        0,
        0,
        None,
        None,
    )
    # Over every cohort the same model of the done world pools both of its agents.
    everything = {
        r["model"]: r for r in get_json(client, f"{API}/leaderboard")["rows"] if not r["offline"]
    }
    assert everything[done.model.internal_id]["cohorts"] == 2
    assert by_model[done.model.internal_id]["cohorts"] == 1


def test_completed_cohorts_only_with_none_completed_has_no_figures(
    world: World, client: Client
) -> None:
    rows = get_json(client, f"{API}/leaderboard?cohorts=completed&sort=resolved_bets")["rows"]
    assert rows
    assert all(r["cohorts"] == 0 and r["brier"] is None for r in rows)
    assert not any(r["offline"] for r in rows)  # no agent counted, so none offline


@pytest.mark.parametrize(
    "query",
    [
        "sort=alphabet",
        "sort=BRIER",
        "sort=brier%00",
        "sort=" + "brier" * 200,
        "sort=%27%20OR%201%3D1%20--",
        "cohorts=active",
        "cohorts=",
        "baselines=yes",
        "baselines=%00",
    ],
)
def test_hostile_leaderboard_filters_are_a_422_in_the_envelope(
    db: None, client: Client, query: str
) -> None:
    assert_envelope(get_json(client, f"{API}/leaderboard?{query}", 422), 422)


def test_the_openapi_schema_declares_the_filters(db: None, client: Client) -> None:
    operation = get_json(client, f"{API}/openapi.json")["paths"][f"{API}/leaderboard"]["get"]
    parameters = {p["name"]: p["schema"] for p in operation["parameters"]}
    assert parameters["sort"]["enum"] == SORTS
    assert parameters["cohorts"]["enum"] == ["all", "completed", "v1", "v2"]
    assert parameters["baselines"]["enum"] == ["include", "exclude"]


# --- the leaderboard page uses the same filters ------------------------------------------


@pytest.mark.parametrize("sort", SORTS)
@pytest.mark.parametrize("cohorts", ["all", "completed"])
def test_the_page_ranks_with_the_same_filters_as_the_api(
    world: World, client: Client, sort: str, cohorts: str
) -> None:
    page = client.get(f"/?sort={sort}&cohorts={cohorts}")
    assert page.status_code == 200
    rows = get_json(client, f"{API}/leaderboard?sort={sort}&cohorts={cohorts}")["rows"]
    assert identities(rows) == selector_identities(page.context["llms"] + page.context["baselines"])


def test_the_page_links_every_ranking_and_scope_keeping_the_other(
    world: World, client: Client
) -> None:
    html = client.get("/?sort=win_rate&cohorts=completed").content.decode()
    assert "Ranked by win rate, over completed cohorts only." in html
    assert 'href="?cohorts=completed"' in html  # Brier, the default sort, is left out
    assert 'href="?sort=return&amp;cohorts=completed"' in html
    assert 'href="?sort=win_rate"' in html  # every cohort, the default scope
    assert "<strong>win rate</strong>" in html


def test_the_page_ignores_an_unknown_ranking_and_keeps_its_default(
    world: World, client: Client
) -> None:
    default = client.get("/")
    odd = client.get("/?sort=%27%20OR%201%3D1&cohorts=whatever")
    assert odd.status_code == 200
    assert selector_identities(odd.context["llms"]) == selector_identities(default.context["llms"])
    assert "Ranked by pooled Brier score, lower is better." in odd.content.decode()


def test_the_leaderboard_is_kept_until_the_data_moves(
    world: World, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    computed: list[str] = []
    real = standings.boards

    def counting(**options: Any) -> Any:
        computed.append(options["sort"])
        return real(**options)

    monkeypatch.setattr(standings, "boards", counting)
    first = get_json(client, f"{API}/leaderboard")
    assert get_json(client, f"{API}/leaderboard") == first
    assert computed == ["brier"]  # the second answer was the kept one
    get_json(client, f"{API}/leaderboard?sort=return")  # other options, another answer
    assert computed == ["brier", "return"]
    # A tick marks every portfolio at new prices: the figures may move, so they are read
    # afresh, and the answer is the selector's of now.
    SnapshotTick.objects.create(slot=datetime(2041, 1, 1, tzinfo=UTC))
    Agent.objects.filter(pk=world.agent.pk).update(cash=Decimal("20000.00"))
    fresh = get_json(client, f"{API}/leaderboard")
    assert computed == ["brier", "return", "brier"]
    assert fresh != first
    llms, baselines, _ = real(sort="brier")
    assert [r["avg_return"] for r in fresh["rows"]] == [
        return_string(r.avg_return) for r in llms + baselines
    ]
