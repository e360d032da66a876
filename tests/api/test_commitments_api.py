"""The commitments over the API: `/commitments` lists every stored response's commitment,
newest first in stable pages, filtered by week, cohort and agent, in the same queries
whatever the data size; a decision's attempts give the salt and the digest beside each raw
response, so anyone recomputes the one from the others. A filter naming nothing is a 422."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from arena.models import AnswerCommitment, DecisionAttempt
from tests.api.helpers import API, assert_envelope, get_json
from tests.page_world import World, build_world


@pytest.fixture
def world(db: None) -> World:
    return build_world(scale=2)


def recomputed(salt: str, raw_response: str) -> str:
    return hashlib.sha256(f"{salt}\n{raw_response}".encode()).hexdigest()


def every_page(client: Client, url: str, page_size: int = 4) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    page = 1
    joiner = "&" if "?" in url else "?"
    while True:
        body = get_json(client, f"{API}{url}{joiner}page={page}&page_size={page_size}")
        if not body["results"]:
            assert len(rows) == body["count"]
            return rows
        rows += body["results"]
        page += 1


def test_the_commitments_are_listed_newest_first_in_stable_pages(
    world: World, client: Client
) -> None:
    build_world(scale=1)
    rows = every_page(client, "/commitments")
    expected = AnswerCommitment.objects.order_by("-committed_at", "-pk").select_related(
        "agent__model", "cohort"
    )
    assert [(r["decision"], r["attempt_number"]) for r in rows] == [
        (c.decision_id, c.attempt_number) for c in expected
    ]
    first = expected[0]
    assert rows[0] == {
        "decision": first.decision_id,
        "attempt_number": first.attempt_number,
        "agent": first.agent_id,
        "model": first.agent.model.internal_id,
        "cohort": first.cohort.number,
        "week_start": first.week_start.isoformat(),
        "sha256": first.sha256,
        "committed_at": rows[0]["committed_at"],
    }


def test_the_commitments_filter_by_week_cohort_and_agent(world: World, client: Client) -> None:
    other = build_world(scale=1)
    week = world.cohort.week_start
    by_week = every_page(client, f"/commitments?week={week}")
    assert by_week
    assert {r["week_start"] for r in by_week} == {week.isoformat()}
    by_cohort = every_page(client, f"/commitments?cohort={other.cohort.number}")
    assert len(by_cohort) == AnswerCommitment.objects.filter(cohort=other.cohort).count()
    by_agent = every_page(client, f"/commitments?week={week}&agent={world.agent.pk}")
    assert [r["attempt_number"] for r in by_agent] == [3, 2, 1]
    assert {r["decision"] for r in by_agent} == {world.decision.pk}
    assert every_page(client, f"/commitments?week={week}&cohort={other.cohort.number}") == []
    assert every_page(client, f"/commitments?week={week + timedelta(days=7 * 52)}") == []


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("week=2031-01-13", "week"),  # a Monday: no week starts on it
        ("cohort=999999", "cohort"),
        ("agent=999999", "agent"),
        ("week=2031-02-30", "week"),
        ("page_size=101", "page_size"),
    ],
)
def test_a_filter_naming_nothing_is_a_422(
    world: World, client: Client, query: str, names: str
) -> None:
    body = get_json(client, f"{API}/commitments?{query}", status=422)
    assert_envelope(body, 422)
    assert names in body["error"]["message"]


def test_the_list_runs_the_same_queries_at_three_times_the_data(
    world: World, client: Client
) -> None:
    url = f"{API}/commitments?page_size=100"
    client.get(url)
    with CaptureQueriesContext(connection) as small:
        client.get(url)
    build_world(scale=3)
    with CaptureQueriesContext(connection) as large:
        body = get_json(client, url)
    assert body["count"] > 3
    assert len(large.captured_queries) == len(small.captured_queries)


def test_a_decisions_attempts_give_the_salt_and_digest_to_recompute(
    world: World, client: Client
) -> None:
    # An attempt stored before commitments were made: revealed as it is, with none.
    DecisionAttempt.objects.create(
        decision=world.decision, number=9, responder="openrouter", request_messages=[],
        raw_response="an answer from before", started_at=world.cohort.started_at,
    )  # fmt: skip
    attempts = get_json(client, f"{API}/decisions/{world.decision.pk}")["attempts"]
    listed = {
        r["attempt_number"]: r["sha256"]
        for r in every_page(client, f"/commitments?agent={world.agent.pk}")
    }
    assert [a["number"] for a in attempts] == [1, 2, 3, 9]
    for attempt in attempts[:3]:
        digest = recomputed(attempt["commitment_salt"], attempt["raw_response"])
        assert attempt["commitment_sha256"] == digest == listed[attempt["number"]]
    assert (attempts[3]["commitment_salt"], attempts[3]["commitment_sha256"]) == ("", None)
