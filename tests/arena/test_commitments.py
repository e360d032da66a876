"""Commit and reveal: every stored response is committed to, publicly, in the transaction that
stores it — the SHA-256 of a secret salt and the response — so that while a week's answers
are hidden anyone can see each exists and when it was stored, and once they are shown anyone
can check none was changed since."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.test import Client
from django.urls import reverse

from agents.models import BenchmarkModel
from arena.evidence import commitment_check, commitment_sha256
from arena.models import Agent, AnswerCommitment, Cohort, Decision, DecisionAttempt
from arena.selectors.exports import DATASETS
from arena.services.cohorts import cohort_start
from arena.services.commitments import commitment_record
from arena.services.decisions import lifecycle
from arena.services.decisions.lifecycle import attempt_record
from arena.services.decisions.outside import outside_decision_submit
from arena.services.decisions.run import decisions_run_all
from markets.sources import RecordedSource
from tests.api.helpers import API, get_json
from tests.arena.conftest import COHORT_AT, OFFLINE, RUN_AT, WEEK
from tests.worlds import ModuleWorld, module_world

pytestmark = pytest.mark.django_db

IN_WINDOW = datetime(2026, 3, 8, 0, 20, tzinfo=UTC)
HOLD = json.dumps({"action": "HOLD", "reasoning": "Nothing is mispriced enough."})


def recomputed(salt: str, raw_response: str) -> str:
    """The recipe as the methodology states it, written out here rather than imported: the
    SHA-256, in hex, of the UTF-8 bytes of the salt, a newline and the response."""
    return hashlib.sha256(salt.encode("utf-8") + b"\n" + raw_response.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class WeekIds:
    team_id: int
    cohort_id: int


@module_world(settings=OFFLINE)
def committed_week() -> WeekIds:
    """An outside team registered, the cohort of WEEK started with its agent in it, and the
    week's run done at RUN_AT (the offline lineup answers; the team's decision awaits)."""
    team = BenchmarkModel.objects.create(
        internal_id="team-c",
        display_name="Team C",
        kind=BenchmarkModel.Kind.OUTSIDE,
        owner="The C Lab",
        contact="c@example.org",
        method_description="Base rates.",
    )
    cohort, _ = cohort_start(week_start=WEEK, now=COHORT_AT)
    with time_machine.travel(RUN_AT, tick=False):
        decisions_run_all(now=RUN_AT, source=RecordedSource())
    return WeekIds(team_id=team.pk, cohort_id=cohort.pk)


@pytest.fixture
def week(db: None, committed_week: ModuleWorld[WeekIds]) -> Cohort:
    return Cohort.objects.get(pk=committed_week.value.cohort_id)


@pytest.fixture
def team_agent(week: Cohort, committed_week: ModuleWorld[WeekIds]) -> Agent:
    return Agent.objects.get(cohort=week, model_id=committed_week.value.team_id)


def lineup_decision(week: Cohort) -> Decision:
    decision = Decision.objects.filter(cohort=week, agent__model__kind="llm").first()
    assert decision is not None
    return decision


# ------------------------------------------------------------------------------ storing


def test_every_response_the_run_stored_is_committed_to_by_the_recipe(week: Cohort) -> None:
    attempts = list(
        DecisionAttempt.objects.filter(decision__cohort=week).select_related(
            "commitment", "decision"
        )
    )
    assert len(attempts) >= week.agents.count() - 1  # every agent but the awaiting team's
    for attempt in attempts:
        assert attempt.raw_response
        assert re.fullmatch("[0-9a-f]{64}", attempt.commitment_salt)
        commitment = attempt.commitment
        assert commitment.sha256 == recomputed(attempt.commitment_salt, attempt.raw_response)
        assert (commitment.decision_id, commitment.attempt_number) == (
            attempt.decision_id,
            attempt.number,
        )
        assert (commitment.agent_id, commitment.cohort_id, commitment.week_start) == (
            attempt.decision.agent_id,
            week.pk,
            WEEK,
        )
        assert commitment.committed_at == RUN_AT  # the moment it was stored
    # Each response has a salt of its own: two equal answers never share a commitment.
    assert len({a.commitment_salt for a in attempts}) == len(attempts)


def test_an_outside_submission_is_committed_to_the_moment_it_is_stored(
    week: Cohort, team_agent: Agent, time_machine: Any
) -> None:
    time_machine.move_to(IN_WINDOW, tick=False)
    outside_decision_submit(agent=team_agent, body="not json", now=IN_WINDOW)
    taken = outside_decision_submit(agent=team_agent, body=HOLD, now=IN_WINDOW)
    assert taken.valid
    attempts = list(taken.decision.attempts.select_related("commitment").order_by("number"))
    assert [a.raw_response for a in attempts] == ["not json", HOLD]  # the malformed one too
    for attempt, body in zip(attempts, ["not json", HOLD], strict=True):
        assert attempt.commitment.sha256 == recomputed(attempt.commitment_salt, body)
        assert attempt.commitment.committed_at == IN_WINDOW
        assert attempt.commitment.agent_id == team_agent.pk


def test_a_failed_call_without_a_body_gets_no_commitment(week: Cohort) -> None:
    decision = lineup_decision(week)
    failed = attempt_record(
        decision=decision, run_id=decision.run_id, messages=[], reply=None,
        api_error="ReadTimeout: no answer in 120 s", parse_error="", started_at=RUN_AT,
    )  # fmt: skip
    assert failed.commitment_salt == ""
    assert not AnswerCommitment.objects.filter(attempt=failed).exists()
    # An error the API answered with a body is a stored response like any other.
    body = '{"error": {"code": 502, "message": "upstream error"}}'
    answered = attempt_record(
        decision=decision, run_id=decision.run_id, messages=[], reply=None,
        api_error="OpenRouterError: 502", parse_error="", started_at=RUN_AT, error_body=body,
    )  # fmt: skip
    commitment = AnswerCommitment.objects.get(attempt=answered)
    assert commitment.sha256 == recomputed(answered.commitment_salt, body)


def test_an_attempt_and_its_commitment_are_stored_together_or_not_at_all(
    week: Cohort, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Were the attempt kept when its commitment failed, a response could be stored (and
    later shown) that no commitment published while it was hidden."""
    decision = lineup_decision(week)
    attempts, commitments = DecisionAttempt.objects.count(), AnswerCommitment.objects.count()
    real = commitment_record  # what attempt_record calls, made to fail once it has written

    def commit_then_fail(**kwargs: Any) -> AnswerCommitment | None:
        real(**kwargs)
        raise RuntimeError("the database connection dropped")

    monkeypatch.setattr(lifecycle, "commitment_record", commit_then_fail)
    reply = lifecycle.Reply(text=HOLD, raw=HOLD, responder="offline", requested_model="m")
    with pytest.raises(RuntimeError):
        attempt_record(
            decision=decision, run_id=decision.run_id, messages=[], reply=reply,
            api_error="", parse_error="", started_at=RUN_AT,
        )  # fmt: skip
    assert DecisionAttempt.objects.count() == attempts
    assert AnswerCommitment.objects.count() == commitments


# ------------------------------------------------------------------------------ checking


def test_tampering_with_a_stored_response_fails_its_check(week: Cohort) -> None:
    attempt = DecisionAttempt.objects.filter(decision__cohort=week).select_related("commitment")[0]
    sha256, salt = attempt.commitment.sha256, attempt.commitment_salt
    assert commitment_check(attempt.raw_response, salt, sha256)
    assert commitment_check(attempt.raw_response, salt, sha256.upper())
    DecisionAttempt.objects.filter(pk=attempt.pk).update(
        raw_response=attempt.raw_response.replace("HOLD", "BET ") + " "
    )
    attempt.refresh_from_db()
    assert not commitment_check(attempt.raw_response, salt, sha256)
    assert not commitment_check(attempt.raw_response, "0" * 64, sha256)


@pytest.mark.parametrize("raw", ["", "plain", 'ünïcode "quoted"\r\n😀 \\u0000', "\n\n"])
def test_the_commitment_is_the_recipe_for_any_stored_text(raw: str) -> None:
    salt = "ab" * 32
    assert commitment_sha256(raw, salt) == recomputed(salt, raw)
    assert commitment_check(raw, salt, recomputed(salt, raw))
    assert not commitment_check(raw + "x", salt, recomputed(salt, raw))


# ------------------------------------------------------------------------------ publishing


def test_a_commitment_is_public_while_the_answer_is_sealed_and_the_reveal_checks_out(
    week: Cohort, team_agent: Agent, client: Client, time_machine: Any
) -> None:
    time_machine.move_to(IN_WINDOW, tick=False)
    decision = outside_decision_submit(agent=team_agent, body=HOLD, now=IN_WINDOW).decision
    listed = get_json(client, f"{API}/commitments?week={WEEK}&agent={team_agent.pk}")
    assert listed["count"] == 1
    (row,) = listed["results"]
    assert (row["decision"], row["attempt_number"], row["agent"]) == (decision.pk, 1, team_agent.pk)
    assert (row["model"], row["cohort"], row["week_start"]) == ("team-c", week.number, str(WEEK))
    assert row["committed_at"].startswith("2026-03-08T00:20:00")
    # While the window is open the answer is sealed (arena/seal.py): only its commitment shows.
    assert client.get(f"{API}/decisions/{decision.pk}").status_code == 404
    # The reveal, once the window has closed: the attempt as the decision's API gives it
    # recomputes the digest listed before.
    time_machine.move_to(IN_WINDOW + timedelta(hours=1), tick=False)
    (attempt,) = get_json(client, f"{API}/decisions/{decision.pk}")["attempts"]
    assert attempt["raw_response"] == HOLD
    assert attempt["commitment_sha256"] == row["sha256"]
    assert recomputed(attempt["commitment_salt"], attempt["raw_response"]) == row["sha256"]


def test_the_status_page_shows_the_weeks_commitments(
    week: Cohort, client: Client, time_machine: Any
) -> None:
    time_machine.move_to(IN_WINDOW, tick=False)
    count = AnswerCommitment.objects.filter(week_start=WEEK).count()
    latest = AnswerCommitment.objects.select_related("agent__model").order_by("-pk")[0]
    html = client.get(reverse("arena:status")).content.decode()
    assert f"{count} responses stored for the week of 2026-03-08" in html
    assert f'<code title="{latest.sha256}">{latest.sha256[:16]}…</code>' in html
    assert latest.agent.model.display_name in html
    assert f'href="/api/v1/commitments?week={WEEK}"' in html
    time_machine.move_to(IN_WINDOW + timedelta(days=7), tick=False)
    html = client.get(reverse("arena:status")).content.decode()
    assert "0 responses stored for the week of 2026-03-15" in html
    assert latest.sha256 not in html


def test_the_attempts_export_carries_each_salt_and_commitment(week: Cohort) -> None:
    decision = lineup_decision(week)
    # An attempt stored before commitments were made: no salt, no commitment.
    DecisionAttempt.objects.create(
        decision=decision, number=99, responder="openrouter", request_messages=[],
        raw_response="an answer from before", started_at=RUN_AT,
    )  # fmt: skip
    dataset = DATASETS["attempts"]
    names = dataset.column_names
    rows = [dict(zip(names, r, strict=True)) for r in dataset.rows(cohort=week.number)]
    old = [r for r in rows if r["number"] == 99]
    assert [(r["commitment_salt"], r["commitment_sha256"]) for r in old] == [("", None)]
    committed = [r for r in rows if r["number"] != 99]
    assert committed
    for row in committed:
        assert row["commitment_sha256"] == recomputed(row["commitment_salt"], row["raw_response"])
