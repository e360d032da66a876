"""Retries are bounded (002 "Retryable failures"; docs/engine.md "Claim, reclaim, retry"): a
decision of which nothing executed is asked again by the hourly retry run, but at most
DECISION_MAX_ROUNDS rounds in all and never after DECISION_RETRY_DEADLINE_HOURS into its week;
then it closes as a HOLD with the reason recorded. An agent whose maximum bet is under the $50
minimum (cash under $200, not bankrupt) is told that no bet can execute, and a BET of its is
closed at once, never asked again.

Everything goes the real way: the prompt is rendered and sent to a local server standing in
for OpenRouter, its answer is parsed and executed; the retries are the hourly retry run's own
steps (`run_open(retry=True)`, one `decision_run` per agent, `run_finish`), in weeks 1 to 3 of
a cohort."""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from agents.models import BenchmarkModel
from arena.exceptions import DecisionNotRetryable
from arena.models import Agent, Cohort, Decision, DecisionRun, SystemEvent, Trade
from arena.services.cohorts import cohort_start
from arena.services.decisions.run import (
    decision_retry,
    decision_run,
    decisions_run_all,
    run_finish,
    run_open,
)
from markets.sources import RecordedSource
from tests.arena.conftest import WEEK
from tests.replay import OPENROUTER_RECORDINGS, ReplayServer, Reply, Request

pytestmark = pytest.mark.django_db

COMPLETIONS = "/chat/completions"
OK_RECORDING = OPENROUTER_RECORDINGS / "chat_completion_ok_json_content_with_reasoning.json"
CREDITS_402 = OPENROUTER_RECORDINGS / "error_402_insufficient_credits.json"
STUCK_MODEL = "gpt-5.1"
HOLD = json.dumps({"action": "HOLD", "reasoning": "Nothing is mispriced enough this week."})
# The first market line of a prompt: "id|question|volume|close date|price".
MARKET_LINE = re.compile(r"^(\d+)\|", re.M)


def sunday(week: int) -> date:
    """The Sunday of the cohort's `week` (1 = its first week)."""
    return WEEK + timedelta(weeks=week - 1)


def at(week: int, *, days: int = 0, hours: int = 0, minutes: int = 5) -> datetime:
    """A moment of the cohort's `week`: by default 00:05 UTC on its Sunday (the scheduled run)."""
    day = sunday(week)
    opens = datetime(day.year, day.month, day.day, tzinfo=UTC)
    return opens + timedelta(days=days, hours=hours, minutes=minutes)


def completion(content: str) -> bytes:
    """The real recorded completion with only message.content replaced."""
    body = json.loads(OK_RECORDING.read_text())
    body["choices"][0]["message"]["content"] = content
    return json.dumps(body).encode()


def bet_on_first_market(request: Request, amount: str) -> Reply:
    """A BET of `amount` on the first market the prompt lists: it parses, and execution
    decides its fate."""
    user = request.json()["messages"][-1]["content"]
    match = MARKET_LINE.search(user)
    assert match, "the prompt lists no market"
    bets = [{"market_id": match.group(1), "side": "YES", "amount": amount}]
    return Reply(
        body=completion(json.dumps({"action": "BET", "bets": bets, "reasoning": "Cheap."}))
    )


@pytest.fixture(autouse=True)
def _small_universe(settings: Any) -> None:
    settings.MARKET_UNIVERSE_SIZE = 40  # prompts stay small; the rules do not change


@pytest.fixture
def cohort(db: None) -> Cohort:
    cohort, created = cohort_start(week_start=WEEK, now=at(1, minutes=0))
    assert created
    return cohort


@pytest.fixture
def stuck(cohort: Cohort) -> Agent:
    return cohort.agents.select_related("model").get(model__internal_id=STUCK_MODEL)


@pytest.fixture
def bet_amount() -> dict[str, str]:
    """What the stuck model bets each time it is asked; every other model HOLDs."""
    return {"amount": "10"}  # under the $50 minimum: rejected, so nothing executes


@pytest.fixture
def server(
    openrouter_server: ReplayServer, cohort: Cohort, bet_amount: dict[str, str]
) -> ReplayServer:
    """OpenRouter's stand-in: the stuck model bets `bet_amount` on the first market listed
    for its agent of `cohort` (nothing when it is "0"); every other agent HOLDs, those of the
    cohorts started in later weeks included."""
    stuck_model = BenchmarkModel.objects.get(internal_id=STUCK_MODEL).openrouter_id
    stuck_cohort = f", cohort {cohort.number}.\n"

    def handler(request: Request) -> Reply:
        body = request.json()
        if (
            body["model"] == stuck_model
            and stuck_cohort in body["messages"][-1]["content"]
            and bet_amount["amount"] != "0"
        ):
            return bet_on_first_market(request, bet_amount["amount"])
        return Reply(body=completion(HOLD))

    openrouter_server.route("POST", COMPLETIONS, handler)
    return openrouter_server


def requests_of(server: ReplayServer, agent: Agent) -> list[Request]:
    """The requests that asked the agent's model for this agent's decision (each week a new
    cohort starts, with an agent of the same model)."""
    mine = f", cohort {agent.cohort.number}.\n"
    return [
        r
        for r in server.requests_to(COMPLETIONS)
        if r.json()["model"] == agent.model.openrouter_id
        and mine in r.json()["messages"][-1]["content"]
    ]


def prompts_to(server: ReplayServer, agent: Agent) -> int:
    """How many times the agent's model was asked for its decisions."""
    return len(requests_of(server, agent))


def weeks_before(week: int, bet_amount: dict[str, str]) -> None:
    """Run every week of the cohort before `week`, everyone holding."""
    amount = bet_amount["amount"]
    bet_amount["amount"] = "0"
    for earlier in range(1, week):
        assert decisions_run_all(now=at(earlier), source=RecordedSource()).run_id is not None
    bet_amount["amount"] = amount


def hourly_retry(now: datetime) -> DecisionRun | None:
    """The hourly retry run's steps (arena.retry_decisions), in this process: open a run for
    what is due, run each agent's decision, finish the run."""
    run, agent_ids = run_open(now=now, retry=True, source=RecordedSource())
    if run is None:
        return None
    for agent_id in agent_ids:
        decision_run(agent_id=agent_id, run_id=run.pk, now=now)
    run_finish(run_id=run.pk)
    return run


def decision_of(agent: Agent, week: int) -> Decision:
    return Decision.objects.get(agent=agent, week_start=sunday(week))


WEEKS = [1, 2, 3]


@pytest.mark.parametrize("week", WEEKS)
def test_a_bet_that_never_executes_is_asked_at_most_the_round_cap_then_closes_as_a_hold(
    cohort: Cohort,
    stuck: Agent,
    server: ReplayServer,
    bet_amount: dict[str, str],
    settings: Any,
    week: int,
) -> None:
    weeks_before(week, bet_amount)
    asked_before = prompts_to(server, stuck)
    rounds = settings.DECISION_MAX_ROUNDS
    assert rounds == 3  # the stated default

    decisions_run_all(now=at(week), source=RecordedSource())
    for hour in range(6):  # the retry run at :35 of every hour of the morning
        hourly_retry(at(week, hours=hour, minutes=35))

    assert prompts_to(server, stuck) - asked_before == rounds
    decision = decision_of(stuck, week)
    assert decision.status == Decision.Status.SKIPPED
    assert decision.action == Decision.Action.HOLD
    assert decision.tries == rounds
    assert "under the $50 minimum" in decision.error  # why its last round failed
    assert f"closed as a HOLD: not asked again after {rounds} rounds" in decision.error
    trades = Trade.objects.filter(decision=decision)
    assert set(trades.values_list("status", flat=True)) == {Trade.Status.REJECTED}
    assert set(trades.values_list("try_number", flat=True)) == set(range(1, rounds + 1))
    assert SystemEvent.objects.filter(
        kind=SystemEvent.Kind.DECISION_FAILED, decision=decision, message__contains="HOLD"
    ).exists()
    assert Agent.objects.get(pk=stuck.pk).cash == Decimal("10000.00")
    # Nobody owes anything now: a retry run freezes no snapshot and asks no one.
    runs = DecisionRun.objects.count()
    assert hourly_retry(at(week, hours=7, minutes=35)) is None
    assert DecisionRun.objects.count() == runs


@pytest.mark.parametrize("week", [1, 3])
def test_a_model_call_that_keeps_failing_is_asked_at_most_the_round_cap_too(
    cohort: Cohort,
    stuck: Agent,
    server: ReplayServer,
    bet_amount: dict[str, str],
    settings: Any,
    week: int,
) -> None:
    weeks_before(week, bet_amount)
    out_of_credits = Reply(status=402, body=CREDITS_402.read_bytes())
    server.route("POST", COMPLETIONS, out_of_credits)  # every model, every call
    asked_before = prompts_to(server, stuck)

    decisions_run_all(now=at(week), source=RecordedSource())
    for hour in range(4):
        hourly_retry(at(week, hours=hour, minutes=35))

    assert prompts_to(server, stuck) - asked_before == settings.DECISION_MAX_ROUNDS
    decision = decision_of(stuck, week)
    assert (decision.status, decision.action) == (Decision.Status.SKIPPED, "HOLD")
    assert "model call failed" in decision.error
    assert "Insufficient credits" in decision.error
    assert "closed as a HOLD: not asked again after 3 rounds" in decision.error
    assert decision.attempts.count() == 3
    assert all(a.api_error for a in decision.attempts.all())


@pytest.mark.parametrize("week", WEEKS)
def test_a_retryable_decision_is_not_asked_again_after_the_weeks_retry_deadline(
    cohort: Cohort,
    stuck: Agent,
    server: ReplayServer,
    bet_amount: dict[str, str],
    settings: Any,
    week: int,
) -> None:
    assert settings.DECISION_RETRY_DEADLINE_HOURS == 24  # the stated default: Sunday's end
    settings.DECISION_MAX_ROUNDS = 100  # only the deadline bounds this decision
    weeks_before(week, bet_amount)
    asked_before = prompts_to(server, stuck)
    decisions_run_all(now=at(week), source=RecordedSource())
    last_chance = hourly_retry(at(week, hours=23, minutes=35))  # Sunday 23:35: still retried
    assert last_chance is not None
    assert decision_of(stuck, week).status == Decision.Status.RETRYABLE
    runs = DecisionRun.objects.count()

    monday = hourly_retry(at(week, days=1, minutes=35))
    thursday = hourly_retry(at(week, days=4, hours=12, minutes=35))

    assert (monday, thursday) == (None, None)
    assert DecisionRun.objects.count() == runs  # no snapshot frozen for it
    assert prompts_to(server, stuck) - asked_before == 2
    decision = decision_of(stuck, week)
    assert decision.status == Decision.Status.SKIPPED
    assert decision.action == Decision.Action.HOLD
    assert decision.tries == 2
    assert "retry deadline" in decision.error
    assert decision.run_id == last_chance.pk  # its last round stays what it shows
    assert not Trade.objects.filter(decision=decision, status=Trade.Status.EXECUTED).exists()


def test_staff_cannot_retry_a_decision_past_its_retry_deadline(
    cohort: Cohort, stuck: Agent, server: ReplayServer, time_machine: Any
) -> None:
    decisions_run_all(now=at(1), source=RecordedSource())
    decision = decision_of(stuck, 1)
    assert decision.status == Decision.Status.RETRYABLE
    time_machine.move_to(at(1, days=2), tick=False)

    with pytest.raises(DecisionNotRetryable, match="retry deadline"):
        decision_retry(decision_id=decision.pk, source=RecordedSource())

    assert prompts_to(server, stuck) == 1


@pytest.mark.parametrize("week", WEEKS)
def test_an_agent_whose_maximum_bet_is_under_the_minimum_is_told_and_its_bet_is_not_retried(
    cohort: Cohort,
    stuck: Agent,
    server: ReplayServer,
    bet_amount: dict[str, str],
    week: int,
) -> None:
    """$150 of cash and no position: not bankrupt (that is under $50), but 25% of it is
    $37.50, so no bet of its can execute. The prompt says so; a BET it still gives is closed
    as a HOLD at once, and the hourly retry does not ask it again."""
    weeks_before(week, bet_amount)
    Agent.objects.filter(pk=stuck.pk).update(cash=Decimal("150.00"))
    bet_amount["amount"] = "37.50"
    asked_before = prompts_to(server, stuck)

    decisions_run_all(now=at(week), source=RecordedSource())
    retries = [hourly_retry(at(week, hours=hour, minutes=35)) for hour in range(3)]

    [request] = requests_of(server, stuck)[asked_before:]
    decision = decision_of(stuck, week)
    assert "$37.50" in decision.user_prompt
    assert "no bet can execute" in decision.user_prompt
    assert "SELL or HOLD" in decision.user_prompt
    assert request.json()["messages"][-1]["content"] == decision.user_prompt
    assert decision.status == Decision.Status.SKIPPED
    assert decision.action == Decision.Action.HOLD
    assert decision.tries == 1
    assert "no bet can execute" in decision.error
    assert decision.parsed is not None
    assert decision.parsed["action"] == "BET"  # its answer is kept as given
    [trade] = Trade.objects.filter(decision=decision)
    assert trade.status == Trade.Status.REJECTED
    assert "under the $50 minimum" in trade.reject_reason
    assert retries == [None, None, None]
    stuck.refresh_from_db()
    assert (stuck.cash, stuck.status) == (Decimal("150.00"), Agent.Status.ACTIVE)


def test_an_agent_with_room_for_a_minimum_bet_is_shown_no_such_warning(
    cohort: Cohort, stuck: Agent, server: ReplayServer
) -> None:
    Agent.objects.filter(pk=stuck.pk).update(cash=Decimal("200.00"))  # 25% is exactly $50

    decisions_run_all(now=at(1), source=RecordedSource())

    decision = decision_of(stuck, 1)
    assert "$50.00" in decision.user_prompt
    assert "no bet can execute" not in decision.user_prompt
