"""Engine integrity (002 "Decision claiming", "Retryable failures"): every agent decides
exactly once a week whatever fails — one agent's failure never stops another's, retries and
reclaims work in every week of a cohort, a reclaim after a crash never executes an order
twice, and a late cohort start still gets its first decision.

OpenRouter is a local replay server answering from the real recorded completion; each test
decides per model what it answers."""

from __future__ import annotations

import json
from collections.abc import Callable
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
from arena.services.decisions.lifecycle import (
    CLAIM_TTL,
    decision_claim,
    decision_execute,
    parsed_json,
)
from arena.services.decisions.run import decision_retry, decision_run, decisions_run_all
from arena.services.frozen import FrozenMarkets, run_prepare
from arena.services.trades import trade_buy
from markets.sources import RecordedSource
from tests.arena.books import assert_books_balance
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
    assert_books_balance()


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
    assert_books_balance()
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
    from arena.services.decisions import responders

    real_parse = parse_decision

    def parse_or_break(text: str, **kw: Any) -> ParsedDecision:
        if "BREAK THE ENGINE" in text:
            raise RuntimeError("a defect nobody foresaw")
        return real_parse(text, **kw)

    monkeypatch.setattr(responders, "parse_decision", parse_or_break)
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
    monkeypatch.setattr(responders, "parse_decision", real_parse)
    answers[model_id(FAILING_MODEL)] = [Reply(body=completion(HOLD))]
    decisions_run_all(now=run_time(1, hours=1), source=RecordedSource())
    broken.refresh_from_db()
    assert broken.status == Decision.Status.DONE
    assert broken.error == ""


def test_an_order_that_breaks_is_recorded_as_rejected_and_the_next_order_executes(
    cohort: Cohort, answers: dict[str, list[Reply]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from arena.services.decisions import lifecycle

    run = run_prepare(now=run_time(1), source=RecordedSource())
    views = [v for v in FrozenMarkets.load(run).universe if v.is_binary and v.yes_price][:2]
    real_buy = trade_buy

    def buy_or_break(*, order: BetOrder, **kw: Any) -> Trade:
        if order.market_id == views[0].market_id:
            raise ZeroDivisionError("a defect in the first order")
        return real_buy(order=order, **kw)

    monkeypatch.setattr(lifecycle, "trade_buy", buy_or_break)
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


# ------------------------------------------- hostile replies are recorded, never fatal


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
    from arena.services.decisions import responders

    def parse_breaks(text: str, **kw: Any) -> ParsedDecision:
        raise RuntimeError("<b>a defect</b>")

    monkeypatch.setattr(responders, "parse_decision", parse_breaks)
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


# ------------------------------------------------ review findings: claims, weeks, sums


def scripted(monkeypatch: pytest.MonkeyPatch, answer: Callable[[BenchmarkModel, Any], str]) -> None:
    """Answer for every model from a script, in the engine's own responder slot: what the
    model says is `answer(model, context)`, and the script may act while the model 'thinks'
    (a test of timing, not of the client, which has its own replay tests)."""
    from arena.services.decisions import lifecycle, responders

    def respond(*, model: BenchmarkModel, kind: str, context: Any, **kw: Any) -> Any:
        text = answer(model, context)
        return lifecycle.Reply(text=text, raw=text, responder=kind, requested_model="m")

    monkeypatch.setattr(responders, "respond", respond)


def bet_on(market_id: str, amount: str = "1000") -> str:
    bets = [{"market_id": market_id, "side": "YES", "amount": amount}]
    return json.dumps({"action": "BET", "bets": bets, "reasoning": "Underpriced."})


def tradable(context: Any, skip: int = 0) -> str:
    views = [v for v in context.markets if v.is_binary and v.yes_price and 0 < v.yes_price < 1]
    return str(views[skip].market_id)


def test_a_slow_worker_whose_claim_was_taken_over_writes_nothing_more(
    cohort: Cohort, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first worker waits on the model past CLAIM_TTL; the next run reclaims the decision
    and completes it. When the slow answer finally arrives it is stored on its attempt as
    evidence, but neither its answer nor any of its orders lands."""
    run = run_prepare(now=run_time(1), source=RecordedSource())
    agent = agent_of(cohort)
    calls: list[int] = []

    def answer(model: BenchmarkModel, context: Any) -> str:
        if model.internal_id != FAILING_MODEL:
            return HOLD
        calls.append(1)
        if len(calls) == 1:  # meanwhile, the run half an hour later reclaims it
            reclaimed = decision_run(agent_id=agent.pk, run_id=run.pk, now=run_time(1, hours=1))
            assert reclaimed.status == Decision.Status.DONE
            return bet_on(tradable(context, 0))
        return bet_on(tradable(context, 1))

    scripted(monkeypatch, answer)

    slow = decision_run(agent_id=agent.pk, run_id=run.pk, now=run_time(1))

    assert slow.status == "claim lost"
    decision = decision_of(agent, 1)
    assert decision.status == Decision.Status.DONE
    assert decision.tries == 2
    executed = Trade.objects.filter(decision=decision, status=Trade.Status.EXECUTED)
    assert list(executed.values_list("try_number", flat=True)) == [2]
    assert decision.parsed is not None
    assert decision.parsed["bets"][0]["market_id"] == executed.get().requested_market_id
    agent.refresh_from_db()
    assert agent.cash == STARTING_BALANCE - Decimal("1000")


def test_a_slow_worker_stops_executing_once_its_claim_was_taken_over(
    cohort: Cohort,
) -> None:
    """A worker executing a stored answer loses its claim to a reclaim between two orders:
    the reclaim resumes the remaining order, the slow worker's next order never executes."""
    run = run_prepare(now=run_time(1), source=RecordedSource())
    frozen = FrozenMarkets.load(run)
    views = [v for v in frozen.universe if v.is_binary and v.yes_price][:2]
    answer = ParsedDecision(
        action="BET",
        reasoning="Two bets.",
        bets=tuple(
            BetOrder(market_id=v.market_id, side="YES", amount=Decimal("200")) for v in views
        ),
    )
    agent = agent_of(cohort)
    slow = decision_claim(agent=agent, week_start=WEEK, now=run_time(1))
    assert slow is not None
    Decision.objects.filter(pk=slow.pk).update(
        run=run, parsed=parsed_json(answer), parsed_try=slow.tries, action="BET"
    )
    slow.refresh_from_db()
    trade_buy(decision=slow, order=answer.bets[0], frozen=frozen, index=0, try_number=1)
    # The slow worker is still running when the next run reclaims and resumes.
    resumed = decision_run(agent_id=agent.pk, run_id=run.pk, now=run_time(1, hours=1))
    assert resumed.status == Decision.Status.DONE

    late = decision_execute(decision=slow, parsed=answer, frozen=frozen)

    assert late.executed == 0
    trades = Trade.objects.filter(decision=slow).order_by("order_index")
    assert [(t.order_index, t.status) for t in trades] == [(0, "executed"), (1, "executed")]
    agent.refresh_from_db()
    assert agent.cash == STARTING_BALANCE - Decimal("400")


def test_a_first_week_decision_never_retried_successfully_is_closed_when_its_week_ends(
    cohort: Cohort, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A $10 bet is rejected (under the minimum), so the week-1 decision is RETRYABLE (002).
    If no retry of that week succeeds, the next week's run closes it as a HOLD — otherwise
    it would keep its cohort from ever completing."""
    week = {"n": 1}

    def answer(model: BenchmarkModel, context: Any) -> str:
        if model.internal_id == FAILING_MODEL and week["n"] == 1:
            return bet_on(tradable(context), amount="10")
        return HOLD

    scripted(monkeypatch, answer)
    decisions_run_all(now=run_time(1), source=RecordedSource())
    decisions_run_all(now=run_time(1, hours=1), source=RecordedSource())  # retried, still $10
    agent = agent_of(cohort)
    assert decision_of(agent, 1).status == Decision.Status.RETRYABLE
    week["n"] = 2

    decisions_run_all(now=run_time(2), source=RecordedSource())

    closed = decision_of(agent, 1)
    assert closed.status == Decision.Status.SKIPPED
    assert closed.action == Decision.Action.HOLD
    assert "its week ended" in closed.error
    assert "under the $50 minimum" in closed.error
    assert SystemEvent.objects.filter(
        kind=SystemEvent.Kind.DECISION_FAILED, decision=closed, message__contains="week ended"
    ).exists()
    from arena.services.settlement import resolutions_check

    check = resolutions_check(now=run_time(2, hours=1), source=RecordedSource())
    assert cohort.number in check.completed_cohorts  # nothing held, everyone decided


def test_a_cohort_completing_while_an_agent_waits_on_the_model_refuses_its_bet(
    cohort: Cohort, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arena.services.cohorts import cohorts_complete

    completed: list[int] = []
    week = {"n": 1}

    def answer(model: BenchmarkModel, context: Any) -> str:
        if week["n"] == 1 or model.internal_id != FAILING_MODEL:
            return HOLD
        # The 00:07 resolution check lands while this agent waits on the model.
        completed.extend(cohorts_complete(now=run_time(2) + timedelta(minutes=2)))
        return bet_on(tradable(context))

    scripted(monkeypatch, answer)
    decisions_run_all(now=run_time(1), source=RecordedSource())  # everyone HOLDs
    week["n"] = 2

    decisions_run_all(now=run_time(2), source=RecordedSource())

    assert completed == [cohort.number]
    [refused] = Trade.objects.filter(agent=agent_of(cohort))
    assert refused.status == Trade.Status.REJECTED
    assert "cohort has completed" in refused.reject_reason
    assert not Position.objects.filter(agent__cohort=cohort).exists()
    assert agent_of(cohort).cash == STARTING_BALANCE


def test_token_totals_too_large_for_their_column_are_stored_as_unknown(
    cohort: Cohort, answers: dict[str, list[Reply]]
) -> None:
    """Each attempt's count fits its column; their sum may not (PostgreSQL would refuse it
    and the decision could never finish)."""
    answers[model_id(FAILING_MODEL)] = [
        Reply(body=completion("not json", prompt_tokens=2_000_000_000)),
        Reply(body=completion(HOLD, prompt_tokens=2_000_000_000)),
    ]

    decision = run_one(cohort, answers, answers[model_id(FAILING_MODEL)][0])

    assert decision.status == Decision.Status.DONE
    assert [a.prompt_tokens for a in decision.attempts.order_by("number")] == [
        2_000_000_000,
        2_000_000_000,
    ]
    assert decision.prompt_tokens is None


def test_a_bet_of_which_nothing_executed_and_a_default_hold_are_in_the_operations_record(
    cohort: Cohort, monkeypatch: pytest.MonkeyPatch
) -> None:
    def answer(model: BenchmarkModel, context: Any) -> str:
        if model.internal_id == FAILING_MODEL:
            return bet_on(tradable(context), amount="10")
        if model.internal_id == "claude-opus-4.5":
            return "I would rather not answer in JSON."
        return HOLD

    scripted(monkeypatch, answer)

    decisions_run_all(now=run_time(1), source=RecordedSource())

    failures = SystemEvent.objects.filter(kind=SystemEvent.Kind.DECISION_FAILED)
    messages = " | ".join(failures.values_list("message", flat=True))
    assert "no trade of this BET/SELL executed" in messages
    assert "default HOLD" in messages
    assert set(failures.values_list("level", flat=True)) == {SystemEvent.Level.WARNING}


def test_an_order_of_a_claim_that_was_taken_over_does_not_execute(cohort: Cohort) -> None:
    from arena.exceptions import ClaimLost

    run = run_prepare(now=run_time(1), source=RecordedSource())
    frozen = FrozenMarkets.load(run)
    view = next(v for v in frozen.universe if v.is_binary and v.yes_price)
    agent = agent_of(cohort)
    slow = decision_claim(agent=agent, week_start=WEEK, now=run_time(1))
    assert slow is not None
    taken_over = decision_claim(agent=agent, week_start=WEEK, now=run_time(1, hours=1))
    assert taken_over is not None
    order = BetOrder(market_id=view.market_id, side="YES", amount=Decimal("100"))

    with pytest.raises(ClaimLost):
        trade_buy(decision=slow, order=order, frozen=frozen, index=0, try_number=1)
    outcome = decision_execute(
        decision=slow,
        parsed=ParsedDecision(action="BET", reasoning="late", bets=(order,)),
        frozen=frozen,
    )

    assert outcome.claim_lost
    assert not Trade.objects.filter(decision=slow).exists()
    assert Agent.objects.get(pk=agent.pk).cash == STARTING_BALANCE


# --------------------------------------------------------- second review: runs and claims


def test_the_hourly_retry_leaves_the_agents_a_running_run_has_not_reached(
    cohort: Cohort, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every agent of a week decides on the one frozen snapshot of its run: a retry run while
    the 00:05 run is still working serves only what was sent for retry, never the agents the
    first run has not reached — until that run is past RUN_GRACE, when its chain is dead."""
    from arena.services.decisions.run import run_finish, run_open, run_queued
    from arena.weeks import RUN_GRACE

    def answer(model: BenchmarkModel, context: Any) -> str:
        if model.internal_id == FAILING_MODEL:
            return bet_on(tradable(context), amount="10")  # rejected: RETRYABLE
        return HOLD

    scripted(monkeypatch, answer)
    first, due = run_open(now=run_time(1), source=RecordedSource())
    assert first is not None
    run_queued(run_id=first.pk, now=run_time(1))  # its chains were all sent, as the task does
    failing = agent_of(cohort).pk
    reached = due[: due.index(failing) + 1]
    for agent_id in reached:  # the chain has got this far
        decision_run(agent_id=agent_id, run_id=first.pk, now=run_time(1))

    retry, retried = run_open(now=run_time(1) + timedelta(minutes=30), retry=True)

    assert retry is not None
    assert retried == [failing]
    run_finish(run_id=retry.pk)  # its chain of one went through
    late, everyone = run_open(now=run_time(1) + RUN_GRACE + timedelta(minutes=1), retry=True)
    assert late is not None
    assert everyone == [failing, *due[len(reached) :]]


def test_a_fresh_claim_never_resumes_the_answer_of_a_round_sent_for_retry(
    cohort: Cohort, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A RETRYABLE decision is asked again: its claim clears the previous round's answer, so
    a worker dying right after the claim leaves nothing to resume at a week-old price."""
    run = run_prepare(now=run_time(1), source=RecordedSource())

    def answer(model: BenchmarkModel, context: Any) -> str:
        return (
            bet_on(tradable(context), amount="10") if model.internal_id == FAILING_MODEL else HOLD
        )

    scripted(monkeypatch, answer)
    agent = agent_of(cohort)
    assert decision_run(agent_id=agent.pk, run_id=run.pk, now=run_time(1)).status == "retryable"
    assert decision_of(agent, 1).parsed_try == 1

    claimed = decision_claim(agent=agent, week_start=WEEK, now=run_time(1, hours=1))

    assert claimed is not None
    assert claimed.parsed is None
    assert claimed.parsed_try is None
    assert claimed.attempts.filter(parsed__isnull=False).exists()  # the answer stays as evidence


def test_an_agent_paid_out_since_its_cash_was_read_is_never_marked_bankrupt(
    cohort: Cohort,
) -> None:
    from arena.services.decisions.run import agent_is_bankrupt

    agent = agent_of(cohort)
    stale = Agent.objects.get(pk=agent.pk)
    stale.cash = Decimal("10.00")  # as read before a settlement paid the agent out

    assert agent_is_bankrupt(agent=stale) is False
    assert Agent.objects.get(pk=agent.pk).status == Agent.Status.ACTIVE
    Agent.objects.filter(pk=agent.pk).update(cash=Decimal("10.00"))
    assert agent_is_bankrupt(agent=agent_of(cohort)) is True


def test_a_worker_that_lost_its_claim_records_no_rejection(
    cohort: Cohort, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rejected order is part of the ledger the live claim writes: a slow worker's failing
    order must not pre-empt the order the claim holder will execute."""
    from arena.services.decisions import lifecycle

    run = run_prepare(now=run_time(1), source=RecordedSource())
    frozen = FrozenMarkets.load(run)
    view = next(v for v in frozen.universe if v.is_binary and v.yes_price)
    order = BetOrder(market_id=view.market_id, side="YES", amount=Decimal("200"))
    answer = ParsedDecision(action="BET", reasoning="One bet.", bets=(order,))
    agent = agent_of(cohort)
    slow = decision_claim(agent=agent, week_start=WEEK, now=run_time(1))
    assert slow is not None
    Decision.objects.filter(pk=slow.pk).update(
        run=run, parsed=parsed_json(answer), parsed_try=slow.tries, action="BET"
    )
    slow.refresh_from_db()
    live = decision_claim(agent=agent, week_start=WEEK, now=run_time(1, hours=1))
    assert live is not None

    def breaks(**kw: Any) -> Trade:
        raise RuntimeError("transient")

    monkeypatch.setattr(lifecycle, "trade_buy", breaks)
    late = decision_execute(decision=slow, parsed=answer, frozen=frozen)
    monkeypatch.setattr(lifecycle, "trade_buy", trade_buy)

    assert late.claim_lost
    assert not Trade.objects.filter(decision=slow).exists()
    resumed = decision_execute(decision=live, parsed=answer, frozen=frozen)
    assert resumed.executed == 1
    assert Agent.objects.get(pk=agent.pk).cash == STARTING_BALANCE - Decimal("200")


def test_a_cohort_started_by_hand_for_a_past_week_can_still_complete(
    db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nobody decided in its first week (it started after that week): each agent's first
    week is recorded as a skipped HOLD, so the cohort is not kept active for ever."""
    from arena.services.settlement import resolutions_check

    scripted(monkeypatch, lambda model, context: HOLD)
    late, _ = cohort_start(week_start=WEEK, now=run_time(2))

    decisions_run_all(now=run_time(2), source=RecordedSource())

    first_week = Decision.objects.filter(cohort=late, week_start=WEEK)
    assert first_week.count() == late.agents.count()
    assert set(first_week.values_list("status", flat=True)) == {Decision.Status.SKIPPED}
    check = resolutions_check(now=run_time(2, hours=1), source=RecordedSource())
    assert late.number in check.completed_cohorts
