"""Outside agents through the HTTP API: an outside team's agent reads the prompt the
lineup gets and submits one decision in the window; every refusal is a clear 4xx in the
envelope, and recorded; a token acts for its own agent only and never shows up anywhere.

The full week over a real HTTP server runs on PostgreSQL; the rest on SQLite too."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.test import Client

from agents.models import BenchmarkModel
from arena import money
from arena.models import (
    Agent,
    Cohort,
    Decision,
    OutsideAgentToken,
    PanelForecast,
    PortfolioSnapshot,
    Position,
    SnapshotMarket,
    SystemEvent,
    Trade,
)
from arena.services.cohorts import cohort_start
from arena.services.decisions.outside import outside_decisions_close
from arena.services.decisions.run import decisions_run_all
from arena.services.marking import snapshots_take
from arena.services.outside import outside_admission_set, outside_token_issue
from markets.models import Market
from markets.sources import RecordedSource, demo_records
from tests.api.helpers import API, assert_envelope
from tests.arena.conftest import COHORT_AT, OFFLINE, RUN_AT, WEEK, snapshot_cache_clear
from tests.replay import ReplayServer, Reply
from tests.worlds import ModuleWorld, module_world

OUTSIDE = f"{API}/outside"
IN_WINDOW = datetime(2026, 3, 8, 0, 20, tzinfo=UTC)
WINDOW_CLOSES = datetime(2026, 3, 8, 1, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _offline(settings: Any) -> None:
    for name, value in OFFLINE.items():
        setattr(settings, name, value)
    snapshot_cache_clear()


def outside_model(internal_id: str) -> BenchmarkModel:
    return BenchmarkModel.objects.create(
        internal_id=internal_id,
        display_name=f"Team {internal_id}",
        kind=BenchmarkModel.Kind.OUTSIDE,
        owner=f"{internal_id} lab",
        contact=f"{internal_id}@example.org",
        method_description="Base rates.",
    )


@dataclass
class Week:
    cohort: Cohort
    team: BenchmarkModel
    token: str
    row: OutsideAgentToken
    rival: BenchmarkModel
    rival_token: str

    def agent(self, model: BenchmarkModel | None = None) -> Agent:
        return Agent.objects.get(cohort=self.cohort, model=model or self.team)


@dataclass(frozen=True)
class WeekIds:
    team_id: int
    rival_id: int
    cohort_id: int


def week_begun() -> WeekIds:
    """Two outside teams registered; the cohort of WEEK started and its run done."""
    team, rival = outside_model("team-x"), outside_model("team-y")
    cohort, _ = cohort_start(week_start=WEEK, now=COHORT_AT)
    decisions_run_all(now=RUN_AT, source=RecordedSource())
    return WeekIds(team_id=team.pk, rival_id=rival.pk, cohort_id=cohort.pk)


def tokens_issued(ids: WeekIds) -> Week:
    """A token for each team. Each test issues its own: the rate limit counts requests by
    token in a cache no rollback empties (Redis), so a token shared by the module's tests
    would carry one test's requests over to the next."""
    team = BenchmarkModel.objects.get(pk=ids.team_id)
    rival = BenchmarkModel.objects.get(pk=ids.rival_id)
    row, token = outside_token_issue(model=team, actor_id=None, now=COHORT_AT)
    _, rival_token = outside_token_issue(model=rival, actor_id=None, now=COHORT_AT)
    cohort = Cohort.objects.get(pk=ids.cohort_id)
    return Week(cohort, team, token, row, rival, rival_token)


def week_started() -> Week:
    """Two outside teams with a token each; the cohort of WEEK started and its run done."""
    return tokens_issued(week_begun())


@module_world(settings=OFFLINE)
def outside_week() -> WeekIds:
    """The week of two outside teams, built once for the module (tests/worlds.py)."""
    return week_begun()


@pytest.fixture
def week(db: None, outside_week: ModuleWorld[WeekIds], time_machine: Any) -> Week:
    started = tokens_issued(outside_week.value)
    time_machine.move_to(IN_WINDOW, tick=False)
    return started


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def a_bet(prompt: dict[str, Any], amount: int = 500) -> dict[str, Any]:
    """A NO bet on the first Yes/No market of the prompt's JSON with a usable price."""
    market = next(
        m
        for m in prompt["markets"]
        if m["outcomes"] == ["Yes", "No"] and m["prices"][0] and 0.05 < float(m["prices"][0]) < 0.95
    )
    return {
        "action": "BET",
        "bets": [{"market_id": market["market_id"], "side": "NO", "amount": amount}],
        "reasoning": "Priced too high.",
    }


def prompt_of(client: Client, week: Week) -> dict[str, Any]:
    response = client.get(
        f"{OUTSIDE}/cohorts/{week.cohort.number}/prompt", headers=bearer(week.token)
    )
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    return body


def submit(client: Client, week: Week, body: Any, token: str | None = None) -> Any:
    data = body if isinstance(body, str) else json.dumps(body)
    return client.post(
        f"{OUTSIDE}/cohorts/{week.cohort.number}/decision",
        data=data,
        content_type="application/json",
        headers=bearer(token or week.token),
    )


def refused(response: Any, status: int, code: str) -> SystemEvent:
    """The answer is the refusal in the envelope, and the refusal was recorded."""
    assert response.status_code == status, response.content
    assert_envelope(response.json(), status, code)
    event = SystemEvent.objects.filter(kind="outside_refused").order_by("-pk").first()
    assert event is not None, "the refusal was not recorded"
    assert event.data["code"] == code
    return event


# ------------------------------------------------------------------------------ reading


def test_the_prompt_is_the_lineups_as_text_and_as_json(week: Week, client: Client) -> None:
    prompt = prompt_of(client, week)
    decision = Decision.objects.get(agent=week.agent())
    lineup = Decision.objects.filter(cohort=week.cohort, agent__model__kind="llm").first()
    assert lineup is not None
    assert prompt["status"] == "awaiting"
    assert prompt["submissions_left"] == 2  # one submission and one resubmission
    assert prompt["methodology_version"] == week.cohort.methodology_version == "v1"
    assert prompt["prompt_version"] == decision.prompt_version
    assert prompt["messages"][0] == {"role": "system", "content": lineup.system_prompt}
    assert prompt["messages"][1]["content"] == decision.user_prompt
    assert prompt["run_id"] == lineup.run_id
    # The same frozen snapshot, as JSON: every market of the prompt, in its order.
    assert len(prompt["markets"]) == lineup.run.universe_size  # type: ignore[union-attr]
    first = prompt["markets"][0]
    assert first["market_id"] in decision.user_prompt
    assert prompt["portfolio"]["cash"] == "10000.00"
    assert prompt["portfolio"]["max_bet"] == "2500.00"


def test_me_names_the_tokens_agent_and_the_window(week: Week, client: Client) -> None:
    me = client.get(f"{OUTSIDE}/me", headers=bearer(week.token)).json()
    assert me["model"] == "team-x"
    assert me["token_prefix"] == week.row.prefix
    assert me["window_opens"].startswith("2026-03-08T00:05")
    assert me["window_closes"].startswith("2026-03-08T01:00")
    assert me["agents"] == [
        {
            "cohort": week.cohort.number,
            "agent_id": week.agent().pk,
            "cohort_status": "active",
            "cash": "10000.00",
            "status": "active",
            "decision_status": "awaiting",
        }
    ]


def test_the_portfolio_values_a_position_as_the_snapshots_do(week: Week, client: Client) -> None:
    """The agent bets NO; the market's price then moves, and then it closes unresolved with
    a zero price: the position's mark is 1 − the YES price when last open, not the price it
    was bought at. The books show that mark, and the value the snapshot holds (002)."""
    bet = a_bet(prompt_of(client, week), amount=1000)
    assert submit(client, week, bet).status_code == 200
    pid = bet["bets"][0]["market_id"]
    position = Position.objects.get(agent=week.agent(), market__polymarket_id=pid)
    assert position.last_price is not None
    moved = (Decimal(1) - position.last_price) / 2  # YES halfway to 0: NO dearer
    Market.objects.filter(polymarket_id=pid).update(  # as a refresh writes a closed market
        closed=True, outcome_prices=["0", "1"], last_open_prices=[str(moved), str(1 - moved)]
    )
    snapshots_take(now=IN_WINDOW + timedelta(minutes=10), refresh=False)
    snapshot = PortfolioSnapshot.objects.get(agent=week.agent())

    books = client.get(
        f"{OUTSIDE}/cohorts/{week.cohort.number}/portfolio", headers=bearer(week.token)
    ).json()

    [held] = books["positions"]
    mark = Decimal(1) - moved
    assert mark != position.last_price
    assert Decimal(held["current_price"]) == mark
    assert Decimal(held["current_value"]) == money.cents_down(position.shares * mark)
    assert Decimal(held["current_value"]) == snapshot.positions_value
    assert books["latest_snapshot"]["positions_value"] == held["current_value"]


# --------------------------------------------------------------------------- submitting


def test_a_malformed_submission_gets_the_error_and_one_resubmission_is_taken(
    week: Week, client: Client
) -> None:
    prompt = prompt_of(client, week)
    malformed = submit(client, week, {"action": "BET", "bets": [], "reasoning": "x"})
    assert malformed.status_code == 422
    assert_envelope(malformed.json(), 422, "invalid_decision")
    assert "resubmit 1 more time" in malformed.json()["error"]["message"]
    again = prompt_of(client, week)
    assert again["submissions_left"] == 1
    assert "YOUR PREVIOUS RESPONSE WAS INVALID" in again["messages"][1]["content"]
    accepted = submit(client, week, a_bet(prompt))
    assert accepted.status_code == 200, accepted.content
    result = accepted.json()
    assert (result["status"], result["action"]) == ("done", "BET")
    assert [t["status"] for t in result["trades"]] == ["executed"]
    attempts = Decision.objects.get(pk=result["decision_id"]).attempts.order_by("number")
    assert [a.valid for a in attempts] == [False, True]
    assert json.loads(attempts[1].raw_response) == a_bet(prompt)


def test_malformed_twice_is_recorded_as_a_hold(week: Week, client: Client) -> None:
    submit(client, week, "not json")
    final = submit(client, week, "still not json")
    assert final.status_code == 422
    assert_envelope(final.json(), 422, "invalid_decision_final")
    decision = Decision.objects.get(agent=week.agent())
    assert (decision.status, decision.action, decision.parse_failed) == ("done", "HOLD", True)


# ---------------------------------------------------------------------------- refusals


def test_a_request_without_a_token_is_refused(week: Week, client: Client) -> None:
    event = refused(client.get(f"{OUTSIDE}/me"), 401, "missing_token")
    assert event.data["token_prefix"] is None


def test_a_clients_refused_tokens_are_recorded_once_a_rate_window(
    week: Week, client: Client, time_machine: Any
) -> None:
    """Unauthenticated requests are refused every time, but recorded once per client and
    window: a stream of bad tokens cannot flood the operations record."""
    for _ in range(5):
        assert client.get(f"{OUTSIDE}/me").status_code == 401
    assert SystemEvent.objects.filter(kind="outside_refused", data__status=401).count() == 1
    time_machine.move_to(IN_WINDOW + timedelta(seconds=61), tick=False)
    assert client.get(f"{OUTSIDE}/me").status_code == 401
    assert SystemEvent.objects.filter(kind="outside_refused", data__status=401).count() == 2


def test_a_refused_submission_is_recorded_with_its_body(
    week: Week, client: Client, time_machine: Any
) -> None:
    time_machine.move_to(WINDOW_CLOSES, tick=False)
    sent = json.dumps({"action": "HOLD", "reasoning": "late \u00e9"})
    event = refused(submit(client, week, sent), 409, "outside_window")
    assert event.data["body"] == sent
    assert event.data["body_bytes"] == len(sent.encode())
    assert event.data["body_sha256"] == hashlib.sha256(sent.encode()).hexdigest()


def test_outside_answers_are_never_kept_by_a_shared_cache(week: Week, client: Client) -> None:
    for response in (
        client.get(f"{OUTSIDE}/me", headers=bearer(week.token)),
        client.get(f"{OUTSIDE}/me"),
    ):
        assert response["Cache-Control"] == "private, no-store"


def test_an_unknown_token_is_refused(week: Week, client: Client) -> None:
    forged = f"fa_{week.row.prefix}_{'A' * 43}"
    refused(client.get(f"{OUTSIDE}/me", headers=bearer(forged)), 401, "invalid_token")


def test_a_revoked_token_is_refused(week: Week, client: Client) -> None:
    OutsideAgentToken.objects.filter(pk=week.row.pk).update(revoked_at=IN_WINDOW)
    event = refused(client.get(f"{OUTSIDE}/me", headers=bearer(week.token)), 401, "token_revoked")
    assert event.data["token_prefix"] == week.row.prefix


def test_an_expired_token_is_refused(week: Week, client: Client) -> None:
    OutsideAgentToken.objects.filter(pk=week.row.pk).update(expires_at=IN_WINDOW)
    refused(client.get(f"{OUTSIDE}/me", headers=bearer(week.token)), 401, "token_expired")


def test_a_submission_before_the_window_is_refused(
    week: Week, client: Client, time_machine: Any
) -> None:
    time_machine.move_to(datetime(2026, 3, 8, 0, 4, tzinfo=UTC), tick=False)
    response = submit(client, week, {"action": "HOLD", "reasoning": "early"})
    event = refused(response, 409, "outside_window")
    assert event.agent_id == week.agent().pk
    assert not Decision.objects.get(agent=week.agent()).attempts.exists()


def test_a_submission_after_the_window_is_refused(
    week: Week, client: Client, time_machine: Any
) -> None:
    time_machine.move_to(WINDOW_CLOSES, tick=False)
    refused(submit(client, week, {"action": "HOLD", "reasoning": "late"}), 409, "outside_window")
    assert Decision.objects.get(agent=week.agent()).status == Decision.Status.AWAITING


def test_a_second_final_submission_for_the_week_is_refused(week: Week, client: Client) -> None:
    assert submit(client, week, {"action": "HOLD", "reasoning": "wait"}).status_code == 200
    again = submit(client, week, a_bet(prompt_of(client, week)))
    refused(again, 409, "already_decided")
    assert not Trade.objects.filter(agent=week.agent()).exists()


def test_a_cohort_the_agent_is_not_in_is_refused(week: Week, client: Client) -> None:
    late = outside_model("team-late")  # registered after the cohort started: not in it
    _, token = outside_token_issue(model=late, actor_id=None)
    for response in (
        client.get(f"{OUTSIDE}/cohorts/{week.cohort.number}/prompt", headers=bearer(token)),
        client.get(f"{OUTSIDE}/cohorts/{week.cohort.number}/portfolio", headers=bearer(token)),
        submit(client, week, {"action": "HOLD", "reasoning": "x"}, token=token),
        client.get(
            f"{OUTSIDE}/cohorts/{week.cohort.number + 1}/prompt", headers=bearer(week.token)
        ),
    ):
        refused(response, 403, "not_in_cohort")


def test_a_token_acts_for_its_own_agent_only(week: Week, client: Client) -> None:
    """Both teams are in the cohort: each token reads and decides for its own agent, and
    no path can name the other's."""
    number = week.cohort.number
    mine = client.get(f"{OUTSIDE}/cohorts/{number}/portfolio", headers=bearer(week.token)).json()
    theirs = client.get(f"{OUTSIDE}/cohorts/{number}/portfolio", headers=bearer(week.rival_token))
    assert mine["agent_id"] == week.agent().pk
    assert theirs.json()["agent_id"] == week.agent(week.rival).pk
    assert submit(client, week, a_bet(prompt_of(client, week))).status_code == 200
    rival = Decision.objects.get(agent=week.agent(week.rival))
    assert rival.status == Decision.Status.AWAITING  # untouched by the other team's token
    assert not rival.attempts.exists()
    # An agent id in the query is not taken: it is a 422, never a way to another's books.
    sneaky = client.get(
        f"{OUTSIDE}/cohorts/{number}/portfolio?agent_id={week.agent(week.rival).pk}",
        headers=bearer(week.token),
    )
    assert sneaky.status_code == 422


def test_requests_over_the_tokens_rate_limit_are_refused(
    week: Week, client: Client, settings: Any
) -> None:
    settings.OUTSIDE_API_RATE_LIMIT = 2
    for _ in range(2):
        assert client.get(f"{OUTSIDE}/me", headers=bearer(week.token)).status_code == 200
    limited = client.get(f"{OUTSIDE}/me", headers=bearer(week.token))
    refused(limited, 429, "rate_limited")
    assert int(limited["Retry-After"]) >= 1
    # Counted per token: the other team is not limited by this one's requests.
    assert client.get(f"{OUTSIDE}/me", headers=bearer(week.rival_token)).status_code == 200
    client.get(
        f"{OUTSIDE}/me", headers=bearer(week.token)
    )  # still over: refused, not recorded again
    limits = SystemEvent.objects.filter(kind="outside_refused", data__code="rate_limited")
    assert limits.count() == 1


def test_a_body_over_the_cap_is_refused_before_it_is_parsed(
    week: Week, client: Client, settings: Any
) -> None:
    settings.OUTSIDE_API_MAX_BODY_BYTES = 200
    body = {"action": "HOLD", "reasoning": "x" * 300}
    refused(submit(client, week, body), 413, "body_too_large")
    decision = Decision.objects.get(agent=week.agent())
    assert decision.status == Decision.Status.AWAITING
    assert not decision.attempts.exists()


@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "no-length-declared"])
def test_a_body_without_a_length_is_refused_unread_and_uses_no_submission(
    week: Week, client: Client, chunked: bool
) -> None:
    hold = json.dumps({"action": "HOLD", "reasoning": "Nothing is mispriced."})
    # As a WSGI server hands over a request without Content-Length: the body (if any) in the
    # stream, unread by Django.
    encoding = {"Transfer-Encoding": "chunked"} if chunked else {}
    unmeasured = client.post(
        f"{OUTSIDE}/cohorts/{week.cohort.number}/decision",
        data=hold,
        content_type="application/json",
        headers={**bearer(week.token), **encoding},
        CONTENT_LENGTH="",
    )
    refused(unmeasured, 411, "length_required")
    decision = Decision.objects.get(agent=week.agent())
    assert decision.status == Decision.Status.AWAITING
    assert not decision.attempts.exists()
    # The same body with its length is the team's one submission, taken whole.
    assert submit(client, week, hold).status_code == 200
    decision.refresh_from_db()
    assert (decision.status, decision.action) == (Decision.Status.DONE, "HOLD")


def a_dead_submission(week: Week, *, seconds_ago: int) -> Decision:
    """The state a web worker dying mid-submission leaves: the decision RUNNING under the
    submission's claim, taken `seconds_ago`."""
    decision = Decision.objects.get(agent=week.agent())
    Decision.objects.filter(pk=decision.pk).update(
        status=Decision.Status.RUNNING,
        claimed_by="outside-api",
        claimed_at=IN_WINDOW - timedelta(seconds=seconds_ago),
    )
    decision.refresh_from_db()
    return decision


def test_a_submission_claim_younger_than_any_submission_runs_is_left_alone(
    week: Week, client: Client
) -> None:
    a_dead_submission(week, seconds_ago=30)  # may still be running: the worker timeout is 60 s
    hold = {"action": "HOLD", "reasoning": "Nothing is mispriced."}
    refused(submit(client, week, hold), 409, "not_open")
    assert Decision.objects.get(agent=week.agent()).status == Decision.Status.RUNNING


def test_a_team_cut_off_before_its_answer_was_stored_submits_again_in_its_window(
    week: Week, client: Client
) -> None:
    dead = a_dead_submission(week, seconds_ago=120)
    hold = {"action": "HOLD", "reasoning": "Nothing is mispriced."}

    response = submit(client, week, hold)

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["status"], body["action"], body["resumed"]) == ("done", "HOLD", False)
    decision = Decision.objects.get(agent=week.agent())
    assert decision.tries == dead.tries + 1  # a claim of its own
    [attempt] = decision.attempts.all()  # this body, its round's first: no retry used up
    assert json.loads(attempt.raw_response) == hold
    event = SystemEvent.objects.get(kind="decision_reclaimed", decision=decision)
    assert event.data["reason"] == "dead_submission"
    assert "taking the new body" in event.message


def test_a_team_cut_off_after_its_answer_was_stored_resumes_it_and_nothing_executes_twice(
    week: Week, client: Client, monkeypatch: pytest.MonkeyPatch, time_machine: Any
) -> None:
    import arena.services.decisions.outside as outside_module

    bet = a_bet(prompt_of(client, week), amount=700)

    def the_worker_dies(**kwargs: Any) -> Any:
        raise SystemExit("the web worker was killed")  # nothing of the request runs on

    monkeypatch.setattr(outside_module, "execution_markets", the_worker_dies)
    with pytest.raises(SystemExit):
        submit(client, week, bet)
    monkeypatch.undo()
    cut_off = Decision.objects.get(agent=week.agent())
    assert cut_off.status == Decision.Status.RUNNING
    assert cut_off.parsed is not None  # stored before any order executed
    assert not Trade.objects.filter(decision=cut_off).exists()

    # Within the claim's life the team is told to wait; past it, it submits again.
    time_machine.move_to(IN_WINDOW + timedelta(seconds=30), tick=False)
    refused(submit(client, week, {"action": "HOLD", "reasoning": "x"}), 409, "not_open")
    time_machine.move_to(IN_WINDOW + timedelta(minutes=2), tick=False)
    response = submit(client, week, {"action": "HOLD", "reasoning": "A different body."})

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["resumed"] is True  # the stored answer executed, not this body
    assert (body["status"], body["action"]) == ("done", "BET")
    [trade] = body["trades"]
    assert trade["market_id"] == bet["bets"][0]["market_id"]
    assert Trade.objects.filter(decision=cut_off).count() == 1
    decision = Decision.objects.get(pk=cut_off.pk)
    assert decision.attempts.count() == 1  # the resubmission was not an attempt of its own
    refused(submit(client, week, bet), 409, "already_decided")


def test_no_submission_by_the_close_is_a_hold_and_the_prompt_says_so(
    week: Week, client: Client, time_machine: Any
) -> None:
    time_machine.move_to(WINDOW_CLOSES + timedelta(minutes=5), tick=False)
    outside_decisions_close()
    prompt = prompt_of(client, week)
    assert (prompt["status"], prompt["submissions_left"]) == ("done", 0)
    decision = Decision.objects.get(agent=week.agent())
    assert decision.no_submission
    assert decision.action == "HOLD"


def test_the_token_never_appears_in_logs_or_records(
    week: Week, client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    prompt_of(client, week)
    submit(client, week, "{ malformed")
    submit(client, week, a_bet(prompt_of(client, week)))
    submit(client, week, {"action": "HOLD", "reasoning": "again"})  # refused, recorded
    OutsideAgentToken.objects.filter(pk=week.row.pk).update(revoked_at=IN_WINDOW)
    client.get(f"{OUTSIDE}/me", headers=bearer(week.token))  # refused, recorded
    secret = week.token.split("_", 2)[2]
    assert secret not in caplog.text
    events = SystemEvent.objects.filter(kind="outside_refused")
    assert events.count() == 2
    for event in SystemEvent.objects.all():
        assert secret not in event.message + json.dumps(event.data)
    for decision in Decision.objects.all():
        assert secret not in decision.user_prompt + decision.error


def test_the_api_docs_explain_how_to_take_part(db: None, client: Client) -> None:
    schema = client.get(f"{API}/openapi.json").json()
    assert "Outside agents: how to take part" in schema["info"]["description"]
    paths = schema["paths"]
    assert "post" in paths[f"{OUTSIDE}/cohorts/{{number}}/decision"]
    assert "get" in paths[f"{OUTSIDE}/cohorts/{{number}}/prompt"]
    assert schema["components"]["securitySchemes"]


def test_the_api_docs_list_their_changes_dated_newest_first(db: None, client: Client) -> None:
    schema = client.get(f"{API}/openapi.json").json()
    changes = schema["info"]["description"].split("## Changes", 1)[1]
    dates = re.findall(r"^- \*\*(\d{4}-\d{2}-\d{2})\*\*$", changes, flags=re.MULTILINE)
    assert dates
    assert dates == sorted(dates, reverse=True)
    assert "`methodology_version`" in changes
    fields = schema["components"]["schemas"]["OutsidePromptOut"]["properties"]
    assert {"methodology_version", "prompt_version"} <= set(fields)


def test_the_api_leaderboard_keeps_outside_agents_on_their_own_board(
    week: Week, client: Client
) -> None:
    main = client.get(f"{API}/leaderboard").json()
    assert not {"team-x", "team-y"} & {row["model"] for row in main["rows"]}
    both = client.get(f"{API}/leaderboard?outside=include").json()
    assert both["outside"] == "include"
    outside = [row for row in both["rows"] if row["outside"]]
    assert {row["model"] for row in outside} == {"team-x", "team-y"}
    assert both["rows"][-len(outside) :] == outside  # after the main board and the baselines
    assert not any(row["admitted"] for row in both["rows"])
    # Admitted by staff: ranked on the main board, and its row says so.
    outside_admission_set(
        model_id=BenchmarkModel.objects.get(internal_id="team-x").pk, admitted=True
    )
    admitted = client.get(f"{API}/leaderboard").json()["rows"]
    assert [(r["outside"], r["admitted"]) for r in admitted if r["model"] == "team-x"] == [
        (True, True)
    ]
    standings = client.get(f"{API}/cohorts/{week.cohort.number}").json()["standings"]
    labelled = {row["model"] for row in standings if row["outside"]}
    assert labelled == {"team-x", "team-y"}


# ---------------------------------------------------------------- a full week, real HTTP


on_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the full week runs on PostgreSQL"
)


def http(
    method: str, url: str, token: str, body: Any = None
) -> tuple[int, dict[str, Any], dict[str, str]]:
    data = None if body is None else (body if isinstance(body, str) else json.dumps(body))
    request = urllib.request.Request(
        url,
        method=method,
        data=data.encode() if data is not None else None,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            return response.status, json.loads(response.read()), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read()), dict(error.headers)


@pytest.fixture
def served_week(live_server: Any, time_machine: Any) -> tuple[str, Week]:
    time_machine.move_to(RUN_AT, tick=True)
    return live_server.url, week_started()


@on_postgresql
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_full_week_of_an_outside_agent_over_http_while_the_lineup_decides(
    served_week: tuple[str, Week], time_machine: Any
) -> None:
    url, week = served_week
    base = f"{url}{OUTSIDE}/cohorts/{week.cohort.number}"
    # The lineup decided in the same run the outside agent's prompt was frozen in.
    lineup = Decision.objects.filter(cohort=week.cohort, agent__model__kind__in=["llm", "baseline"])
    assert lineup.count() >= 1
    assert set(lineup.values_list("status", flat=True)) == {"done"}
    time_machine.move_to(IN_WINDOW, tick=True)

    status, prompt, _ = http("GET", f"{base}/prompt", week.token)
    assert status == 200
    assert prompt["messages"][0]["content"] == lineup.first().system_prompt  # type: ignore[union-attr]
    assert prompt["run_id"] == lineup.first().run_id  # type: ignore[union-attr]

    status, error, _ = http("POST", f"{base}/decision", week.token, '{"action": "BET"')
    assert status == 422
    assert error["error"]["code"] == "invalid_decision"

    bet = a_bet(prompt, amount=1000)
    status, result, _ = http("POST", f"{base}/decision", week.token, bet)
    assert status == 200, result
    assert (result["status"], result["action"]) == ("done", "BET")
    [trade] = result["trades"]
    assert (trade["status"], trade["amount"], trade["side"]) == ("executed", "1000.00", "NO")

    # A snapshot tick values the outside agent's position like any agent's.
    snapshots_take(now=IN_WINDOW + timedelta(minutes=10), source=RecordedSource(), refresh=False)
    status, books, _ = http("GET", f"{base}/portfolio", week.token)
    assert status == 200
    assert books["cash"] == "9000.00"
    assert [t["market_id"] for t in books["trades"]] == [bet["bets"][0]["market_id"]]
    [position] = books["positions"]
    assert position["side"] == "NO"
    snapshot = books["latest_snapshot"]
    assert snapshot is not None
    assert snapshot["cash"] == "9000.00"
    assert float(snapshot["positions_value"]) > 0
    assert float(snapshot["total_value"]) == pytest.approx(
        9000 + float(snapshot["positions_value"]), abs=0.01
    )

    # The week's decision is final: a second one is refused, and recorded.
    status, error, _ = http("POST", f"{base}/decision", week.token, {"action": "HOLD"})
    assert (status, error["error"]["code"]) == (409, "already_decided")
    assert SystemEvent.objects.filter(kind="outside_refused", data__code="already_decided").exists()
    # After the window the other team, which submitted nothing, holds "no submission"; the
    # decision made in the window is left as it is.
    time_machine.move_to(WINDOW_CLOSES + timedelta(minutes=5), tick=True)
    rival = Decision.objects.get(agent=week.agent(week.rival))
    assert outside_decisions_close() == [rival.pk]
    rival.refresh_from_db()
    assert (rival.action, rival.no_submission) == ("HOLD", True)
    assert Decision.objects.get(agent=week.agent()).action == "BET"


@on_postgresql
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_sunday_over_http_an_outside_agent_submits_late_into_moved_and_closed_markets(
    served_week: tuple[str, Week], time_machine: Any, gamma_server: Any
) -> None:
    """Fair entry, end to end: the lineup decides at 00:05 on the frozen snapshot; at 00:55
    an outside agent reads its prompt over HTTP and bets on two markets. Since 00:05 one has
    moved against its bet and the other has closed (its event ended). Polymarket, here a
    replay server behind the real Gamma client, says so at submission: the first bet executes
    at the live price, the worse of the two for the agent; the second does not execute."""
    url, week = served_week
    base = f"{url}{OUTSIDE}/cohorts/{week.cohort.number}"
    lineup = Decision.objects.filter(cohort=week.cohort, agent__model__kind__in=["llm", "baseline"])
    assert set(lineup.values_list("status", flat=True)) == {"done"}
    time_machine.move_to(WINDOW_CLOSES - timedelta(minutes=5), tick=True)

    status, prompt, _ = http("GET", f"{base}/prompt", week.token)
    assert status == 200
    binary = [
        m
        for m in prompt["markets"]
        if m["outcomes"] == ["Yes", "No"] and m["prices"][0] and 0.05 < float(m["prices"][0]) < 0.9
    ]
    moved, ended = binary[0], binary[1]
    frozen_no = Decimal(1) - Decimal(moved["prices"][0])
    live: dict[str, dict[str, Any]] = {
        moved["market_id"]: {"outcomePrices": json.dumps(["0.05", "0.95"])},
        ended["market_id"]: {"outcomePrices": json.dumps(["0.0005", "0.9995"]), "closed": True},
    }

    def gamma(request: Any) -> Any:
        return Reply.json(
            [{**demo_records()[i], **live[i]} for i in request.query.get("id", []) if i in live]
        )

    gamma_server.route("GET", "/markets", gamma)
    bet = {
        "action": "BET",
        "bets": [
            {"market_id": moved["market_id"], "side": "NO", "amount": 1000},
            {"market_id": ended["market_id"], "side": "NO", "amount": 1000},
        ],
        "reasoning": "Read the news since 00:05.",
    }
    status, result, _ = http("POST", f"{base}/decision", week.token, bet)
    assert status == 200, result
    first, second = result["trades"]
    assert first["status"] == "executed"
    assert Decimal(first["snapshot_price"]) == frozen_no
    assert Decimal(first["live_price"]) == Decimal("0.95")
    assert Decimal(first["price"]) == max(frozen_no, Decimal("0.95"))
    assert second["status"] == "rejected"
    assert "closed since the snapshot" in second["reject_reason"]
    assert Agent.objects.get(pk=week.agent().pk).cash == Decimal("9000.00")
    # The catalogue learnt that the ended market closed, though nobody holds it.
    assert Market.objects.get(polymarket_id=ended["market_id"]).closed
    # The lineup's trades of the morning kept the snapshot's prices.
    for trade in Trade.objects.filter(decision__in=lineup, status="executed"):
        assert (trade.price, trade.live_price) == (trade.snapshot_price, None)


# --------------------------------------------------------------------- methodology v2


@pytest.fixture
def v2_week(db: None, settings: Any, time_machine: Any) -> Week:
    settings.METHODOLOGY_VERSION = "v2"
    settings.MARKET_UNIVERSE_SIZE = 100
    started = week_started()
    time_machine.move_to(IN_WINDOW, tick=False)
    return started


def test_a_v2_team_gets_the_panel_and_its_forecasts_are_scored_against_the_live_price(
    v2_week: Week, client: Client
) -> None:
    prompt = prompt_of(client, v2_week)
    panel = [market["market_id"] for market in prompt["panel"]]
    assert prompt["methodology_version"] == "v2"
    assert prompt["prompt_version"] == "v3"
    assert len(panel) >= 5
    assert "FORECAST PANEL" in prompt["messages"][1]["content"]

    bet = a_bet(prompt)  # no stated probability: v2 refuses it, as it would a model's
    invalid = submit(client, v2_week, bet)
    assert invalid.status_code == 422, invalid.content
    assert invalid.json()["error"]["code"] == "invalid_decision"
    assert "probability" in invalid.json()["error"]["message"]
    bet["bets"][0]["probability"] = 0.55
    bet["forecasts"] = [{"market_id": pid, "probability": 0.4} for pid in panel[1:]]
    response = submit(client, v2_week, bet)

    assert response.status_code == 200, response.content
    decision = Decision.objects.get(agent=v2_week.agent())
    rows = list(PanelForecast.objects.filter(decision=decision).order_by("position"))
    assert [r.market.polymarket_id for r in rows] == panel
    assert rows[0].probability is None
    assert rows[0].problem == "missing"
    assert all(r.probability == Decimal("0.4") for r in rows[1:])
    # b is the live price read at the submission (the demo source's), never the snapshot's.
    assert {r.reference for r in rows} == {PanelForecast.Reference.LIVE}
    live = demo_records()
    for row in rows:
        prices = json.loads(live[row.market.polymarket_id]["outcomePrices"])
        assert row.reference_price == Decimal(prices[0]).quantize(Decimal("0.000001"))
    [trade] = Trade.objects.filter(decision=decision)
    assert trade.stated_probability == Decimal("0.55")


def test_a_v2_teams_b_is_the_price_polymarket_gives_at_its_submission_not_the_snapshots(
    v2_week: Week, client: Client, gamma_server: ReplayServer
) -> None:
    """Since the snapshot, news moved every panel market to 0.777 YES and closed one. The
    team's b is what the real Gamma client reads at its submission: 0.777, so the news earns
    its forecasts no Alpha; the closed question gets no b and is never scored."""
    prompt = prompt_of(client, v2_week)
    panel = [market["market_id"] for market in prompt["panel"]]
    frozen = {m["market_id"]: Decimal(m["prices"][0]) for m in prompt["markets"]}
    assert all(frozen[pid] != Decimal("0.777") for pid in panel)
    ended = panel[-1]

    def gamma(request: Any) -> Reply:
        records = demo_records()
        return Reply.json(
            [
                records[pid]
                | {"outcomePrices": json.dumps(["0.777", "0.223"]), "closed": pid == ended}
                for pid in request.query.get("id", [])
                if pid in records
            ]
        )

    gamma_server.route("GET", "/markets", gamma)
    answer = {
        "action": "HOLD",
        "forecasts": [{"market_id": pid, "probability": 0.8} for pid in panel],
        "reasoning": "The news since 00:05.",
    }
    response = submit(client, v2_week, answer)

    assert response.status_code == 200, response.content
    rows = PanelForecast.objects.filter(decision__agent=v2_week.agent()).select_related("market")
    assert rows.count() == len(panel)
    for row in rows:
        assert row.probability == Decimal("0.8")
        if row.market.polymarket_id == ended:
            assert row.reference_price is None  # closed since the snapshot: never scored
        else:
            assert (row.reference, row.reference_price) == ("live", Decimal("0.777"))


def test_a_v2_team_that_submits_nothing_has_every_question_imputed_at_the_snapshot(
    v2_week: Week,
) -> None:
    outside_decisions_close(now=WINDOW_CLOSES + timedelta(minutes=1))

    decision = Decision.objects.get(agent=v2_week.agent())
    rows = list(PanelForecast.objects.filter(decision=decision).select_related("run"))
    assert decision.no_submission
    assert rows  # counted against its coverage, never left out
    snapshot = {m.polymarket_id: m for m in SnapshotMarket.objects.filter(run=decision.run)}
    for row in rows:
        assert row.probability is None
        assert row.reference == PanelForecast.Reference.SNAPSHOT
        yes = snapshot[row.market.polymarket_id].outcome_prices[0]
        assert row.reference_price == Decimal(str(yes)).quantize(Decimal("0.000001"))
