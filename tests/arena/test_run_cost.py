"""The cost of a weekly run: decisions sent through the real OpenRouter client to the
local replay server carry a prompt-cache breakpoint where their provider needs one, store the
cached prompt tokens each answer reports, and the status page and API sum them per run.

The answers are the project's real recorded completion; where a test needs cache figures, its
`usage` is replaced by a real recorded OpenRouter usage object (agents/recordings/README.md,
"prompt-cache usage objects"), and the test says so.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.humanize.templatetags.humanize import intcomma
from django.test import Client
from django.urls import reverse

from agents.prompts import build_messages, prompt_version, shared_prefix
from arena.models import Agent, Cohort, Decision, DecisionAttempt, DecisionRun
from arena.selectors.status import run_costs
from arena.services.decisions.run import decision_run
from arena.services.frozen import FrozenMarkets
from forecaster.templatetags.figures import ratio_percent, usd_cost
from tests.arena.conftest import RUN_AT, shared_week
from tests.replay import OPENROUTER_RECORDINGS, ReplayServer, Reply

COMPLETIONS = "/chat/completions"
OK = OPENROUTER_RECORDINGS / "chat_completion_ok_json_content_with_reasoning.json"
CACHE_WRITE = OPENROUTER_RECORDINGS / "usage_anthropic_cache_write.json"
CACHE_READ = OPENROUTER_RECORDINGS / "usage_anthropic_cache_read.json"
HOLD = json.dumps({"action": "HOLD", "reasoning": "Nothing is mispriced enough this week."})


cohort, run = shared_week()


def answer(usage: Any = None) -> tuple[Reply, dict[str, Any]]:
    """A HOLD in the real recorded completion; with `usage` (a recording), its usage replaced.
    Return the reply and the usage it reports."""
    body = json.loads(OK.read_text())
    body["choices"][0]["message"]["content"] = HOLD
    if usage is not None:
        body["usage"] = json.loads(usage.read_text())
    return Reply.json(body), body["usage"]


def agent_of(cohort: Cohort, internal_id: str) -> Agent:
    return cohort.agents.select_related("model").get(model__internal_id=internal_id)


@pytest.mark.django_db
def test_a_claude_decision_marks_the_shared_part_and_stores_its_cache_figures(
    cohort: Cohort, run: DecisionRun, frozen: FrozenMarkets, openrouter_server: ReplayServer
) -> None:
    reply, usage = answer(CACHE_READ)
    openrouter_server.route("POST", COMPLETIONS, reply)
    agent = agent_of(cohort, "claude-opus-4.5")

    outcome = decision_run(agent_id=agent.pk, run_id=run.pk, now=RUN_AT)

    assert outcome.decision_id is not None
    decision = Decision.objects.get(pk=outcome.decision_id)
    assert decision.status == Decision.Status.DONE
    assert decision.prompt_version == prompt_version(cohort.methodology_version) == "v2"
    # What was sent: the user message in two parts, the breakpoint after the market table.
    [request] = openrouter_server.requests_to(COMPLETIONS)
    system, user = request.json()["messages"]
    assert system == {"role": "system", "content": decision.system_prompt}
    shared, own = user["content"]
    assert shared["cache_control"] == {"type": "ephemeral"}
    assert shared["text"].startswith("MARKETS:")
    assert all(view.market_id in shared["text"] for view in frozen.universe)
    assert "Cash: $10,000.00" in own["text"]
    # What is stored and shown: the same text, as plain text.
    assert decision.user_prompt == shared["text"] + own["text"]
    [attempt] = DecisionAttempt.objects.filter(decision=decision)
    assert attempt.request_messages[1] == {"role": "user", "content": decision.user_prompt}
    details = usage["prompt_tokens_details"]
    assert (attempt.prompt_tokens, attempt.cached_prompt_tokens, attempt.cache_write_tokens) == (
        usage["prompt_tokens"],
        details["cached_tokens"],
        details["cache_write_tokens"],
    )
    assert attempt.cached_prompt_tokens  # the recorded answer read from the cache
    assert (decision.cached_prompt_tokens, decision.cache_write_tokens) == (
        details["cached_tokens"],
        details["cache_write_tokens"],
    )


@pytest.mark.django_db
def test_agents_of_one_run_send_the_same_shared_part_and_a_gpt_call_needs_no_breakpoint(
    cohort: Cohort, run: DecisionRun, frozen: FrozenMarkets, openrouter_server: ReplayServer
) -> None:
    openrouter_server.route("POST", COMPLETIONS, answer(CACHE_WRITE)[0], answer()[0])
    claude, gpt = agent_of(cohort, "claude-opus-4.5"), agent_of(cohort, "gpt-5.1")

    decision_run(agent_id=claude.pk, run_id=run.pk, now=RUN_AT)
    decision_run(agent_id=gpt.pk, run_id=run.pk, now=RUN_AT)

    to_claude, to_gpt = (r.json()["messages"] for r in openrouter_server.requests_to(COMPLETIONS))
    assert to_gpt[0] == to_claude[0]
    assert isinstance(to_gpt[1]["content"], str)  # OpenAI caches the prefix by itself
    assert to_gpt[1]["content"].startswith(to_claude[1]["content"][0]["text"])
    stored = Decision.objects.get(agent=gpt)
    assert stored.user_prompt == to_gpt[1]["content"]
    assert stored.cached_prompt_tokens == 0  # the recorded answer reports cached_tokens 0
    assert stored.cache_write_tokens is None  # and says nothing about cache writes


@pytest.fixture
def three_answers(
    cohort: Cohort, run: DecisionRun, frozen: FrozenMarkets, openrouter_server: ReplayServer
) -> list[dict[str, Any]]:
    """Three agents of the run answered: a cache write, the recorded answer, a cache read.
    Return the usage each reported."""
    answers = [answer(CACHE_WRITE), answer(), answer(CACHE_READ)]
    openrouter_server.route("POST", COMPLETIONS, *(reply for reply, _ in answers))
    for internal_id in ("claude-opus-4.5", "gpt-5.1", "gemini-2.5-flash"):
        decision_run(agent_id=agent_of(cohort, internal_id).pk, run_id=run.pk, now=RUN_AT)
    return [usage for _, usage in answers]


def sums(usages: list[dict[str, Any]]) -> dict[str, Any]:
    cached = sum(u["prompt_tokens_details"]["cached_tokens"] for u in usages)
    prompt = sum(u["prompt_tokens"] for u in usages)
    return {
        "prompt": prompt,
        "cached": cached,
        "completion": sum(u["completion_tokens"] for u in usages),
        "cost": sum(Decimal(str(u["cost"])) for u in usages if "cost" in u),
        "share": Decimal(cached) / Decimal(prompt),
    }


@pytest.mark.django_db
def test_run_costs_sum_every_call_of_the_run(
    cohort: Cohort, run: DecisionRun, three_answers: list[dict[str, Any]]
) -> None:
    """The three model calls, and nothing for a baseline of the same run: it calls no model."""
    expected = sums(three_answers)
    baseline = cohort.agents.get(model__internal_id="baseline-market")
    assert decision_run(agent_id=baseline.pk, run_id=run.pk, now=RUN_AT).status == "done"

    [cost] = run_costs()

    assert cost.run == run
    assert cost.calls == 3
    assert (cost.prompt_tokens, cost.cached_prompt_tokens, cost.completion_tokens) == (
        expected["prompt"],
        expected["cached"],
        expected["completion"],
    )
    assert cost.cost_usd == expected["cost"]
    assert cost.cached_share == expected["share"]
    assert 0 < cost.cached_share < 1


@pytest.mark.django_db
def test_status_page_shows_the_runs_tokens_cached_share_and_cost(
    client: Client, three_answers: list[dict[str, Any]]
) -> None:
    expected = sums(three_answers)

    content = client.get(reverse("arena:status")).content.decode()

    table = content[content.index('id="status-run-costs"') :]
    row = table[table.index("<tbody>") : table.index("</tbody>")]
    cells = [cell.strip() for cell in row.split('<td class="num">')[1:]]
    cells = [cell[: cell.index("</td>")] for cell in cells]
    assert cells == [
        "3",
        intcomma(expected["prompt"]),
        intcomma(expected["cached"]),
        ratio_percent(expected["share"]),
        intcomma(expected["completion"]),
        usd_cost(expected["cost"]),
    ]


@pytest.mark.django_db
def test_status_api_gives_the_same_sums(
    client: Client, run: DecisionRun, three_answers: list[dict[str, Any]]
) -> None:
    expected = sums(three_answers)

    body = client.get("/api/v1/status").json()

    [cost] = body["run_costs"]
    assert cost["run_id"] == run.pk
    assert cost["calls"] == 3
    assert cost["prompt_tokens"] == expected["prompt"]
    assert cost["cached_prompt_tokens"] == expected["cached"]
    assert cost["completion_tokens"] == expected["completion"]
    assert Decimal(cost["cost_usd"]) == expected["cost"]
    assert Decimal(cost["cached_share"]) == expected["share"].quantize(Decimal("0.0001"))


@pytest.mark.django_db
def test_a_run_without_calls_shows_no_figures(client: Client, run: DecisionRun) -> None:
    [cost] = run_costs()
    assert (cost.calls, cost.prompt_tokens, cost.cost_usd, cost.cached_share) == (
        0,
        None,
        None,
        None,
    )
    body = client.get("/api/v1/status").json()
    assert body["run_costs"][0]["cached_share"] is None
    assert body["run_costs"][0]["cost_usd"] is None


def test_the_shared_part_is_what_build_messages_opens_the_user_message_with() -> None:
    # Guard for the decision service's use of `shared_prefix`: the two agree on any context.
    from tests.agents.test_prompts import OTHER_AGENT, SMALL

    for context in (SMALL, OTHER_AGENT):
        assert build_messages(context)[1]["content"].startswith(shared_prefix(context))
        assert shared_prefix(context)
