"""The OpenRouter client, end to end against a 127.0.0.1 server replaying real recordings.

Bodies come from the project's copies in agents/recordings/openrouter/ (see the shared data
README, section 3). Where no real recording exists, the test says how its body was made.
"""

from __future__ import annotations

import json
import socket
import time
from decimal import Decimal
from email.utils import formatdate
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings

from agents.clients import (
    Completion,
    OpenRouterAuthError,
    OpenRouterBadRequest,
    OpenRouterBadResponse,
    OpenRouterClient,
    OpenRouterConnectionError,
    OpenRouterCreditsError,
    OpenRouterError,
    OpenRouterNotConfigured,
    OpenRouterNotFound,
    OpenRouterRateLimited,
    OpenRouterTimeout,
    OpenRouterUpstreamError,
    _parse_retry_after,
)
from tests import hostile
from tests.profiles import example_count
from tests.replay import OPENROUTER_RECORDINGS, ReplayServer, Reply, recording

CHAT = "/chat/completions"
MODEL = "google/gemini-3-flash-preview"
MESSAGES = [
    {"role": "system", "content": "You are a forecaster."},
    {"role": "user", "content": "Decide this week's bets. Answer in JSON."},
]


def _recorded(name: str) -> bytes:
    return recording(OPENROUTER_RECORDINGS / name)


def _reply(name: str, status: int = 200, **kw: Any) -> Reply:
    return Reply(status=status, body=_recorded(name), **kw)


OK = "chat_completion_ok_json_content_with_reasoning.json"
OK_CONTENT = json.loads(_recorded(OK))["choices"][0]["message"]["content"]


def _complete(**kw: Any) -> Completion:
    return OpenRouterClient.from_settings().complete(model=MODEL, messages=MESSAGES, **kw)


def _fails(expected: type[OpenRouterError], **kw: Any) -> OpenRouterError:
    with pytest.raises(expected) as info:
        _complete(**kw)
    return info.value


def _with_content(content: str) -> bytes:
    """Return the real success recording with only `choices[0].message.content` replaced."""
    body = json.loads(_recorded(OK))
    body["choices"][0]["message"]["content"] = content
    return json.dumps(body, indent=2).encode()


# --- success --------------------------------------------------------------------------------


def test_success_returns_json_content_model_provider_tokens_and_exact_cost(
    openrouter_server: ReplayServer,
) -> None:
    openrouter_server.route("POST", CHAT, _reply(OK))

    completion = _complete()

    assert completion.text == OK_CONTENT
    assert json.loads(completion.text)["foo"] == [{"bar": 102}, {"bar": 27}]
    assert completion.used_reasoning is False
    assert completion.raw_body == _recorded(OK).decode()
    assert completion.requested_model == MODEL
    assert completion.response_model == "google/gemini-3-flash-preview"
    assert completion.provider == "Google"
    assert completion.generation_id == "gen-1766107352-qwhPp17HeXK7ivKFmPFa"
    assert completion.finish_reason == "stop"
    assert (completion.prompt_tokens, completion.completion_tokens) == (18, 1067)
    assert completion.reasoning_tokens == 826
    assert completion.cost == Decimal("0.00321")
    assert str(completion.cost) == "0.003210"  # exact, never through a float; 6 places
    assert completion.attempts == 1
    assert isinstance(completion.latency_ms, int)
    assert completion.latency_ms >= 0


def test_empty_content_cut_off_by_length_falls_back_to_reasoning_text(
    openrouter_server: ReplayServer,
) -> None:
    name = "chat_completion_length_empty_content_reasoning_only.json"
    openrouter_server.route("POST", CHAT, _reply(name))

    completion = _complete()

    reasoning = json.loads(_recorded(name))["choices"][0]["message"]["reasoning"]
    assert completion.used_reasoning is True
    assert completion.text == reasoning
    assert completion.finish_reason == "length"
    assert completion.provider == "AtlasCloud"
    assert completion.response_model == "openai/gpt-oss-20b:free"
    assert completion.reasoning_tokens == 397
    assert completion.cost == Decimal(0)


# No real OpenRouter body with fenced or prose-wrapped JSON content exists (shared data README
# §3a "Not found"), so these take the real success recording and replace only
# choices[0].message.content. The client must hand the text over untouched; parsing is not
# its job.
@pytest.mark.parametrize(
    "content",
    [
        f"```json\n{OK_CONTENT}\n```",
        f"Here is my decision for this week.\n\n{OK_CONTENT}\n\nLet me know if you need more.",
    ],
    ids=["fenced", "within-prose"],
)
def test_fenced_or_prose_wrapped_json_content_is_returned_verbatim(
    openrouter_server: ReplayServer, content: str
) -> None:
    body = _with_content(content)
    openrouter_server.route("POST", CHAT, Reply(body=body))

    completion = _complete()

    assert completion.text == content
    assert completion.used_reasoning is False
    assert completion.raw_body == body.decode()
    assert completion.cost == Decimal("0.00321")


# --- the request ----------------------------------------------------------------------------


def test_request_carries_model_messages_temperature_zero_and_usage_accounting(
    openrouter_server: ReplayServer,
) -> None:
    openrouter_server.route("POST", CHAT, _reply(OK))

    _complete()

    (request,) = openrouter_server.requests_to(CHAT)
    assert request.method == "POST"
    assert request.headers["authorization"] == "Bearer sk-or-test-key"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["x-title"] == "Forecaster Arena"
    sent = request.json()
    assert sent["model"] == MODEL
    assert sent["messages"] == MESSAGES
    assert sent["temperature"] == 0
    assert sent["max_tokens"] == 16000
    assert sent["usage"] == {"include": True}
    assert "provider" not in sent  # not pinned: OpenRouter routes freely
    assert "reasoning" not in sent


def test_pinned_provider_order_is_sent_without_fallbacks_with_reasoning_budget(
    openrouter_server: ReplayServer,
) -> None:
    openrouter_server.route("POST", CHAT, _reply(OK))

    _complete(provider_order=["google-vertex", "google-ai-studio"], reasoning_max_tokens=8000)

    sent = openrouter_server.requests_to(CHAT)[0].json()
    assert sent["provider"] == {
        "order": ["google-vertex", "google-ai-studio"],
        "allow_fallbacks": False,
    }
    assert sent["reasoning"] == {"max_tokens": 8000}


def test_client_refuses_to_build_without_an_api_key(settings: Any) -> None:
    settings.OPENROUTER_API_KEY = ""

    with pytest.raises(OpenRouterNotConfigured, match="OPENROUTER_API_KEY"):
        OpenRouterClient.from_settings()
    with pytest.raises(ValueError, match="OPENROUTER_API_KEY"):
        OpenRouterClient(base_url="http://127.0.0.1:9", api_key="  ")


# --- errors that are not retried ------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("error_401_no_auth_credentials.json", "No auth credentials found"),
        ("error_401_user_not_found.json", "User not found."),
    ],
)
def test_401_raises_auth_error_without_retrying(
    openrouter_server: ReplayServer, settings: Any, name: str, message: str
) -> None:
    settings.HTTP_MAX_RETRIES = 2
    openrouter_server.route("POST", CHAT, _reply(name, 401))

    error = _fails(OpenRouterAuthError)

    assert (error.status, error.code, error.message) == (401, 401, message)
    assert error.retryable is False
    assert error.raw_body == _recorded(name).decode()
    assert len(openrouter_server.requests_to(CHAT)) == 1


@pytest.mark.parametrize(
    ("name", "message_start"),
    [
        ("error_402_insufficient_credits.json", "Insufficient credits."),
        ("error_402_max_tokens_unaffordable.json", "This request requires more credits"),
    ],
)
def test_402_raises_credits_error_without_retrying(
    openrouter_server: ReplayServer, settings: Any, name: str, message_start: str
) -> None:
    settings.HTTP_MAX_RETRIES = 2
    openrouter_server.route("POST", CHAT, _reply(name, 402))

    error = _fails(OpenRouterCreditsError)

    assert (error.status, error.code) == (402, 402)
    assert error.message.startswith(message_start)
    assert error.provider_name is None
    assert error.retryable is False
    assert len(openrouter_server.requests_to(CHAT)) == 1


def test_400_invalid_model_id_raises_bad_request(
    openrouter_server: ReplayServer, settings: Any
) -> None:
    settings.HTTP_MAX_RETRIES = 2
    openrouter_server.route("POST", CHAT, _reply("error_400_invalid_model_id.json", 400))

    error = _fails(OpenRouterBadRequest)

    assert (error.status, error.code) == (400, 400)
    assert error.message == "minimax-m2.5:free is not a valid model ID"
    assert error.retryable is False
    assert len(openrouter_server.requests_to(CHAT)) == 1


def test_400_in_newer_documented_shape_has_string_code_and_error_type(
    openrouter_server: ReplayServer,
) -> None:
    # A documentation example, not recorded traffic: no numeric error.code.
    openrouter_server.route("POST", CHAT, _reply("docs_example_400_model_not_found.json", 400))

    error = _fails(OpenRouterBadRequest)

    assert error.status == 400
    assert error.code == "model_not_found"
    assert error.error_type == "invalid_request"
    assert error.message == "acme/fake-1.0 is not a valid model ID"
    assert error.metadata["availability"]["requested_models"] == ["acme/fake-1.0"]


def test_400_provider_returned_error_names_the_provider(
    openrouter_server: ReplayServer,
) -> None:
    openrouter_server.route("POST", CHAT, _reply("error_400_provider_returned_error.json", 400))

    error = _fails(OpenRouterBadRequest)

    assert error.message == "Provider returned error"
    assert error.provider_name == "Crucible"
    assert "supports at most 1 image per prompt" in error.metadata["raw"]
    assert "Crucible" in str(error)
    assert len(openrouter_server.requests_to(CHAT)) == 1


def test_404_no_allowed_providers_raises_not_found(
    openrouter_server: ReplayServer, settings: Any
) -> None:
    settings.HTTP_MAX_RETRIES = 2
    openrouter_server.route("POST", CHAT, _reply("error_404_no_allowed_providers.json", 404))

    error = _fails(OpenRouterNotFound, provider_order=["anthropic"])

    assert (error.status, error.code) == (404, 404)
    assert error.metadata["requested_providers"] == ["anthropic"]
    assert error.metadata["available_providers"] == ["z-ai"]
    assert error.retryable is False
    assert len(openrouter_server.requests_to(CHAT)) == 1


# --- retried errors -------------------------------------------------------------------------


def test_429_with_retry_after_header_waits_that_long_then_succeeds(
    openrouter_server: ReplayServer, settings: Any
) -> None:
    settings.HTTP_MAX_RETRIES = 2
    settings.HTTP_RETRY_AFTER_CAP_SECONDS = 5
    openrouter_server.route(
        "POST",
        CHAT,
        _reply("error_429_upstream_rate_limited.json", 429, headers={"Retry-After": "1"}),
        _reply(OK),
    )

    started = time.monotonic()
    completion = _complete()
    elapsed = time.monotonic() - started

    assert completion.text == OK_CONTENT
    assert completion.attempts == 2
    assert len(openrouter_server.requests_to(CHAT)) == 2
    assert elapsed >= 0.95  # the header's 1 s, not the 0.01 s backoff
    assert completion.latency_ms >= 950  # the whole call, the wait included


def test_429_retry_after_in_documented_body_is_read_and_reported(
    openrouter_server: ReplayServer, settings: Any
) -> None:
    # A documentation example, not recorded traffic: retry_after is in the body.
    settings.HTTP_MAX_RETRIES = 0
    openrouter_server.route("POST", CHAT, _reply("docs_example_429_capacity_exhausted.json", 429))

    error = _fails(OpenRouterRateLimited)

    assert error.status == 429
    assert error.retry_after == 40
    assert error.code == "capacity_exhausted"
    assert error.error_type == "rate_limit_exceeded"
    assert error.retryable is True
    assert error.attempts == 1
    assert len(error.metadata["previous_errors"]) == 2


def test_429_body_retry_after_wait_is_capped(
    openrouter_server: ReplayServer, settings: Any
) -> None:
    settings.HTTP_MAX_RETRIES = 1
    settings.HTTP_RETRY_AFTER_CAP_SECONDS = 0.2
    openrouter_server.route(
        "POST", CHAT, _reply("docs_example_429_capacity_exhausted.json", 429), _reply(OK)
    )

    started = time.monotonic()
    completion = _complete()
    elapsed = time.monotonic() - started

    assert completion.attempts == 2
    assert 0.2 <= elapsed < 5  # capped at 0.2 s, not the 40 s the body asks for


def test_429_without_retry_after_backs_off_and_gives_up(
    openrouter_server: ReplayServer, settings: Any
) -> None:
    settings.HTTP_MAX_RETRIES = 2
    openrouter_server.route("POST", CHAT, _reply("docs_example_429_typed_provider_error.json", 429))

    error = _fails(OpenRouterRateLimited)

    assert (error.status, error.code, error.error_type) == (429, 429, "rate_limit_exceeded")
    assert error.retry_after is None
    assert error.attempts == 3
    assert len(openrouter_server.requests_to(CHAT)) == 3


# No real OpenRouter 5xx body was recorded: these are the real error shape with the status
# put in, and a gateway's HTML page, which is what a proxy in front of it sends.
@pytest.mark.parametrize(
    ("status", "body"),
    [
        (502, b'{"error":{"message":"Provider returned error","code":502}}'),
        (503, b'{"error":{"message":"No provider meets the routing requirements","code":503}}'),
        (500, b"<html><body>Internal Server Error</body></html>"),
        (408, b'{"error":{"message":"Request timed out","code":408}}'),
    ],
)
def test_5xx_and_408_are_retried_until_giving_up(
    openrouter_server: ReplayServer, settings: Any, status: int, body: bytes
) -> None:
    settings.HTTP_MAX_RETRIES = 2
    openrouter_server.route("POST", CHAT, Reply(status=status, body=body))

    error = _fails(OpenRouterUpstreamError)

    assert error.status == status
    assert error.retryable is True
    assert error.attempts == 3
    assert error.raw_body == body.decode()
    assert len(openrouter_server.requests_to(CHAT)) == 3


def test_502_then_success_returns_the_completion(
    openrouter_server: ReplayServer, settings: Any
) -> None:
    settings.HTTP_MAX_RETRIES = 2
    openrouter_server.route(
        "POST",
        CHAT,
        Reply.json({"error": {"message": "Bad gateway", "code": 502}}, 502),
        _reply(OK),
    )

    assert _complete().attempts == 2


def test_200_with_finish_reason_error_in_choices_raises_upstream_error(
    openrouter_server: ReplayServer, settings: Any
) -> None:
    # A documentation example, not recorded traffic.
    settings.HTTP_MAX_RETRIES = 1
    openrouter_server.route("POST", CHAT, _reply("docs_example_provider_error_in_choices.json"))

    error = _fails(OpenRouterUpstreamError)

    assert error.status == 502
    assert error.message == "Provider disconnected mid-stream"
    assert error.error_type == "provider_unavailable"
    assert error.attempts == 2
    assert len(openrouter_server.requests_to(CHAT)) == 2


def test_200_with_top_level_error_raises_upstream_error(
    openrouter_server: ReplayServer, settings: Any
) -> None:
    # A documentation example (an SSE chunk's payload) served as a whole 200 body.
    settings.HTTP_MAX_RETRIES = 0
    openrouter_server.route("POST", CHAT, _reply("docs_example_midstream_error_chunk.json"))

    error = _fails(OpenRouterUpstreamError)

    assert (error.status, error.code) == (429, 429)
    assert error.message == "Rate limit exceeded"
    assert error.provider_name == "OpenAI"


def test_read_timeout_is_retried_then_raises_timeout(
    openrouter_server: ReplayServer, settings: Any
) -> None:
    settings.HTTP_READ_TIMEOUT = 0.3
    settings.HTTP_MAX_RETRIES = 1
    openrouter_server.route("POST", CHAT, _reply(OK, delay=1.0))

    started = time.monotonic()
    error = _fails(OpenRouterTimeout)

    assert time.monotonic() - started < 2.5
    assert error.retryable is True
    assert error.attempts == 2
    assert len(openrouter_server.requests_to(CHAT)) == 2


def test_read_timeout_then_answer_returns_the_completion(
    openrouter_server: ReplayServer, settings: Any
) -> None:
    settings.HTTP_READ_TIMEOUT = 0.3
    settings.HTTP_MAX_RETRIES = 1
    openrouter_server.route("POST", CHAT, _reply(OK, delay=1.0), _reply(OK))

    completion = _complete()

    assert completion.attempts == 2
    assert completion.text == OK_CONTENT


def test_truncated_json_body_raises_bad_response(
    openrouter_server: ReplayServer, settings: Any
) -> None:
    # The real success recording cut in half (served with a matching Content-Length).
    settings.HTTP_MAX_RETRIES = 1
    truncated = _recorded(OK)[: len(_recorded(OK)) // 2]
    openrouter_server.route("POST", CHAT, Reply(body=truncated))

    error = _fails(OpenRouterBadResponse)

    assert error.status == 200
    assert error.raw_body == truncated.decode()
    assert error.attempts == 2
    assert len(openrouter_server.requests_to(CHAT)) == 2


def test_body_without_choices_raises_bad_response(
    openrouter_server: ReplayServer, settings: Any
) -> None:
    settings.HTTP_MAX_RETRIES = 0
    body = json.loads(_recorded(OK))
    del body["choices"]
    openrouter_server.route("POST", CHAT, Reply.json(body))

    error = _fails(OpenRouterBadResponse, max_tokens=100)

    assert "no choices" in error.message


def test_refused_connection_is_retried_then_raises_connection_error(settings: Any) -> None:
    with socket.socket() as sock:  # a port that was free a moment ago and has no listener
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings.OPENROUTER_BASE_URL = f"http://127.0.0.1:{port}"
    settings.OPENROUTER_API_KEY = "sk-or-test-key"
    settings.HTTP_MAX_RETRIES = 1

    error = _fails(OpenRouterConnectionError)

    assert error.retryable is True
    assert error.attempts == 2


@pytest.mark.parametrize(
    ("header", "expected"),
    [("1", 1.0), ("0", 0.0), (" 2.5 ", 2.5), ("-3", 0.0)],
)
def test_retry_after_header_in_seconds_is_read(header: str, expected: float) -> None:
    assert _parse_retry_after(header) == expected


def test_retry_after_header_as_http_date_is_read_as_seconds_from_now() -> None:
    ahead = _parse_retry_after(formatdate(time.time() + 30, usegmt=True))
    past = _parse_retry_after(formatdate(time.time() - 30, usegmt=True))

    assert ahead is not None
    assert 28.0 <= ahead <= 30.0  # HTTP-dates have whole seconds
    assert past == 0.0


@pytest.mark.parametrize("header", [None, "", "soon"])
def test_unreadable_retry_after_header_is_ignored(header: str | None) -> None:
    assert _parse_retry_after(header) is None


# --- hostile bodies: a Completion or a typed error, nothing else ---------------------------


def _with_usage(**usage: str) -> Reply:
    """The real success recording with `usage` replaced by JSON tokens written as they are."""
    body = json.loads(_recorded(OK))
    body["usage"] = {key: hostile.Raw(token) for key, token in usage.items()}
    return Reply(body=hostile.encode(body))


TOKEN_COUNTS_NO_COLUMN_HOLDS = [
    "-1", "-2147483648", "2147483648", "1e999999", "1E+99999999999999999999", "9" * 5000,
    "18.5", "NaN", "Infinity", '"18"', "true", "null", "[18]", "{}",
]  # fmt: skip


@pytest.mark.parametrize("tokens", TOKEN_COUNTS_NO_COLUMN_HOLDS)
def test_usage_token_counts_a_column_cannot_hold_are_reported_as_none(
    openrouter_server: ReplayServer, tokens: str
) -> None:
    details = {"reasoning_tokens": hostile.Raw(tokens)}
    body = json.loads(_recorded(OK))
    body["usage"] = {
        "prompt_tokens": hostile.Raw(tokens),
        "completion_tokens": hostile.Raw(tokens),
        "completion_tokens_details": details,
    }
    openrouter_server.route("POST", CHAT, Reply(body=hostile.encode(body)))

    started = time.monotonic()
    completion = _complete()

    assert completion.text == OK_CONTENT  # the answer itself is still usable
    assert completion.prompt_tokens is None
    assert completion.completion_tokens is None
    assert completion.reasoning_tokens is None
    assert time.monotonic() - started < 2  # 1e999999 is never turned into a 1,000,000-digit int


@pytest.mark.parametrize(
    ("tokens", "expected"), [("0", 0), ("-0", 0), ("2147483647", 2147483647), ("18.0", 18)]
)
def test_usage_token_counts_from_0_to_2147483647_are_kept(
    openrouter_server: ReplayServer, tokens: str, expected: int
) -> None:
    openrouter_server.route("POST", CHAT, _with_usage(prompt_tokens=tokens))

    assert _complete().prompt_tokens == expected


@pytest.mark.parametrize(
    "cost",
    [
        "-1", "-0.000001", "1000000", "999999.9999995", "1e30", "1e999999",
        "1E+99999999999999999999", "9" * 5000, "NaN", "Infinity", "-Infinity", '"0.00321"',
        "true", "null", "[0.1]", "{}",
    ],
)  # fmt: skip
def test_usage_cost_that_is_negative_not_finite_too_large_or_not_a_number_is_reported_as_none(
    openrouter_server: ReplayServer, cost: str
) -> None:
    openrouter_server.route("POST", CHAT, _with_usage(cost=cost, prompt_tokens="18"))

    completion = _complete()

    assert completion.cost is None
    assert completion.prompt_tokens == 18
    assert completion.text == OK_CONTENT


@pytest.mark.parametrize(
    ("cost", "expected"),
    [
        ("0", "0.000000"),
        ("-0.0", "0.000000"),
        ("0.0000004", "0.000000"),
        ("0.0000015", "0.000002"),
        ("0.0000025", "0.000002"),
        ("1e-999999", "0.000000"),
        ("12", "12.000000"),
        ("999999.999999", "999999.999999"),
    ],
)
def test_usage_cost_is_quantized_to_6_places(
    openrouter_server: ReplayServer, cost: str, expected: str
) -> None:
    openrouter_server.route("POST", CHAT, _with_usage(cost=cost))

    assert str(_complete().cost) == expected


@pytest.mark.parametrize("usage", [[], "free", 0, None])
def test_usage_that_is_not_an_object_reports_no_figures(
    openrouter_server: ReplayServer, usage: Any
) -> None:
    body = json.loads(_recorded(OK))
    body["usage"] = usage
    openrouter_server.route("POST", CHAT, Reply.json(body))

    completion = _complete()

    assert (completion.prompt_tokens, completion.completion_tokens, completion.cost) == (
        None,
        None,
        None,
    )


def _shaped(path: tuple[Any, ...], value: Any) -> bytes:
    body: Any = json.loads(_recorded(OK))
    if not path:
        return hostile.encode(value)
    target = body
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return hostile.encode(body)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(_shaped((), []), id="a-list"),
        pytest.param(_shaped((), "completion"), id="a-string"),
        pytest.param(_shaped((), 42), id="a-number"),
        pytest.param(_shaped((), None), id="null"),
        pytest.param(_shaped(("choices",), {"0": {}}), id="choices-an-object"),
        pytest.param(_shaped(("choices",), "x"), id="choices-a-string"),
        pytest.param(_shaped(("choices",), []), id="choices-empty"),
        pytest.param(_shaped(("choices",), [None]), id="choice-null"),
        pytest.param(_shaped(("choices", 0, "message"), "text"), id="message-a-string"),
        pytest.param(_shaped(("choices", 0, "message"), ["x"]), id="message-a-list"),
        pytest.param(_shaped(("choices", 0, "message"), None), id="message-null"),
        pytest.param(_shaped(("choices",), [{"finish_reason": "stop"}]), id="message-missing"),
        pytest.param(_shaped(("choices", 0, "message", "content"), 5), id="content-a-number"),
        pytest.param(
            _shaped(("choices", 0, "message", "content"), {"text": "x"}), id="content-an-object"
        ),
        pytest.param(_shaped(("choices", 0, "message", "content"), True), id="content-true"),
        pytest.param(hostile.HTML_PAGE, id="html-error-page"),
        pytest.param(b"", id="empty"),
        pytest.param(b"[" * hostile.DEEP, id="deep-nesting"),
        pytest.param(b'{"choices": [{"message": {"content": "x\x00"}}]}', id="raw-nul-byte"),
        pytest.param(b"\x00" * 64, id="nul-bytes"),
        pytest.param(_recorded(OK)[:1000], id="truncated"),
    ],
)
def test_200_body_that_is_not_a_usable_completion_raises_bad_response(
    openrouter_server: ReplayServer, settings: Any, body: bytes
) -> None:
    settings.HTTP_MAX_RETRIES = 0
    openrouter_server.route("POST", CHAT, Reply(body=body))

    error = _fails(OpenRouterBadResponse)

    assert error.status == 200
    assert error.retryable is True
    assert error.raw_body == body.decode("utf-8", errors="replace")


def test_null_content_falls_back_to_the_reasoning_text(openrouter_server: ReplayServer) -> None:
    body = json.loads(_recorded(OK))
    body["choices"][0]["message"]["content"] = None
    openrouter_server.route("POST", CHAT, Reply.json(body))

    completion = _complete()

    assert completion.used_reasoning is True
    assert completion.text == body["choices"][0]["message"]["reasoning"]


def test_null_content_without_reasoning_is_an_empty_answer(
    openrouter_server: ReplayServer,
) -> None:
    body = json.loads(_recorded(OK))
    message = body["choices"][0]["message"]
    message["content"] = None
    del message["reasoning"], message["reasoning_details"]
    openrouter_server.route("POST", CHAT, Reply.json(body))

    completion = _complete()

    assert (completion.text, completion.used_reasoning) == ("", False)


def test_content_as_a_list_of_parts_is_read_as_their_text_in_order(
    openrouter_server: ReplayServer,
) -> None:
    parts = [
        {"type": "text", "text": '{"action": "HOLD", '},
        {"type": "image_url", "image_url": {"url": "http://127.0.0.1/x.png"}},
        '"reasoning": ',
        {"type": "text", "text": 5},
        None,
        {"type": "text", "text": '"Nothing to do."}'},
    ]
    openrouter_server.route("POST", CHAT, Reply(body=_with_content_value(parts)))

    completion = _complete()

    assert completion.text == '{"action": "HOLD", "reasoning": "Nothing to do."}'


def _with_content_value(content: Any) -> bytes:
    body = json.loads(_recorded(OK))
    body["choices"][0]["message"]["content"] = content
    return json.dumps(body).encode()


def test_nul_and_lone_surrogate_escapes_in_content_are_returned_as_they_are(
    openrouter_server: ReplayServer,
) -> None:
    content = 'nul \x00, lone \ud800 and \udfff, a pair \ud83d\ude00 {"action": "HOLD"}'
    body = _with_content_value(content)
    assert b"\\u0000" in body  # JSON escapes, as a provider sends them
    assert b"\\ud800" in body
    openrouter_server.route("POST", CHAT, Reply(body=body))

    completion = _complete()

    assert completion.text == content.replace("\ud83d\ude00", "\U0001f600")
    assert completion.raw_body == body.decode()


def test_one_megabyte_body_is_read_whole(openrouter_server: ReplayServer) -> None:
    content = "Let me think. " * 75_000 + OK_CONTENT
    body = _with_content_value(content)
    assert len(body) > 1_000_000
    openrouter_server.route("POST", CHAT, Reply(body=body))

    completion = _complete()

    assert completion.text == content
    assert completion.cost == Decimal("0.00321")


def test_numbers_no_decimal_can_hold_in_a_body_are_left_out_not_raised(
    openrouter_server: ReplayServer,
) -> None:
    body = _recorded(OK).replace(b'"created": 1766107352', b'"created": 1E+99999999999999999999')
    body = body.replace(b'"cost": 0.00321', b'"cost": -1E+99999999999999999999')
    body = body.replace(b'"prompt_tokens": 18,', b'"prompt_tokens": ' + b"9" * 5000 + b",")
    openrouter_server.route("POST", CHAT, Reply(body=body))

    completion = _complete()

    assert completion.text == OK_CONTENT
    assert (completion.cost, completion.prompt_tokens) == (None, None)


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (200, OpenRouterBadResponse),
        (404, OpenRouterNotFound),
        (429, OpenRouterRateLimited),
        (500, OpenRouterUpstreamError),
        (502, OpenRouterUpstreamError),
        (503, OpenRouterUpstreamError),
    ],
)
def test_html_error_page_raises_the_typed_error_of_its_status(
    openrouter_server: ReplayServer, settings: Any, status: int, expected: type[OpenRouterError]
) -> None:
    settings.HTTP_MAX_RETRIES = 0
    page = Reply(status=status, body=hostile.HTML_PAGE, content_type="text/html")
    openrouter_server.route("POST", CHAT, page)

    error = _fails(expected)

    assert error.status == status
    assert error.raw_body == hostile.HTML_PAGE.decode()


@pytest.mark.parametrize(
    "body",
    [
        b'{"error": ' + b"{" * 5000,
        b"[" * hostile.DEEP,
        b'{"error": {"message": "x", "code": 1e999999}}',
        b'{"error": {"message": "x", "code": ' + b"9" * 5000 + b"}}",
        b'{"error": {"message": "x", "code": 1E+99999999999999999999}}',
        b'{"error": {"availability": {"retry_after": 1e999999}}}',
    ],
)
@pytest.mark.parametrize("status", [200, 429, 503])
def test_error_body_with_deep_nesting_or_huge_numbers_raises_the_typed_error_of_its_status(
    openrouter_server: ReplayServer, settings: Any, status: int, body: bytes
) -> None:
    settings.HTTP_MAX_RETRIES = 0
    openrouter_server.route("POST", CHAT, Reply(status=status, body=body))

    started = time.monotonic()
    with pytest.raises(OpenRouterError) as info:
        _complete()

    assert info.value.status is None or abs(info.value.status) < 10**18
    assert str(info.value)
    assert time.monotonic() - started < 2


def test_body_announced_as_gzip_that_is_not_raises_connection_error(
    openrouter_server: ReplayServer, settings: Any
) -> None:
    settings.HTTP_MAX_RETRIES = 0
    reply = Reply(body=_recorded(OK), headers={"Content-Encoding": "gzip"})
    openrouter_server.route("POST", CHAT, reply)

    _fails(OpenRouterConnectionError)


CLIENT_TARGETS = hostile.Targets(
    binary_ids=("517310", "559687"),
    multi=(("1340471", ("Up", "Down")),),
    position_ids=("1", "2"),
    foreign_position_ids=("3",),
)


def test_any_hostile_response_yields_a_completion_or_a_typed_error(
    openrouter_server: ReplayServer, settings: Any
) -> None:
    settings.HTTP_MAX_RETRIES = 0

    @hypothesis_settings(
        max_examples=example_count(250),
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
        ],
    )
    @given(reply=hostile.responses(CLIENT_TARGETS))
    def examples(reply: Reply) -> None:
        openrouter_server.route("POST", CHAT, reply)
        try:  # a new client (and connection) each time, as the engine does
            completion: Completion | OpenRouterError = _complete()
        except OpenRouterError as error:  # any other exception fails the test
            completion = error
        if isinstance(completion, OpenRouterError):
            assert str(completion)
            return
        assert isinstance(completion.text, str)
        for tokens in (
            completion.prompt_tokens,
            completion.completion_tokens,
            completion.reasoning_tokens,
        ):
            assert tokens is None or 0 <= tokens <= 2_147_483_647
        cost = completion.cost
        assert cost is None or (0 <= cost < 1_000_000 and cost.as_tuple().exponent == -6)

    examples()
