"""The determinism audit measures determinism: it re-sends exactly the request whose answer the
decision kept — a parse retry's, or a later round's on another snapshot — with the parameters
it went with (model, temperature, token limits, reasoning budget, provider pinning), and
compares the answer with that one. Every attempt stores those parameters, and the attempts
export carries them, so anyone can replay a request.

The model is a local server standing in for OpenRouter that is perfectly deterministic: the
same request body always gets the same answer, and each request it has not seen before gets
the next answer of its script. Such a model must pass the audit."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from agents.clients import request_body
from agents.models import BenchmarkModel
from agents.types import MarketView
from arena.models import Agent, Cohort, Decision, DecisionAttempt, DecisionRun, Trade
from arena.selectors.exports import DATASETS
from arena.services.audit import determinism_check
from arena.services.decisions.run import decision_run
from arena.services.exports import dataset_stream
from arena.services.frozen import run_prepare
from markets.sources import RecordedSource
from tests.arena.conftest import RUN_AT
from tests.replay import OPENROUTER_RECORDINGS, ReplayServer, Reply, Request

pytestmark = pytest.mark.django_db

COMPLETIONS = "/chat/completions"
OK_RECORDING = OPENROUTER_RECORDINGS / "chat_completion_ok_json_content_with_reasoning.json"
CREDITS_402 = OPENROUTER_RECORDINGS / "error_402_insufficient_credits.json"
HOLD = json.dumps({"action": "HOLD", "reasoning": "Nothing is mispriced enough."})
REASONING_BUDGET = 2048


def completion(content: str) -> bytes:
    """The real recorded completion with only message.content replaced."""
    body = json.loads(OK_RECORDING.read_text())
    body["choices"][0]["message"]["content"] = content
    return json.dumps(body).encode()


def bet(market_id: str, amount: str) -> str:
    bets = [{"market_id": market_id, "side": "YES", "amount": amount}]
    return json.dumps({"action": "BET", "bets": bets, "reasoning": "Underpriced."})


class DeterministicModel:
    """Answers the same for the same request body, always; a request it has not seen before
    gets the next answer of `script` (the last one repeats)."""

    def __init__(self, *script: Reply) -> None:
        self.script = list(script)
        self.answers: dict[str, Reply] = {}

    def __call__(self, request: Request) -> Reply:
        key = json.dumps(request.json(), sort_keys=True)
        if key not in self.answers:
            self.answers[key] = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        return self.answers[key]


@pytest.fixture(autouse=True)
def _small_universe(settings: Any) -> None:
    settings.MARKET_UNIVERSE_SIZE = 40  # prompts stay small; the rules do not change


@pytest.fixture(params=["gpt-5.1", "claude-opus-4.5"])
def lineup_model(request: pytest.FixtureRequest) -> str:
    """A model that caches prompts by itself, and one whose prompt carries a cache breakpoint
    (its user message goes as two text parts, the first marked `cache_control`)."""
    return str(request.param)


@pytest.fixture
def agent(cohort: Cohort, lineup_model: str) -> Agent:
    """A lineup model with a reasoning budget and pinned providers: both go on the wire."""
    BenchmarkModel.objects.filter(internal_id=lineup_model).update(
        reasoning_max_tokens=REASONING_BUDGET, provider_order=["Azure", "OpenAI"]
    )
    return cohort.agents.select_related("model").get(model__internal_id=lineup_model)


def attempts_of(decision: Decision) -> list[DecisionAttempt]:
    return list(decision.attempts.order_by("number"))


def test_a_deterministic_model_whose_answer_came_from_a_parse_retry_passes_the_audit(
    agent: Agent, run: DecisionRun, binary: MarketView, openrouter_server: ReplayServer
) -> None:
    model = DeterministicModel(
        Reply(body=completion("I would buy YES on that one.")),  # invalid: sent back
        Reply(body=completion(bet(binary.market_id, "500"))),
        Reply(body=completion(HOLD)),  # what any other request gets
    )
    openrouter_server.route("POST", COMPLETIONS, model)
    decision_run(agent_id=agent.pk, run_id=run.pk, now=RUN_AT)
    decision = Decision.objects.get(agent=agent)
    first, kept = attempts_of(decision)
    assert (first.valid, kept.valid) == (False, True)
    assert decision.status == Decision.Status.DONE
    assert decision.parsed == kept.parsed

    check = determinism_check(decision=decision)

    assert check.error == ""
    assert check.matches is True
    assert check.repeated == kept.parsed
    audit = openrouter_server.requests_to(COMPLETIONS)[-1].json()
    answered = openrouter_server.requests_to(COMPLETIONS)[1].json()  # the retry, kept
    assert audit == answered
    assert audit["reasoning"] == {"max_tokens": REASONING_BUDGET}


def test_a_deterministic_model_whose_answer_came_from_a_later_round_passes_the_audit(
    agent: Agent,
    run: DecisionRun,
    binary: MarketView,
    openrouter_server: ReplayServer,
) -> None:
    """Round 1 bets $10 (rejected: under the minimum), so the decision is retried in a later
    run on a new snapshot, where its $500 bet executes. The audit re-sends round 2's request."""
    model = DeterministicModel(
        Reply(body=completion(bet(binary.market_id, "10"))),
        Reply(body=completion(bet(binary.market_id, "500"))),
        Reply(body=completion(HOLD)),
    )
    openrouter_server.route("POST", COMPLETIONS, model)
    first = decision_run(agent_id=agent.pk, run_id=run.pk, now=RUN_AT)
    assert first.status == Decision.Status.RETRYABLE
    later_at = RUN_AT + timedelta(hours=1, minutes=30)
    later = run_prepare(now=later_at, source=RecordedSource())
    decision_run(agent_id=agent.pk, run_id=later.pk, now=later_at)
    decision = Decision.objects.get(agent=agent)
    assert decision.status == Decision.Status.DONE
    assert Trade.objects.get(decision=decision, status=Trade.Status.EXECUTED).try_number == 2
    round_one, round_two = attempts_of(decision)
    assert (round_one.run_id, round_two.run_id) == (run.pk, later.pk)

    check = determinism_check(decision=decision)

    assert check.error == ""
    assert check.matches is True
    sent = openrouter_server.requests_to(COMPLETIONS)
    assert sent[-1].json() == sent[1].json()


def test_every_attempt_stores_the_parameters_it_was_sent_with_and_the_export_carries_them(
    agent: Agent, run: DecisionRun, binary: MarketView, openrouter_server: ReplayServer
) -> None:
    openrouter_server.route(
        "POST",
        COMPLETIONS,
        Reply(status=402, body=CREDITS_402.read_bytes()),  # a failed call was sent too
        Reply(body=completion("not JSON")),
        Reply(body=completion(bet(binary.market_id, "500"))),
    )
    decision_run(agent_id=agent.pk, run_id=run.pk, now=RUN_AT)  # the call fails: retryable
    later_at = RUN_AT + timedelta(hours=1, minutes=30)
    decision_run(
        agent_id=agent.pk,
        run_id=run_prepare(now=later_at, source=RecordedSource()).pk,
        now=later_at,
    )
    decision = Decision.objects.get(agent=agent)
    attempts = attempts_of(decision)
    sent = openrouter_server.requests_to(COMPLETIONS)
    assert len(attempts) == len(sent) == 3

    breakpoint_sent = agent.model.openrouter_id.startswith("anthropic/")
    for attempt, request in zip(attempts, sent, strict=True):
        # The stored messages and parameters rebuild the body that was sent.
        assert attempt.request_parameters is not None
        assert request_body(attempt.request_messages, attempt.request_parameters) == request.json()
        parameters = dict(attempt.request_parameters or {})
        breakpoint = parameters.pop("cache_breakpoint", None)
        assert parameters == {
            "model": agent.model.openrouter_id,
            "temperature": 0,
            "max_tokens": 16000,
            "usage": {"include": True},
            "provider": {"order": ["Azure", "OpenAI"], "allow_fallbacks": False},
            "reasoning": {"max_tokens": REASONING_BUDGET},
        }
        user = request.json()["messages"][1]["content"]
        assert isinstance(user, list) is breakpoint_sent
        if breakpoint_sent:  # where the run's shared part (the market table) ends
            assert breakpoint == {"message": 1, "chars": len(user[0]["text"])}
            assert "cache_control" in user[0]
    body = b"".join(
        dataset_stream(DATASETS["attempts"], "jsonl", DATASETS["attempts"].rows())
    ).decode()
    rows = {row["attempt_id"]: row for row in map(json.loads, body.splitlines())}
    for attempt in attempts:
        assert rows[attempt.pk]["request_parameters"] == attempt.request_parameters
    [column] = [c for c in DATASETS["attempts"].columns if c.name == "request_parameters"]
    assert column.type == "json"
    assert "temperature" in column.description
    assert "replay" in column.description


def test_an_offline_answer_sent_no_request_and_stores_no_parameters(
    agent: Agent, run: DecisionRun
) -> None:
    decision_run(agent_id=agent.pk, run_id=run.pk, now=RUN_AT)
    decision = Decision.objects.get(agent=agent)

    [attempt] = attempts_of(decision)
    assert attempt.responder == "offline"
    assert attempt.request_parameters is None
