"""Outside agents, through the services: an outside team's agent joins each cohort
like a lineup model, reads the very prompt the lineup gets, and decides through the same
parser (with the same one retry) and the same execution; a missing submission is a HOLD."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.db import connection, connections

from agents.models import BenchmarkModel
from arena.demo import DEMO_OUTSIDE_TEAM, _demo_outside_week, demo_outside_team
from arena.exceptions import DecisionNotRetryable, OutsideRefused
from arena.models import (
    Agent,
    Cohort,
    Decision,
    DecisionRun,
    OutsideAgentToken,
    Position,
    SystemEvent,
)
from arena.selectors import standings
from arena.selectors.models import usage_by_key
from arena.selectors.ticks import agents_to_mark
from arena.services.cohorts import cohort_start, cohorts_completable
from arena.services.decisions.outside import outside_decision_submit, outside_decisions_close
from arena.services.decisions.run import agents_due, decision_retry, decisions_run_all
from arena.services.outside import (
    outside_admission_set,
    outside_token_authenticate,
    outside_token_issue,
    outside_token_revoke,
)
from markets.sources import RecordedSource
from tests.arena.conftest import COHORT_AT, OFFLINE, RUN_AT, WEEK
from tests.worlds import ModuleWorld, module_world

pytestmark = pytest.mark.django_db

IN_WINDOW = datetime(2026, 3, 8, 0, 20, tzinfo=UTC)
WINDOW_CLOSES = datetime(2026, 3, 8, 1, 0, tzinfo=UTC)


def outside_model(internal_id: str = "team-x") -> BenchmarkModel:
    return BenchmarkModel.objects.create(
        internal_id=internal_id,
        display_name=f"Team {internal_id}",
        kind=BenchmarkModel.Kind.OUTSIDE,
        owner="The X Lab",
        contact="x@example.org",
        method_description="An ensemble of base rates and a small model.",
    )


@dataclass(frozen=True)
class WeekIds:
    team_id: int
    cohort_id: int


@module_world(settings=OFFLINE)
def outside_week() -> WeekIds:
    """The outside team registered, the cohort of WEEK started with its agent in it, and the
    week's first run done: built once for the module (tests/worlds.py)."""
    team = outside_model()
    cohort, _ = cohort_start(week_start=WEEK, now=COHORT_AT)
    decisions_run_all(now=RUN_AT, source=RecordedSource())
    return WeekIds(team_id=team.pk, cohort_id=cohort.pk)


@pytest.fixture
def team(db: None, outside_week: ModuleWorld[WeekIds]) -> BenchmarkModel:
    return BenchmarkModel.objects.get(pk=outside_week.value.team_id)


@pytest.fixture
def week(db: None, outside_week: ModuleWorld[WeekIds]) -> Cohort:
    """The cohort of WEEK started with the outside agent in it, and its first run done."""
    return Cohort.objects.get(pk=outside_week.value.cohort_id)


def outside_agent(cohort: Cohort, model: BenchmarkModel) -> Agent:
    return Agent.objects.get(cohort=cohort, model=model)


def first_market_id(week: Cohort) -> str:
    """A binary market of the week's first run with a usable price: a bet on NO executes."""
    run = DecisionRun.objects.filter(week_start=WEEK).order_by("pk").first()
    for row in run.markets.filter(rank__isnull=False).order_by("rank"):  # type: ignore[union-attr]
        prices = row.outcome_prices
        if [o.lower() for o in row.outcomes] == ["yes", "no"] and prices and prices[0]:
            if 0.05 < float(prices[0]) < 0.95 and not row.closed:
                return row.polymarket_id
    raise AssertionError("no binary market with a usable price in the recordings")


def a_bet(week: Cohort, amount: int = 500) -> str:
    return json.dumps(
        {
            "action": "BET",
            "bets": [{"market_id": first_market_id(week), "side": "NO", "amount": amount}],
            "reasoning": "Priced too high.",
        }
    )


# ------------------------------------------------------------------------------ the run


def test_an_outside_agent_gets_one_agent_per_cohort_with_10000(week: Cohort, team: Any) -> None:
    agent = outside_agent(week, team)
    assert agent.cash == 10000


def test_the_run_stores_the_lineups_prompt_and_leaves_the_outside_decision_awaiting(
    week: Cohort, team: BenchmarkModel
) -> None:
    decision = Decision.objects.get(agent__model=team)
    lineup = Decision.objects.filter(cohort=week, agent__model__kind="llm").first()
    assert decision.status == Decision.Status.AWAITING
    assert decision.responder == Decision.Responder.OUTSIDE
    assert decision.run_id == lineup.run_id  # type: ignore[union-attr]
    assert decision.system_prompt == lineup.system_prompt  # type: ignore[union-attr]
    assert decision.prompt_version == lineup.prompt_version  # type: ignore[union-attr]
    # The market table (the shared part of the user prompt) is the lineup's, to the character.
    table = lineup.user_prompt.split("Current date")[0]  # type: ignore[union-attr]
    assert decision.user_prompt.startswith(table)
    assert not decision.attempts.exists()  # nothing was asked of anyone


def test_the_lineup_decides_in_the_same_run_without_waiting_for_the_outside_agent(
    week: Cohort, team: BenchmarkModel
) -> None:
    lineup = Decision.objects.filter(cohort=week).exclude(agent__model=team)
    assert lineup.count() == week.agents.count() - 1
    assert set(lineup.values_list("status", flat=True)) == {Decision.Status.DONE}
    run = DecisionRun.objects.get()
    assert run.finished_at is not None


def test_a_retry_run_leaves_an_awaiting_decision_alone(week: Cohort, team: Any) -> None:
    agent = outside_agent(week, team)
    assert agent.pk not in agents_due(week_start=WEEK, now=IN_WINDOW)
    decisions_run_all(now=RUN_AT + timedelta(hours=1, minutes=30), source=RecordedSource())
    assert Decision.objects.get(agent=agent).status == Decision.Status.AWAITING


# ------------------------------------------------------------------------------ submissions


def test_a_valid_submission_goes_through_the_same_parser_and_execution(
    week: Cohort, team: BenchmarkModel
) -> None:
    agent = outside_agent(week, team)
    body = a_bet(week)
    taken = outside_decision_submit(agent=agent, body=body, now=IN_WINDOW)
    decision = taken.decision
    assert taken.valid
    assert decision.status == Decision.Status.DONE
    assert decision.action == "BET"
    trade = decision.trades.get()
    assert trade.status == "executed"
    assert trade.amount == 500
    attempt = decision.attempts.get()
    assert attempt.raw_response == body  # stored like a model response, raw body and all
    assert attempt.responder == Decision.Responder.OUTSIDE
    assert attempt.valid
    agent.refresh_from_db()
    assert agent.cash == 9500


def test_a_malformed_submission_gets_the_error_and_may_be_resubmitted_once(
    week: Cohort, team: BenchmarkModel
) -> None:
    agent = outside_agent(week, team)
    first = outside_decision_submit(agent=agent, body='{"action": "BUY"}', now=IN_WINDOW)
    assert not first.valid
    assert "action" in first.error
    assert first.resubmissions_left == 1
    assert first.decision.status == Decision.Status.AWAITING
    second = outside_decision_submit(agent=agent, body=a_bet(week), now=IN_WINDOW)
    assert second.valid
    assert second.decision.status == Decision.Status.DONE
    assert [a.valid for a in second.decision.attempts.order_by("number")] == [False, True]
    # The resubmission was asked with the retry section a model gets: the error is in it.
    assert (
        first.error in second.decision.attempts.order_by("number")[1].request_messages[1]["content"]
    )


def test_malformed_twice_is_a_hold_marked_as_a_parse_failure(
    week: Cohort, team: BenchmarkModel
) -> None:
    agent = outside_agent(week, team)
    outside_decision_submit(agent=agent, body="not json", now=IN_WINDOW)
    taken = outside_decision_submit(agent=agent, body="still not json", now=IN_WINDOW)
    assert not taken.valid
    assert taken.resubmissions_left == 0
    decision = taken.decision
    assert (decision.status, decision.action, decision.parse_failed) == ("done", "HOLD", True)
    assert not decision.trades.exists()


def test_no_submission_by_the_windows_close_is_a_hold_marked_no_submission(
    week: Cohort, team: BenchmarkModel
) -> None:
    assert outside_decisions_close(now=WINDOW_CLOSES - timedelta(seconds=1)) == []
    closed = outside_decisions_close(now=WINDOW_CLOSES)
    decision = Decision.objects.get(agent__model=team)
    assert closed == [decision.pk]
    assert (decision.status, decision.action) == ("done", "HOLD")
    assert decision.no_submission
    assert not decision.parse_failed
    assert "no submission" in decision.error
    assert outside_decisions_close(now=WINDOW_CLOSES + timedelta(hours=1)) == []


def test_one_malformed_submission_never_resubmitted_closes_as_a_parse_failure(
    week: Cohort, team: BenchmarkModel
) -> None:
    outside_decision_submit(agent=outside_agent(week, team), body="{", now=IN_WINDOW)
    outside_decisions_close(now=WINDOW_CLOSES)
    decision = Decision.objects.get(agent__model=team)
    assert (decision.action, decision.parse_failed, decision.no_submission) == ("HOLD", True, False)


def test_an_awaiting_outside_decision_keeps_the_cohort_from_completing_until_closed(
    week: Cohort, team: BenchmarkModel
) -> None:
    # The lineup's positions settled (refunded): only the awaiting decision holds it open.
    Position.objects.filter(agent__cohort=week).update(
        status=Position.Status.CLOSED, shares=0, closed_at=IN_WINDOW
    )
    assert week not in cohorts_completable()
    outside_decisions_close(now=WINDOW_CLOSES)
    assert week in cohorts_completable()


def test_an_outside_agents_open_position_does_not_keep_the_cohort_alive_but_is_marked(
    week: Cohort, team: BenchmarkModel
) -> None:
    """Like a baseline's: an outside team's long-dated bet must not keep the lineup deciding
    for more weeks; its position stays open, marked every tick, until it settles."""
    agent = outside_agent(week, team)
    assert outside_decision_submit(agent=agent, body=a_bet(week), now=IN_WINDOW).valid
    Position.objects.filter(agent__cohort=week).exclude(agent=agent).update(
        status=Position.Status.CLOSED, shares=0, closed_at=IN_WINDOW
    )
    assert agent.positions.filter(status=Position.Status.OPEN).count() == 1
    assert week in cohorts_completable()
    Cohort.objects.filter(pk=week.pk).update(
        status=Cohort.Status.COMPLETED, completed_at=WINDOW_CLOSES
    )
    assert list(agents_to_mark().filter(cohort=week)) == [agent]


def test_a_missing_submission_is_not_counted_as_an_answer(
    week: Cohort, team: BenchmarkModel
) -> None:
    outside_decisions_close(now=WINDOW_CLOSES)
    agent = outside_agent(week, team)
    usage = usage_by_key({agent.pk: "team"})["team"]
    assert (usage.valid_answers, usage.holds, usage.hold_share) == (0, 0, None)


def test_a_bet_that_executed_nothing_reopened_after_the_window_closes_as_a_hold_not_missing(
    week: Cohort, team: BenchmarkModel
) -> None:
    """The retry run after 01:00 cannot wait for an answer: it closes the decision at once,
    and the agent did submit, so the week is not "no submission"; staff cannot retry it."""
    agent = outside_agent(week, team)
    taken = outside_decision_submit(agent=agent, body=a_bet(week, amount=10), now=IN_WINDOW)
    assert taken.decision.status == Decision.Status.RETRYABLE
    decisions_run_all(now=WINDOW_CLOSES + timedelta(minutes=35), source=RecordedSource())
    decision = Decision.objects.get(agent=agent)
    assert (decision.status, decision.action) == ("done", "HOLD")
    assert (decision.no_submission, decision.parse_failed) == (False, False)
    assert "no order of the week's submission executed" in decision.error
    Decision.objects.filter(pk=decision.pk).update(status=Decision.Status.RETRYABLE)
    with pytest.raises(DecisionNotRetryable, match="window has closed"):
        decision_retry(decision_id=decision.pk, source=RecordedSource())


@pytest.mark.parametrize(
    "now",
    [
        datetime(2026, 3, 8, 0, 4, 59, tzinfo=UTC),  # before the window opens
        WINDOW_CLOSES,  # the window closes at 01:00 sharp
        datetime(2026, 3, 10, 12, 0, tzinfo=UTC),  # mid-week
    ],
)
def test_a_submission_outside_the_window_is_refused(
    week: Cohort, team: BenchmarkModel, now: datetime
) -> None:
    with pytest.raises(OutsideRefused) as refused:
        outside_decision_submit(agent=outside_agent(week, team), body=a_bet(week), now=now)
    assert (refused.value.status, refused.value.code) == (409, "outside_window")
    assert not Decision.objects.get(agent__model=team).attempts.exists()


def test_a_second_final_submission_is_refused(week: Cohort, team: BenchmarkModel) -> None:
    agent = outside_agent(week, team)
    outside_decision_submit(agent=agent, body=a_bet(week), now=IN_WINDOW)
    with pytest.raises(OutsideRefused) as refused:
        outside_decision_submit(agent=agent, body=a_bet(week, 100), now=IN_WINDOW)
    assert (refused.value.status, refused.value.code) == (409, "already_decided")
    assert Decision.objects.get(agent=agent).trades.count() == 1


def test_the_window_is_a_setting(week: Cohort, team: BenchmarkModel, settings: Any) -> None:
    settings.OUTSIDE_WINDOW_CLOSES_MINUTES = 15
    with pytest.raises(OutsideRefused):
        outside_decision_submit(agent=outside_agent(week, team), body=a_bet(week), now=IN_WINDOW)


def test_the_demo_outside_team_keeps_to_a_short_window(settings: Any) -> None:
    """The demo's team submits ten minutes into its window, or halfway through what is left
    of a shorter one, so `make run` works whatever the window's settings."""
    settings.OUTSIDE_WINDOW_OPENS_MINUTES, settings.OUTSIDE_WINDOW_CLOSES_MINUTES = 5, 9
    demo_outside_team()
    cohort_start(week_start=WEEK, now=COHORT_AT)
    decisions_run_all(now=RUN_AT, source=RecordedSource())
    _demo_outside_week(run_at=RUN_AT)
    decision = Decision.objects.get(agent__model__internal_id=DEMO_OUTSIDE_TEAM)
    assert decision.status in Decision.DECIDED
    assert not decision.no_submission
    first = decision.attempts.order_by("number").first()
    assert first is not None
    assert first.started_at == datetime(2026, 3, 8, 0, 7, tzinfo=UTC)


# ---------------------------------------------------------------------------------- tokens


def test_a_token_is_stored_hashed_and_shown_once(team: BenchmarkModel) -> None:
    row, token = outside_token_issue(model=team, actor_id=None)
    assert token.startswith(f"fa_{row.prefix}_")
    assert token not in (row.digest, row.prefix)
    stored = OutsideAgentToken.objects.filter(pk=row.pk).values()[0]
    assert not any(token in str(value) for value in stored.values())
    assert outside_token_authenticate(token=token) == row


def test_only_an_outside_agent_gets_a_token() -> None:
    lineup = BenchmarkModel.objects.filter(kind="llm").first()
    assert lineup is not None
    with pytest.raises(ValueError, match="not an outside agent"):
        outside_token_issue(model=lineup, actor_id=None)


@pytest.mark.parametrize(
    ("spoil", "code"),
    [
        (lambda row, token: token[:-1] + ("A" if token[-1] != "A" else "B"), "invalid_token"),
        (lambda row, token: "Bearer nonsense", "invalid_token"),
        (lambda row, token: (outside_token_revoke(token_id=row.pk), token)[1], "token_revoked"),
        (
            lambda row, token: (
                OutsideAgentToken.objects.filter(pk=row.pk).update(
                    expires_at=datetime(2020, 1, 1, tzinfo=UTC)
                ),
                token,
            )[1],
            "token_expired",
        ),
    ],
    ids=["wrong secret", "not a token", "revoked", "expired"],
)
def test_a_bad_token_is_refused(team: BenchmarkModel, spoil: Any, code: str) -> None:
    row, token = outside_token_issue(model=team, actor_id=None)
    with pytest.raises(OutsideRefused) as refused:
        outside_token_authenticate(token=spoil(row, token))
    assert (refused.value.status, refused.value.code) == (401, code)


# ------------------------------------------------------------------------------- the boards


def test_an_outside_agent_is_on_its_own_board_until_admitted(
    week: Cohort, team: BenchmarkModel
) -> None:
    llms, _ = standings.leaderboard()
    assert team not in [row.model for row in llms]
    assert [row.model for row in standings.outside_board()] == [team]
    assert outside_admission_set(model_id=team.pk, admitted=True)
    llms, _ = standings.leaderboard()
    assert team in [row.model for row in llms]
    assert standings.outside_board() == []


def test_only_an_outside_agent_can_be_admitted(week: Cohort) -> None:
    lineup = BenchmarkModel.objects.filter(kind="baseline").first()
    assert lineup is not None
    assert not outside_admission_set(model_id=lineup.pk, admitted=True)


def test_refusals_name_the_token_by_prefix_only(week: Cohort, team: BenchmarkModel) -> None:
    from arena.services.outside import outside_refusal_record

    row, token = outside_token_issue(model=team, actor_id=None)
    refusal = OutsideRefused(409, "outside_window", "closed")
    outside_refusal_record(refusal=refusal, method="POST", path="/x", token=row)
    event = SystemEvent.objects.get(kind="outside_refused")
    assert event.data["token_prefix"] == row.prefix
    assert token not in json.dumps(event.data) + event.message


def test_a_week_two_decision_is_opened_for_the_outside_agent_too(
    week: Cohort, team: BenchmarkModel
) -> None:
    outside_decisions_close(now=WINDOW_CLOSES)
    decisions_run_all(now=RUN_AT + timedelta(days=7), source=RecordedSource())
    agent = outside_agent(week, team)
    week_two = Decision.objects.get(agent=agent, week_start=date(2026, 3, 15))
    assert week_two.status == Decision.Status.AWAITING
    taken = outside_decision_submit(
        agent=agent, body=a_bet(week), now=IN_WINDOW + timedelta(days=7)
    )
    assert taken.valid
    # The week-two cohort has an agent of its own for the outside team, awaiting as well.
    second = Cohort.objects.get(week_start=date(2026, 3, 15))
    newcomer = outside_agent(second, team)
    assert newcomer.cash == 10_000
    assert Decision.objects.get(agent=newcomer).status == Decision.Status.AWAITING


# ------------------------------------------------------------------------------ the pages


def board_sections(html: str) -> tuple[str, str]:
    """The leaderboard page's main table, and what follows it (the other boards)."""
    main, _, rest = html.partition("<h2>Outside agents")
    return main, rest


def test_the_leaderboard_page_ranks_an_outside_agent_on_its_own_board_labelled(
    week: Cohort, team: BenchmarkModel, client: Any
) -> None:
    html = client.get("/").content.decode()
    main, outside = board_sections(html)
    assert team.display_name not in main
    assert team.display_name in outside
    assert '<span class="badge outside">outside</span>' in outside


def test_an_admitted_outside_agent_is_on_the_main_board_which_says_so(
    week: Cohort, team: BenchmarkModel, client: Any
) -> None:
    outside_admission_set(model_id=team.pk, admitted=True)
    html = client.get("/").content.decode()
    main, rest = board_sections(html)
    assert not rest  # no outside board: its one agent is on the main one
    row = main[main.index(team.display_name) :][:400]
    assert "outside · admitted" in row


def test_the_analytics_view_shows_the_outside_board_too(
    week: Cohort, team: BenchmarkModel, client: Any
) -> None:
    html = client.get("/?view=analytics").content.decode()
    main, outside = board_sections(html)
    assert team.display_name not in main
    assert team.display_name in outside


def test_the_cohort_page_labels_the_outside_agent(
    week: Cohort, team: BenchmarkModel, client: Any
) -> None:
    html = client.get(f"/cohorts/{week.number}/").content.decode()
    at = html.index(team.display_name)
    assert 'class="badge outside"' in html[at : at + 300]


def test_the_about_page_explains_how_to_take_part(db: None, client: Any) -> None:
    html = client.get("/about/").content.decode()
    section = html[html.index('id="outside-agents"') :]
    for words in (
        "Register with staff",
        "Bearer",
        "00:05 to 01:00 UTC",
        "resubmitted",
        "no submission",
    ):
        assert words in section, words


# ------------------------------------------------------------------- racing submissions


on_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="two connections racing need PostgreSQL"
)


@on_postgresql
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_two_racing_submissions_make_one_decision() -> None:
    """Two submissions at once (two connections): one claims the awaiting decision, the
    other is refused; one attempt is stored and one trade executed."""
    team = outside_model()
    cohort, _ = cohort_start(week_start=WEEK, now=COHORT_AT)
    decisions_run_all(now=RUN_AT, source=RecordedSource())
    agent = outside_agent(cohort, team)
    body = a_bet(cohort)
    barrier = threading.Barrier(2)
    results: list[str] = []

    def submit() -> None:
        try:
            barrier.wait(timeout=10)
            taken = outside_decision_submit(
                agent=Agent.objects.select_related("cohort", "model").get(pk=agent.pk),
                body=body,
                now=IN_WINDOW,
            )
            results.append("valid" if taken.valid else "invalid")
        except OutsideRefused as refusal:
            results.append(refusal.code)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=submit) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(results) in (["not_open", "valid"], ["already_decided", "valid"])
    decision = Decision.objects.get(agent=agent)
    assert decision.attempts.count() == 1
    assert decision.trades.count() == 1


def test_a_bet_of_which_nothing_executed_is_reopened_by_the_next_run_on_a_fresh_snapshot(
    week: Cohort, team: BenchmarkModel
) -> None:
    """As a model's (002): a BET none of whose orders executed is retryable; the next run of
    the week opens a new prompt, and the agent submits again in the window."""
    agent = outside_agent(week, team)
    taken = outside_decision_submit(agent=agent, body=a_bet(week, amount=10), now=IN_WINDOW)
    assert taken.valid
    assert taken.decision.status == Decision.Status.RETRYABLE
    assert taken.decision.trades.get().status == "rejected"
    decisions_run_all(now=RUN_AT + timedelta(minutes=30), source=RecordedSource())
    reopened = Decision.objects.get(agent=agent)
    assert reopened.status == Decision.Status.AWAITING
    assert reopened.run_id != taken.decision.run_id
    again = outside_decision_submit(
        agent=agent, body=a_bet(week), now=IN_WINDOW + timedelta(minutes=20)
    )
    assert again.decision.status == Decision.Status.DONE
    assert again.decision.trades.filter(status="executed").count() == 1


def test_the_model_page_says_who_entered_the_outside_agent_and_how(
    week: Cohort, team: BenchmarkModel, client: Any
) -> None:
    html = client.get(f"/models/{team.internal_id}/").content.decode()
    assert 'class="badge outside"' in html
    assert team.owner in html
    assert team.method_description in html
    assert "ranked on the outside agents' own board" in html
