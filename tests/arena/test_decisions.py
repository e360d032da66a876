"""The weekly decision (002 "Decision run", "Decision claiming", "Retryable failures"): claim,
prompt, call, parse, execute and store everything — on the offline path (no API key) and
through OpenRouter replayed by a local server."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from agents.models import BenchmarkModel
from agents.offline import offline_agent_reply
from agents.prompts import build_messages, prompt_version, system_prompt
from agents.types import DecisionContext, MarketView
from arena.models import Agent, Cohort, Decision, DecisionAttempt, DecisionRun, Position, Trade
from arena.services.decisions.context import portfolio_view
from arena.services.decisions.lifecycle import DecisionOutcome, decision_claim
from arena.services.decisions.run import agent_is_bankrupt, decision_run, decisions_run_all
from arena.services.frozen import FrozenMarkets
from markets.models import Market
from markets.sources import RecordedSource
from tests.arena.conftest import RUN_AT, WEEK, shared_week
from tests.replay import OPENROUTER_RECORDINGS, ReplayServer, Reply

COMPLETIONS = "/chat/completions"
OK_RECORDING = OPENROUTER_RECORDINGS / "chat_completion_ok_json_content_with_reasoning.json"
CREDITS_402 = OPENROUTER_RECORDINGS / "error_402_insufficient_credits.json"


cohort, run = shared_week()


def agent_of(cohort: Cohort, internal_id: str) -> Agent:
    return cohort.agents.select_related("model").get(model__internal_id=internal_id)


def completion_body(content: str) -> Reply:
    """The project's real recorded OpenRouter completion (a Gemini answer with reasoning), with
    only choices[0].message.content replaced by `content`; everything else — model, provider,
    usage, cost, reasoning — is as recorded."""
    body = json.loads(OK_RECORDING.read_text())
    body["choices"][0]["message"]["content"] = content
    return Reply.json(body)


def bet_json(market_id: str, side: str = "YES", amount: str = "500") -> str:
    return json.dumps(
        {
            "action": "BET",
            "bets": [{"market_id": market_id, "side": side, "amount": float(amount)}],
            "reasoning": "The market underprices this outcome.",
        }
    )


def decision_of(outcome: DecisionOutcome) -> Decision:
    assert outcome.decision_id is not None, outcome
    return Decision.objects.get(pk=outcome.decision_id)


def attempts_of(decision: Decision) -> list[DecisionAttempt]:
    return list(DecisionAttempt.objects.filter(decision=decision).order_by("number"))


# ------------------------------------------------------------------------ the offline path


@pytest.mark.django_db
def test_offline_decision_stores_prompts_raw_response_and_parsed_payload(
    cohort: Cohort, run: DecisionRun, frozen: FrozenMarkets
) -> None:
    agent = agent_of(cohort, "gpt-5.1")

    outcome = decision_run(agent_id=agent.pk, run_id=run.pk, now=RUN_AT)

    decision = decision_of(outcome)
    assert decision.status == Decision.Status.DONE
    assert decision.run_id == run.pk
    assert decision.responder == Decision.Responder.OFFLINE
    assert decision.requested_model == "openai/gpt-5.2"
    assert decision.prompt_version == prompt_version(cohort.methodology_version) == "v2"
    context = DecisionContext(
        as_of=RUN_AT,
        week_start=WEEK,
        cohort_number=cohort.number,
        portfolio=portfolio_view(agent=agent, frozen=frozen, positions=[]),
        markets=frozen.universe,
    )
    messages = build_messages(context)
    assert decision.system_prompt == system_prompt(version="v2") == messages[0]["content"]
    assert decision.user_prompt == messages[1]["content"]
    assert "$10,000.00" in decision.user_prompt
    assert all(view.market_id in decision.user_prompt for view in frozen.universe)

    [attempt] = attempts_of(decision)
    assert attempt.responder == "offline"
    assert attempt.request_messages == messages
    expected_raw = offline_agent_reply(model_id="gpt-5.1", context=context).text
    assert attempt.raw_response == attempt.response_text == expected_raw
    assert attempt.valid
    assert not attempt.parse_error
    assert not attempt.api_error

    # This stand-in bets in this week (deterministic): its payload is stored and executed.
    assert decision.action == "BET"
    assert decision.parsed is not None
    assert decision.parsed["action"] == "BET"
    assert decision.reasoning == decision.parsed["reasoning"]
    trades = Trade.objects.filter(decision=decision).order_by("order_index")
    assert [(t.requested_market_id, t.side, t.amount, t.status) for t in trades] == [
        (b["market_id"], b["side"], Decimal(b["amount"]), Trade.Status.EXECUTED)
        for b in decision.parsed["bets"]
    ]


@pytest.mark.django_db
def test_a_decision_claimed_once_cannot_be_claimed_again(cohort: Cohort) -> None:
    agent = agent_of(cohort, "gpt-5.1")

    first = decision_claim(agent=agent, week_start=WEEK, now=RUN_AT)
    second = decision_claim(agent=agent, week_start=WEEK, now=RUN_AT)

    assert first is not None
    assert first.status == Decision.Status.RUNNING
    assert second is None
    assert Decision.objects.filter(agent=agent).count() == 1
    assert Decision.objects.get(agent=agent).tries == 1


@pytest.mark.django_db
def test_a_decision_run_delivered_twice_makes_no_second_decision_or_trade(
    cohort: Cohort, run: DecisionRun
) -> None:
    agent = agent_of(cohort, "gpt-5.1")
    first = decision_run(agent_id=agent.pk, run_id=run.pk, now=RUN_AT)
    trades = Trade.objects.count()

    again = decision_run(agent_id=agent.pk, run_id=run.pk, now=RUN_AT)

    assert first.executed > 0
    assert again.decision_id is None
    assert Decision.objects.filter(agent=agent).count() == 1
    assert DecisionAttempt.objects.filter(decision__agent=agent).count() == 1
    assert Trade.objects.count() == trades


@pytest.mark.django_db
def test_bet_in_which_no_trade_executes_is_retryable_and_the_next_run_retries_the_same_row(
    cohort: Cohort, run: DecisionRun
) -> None:
    agent = agent_of(cohort, "gpt-5.1")
    Market.objects.update(closed=True)  # every bet of this run is refused

    failed = decision_run(agent_id=agent.pk, run_id=run.pk, now=RUN_AT)

    decision = decision_of(failed)
    assert decision.action == "BET"
    assert decision.status == Decision.Status.RETRYABLE
    assert "no trade of this BET/SELL executed" in decision.error
    assert failed.executed == 0
    assert failed.rejected > 0
    assert set(Trade.objects.filter(decision=decision).values_list("status", flat=True)) == {
        Trade.Status.REJECTED
    }

    # The next run of the week re-syncs the catalogue (the markets reopen) and retries.
    report = decisions_run_all(now=RUN_AT + timedelta(hours=1), source=RecordedSource())

    assert report.run_id is not None
    assert Decision.objects.filter(agent=agent).count() == 1
    decision.refresh_from_db()
    assert decision.pk == failed.decision_id
    assert decision.tries == 2
    assert decision.status == Decision.Status.DONE
    assert decision.run_id == report.run_id
    executed = Trade.objects.filter(decision=decision, status=Trade.Status.EXECUTED)
    assert executed.exists()
    assert set(executed.values_list("try_number", flat=True)) == {2}
    rejected = Trade.objects.filter(decision=decision, status=Trade.Status.REJECTED)
    assert set(rejected.values_list("try_number", flat=True)) == {1}


@pytest.mark.django_db
def test_bankrupt_agent_is_marked_bankrupt_and_skipped_without_a_prompt(
    cohort: Cohort, run: DecisionRun
) -> None:
    agent = agent_of(cohort, "gpt-5.1")
    Agent.objects.filter(pk=agent.pk).update(cash=Decimal("49.99"))

    outcome = decision_run(agent_id=agent.pk, run_id=run.pk, now=RUN_AT)

    agent.refresh_from_db()
    assert agent.status == Agent.Status.BANKRUPT
    decision = decision_of(outcome)
    assert decision.status == Decision.Status.SKIPPED
    assert decision.user_prompt == ""
    assert "bankrupt" in decision.error
    assert not DecisionAttempt.objects.filter(decision=decision).exists()
    assert not Trade.objects.filter(decision=decision).exists()


@pytest.mark.django_db
def test_agent_under_50_dollars_with_an_open_position_is_not_bankrupt(
    cohort: Cohort, frozen: FrozenMarkets, binary: MarketView
) -> None:
    agent = agent_of(cohort, "gpt-5.1")
    Agent.objects.filter(pk=agent.pk).update(cash=Decimal("10.00"))
    agent.refresh_from_db()
    Position.objects.create(
        agent=agent,
        market=Market.objects.get(polymarket_id=binary.market_id),
        side="YES",
        outcome_index=0,
        shares=Decimal("100"),
        cost_basis=Decimal("40.00"),
        opened_at=RUN_AT,
    )

    assert agent_is_bankrupt(agent=agent) is False
    agent.refresh_from_db()
    assert agent.status == Agent.Status.ACTIVE


@pytest.mark.django_db
@pytest.mark.parametrize("internal_id", ["baseline-random", "baseline-market"])
def test_baselines_answer_as_baseline(cohort: Cohort, run: DecisionRun, internal_id: str) -> None:
    agent = agent_of(cohort, internal_id)

    outcome = decision_run(agent_id=agent.pk, run_id=run.pk, now=RUN_AT)

    decision = decision_of(outcome)
    assert decision.responder == Decision.Responder.BASELINE
    assert decision.status == Decision.Status.DONE
    [attempt] = attempts_of(decision)
    assert attempt.responder == "baseline"
    assert attempt.valid


@pytest.mark.django_db
def test_baselines_answer_as_baseline_even_with_an_api_key(
    cohort: Cohort, run: DecisionRun, openrouter_server: ReplayServer
) -> None:
    for internal_id in ("baseline-random", "baseline-market"):
        outcome = decision_run(agent_id=agent_of(cohort, internal_id).pk, run_id=run.pk, now=RUN_AT)
        decision = decision_of(outcome)
        assert decision.responder == Decision.Responder.BASELINE
    assert openrouter_server.requests_to(COMPLETIONS) == []


# ------------------------------------------------------------------------- via OpenRouter


@pytest.mark.django_db
def test_openrouter_bet_executes_and_the_attempt_records_model_provider_tokens_and_cost(
    cohort: Cohort, run: DecisionRun, binary: MarketView, openrouter_server: ReplayServer
) -> None:
    reply = completion_body(bet_json(binary.market_id, "YES", "500"))
    openrouter_server.route("POST", COMPLETIONS, reply)
    agent = agent_of(cohort, "gpt-5.1")

    outcome = decision_run(agent_id=agent.pk, run_id=run.pk, now=RUN_AT)

    assert outcome.status == Decision.Status.DONE
    decision = decision_of(outcome)
    assert decision.responder == Decision.Responder.OPENROUTER
    assert decision.action == "BET"
    trade = Trade.objects.get(decision=decision)
    assert trade.status == Trade.Status.EXECUTED
    assert (trade.requested_market_id, trade.side, trade.amount) == (
        binary.market_id,
        "YES",
        Decimal("500.00"),
    )

    [attempt] = attempts_of(decision)
    assert attempt.responder == "openrouter"
    assert attempt.requested_model == "openai/gpt-5.2"
    assert attempt.response_model == "google/gemini-3-flash-preview"  # as recorded
    assert attempt.upstream_provider == "Google"
    assert (attempt.prompt_tokens, attempt.completion_tokens) == (18, 1067)
    assert attempt.reasoning_tokens == 826
    assert attempt.cost_usd == Decimal("0.00321")
    assert attempt.finish_reason == "stop"
    assert attempt.raw_response == reply.body.decode()
    assert attempt.latency_ms is not None
    assert (decision.response_model, decision.upstream_provider) == (
        "google/gemini-3-flash-preview",
        "Google",
    )
    assert decision.cost_usd == Decimal("0.00321")

    [request] = openrouter_server.requests_to(COMPLETIONS)
    sent = request.json()
    assert sent["model"] == "openai/gpt-5.2"
    assert sent["temperature"] == 0
    assert sent["messages"] == attempt.request_messages
    assert "provider" not in sent  # this lineup row pins no provider


@pytest.mark.django_db
def test_an_invalid_answer_is_retried_with_the_validation_error(
    cohort: Cohort,
    run: DecisionRun,
    binary: MarketView,
    openrouter_server: ReplayServer,
    settings: Any,
) -> None:
    settings.DECISION_PARSE_RETRIES = 1
    invalid = bet_json("not-a-listed-market")
    openrouter_server.route(
        "POST",
        COMPLETIONS,
        completion_body(invalid),
        completion_body(bet_json(binary.market_id, "NO", "250")),
    )
    agent = agent_of(cohort, "gpt-5.1")

    outcome = decision_run(agent_id=agent.pk, run_id=run.pk, now=RUN_AT)

    first, second = attempts_of(decision_of(outcome))
    assert not first.valid
    assert "is not one of the listed markets" in first.parse_error
    assert second.valid
    assert not second.parse_error
    requests = openrouter_server.requests_to(COMPLETIONS)
    assert len(requests) == 2
    retry_message = requests[1].json()["messages"][-1]
    assert retry_message["role"] == "user"
    assert first.parse_error in retry_message["content"]
    assert invalid in retry_message["content"]  # the start of the invalid response
    assert requests[1].json()["messages"] == second.request_messages
    decision = decision_of(outcome)
    assert decision.status == Decision.Status.DONE
    assert decision.parse_failed is False
    assert Trade.objects.get(decision=decision).status == Trade.Status.EXECUTED


@pytest.mark.django_db
def test_two_invalid_answers_become_a_hold_with_the_failure_recorded(
    cohort: Cohort, run: DecisionRun, openrouter_server: ReplayServer, settings: Any
) -> None:
    settings.DECISION_PARSE_RETRIES = 1
    openrouter_server.route(
        "POST", COMPLETIONS, completion_body("I would buy YES on the election market.")
    )
    agent = agent_of(cohort, "gpt-5.1")

    outcome = decision_run(agent_id=agent.pk, run_id=run.pk, now=RUN_AT)

    decision = decision_of(outcome)
    assert decision.status == Decision.Status.DONE
    assert decision.action == "HOLD"
    assert decision.parse_failed is True
    attempts = attempts_of(decision)
    assert len(attempts) == 2
    assert all(not a.valid and a.parse_error for a in attempts)
    assert attempts[-1].parse_error in decision.error
    assert len(openrouter_server.requests_to(COMPLETIONS)) == 2
    assert not Trade.objects.filter(decision=decision).exists()
    assert Agent.objects.get(pk=agent.pk).cash == Decimal("10000.00")


@pytest.mark.django_db
def test_402_insufficient_credits_leaves_the_decision_retryable_with_the_error(
    cohort: Cohort, run: DecisionRun, openrouter_server: ReplayServer
) -> None:
    openrouter_server.route("POST", COMPLETIONS, Reply(status=402, body=CREDITS_402.read_bytes()))
    agent = agent_of(cohort, "gpt-5.1")

    outcome = decision_run(agent_id=agent.pk, run_id=run.pk, now=RUN_AT)

    assert outcome.status == Decision.Status.RETRYABLE
    decision = decision_of(outcome)
    assert decision.status == Decision.Status.RETRYABLE
    assert "Insufficient credits" in decision.error
    [attempt] = attempts_of(decision)
    assert "OpenRouterCreditsError" in attempt.api_error
    assert attempt.raw_response == CREDITS_402.read_text()  # the error body, kept as evidence
    assert not attempt.valid
    assert not Trade.objects.filter(decision=decision).exists()
    assert Agent.objects.get(pk=agent.pk).cash == Decimal("10000.00")


@pytest.mark.django_db
def test_pinned_provider_order_is_sent_without_fallbacks(
    cohort: Cohort, run: DecisionRun, binary: MarketView, openrouter_server: ReplayServer
) -> None:
    BenchmarkModel.objects.filter(internal_id="gpt-5.1").update(provider_order=["Azure", "OpenAI"])
    openrouter_server.route("POST", COMPLETIONS, completion_body(bet_json(binary.market_id)))
    agent = agent_of(cohort, "gpt-5.1")

    decision_run(agent_id=agent.pk, run_id=run.pk, now=RUN_AT)

    [request] = openrouter_server.requests_to(COMPLETIONS)
    assert request.json()["provider"] == {"order": ["Azure", "OpenAI"], "allow_fallbacks": False}
