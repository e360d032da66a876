"""Engine integrity (002 "Decision claiming", "Retryable failures"): every agent decides
exactly once a week whatever fails — one agent's failure never stops another's, retries and
reclaims work in every week of a cohort, a reclaim after a crash never executes an order
twice, and a late cohort start still gets its first decision.

OpenRouter is a local replay server answering from the real recorded completion; each test
decides per model what it answers."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from agents.models import BenchmarkModel
from agents.parsing import parse_decision
from agents.types import BetOrder, ParsedDecision
from arena.exceptions import DecisionNotRetryable
from arena.models import (
    STARTING_BALANCE,
    Agent,
    Cohort,
    Decision,
    DecisionAttempt,
    DecisionRun,
    Position,
    SystemEvent,
    Trade,
)
from arena.services.cohorts import cohort_start
from arena.services.decisions import (
    CLAIM_TTL,
    decision_claim,
    decision_retry,
    decision_run,
    decisions_run_all,
    parsed_json,
)
from arena.services.frozen import FrozenMarkets, run_prepare
from arena.services.trades import trade_buy
from markets.sources import RecordedSource
from tests.arena.conftest import WEEK
from tests.replay import OPENROUTER_RECORDINGS, ReplayServer, Reply, Request

pytestmark = pytest.mark.django_db

COMPLETIONS = "/chat/completions"
OK_RECORDING = OPENROUTER_RECORDINGS / "chat_completion_ok_json_content_with_reasoning.json"
CREDITS_402 = OPENROUTER_RECORDINGS / "error_402_insufficient_credits.json"
FAILING_MODEL = "gpt-5.1"
HOLD = json.dumps({"action": "HOLD", "reasoning": "Nothing is mispriced enough this week."})


def sunday(week: int) -> date:
    """The Sunday of the cohort's `week` (1 = its first week)."""
    return WEEK + timedelta(weeks=week - 1)


def run_time(week: int, *, hours: int = 0) -> datetime:
    """00:05 UTC on the Sunday of `week` (the scheduled decision run), plus `hours`."""
    day = sunday(week)
    return datetime(day.year, day.month, day.day, 0, 5, tzinfo=UTC) + timedelta(hours=hours)


def completion(content: str, **usage: Any) -> bytes:
    """The real recorded completion with only message.content (and usage fields) replaced."""
    body = json.loads(OK_RECORDING.read_text())
    body["choices"][0]["message"]["content"] = content
    body["usage"].update(usage)
    return json.dumps(body).encode()


@pytest.fixture(autouse=True)
def _small_universe(settings: Any) -> None:
    settings.MARKET_UNIVERSE_SIZE = 40  # prompts stay small; the rules do not change


@pytest.fixture
def answers(openrouter_server: ReplayServer) -> dict[str, list[Reply]]:
    """What OpenRouter answers, per OpenRouter model id: replies in turn (the last repeats);
    a model without an entry HOLDs."""
    plan: dict[str, list[Reply]] = {}

    def handler(request: Request) -> Reply:
        replies = plan.get(request.json()["model"])
        if not replies:
            return Reply(body=completion(HOLD))
        return replies.pop(0) if len(replies) > 1 else replies[0]

    openrouter_server.route("POST", COMPLETIONS, handler)
    return plan


def model_id(internal_id: str) -> str:
    return BenchmarkModel.objects.get(internal_id=internal_id).openrouter_id


def failing_first(answers: dict[str, list[Reply]]) -> None:
    """The failing model is out of credits on its first call, then HOLDs."""
    answers[model_id(FAILING_MODEL)] = [
        Reply(status=402, body=CREDITS_402.read_bytes()),
        Reply(body=completion(HOLD)),
    ]


def decision_of(agent: Agent, week: int) -> Decision:
    return Decision.objects.get(agent=agent, week_start=sunday(week))


def weeks_before(week: int) -> None:
    """Run every week of the cohort before `week`, everyone deciding."""
    for earlier in range(1, week):
        report = decisions_run_all(now=run_time(earlier), source=RecordedSource())
        assert report.run_id is not None


@pytest.fixture
def cohort(db: None) -> Cohort:
    cohort, created = cohort_start(week_start=WEEK, now=run_time(1) - timedelta(minutes=5))
    assert created
    return cohort


def agent_of(cohort: Cohort, internal_id: str = FAILING_MODEL) -> Agent:
    return cohort.agents.select_related("model").get(model__internal_id=internal_id)


# ------------------------------------------------------------------ reruns in every week


@pytest.mark.parametrize("week", [1, 3])
def test_a_retryable_decision_is_retried_by_the_next_run_of_the_week(
    cohort: Cohort, answers: dict[str, list[Reply]], week: int
) -> None:
    weeks_before(week)
    failing_first(answers)
    agent = agent_of(cohort)

    decisions_run_all(now=run_time(week), source=RecordedSource())
    assert decision_of(agent, week).status == Decision.Status.RETRYABLE

    rerun = decisions_run_all(now=run_time(week, hours=1), source=RecordedSource())

    assert rerun.run_id is not None
    decision = decision_of(agent, week)
    assert decision.status == Decision.Status.DONE
    assert decision.tries == 2
    assert decision.run_id == rerun.run_id
    assert [o.decision_id for o in rerun.outcomes] == [decision.pk]  # nobody else re-decides
    assert SystemEvent.objects.filter(
        kind=SystemEvent.Kind.DECISION_RETRIED, decision=decision
    ).exists()


@pytest.mark.parametrize("week", [1, 3])
def test_a_running_decision_left_by_a_dead_worker_is_reclaimed_by_the_next_run(
    cohort: Cohort, answers: dict[str, list[Reply]], week: int
) -> None:
    weeks_before(week)
    agent = agent_of(cohort)
    # A worker claimed this week's decision at 00:05 and died before the model answered.
    dead = decision_claim(agent=agent, week_start=sunday(week), now=run_time(week))
    assert dead is not None

    too_soon = decisions_run_all(now=run_time(week) + CLAIM_TTL / 2, source=RecordedSource())
    assert agent.pk not in {
        Decision.objects.get(pk=o.decision_id).agent_id for o in too_soon.outcomes if o.decision_id
    }  # a live claim is left alone
    assert decision_of(agent, week).status == Decision.Status.RUNNING

    later = decisions_run_all(now=run_time(week, hours=1), source=RecordedSource())

    decision = decision_of(agent, week)
    assert decision.pk == dead.pk
    assert decision.status == Decision.Status.DONE
    assert decision.tries == 2
    assert decision.run_id == later.run_id
    event = SystemEvent.objects.get(kind=SystemEvent.Kind.DECISION_RECLAIMED)
    assert event.decision_id == decision.pk
    assert event.level == SystemEvent.Level.WARNING


@pytest.mark.parametrize("week", [1, 3])
def test_retry_decision_reclaims_a_dead_claim_but_refuses_a_live_one(
    cohort: Cohort, answers: dict[str, list[Reply]], week: int, time_machine: Any
) -> None:
    weeks_before(week)
    agent = agent_of(cohort)
    time_machine.move_to(run_time(week), tick=False)
    claimed = decision_claim(agent=agent, week_start=sunday(week), now=run_time(week))
    assert claimed is not None

    with pytest.raises(DecisionNotRetryable, match="live claim"):
        decision_retry(decision_id=claimed.pk, source=RecordedSource())

    time_machine.move_to(run_time(week, hours=1), tick=False)
    outcome = decision_retry(decision_id=claimed.pk, source=RecordedSource())

    assert outcome.status == Decision.Status.DONE
    assert decision_of(agent, week).tries == 2


# ------------------------------------------------------- a reclaim resumes, never redoes


def test_a_reclaimed_decision_resumes_its_stored_answer_and_executes_each_order_once(
    cohort: Cohort, answers: dict[str, list[Reply]], openrouter_server: ReplayServer
) -> None:
    run = run_prepare(now=run_time(1), source=RecordedSource())
    frozen = FrozenMarkets.load(run)
    first, second = [
        view
        for view in frozen.universe
        if view.is_binary
        and view.yes_price
        and Decimal("0.001") < view.yes_price < Decimal("0.999")
    ][:2]
    agent = agent_of(cohort)
    answer = ParsedDecision(
        action="BET",
        reasoning="Two underpriced favourites.",
        bets=(
            BetOrder(market_id=first.market_id, side="YES", amount=Decimal("500")),
            BetOrder(market_id=second.market_id, side="NO", amount=Decimal("300")),
        ),
    )
    # The worker stored the model's answer, executed its first order, and died.
    decision = decision_claim(agent=agent, week_start=WEEK, now=run_time(1))
    assert decision is not None
    Decision.objects.filter(pk=decision.pk).update(
        run=run, parsed=parsed_json(answer), parsed_try=decision.tries, action="BET"
    )
    decision.refresh_from_db()
    trade_buy(
        decision=decision, order=answer.bets[0], frozen=frozen, index=0, try_number=decision.tries
    )
    calls_before = len(openrouter_server.requests_to(COMPLETIONS))

    outcome = decision_run(agent_id=agent.pk, run_id=run.pk, now=run_time(1, hours=1))

    assert outcome.status == Decision.Status.DONE
    assert len(openrouter_server.requests_to(COMPLETIONS)) == calls_before  # never asked again
    trades = list(Trade.objects.filter(decision=decision).order_by("order_index"))
    assert [(t.order_index, t.status, t.try_number) for t in trades] == [
        (0, Trade.Status.EXECUTED, 1),
        (1, Trade.Status.EXECUTED, 1),
    ]
    decision.refresh_from_db()
    assert decision.parsed == parsed_json(answer)  # the stored answer explains the ledger
    agent.refresh_from_db()
    assert agent.cash == STARTING_BALANCE - Decimal("800")
    assert Position.objects.filter(agent=agent, status=Position.Status.OPEN).count() == 2

    # Delivered once more, nothing happens: the decision is final.
    again = decision_run(agent_id=agent.pk, run_id=run.pk, now=run_time(1, hours=2))
    assert again.decision_id is None
    assert Trade.objects.filter(decision=decision).count() == 2


def test_an_order_is_executed_once_even_if_two_workers_hold_the_same_claim(
    cohort: Cohort,
) -> None:
    """A worker that was only slow, not dead, may still be executing when its claim is taken
    over; the unique (decision, try, order) trade keeps an order from executing twice."""
    run = run_prepare(now=run_time(1), source=RecordedSource())
    frozen = FrozenMarkets.load(run)
    view = next(v for v in frozen.universe if v.is_binary and v.yes_price)
    agent = agent_of(cohort)
    decision = decision_claim(agent=agent, week_start=WEEK, now=run_time(1))
    assert decision is not None
    order = BetOrder(market_id=view.market_id, side="YES", amount=Decimal("100"))
    trade_buy(decision=decision, order=order, frozen=frozen, index=0, try_number=1)

    from django.db import IntegrityError

    with pytest.raises(IntegrityError):
        trade_buy(decision=decision, order=order, frozen=frozen, index=0, try_number=1)

    agent.refresh_from_db()
    assert agent.cash == STARTING_BALANCE - Decimal("100")  # the second debit rolled back
    assert Trade.objects.filter(decision=decision).count() == 1


# ------------------------------------------------------- one agent never stops the others


def test_an_unexpected_failure_in_one_decision_is_recorded_and_the_run_goes_on(
    cohort: Cohort, answers: dict[str, list[Reply]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from arena.services import decisions as decisions_module

    real_parse = parse_decision

    def parse_or_break(text: str, **kw: Any) -> ParsedDecision:
        if "BREAK THE ENGINE" in text:
            raise RuntimeError("a defect nobody foresaw")
        return real_parse(text, **kw)

    monkeypatch.setattr(decisions_module, "parse_decision", parse_or_break)
    answers[model_id(FAILING_MODEL)] = [Reply(body=completion("BREAK THE ENGINE"))]

    report = decisions_run_all(now=run_time(1), source=RecordedSource())

    agents = cohort.agents.count()
    assert len(report.outcomes) == agents
    broken = decision_of(agent_of(cohort), 1)
    assert broken.status == Decision.Status.RETRYABLE
    assert "RuntimeError: a defect nobody foresaw" in broken.error
    assert "parse_or_break" in broken.traceback
    [attempt] = DecisionAttempt.objects.filter(decision=broken)
    assert attempt.error == "RuntimeError: a defect nobody foresaw"
    assert attempt.raw_response  # what the model said is kept
    others = Decision.objects.filter(cohort=cohort).exclude(pk=broken.pk)
    assert others.count() == agents - 1
    assert set(others.values_list("status", flat=True)) <= set(Decision.DECIDED) | {
        Decision.Status.RETRYABLE
    }
    assert not Decision.objects.filter(status=Decision.Status.RUNNING).exists()
    failure = SystemEvent.objects.get(kind=SystemEvent.Kind.DECISION_FAILED)
    assert failure.decision_id == broken.pk
    assert failure.level == SystemEvent.Level.ERROR
    assert report.run_id is not None
    assert DecisionRun.objects.get(pk=report.run_id).finished_at is not None

    # The next run retries it, and it goes through.
    monkeypatch.setattr(decisions_module, "parse_decision", real_parse)
    answers[model_id(FAILING_MODEL)] = [Reply(body=completion(HOLD))]
    decisions_run_all(now=run_time(1, hours=1), source=RecordedSource())
    broken.refresh_from_db()
    assert broken.status == Decision.Status.DONE
    assert broken.error == ""


def test_an_order_that_breaks_is_recorded_as_rejected_and_the_next_order_executes(
    cohort: Cohort, answers: dict[str, list[Reply]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from arena.services import decisions as decisions_module

    run = run_prepare(now=run_time(1), source=RecordedSource())
    views = [v for v in FrozenMarkets.load(run).universe if v.is_binary and v.yes_price][:2]
    real_buy = trade_buy

    def buy_or_break(*, order: BetOrder, **kw: Any) -> Trade:
        if order.market_id == views[0].market_id:
            raise ZeroDivisionError("a defect in the first order")
        return real_buy(order=order, **kw)

    monkeypatch.setattr(decisions_module, "trade_buy", buy_or_break)
    bets = [{"market_id": v.market_id, "side": "YES", "amount": 100} for v in views]
    answer = json.dumps({"action": "BET", "bets": bets, "reasoning": "Two small bets."})
    answers[model_id(FAILING_MODEL)] = [Reply(body=completion(answer))]
    agent = agent_of(cohort)

    outcome = decision_run(agent_id=agent.pk, run_id=run.pk, now=run_time(1))

    assert outcome.status == Decision.Status.DONE
    assert outcome.decision_id is not None
    broken, executed = Trade.objects.filter(decision_id=outcome.decision_id).order_by("order_index")
    assert broken.status == Trade.Status.REJECTED
    assert broken.reject_reason == "engine error: ZeroDivisionError: a defect in the first order"
    assert executed.status == Trade.Status.EXECUTED
    agent.refresh_from_db()
    assert agent.cash == STARTING_BALANCE - Decimal("100")


# ------------------------------------------- hostile replies once fatal, now recorded


def run_one(cohort: Cohort, answers: dict[str, list[Reply]], reply: Reply) -> Decision:
    answers[model_id(FAILING_MODEL)] = [reply]
    report = decisions_run_all(now=run_time(1), source=RecordedSource())
    assert len(report.outcomes) == cohort.agents.count()  # everyone decided
    return decision_of(agent_of(cohort), 1)


def test_a_bet_of_1e30_dollars_is_a_parse_error_sent_back_not_a_crash(
    cohort: Cohort, answers: dict[str, list[Reply]]
) -> None:
    market_id = next(
        v.market_id
        for v in FrozenMarkets.load(
            run_prepare(now=run_time(1) - timedelta(minutes=1), source=RecordedSource())
        ).universe
        if v.is_binary
    )
    huge = '{"action": "BET", "bets": [{"market_id": "%s", "side": "YES", "amount": 1e30}], '
    huge += '"reasoning": "All in."}'

    decision = run_one(cohort, answers, Reply(body=completion(huge % market_id)))

    assert decision.status == Decision.Status.DONE
    assert decision.parse_failed  # asked again with the reason, then HOLD
    first = decision.attempts.order_by("number").first()
    assert first is not None
    assert "amount" in first.parse_error
    assert not Trade.objects.filter(decision=decision).exists()


def test_negative_token_counts_from_the_provider_are_stored_as_unknown(
    cohort: Cohort, answers: dict[str, list[Reply]]
) -> None:
    reply = Reply(body=completion(HOLD, prompt_tokens=-5, completion_tokens=-1))

    decision = run_one(cohort, answers, reply)

    assert decision.status == Decision.Status.DONE
    attempt = decision.attempts.get()
    assert attempt.prompt_tokens is None
    assert attempt.completion_tokens is None


def test_a_reply_holding_a_lone_surrogate_and_nul_is_stored_escaped(
    cohort: Cohort, answers: dict[str, list[Reply]]
) -> None:
    content = '{"action": "HOLD", "reasoning": "odd \\ud800 text \\u0000 here"}'

    decision = run_one(cohort, answers, Reply(body=completion(content)))

    assert decision.status == Decision.Status.DONE
    assert decision.action == "HOLD"
    assert decision.reasoning == "odd \\ud800 text \\u0000 here"
    assert decision.parsed is not None
    assert decision.parsed["reasoning"] == "odd \\ud800 text \\u0000 here"
    attempt = decision.attempts.get()
    assert "\\ud800" in attempt.raw_response


# ------------------------------------------------------------ the cohort always starts


def test_a_decision_run_starts_this_weeks_cohort_when_the_start_task_has_not_run(
    db: None, answers: dict[str, list[Reply]]
) -> None:
    assert not Cohort.objects.exists()

    report = decisions_run_all(now=run_time(1), source=RecordedSource())

    cohort = Cohort.objects.get(week_start=WEEK)
    assert report.run_id is not None
    assert len(report.outcomes) == cohort.agents.count() > 0
    assert Decision.objects.filter(cohort=cohort).count() == cohort.agents.count()
    # The start task, arriving late, finds the cohort and changes nothing.
    again, created = cohort_start(week_start=WEEK, now=run_time(1, hours=1))
    assert (again.pk, created) == (cohort.pk, False)


def test_a_run_days_into_a_week_whose_cohort_was_missed_does_not_start_it(
    db: None, answers: dict[str, list[Reply]]
) -> None:
    report = decisions_run_all(now=run_time(1, hours=30), source=RecordedSource())

    assert report.run_id is None
    assert not Cohort.objects.exists()


def test_the_decision_page_shows_an_engine_failure_and_where_it_happened(
    cohort: Cohort,
    answers: dict[str, list[Reply]],
    monkeypatch: pytest.MonkeyPatch,
    client: Any,
) -> None:
    from arena.services import decisions as decisions_module

    def parse_breaks(text: str, **kw: Any) -> ParsedDecision:
        raise RuntimeError("<b>a defect</b>")

    monkeypatch.setattr(decisions_module, "parse_decision", parse_breaks)
    run = run_prepare(now=run_time(1), source=RecordedSource())
    outcome = decision_run(agent_id=agent_of(cohort).pk, run_id=run.pk, now=run_time(1))

    page = client.get(f"/decisions/{outcome.decision_id}/")
    body = page.content.decode()

    assert page.status_code == 200
    assert "Engine failure: RuntimeError: &lt;b&gt;a defect&lt;/b&gt;" in body
    assert "Where it failed" in body
    assert "<b>a defect</b>" not in body


def test_a_completed_cohorts_page_says_its_baselines_still_hold_positions(
    cohort: Cohort, client: Any
) -> None:
    from markets.models import Market

    run = run_prepare(now=run_time(1), source=RecordedSource())
    market = Market.objects.get(pk=run.markets.filter(rank=1).values_list("market", flat=True)[0])
    baseline = cohort.agents.get(model__internal_id="baseline-market")
    Position.objects.create(
        agent=baseline,
        market=market,
        side="YES" if market.is_binary else str(market.outcomes[0]),
        outcome_index=0,
        shares=Decimal("100"),
        cost_basis=Decimal("50.00"),
        opened_at=run_time(1),
    )
    Agent.objects.filter(pk=baseline.pk).update(cash=STARTING_BALANCE - Decimal("50.00"))
    Cohort.objects.filter(pk=cohort.pk).update(
        status=Cohort.Status.COMPLETED, completed_at=run_time(2)
    )

    body = client.get(f"/cohorts/{cohort.number}/").content.decode()

    assert "Baseline agents still hold 1 position opened before the cohort completed" in body
