"""Prompt caching through OpenRouter: the breakpoint the client puts at the end of
the run's shared prompt part, and the cache figures it reads from a response's usage.

End to end against the 127.0.0.1 replay server. The usage objects are real (OpenRouter answers
for a Claude model, agents/recordings/README.md "prompt-cache usage objects"); each is served
inside the project's real recorded completion, whose own `usage` it replaces.
"""

from __future__ import annotations

import json

import pytest

from agents.clients import CACHE_CONTROL, OpenRouterClient, needs_cache_breakpoint
from agents.prompts import build_messages, build_retry_messages, shared_prefix
from tests.agents.test_prompts import OTHER_AGENT, SMALL
from tests.replay import OPENROUTER_RECORDINGS, ReplayServer, Reply, recording

CHAT = "/chat/completions"
OK = "chat_completion_ok_json_content_with_reasoning.json"
CACHE_READ = "usage_anthropic_cache_read.json"
CACHE_WRITE = "usage_anthropic_cache_write.json"


def _with_usage(usage_recording: str) -> Reply:
    """The real recorded completion with its `usage` replaced by a real recorded usage."""
    body = json.loads(recording(OPENROUTER_RECORDINGS / OK))
    body["usage"] = json.loads(recording(OPENROUTER_RECORDINGS / usage_recording))
    return Reply.json(body)


@pytest.mark.parametrize(
    ("model", "explicit"),
    [
        ("anthropic/claude-opus-4.5", True),
        ("google/gemini-3-pro-preview", True),
        ("openai/gpt-5.2", False),
        ("deepseek/deepseek-v3.2", False),
        ("x-ai/grok-4.1-fast", False),
        ("moonshotai/kimi-k2-thinking", False),
        ("qwen/qwen3-235b-a22b-2507", False),
    ],
)
def test_only_anthropic_and_gemini_need_an_explicit_breakpoint(model: str, explicit: bool) -> None:
    assert needs_cache_breakpoint(model) is explicit


def test_claude_gets_a_breakpoint_at_the_end_of_the_market_table_and_the_same_text(
    openrouter_server: ReplayServer,
) -> None:
    openrouter_server.route("POST", CHAT, _with_usage(CACHE_READ))
    messages = build_messages(SMALL)

    OpenRouterClient.from_settings().complete(
        model="anthropic/claude-opus-4.5", messages=messages, shared_prefix=shared_prefix(SMALL)
    )

    system, user = openrouter_server.requests_to(CHAT)[0].json()["messages"]
    assert system == messages[0]  # before the breakpoint, so part of the cached prefix
    shared, own = user["content"]
    assert shared == {
        "type": "text",
        "text": shared_prefix(SMALL),
        "cache_control": CACHE_CONTROL,
    }
    assert shared["text"].startswith("MARKETS:")
    assert own == {"type": "text", "text": messages[1]["content"][len(shared["text"]) :]}
    assert shared["text"] + own["text"] == messages[1]["content"]  # the text is unchanged
    # What the caller keeps (and the decision stores) is still plain text.
    assert isinstance(messages[1]["content"], str)


def test_two_agents_of_a_run_send_the_same_cached_part(openrouter_server: ReplayServer) -> None:
    openrouter_server.route("POST", CHAT, _with_usage(CACHE_WRITE), _with_usage(CACHE_READ))
    client = OpenRouterClient.from_settings()
    for context in (SMALL, OTHER_AGENT):
        client.complete(
            model="anthropic/claude-opus-4.5",
            messages=build_messages(context),
            shared_prefix=shared_prefix(context),
        )

    first, second = (r.json()["messages"] for r in openrouter_server.requests_to(CHAT))
    assert first[0] == second[0]
    assert first[1]["content"][0] == second[1]["content"][0]
    assert first[1]["content"][1] != second[1]["content"][1]


def test_a_retry_prompt_keeps_the_breakpoint_after_the_market_table(
    openrouter_server: ReplayServer,
) -> None:
    openrouter_server.route("POST", CHAT, _with_usage(CACHE_READ))
    messages = build_retry_messages(SMALL, invalid_response="{", error="not JSON")

    OpenRouterClient.from_settings().complete(
        model="google/gemini-3-pro-preview", messages=messages, shared_prefix=shared_prefix(SMALL)
    )

    user = openrouter_server.requests_to(CHAT)[0].json()["messages"][1]
    assert user["content"][0]["text"] == shared_prefix(SMALL)
    assert user["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert user["content"][1]["text"].endswith("with no other text.")


@pytest.mark.parametrize("model", ["openai/gpt-5.2", "deepseek/deepseek-v3.2"])
def test_providers_that_cache_by_themselves_get_the_messages_as_text(
    openrouter_server: ReplayServer, model: str
) -> None:
    openrouter_server.route("POST", CHAT, _with_usage(CACHE_READ))
    messages = build_messages(SMALL)

    OpenRouterClient.from_settings().complete(
        model=model, messages=messages, shared_prefix=shared_prefix(SMALL)
    )

    request = openrouter_server.requests_to(CHAT)[0]
    assert request.json()["messages"] == messages
    assert b"cache_control" not in request.body


def test_a_prefix_the_message_does_not_start_with_sets_no_breakpoint(
    openrouter_server: ReplayServer,
) -> None:
    openrouter_server.route("POST", CHAT, _with_usage(CACHE_READ))
    messages = build_messages(SMALL)

    OpenRouterClient.from_settings().complete(
        model="anthropic/claude-opus-4.5",
        messages=messages,
        shared_prefix=shared_prefix(OTHER_AGENT) + "not the table",
    )

    assert openrouter_server.requests_to(CHAT)[0].json()["messages"] == messages


def test_cache_read_and_write_tokens_are_read_from_the_usage(
    openrouter_server: ReplayServer,
) -> None:
    openrouter_server.route("POST", CHAT, _with_usage(CACHE_WRITE), _with_usage(CACHE_READ))
    client = OpenRouterClient.from_settings()
    messages = build_messages(SMALL)

    written = client.complete(model="anthropic/claude-opus-4.5", messages=messages)
    read = client.complete(model="anthropic/claude-opus-4.5", messages=messages)

    assert (written.prompt_tokens, written.cached_prompt_tokens, written.cache_write_tokens) == (
        5031,
        0,
        5004,
    )
    assert (read.prompt_tokens, read.cached_prompt_tokens, read.cache_write_tokens) == (
        5031,
        5004,
        0,
    )


def test_a_usage_without_cache_figures_reports_them_as_unknown_or_as_given(
    openrouter_server: ReplayServer,
) -> None:
    # The recorded Gemini answer says cached_tokens 0 and nothing about cache writes.
    openrouter_server.route("POST", CHAT, Reply(body=recording(OPENROUTER_RECORDINGS / OK)))
    completion = OpenRouterClient.from_settings().complete(
        model="google/gemini-3-flash-preview", messages=build_messages(SMALL)
    )
    assert completion.cached_prompt_tokens == 0
    assert completion.cache_write_tokens is None
