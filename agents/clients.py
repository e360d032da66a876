"""OpenRouter's chat-completions API: the one upstream of `agents`, and its only `requests` user.

`OpenRouterClient.complete()` sends one chat completion (temperature 0, usage accounting on,
optionally pinned to providers with no fallbacks, optionally with a prompt-cache breakpoint)
and returns a frozen `Completion`, or raises a typed `OpenRouterError`. Transient failures
(429, 408, 5xx, timeouts, dropped connections, error bodies served with 200, unreadable
bodies) are retried here with exponential backoff, honouring Retry-After; the caller sees the
typed error only after the last attempt.

A request is its messages and its parameters (`request_parameters`: every other field of the
body, and where the cache breakpoint goes); `request_body` rebuilds the body from the two, so
a request stored that way can be sent again exactly as it was (`OpenRouterClient.send`).

Error bodies come in two shapes and both are read: the one OpenRouter really sends,
`{"error": {"message", "code", "metadata"}, "user_id"}`, and the newer documented one with
`error_type`, `http_status` and `availability` and no numeric `code`.

This module imports neither `arena` nor the project package; settings are read only by
`OpenRouterClient.from_settings()`, when it is called.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from email.utils import parsedate_to_datetime
from typing import Any

import requests

__all__ = [
    "CACHE_BREAKPOINT",
    "Completion",
    "OpenRouterAuthError",
    "OpenRouterBadRequest",
    "OpenRouterBadResponse",
    "OpenRouterClient",
    "OpenRouterConnectionError",
    "OpenRouterCreditsError",
    "OpenRouterError",
    "OpenRouterNotConfigured",
    "OpenRouterNotFound",
    "OpenRouterRateLimited",
    "OpenRouterTimeout",
    "OpenRouterUpstreamError",
    "request_body",
    "request_parameters",
]

DEFAULT_APP_NAME = "Forecaster Arena"


@dataclass(frozen=True)
class Completion:
    """One successful chat completion, as OpenRouter reported it.

    `text` is what the decision parser reads: `message.content`, or, when the content is
    empty and the model only produced reasoning (e.g. cut off by max_tokens), the reasoning
    text, with `used_reasoning=True`. `raw_body` is the whole response body as received, kept
    as evidence. `cost` is USD, exact to 6 places (parsed from the JSON text, never through a
    float). Token counts and cost are None when the body has none a column could store.
    `latency_ms` covers the whole call, retries and their waits included; `attempts` counts
    the HTTP requests made.
    """

    text: str
    used_reasoning: bool
    raw_body: str
    requested_model: str
    response_model: str | None
    provider: str | None
    generation_id: str | None
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    reasoning_tokens: int | None
    cost: Decimal | None
    latency_ms: int
    attempts: int
    # Of `prompt_tokens`: read from the provider's prompt cache, and written to it (None when
    # the body does not say). `usage.prompt_tokens_details.cached_tokens` / `cache_write_tokens`.
    cached_prompt_tokens: int | None = None
    cache_write_tokens: int | None = None


# --- errors -------------------------------------------------------------------------------


class OpenRouterError(Exception):
    """A failed OpenRouter call.

    `status` is the HTTP status (or, for an error carried in a 200 body, the code inside it);
    `code` is the body's `error.code` (an int in real bodies) or, in the newer documented
    shape, the `availability.code` / `error_type` string. `retryable` says whether trying the
    same request again may succeed; this client has already retried those itself, `attempts`
    times in all. `raw_body` is the response body as received ("" when there was none).
    """

    default_retryable = False

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: int | str | None = None,
        error_type: str | None = None,
        provider_name: str | None = None,
        metadata: dict[str, Any] | None = None,
        raw_body: str = "",
        retry_after: float | None = None,
        retryable: bool | None = None,
        attempts: int = 0,
    ) -> None:
        self.message = message
        self.status = status
        self.code = code
        self.error_type = error_type
        self.provider_name = provider_name
        self.metadata: dict[str, Any] = metadata if metadata is not None else {}
        self.raw_body = raw_body
        self.retry_after = retry_after
        self.retryable = self.default_retryable if retryable is None else retryable
        self.attempts = attempts
        where = f"HTTP {status}" if status is not None else "no status"
        by = f" (provider {provider_name})" if provider_name else ""
        super().__init__(f"OpenRouter {where}: {message}{by}")


class OpenRouterAuthError(OpenRouterError):
    """401: the key is missing, invalid or unknown ("No auth credentials found")."""


class OpenRouterNotConfigured(OpenRouterAuthError, ValueError):
    """No API key was configured, so no client could be built (nothing was sent)."""


class OpenRouterCreditsError(OpenRouterError):
    """402: the account cannot pay for the request (no credits, or max_tokens unaffordable)."""


class OpenRouterBadRequest(OpenRouterError):
    """400 (and other unretryable 4xx such as 403 moderation): invalid model id, or the
    provider rejected the request ("Provider returned error", see `provider_name`)."""


class OpenRouterNotFound(OpenRouterError):
    """404: e.g. no allowed providers are available for the model with the pinned order."""


class OpenRouterRateLimited(OpenRouterError):
    """429: rate limited or out of capacity; `retry_after` (seconds) if header or body gave it."""

    default_retryable = True


class OpenRouterUpstreamError(OpenRouterError):
    """5xx or 408, or a 200 body reporting an error (top-level `error`, or
    `choices[0].finish_reason == "error"`): the model or its provider failed."""

    default_retryable = True


class OpenRouterTimeout(OpenRouterError):
    """No answer within the connect or read timeout."""

    default_retryable = True


class OpenRouterConnectionError(OpenRouterError):
    """The connection failed or dropped before a whole response arrived."""

    default_retryable = True


class OpenRouterBadResponse(OpenRouterError):
    """A body that cannot be read as a completion: not JSON, truncated, without choices, or
    whose message is not an object or whose content is neither text nor a list of parts."""

    default_retryable = True


def _error_class_for(status: int) -> type[OpenRouterError]:
    if status == 400:
        return OpenRouterBadRequest
    if status == 401:
        return OpenRouterAuthError
    if status == 402:
        return OpenRouterCreditsError
    if status == 404:
        return OpenRouterNotFound
    if status == 429:
        return OpenRouterRateLimited
    if status == 408 or status >= 500:
        return OpenRouterUpstreamError
    if 400 <= status < 500:
        return OpenRouterBadRequest
    return OpenRouterBadResponse  # 1xx/3xx: not an answer we can use


MAX_TOKEN_COUNT = 2_147_483_647
"""The most tokens a usage figure may report (the columns are PositiveIntegerFields)."""
MAX_COST = Decimal("1000000")
"""A reported cost, in USD, must be under this (the columns are Decimal(12, 6))."""
COST_PLACES = Decimal("0.000001")
_INT_DIGITS = 18  # an integer field of a body (a status, a code) has fewer digits than this


def _json_number(text: str) -> Decimal | float:
    """Return a JSON number with a fraction or exponent as an exact Decimal.

    One past Decimal's exponent limits (1E+99999999999999999999) becomes a float, infinite or
    zero, which no field of a completion accepts: a hostile number never makes reading raise.
    """
    try:
        return Decimal(text)
    except InvalidOperation:
        return float(text)


def _json_int(text: str) -> int | Decimal | float:
    """Return a JSON integer as an int, or as a Decimal when it has too many digits for one."""
    try:
        return int(text)
    except ValueError:  # more digits than sys.get_int_max_str_digits()
        return _json_number(text)


def _load_json(raw_body: str) -> Any:
    """Return the JSON value of a body; raise ValueError if it is not JSON we can read.

    Numbers are exact (never through a float); nesting too deep for the parser is a
    ValueError too, like any other unreadable body.
    """
    try:
        return json.loads(raw_body, parse_float=_json_number, parse_int=_json_int)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _as_int(value: Any) -> int | None:
    """Return a JSON integer (or an integral Decimal) of ordinary size, else None.

    Converting a Decimal such as 1E+999999 to an int would take most of a minute; its
    magnitude is checked first.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if abs(value) < 10**_INT_DIGITS else None
    if (
        isinstance(value, Decimal)
        and value.is_finite()
        and (value.is_zero() or value.adjusted() < _INT_DIGITS)
        and value == value.to_integral_value()
    ):
        return int(value)
    return None


def _token_count(value: Any) -> int | None:
    """Return a usage token count: an integer from 0 to MAX_TOKEN_COUNT, else None."""
    count = _as_int(value)
    return count if count is not None and 0 <= count <= MAX_TOKEN_COUNT else None


def _usage_cost(value: Any) -> Decimal | None:
    """Return a usage cost in USD: a JSON number, finite, ≥ 0 and under MAX_COST, quantized
    to COST_PLACES (half-even); anything else (a string, a float NaN, -1, 1E+30) is None."""
    if isinstance(value, bool) or not isinstance(value, int | Decimal):
        return None
    cost = Decimal(value)
    if not cost.is_finite() or cost < 0 or cost >= MAX_COST:
        return None
    cost = cost.quantize(COST_PLACES, rounding=ROUND_HALF_EVEN)
    if cost >= MAX_COST:  # 999999.9999999 rounds up to the bound
        return None
    return abs(cost)  # -0 is 0


def _as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _seconds(value: Any) -> float | None:
    """Return a non-negative number of seconds from a JSON number, or None."""
    if isinstance(value, bool) or not isinstance(value, int | Decimal | float):
        return None
    seconds = float(value)
    return seconds if seconds >= 0 else None


def _parse_retry_after(header: str | None) -> float | None:
    """Return the wait a Retry-After header asks for, in seconds (delta-seconds or HTTP-date)."""
    if not header:
        return None
    header = header.strip()
    try:
        return max(0.0, float(header))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(header)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # an HTTP-date is always GMT
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _error_from_object(
    error: Any,
    *,
    cls: type[OpenRouterError],
    status: int | None,
    raw_body: str,
    retry_after: float | None = None,
    provider_name: str | None = None,
) -> OpenRouterError:
    """Build a typed error from a body's `error` value, in either documented shape."""
    if isinstance(error, str):
        return cls(error, status=status, raw_body=raw_body, retry_after=retry_after)
    error = _as_dict(error)
    metadata = _as_dict(error.get("metadata"))
    availability = _as_dict(error.get("availability"))
    error_type = _as_str(error.get("error_type")) or _as_str(metadata.get("error_type"))
    code: int | str | None = _as_int(error.get("code"))
    if code is None:
        code = _as_str(error.get("code")) or _as_str(availability.get("code")) or error_type
    if retry_after is None:  # the header wins; the newer body shape may carry its own
        for value in (availability.get("retry_after"), metadata.get("retry_after")):
            retry_after = _seconds(value)
            if retry_after is not None:
                break
    if availability:
        metadata = {**metadata, "availability": availability}
    return cls(
        _as_str(error.get("message")) or "(no message)",
        status=status,
        code=code,
        error_type=error_type,
        provider_name=_as_str(metadata.get("provider_name")) or provider_name,
        metadata=metadata,
        raw_body=raw_body,
        retry_after=retry_after,
    )


def _error_from_http(response: requests.Response, raw_body: str) -> OpenRouterError:
    """Build the typed error for a non-200 response."""
    cls = _error_class_for(response.status_code)
    retry_after = _parse_retry_after(response.headers.get("Retry-After"))
    try:
        body = _load_json(raw_body)
    except ValueError:
        body = None
    if isinstance(body, dict) and "error" in body:
        return _error_from_object(
            body["error"],
            cls=cls,
            status=response.status_code,
            raw_body=raw_body,
            retry_after=retry_after,
        )
    snippet = raw_body.strip()[:200] or response.reason or "(empty body)"
    return cls(snippet, status=response.status_code, raw_body=raw_body, retry_after=retry_after)


# --- reading a completion -------------------------------------------------------------------


def _message_text(value: Any) -> str | None:
    """Return the text of `message.content`: a string, the text of a list of parts (typed
    parts' `text`, or plain strings), "" for null; None when it is none of those."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, list):
        parts = [
            part if isinstance(part, str) else _as_str(_as_dict(part).get("text")) or ""
            for part in value
        ]
        return "".join(parts)
    return None


def _reasoning_text(message: dict[str, Any]) -> str:
    """Return the model's readable reasoning: `message.reasoning`, else its text details."""
    reasoning = _as_str(message.get("reasoning")) or ""
    if reasoning.strip():
        return reasoning
    details = message.get("reasoning_details")
    if isinstance(details, list):
        texts = [
            _as_str(_as_dict(d).get("text")) or _as_str(_as_dict(d).get("summary")) or ""
            for d in details
        ]
        return "".join(texts)
    return ""


def _choice_answer(choice: dict[str, Any], *, raw_body: str) -> tuple[str, bool]:
    """Return a choice's answer and whether it is the model's reasoning: the message's text,
    else (when that is blank) its readable reasoning, all a model cut off by its token limit
    may have produced; raise OpenRouterBadResponse when the choice has no message or its
    content is not text."""
    message = choice.get("message")
    if not isinstance(message, dict):
        raise OpenRouterBadResponse(
            "choices[0].message is not an object", status=200, raw_body=raw_body
        )
    text = _message_text(message.get("content"))
    if text is None:
        raise OpenRouterBadResponse(
            "choices[0].message.content is neither text nor a list of parts",
            status=200,
            raw_body=raw_body,
        )
    if not text.strip():
        reasoning = _reasoning_text(message)
        if reasoning.strip():
            return reasoning, True
    return text, False


def _completion_from_body(
    raw_body: str, *, requested_model: str, started: float, attempts: int
) -> Completion:
    """Read a 200 body into a Completion; raise OpenRouterBadResponse or UpstreamError.

    Whatever the body, nothing else is raised. Usage figures the columns could not hold
    (negative or huge token counts, a cost that is negative, not finite or a string) are
    reported as None rather than refused: the answer itself is still usable.
    """
    try:
        body = _load_json(raw_body)
    except ValueError as exc:
        raise OpenRouterBadResponse(
            f"body is not JSON (truncated?): {exc}", status=200, raw_body=raw_body
        ) from exc
    if not isinstance(body, dict):
        raise OpenRouterBadResponse("body is not a JSON object", status=200, raw_body=raw_body)
    provider = _as_str(body.get("provider"))
    if body.get("error") is not None:
        error = body["error"]
        raise _error_from_object(
            error,
            cls=OpenRouterUpstreamError,
            status=_as_int(_as_dict(error).get("code"))
            or _as_int(_as_dict(error).get("http_status")),
            raw_body=raw_body,
            provider_name=provider,
        )
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise OpenRouterBadResponse("body has no choices", status=200, raw_body=raw_body)
    choice = choices[0]
    finish_reason = _as_str(choice.get("finish_reason"))
    if finish_reason == "error":
        error = choice.get("error") or {"message": "finish_reason is error"}
        raise _error_from_object(
            error,
            cls=OpenRouterUpstreamError,
            status=_as_int(_as_dict(error).get("code")),
            raw_body=raw_body,
            provider_name=provider,
        )
    text, used_reasoning = _choice_answer(choice, raw_body=raw_body)
    usage = _as_dict(body.get("usage"))
    prompt_details = _as_dict(usage.get("prompt_tokens_details"))
    return Completion(
        text=text,
        used_reasoning=used_reasoning,
        raw_body=raw_body,
        requested_model=requested_model,
        response_model=_as_str(body.get("model")),
        provider=provider,
        generation_id=_as_str(body.get("id")),
        finish_reason=finish_reason,
        prompt_tokens=_token_count(usage.get("prompt_tokens")),
        completion_tokens=_token_count(usage.get("completion_tokens")),
        reasoning_tokens=_token_count(
            _as_dict(usage.get("completion_tokens_details")).get("reasoning_tokens")
        ),
        cost=_usage_cost(usage.get("cost")),
        latency_ms=round((time.monotonic() - started) * 1000),
        attempts=attempts,
        cached_prompt_tokens=_token_count(prompt_details.get("cached_tokens")),
        cache_write_tokens=_token_count(prompt_details.get("cache_write_tokens")),
    )


# --- prompt caching -------------------------------------------------------------------------

# OpenRouter's prompt-caching guide (https://openrouter.ai/docs/features/prompt-caching, read
# 2026-11-24): OpenAI, DeepSeek, xAI (Grok) and Moonshot cache a prompt's prefix by
# themselves; Anthropic needs an explicit `cache_control: {"type": "ephemeral"}` breakpoint on
# a text part of a message whose content is an array of parts, and Gemini models take the same
# breakpoint (OpenRouter uses the last one). Everything up to and including the marked part is
# the cached prefix. Matched on the OpenRouter model id's vendor.
EXPLICIT_CACHE_VENDORS = ("anthropic/", "google/")
CACHE_CONTROL = {"type": "ephemeral"}


def needs_cache_breakpoint(model: str) -> bool:
    """Whether `model` (an OpenRouter id) caches a prompt prefix only where it is marked."""
    return model.lstrip("~").startswith(EXPLICIT_CACHE_VENDORS)


def with_cache_breakpoint(
    messages: Sequence[dict[str, str]], shared_prefix: str
) -> list[dict[str, Any]]:
    """Return `messages` for the wire with a cache breakpoint at the end of `shared_prefix`.

    The last message starting with `shared_prefix` (the run's shared part, e.g. the market
    table of the user message) is sent as two text parts, the first marked `cache_control`;
    the text itself is unchanged. Without such a message, `messages` go as they are.
    """
    wire: list[dict[str, Any]] = [dict(message) for message in messages]
    at = _breakpoint_message(messages, shared_prefix)
    if at is not None:
        _mark_breakpoint(wire[at], len(shared_prefix))
    return wire


def _breakpoint_message(messages: Sequence[dict[str, str]], shared_prefix: str) -> int | None:
    """Return the index of the last message starting with `shared_prefix`, or None."""
    if not shared_prefix:
        return None
    for index in range(len(messages) - 1, -1, -1):
        content = messages[index].get("content")
        if isinstance(content, str) and content.startswith(shared_prefix):
            return index
    return None


def _mark_breakpoint(message: dict[str, Any], chars: int) -> None:
    """Send `message` as text parts, its first `chars` characters marked `cache_control`."""
    content = str(message.get("content", ""))
    parts: list[dict[str, Any]] = [
        {"type": "text", "text": content[:chars], "cache_control": dict(CACHE_CONTROL)}
    ]
    if len(content) > chars:
        parts.append({"type": "text", "text": content[chars:]})
    message["content"] = parts


# --- the request ----------------------------------------------------------------------------

# Not a field of the body: where the messages carry the prompt-cache breakpoint, as
# {"message": index, "chars": length of the marked start}, so that the stored plain messages
# and the parameters rebuild the very body that was sent (`request_body`).
CACHE_BREAKPOINT = "cache_breakpoint"
# The body's fields in the order they are sent; `messages` goes after `model`.
_BODY_ORDER = ("model", "messages", "temperature", "max_tokens", "usage", "provider", "reasoning")
DEFAULT_MAX_TOKENS = 16000


def request_parameters(
    *,
    model: str,
    messages: Sequence[dict[str, str]],
    max_tokens: int = DEFAULT_MAX_TOKENS,
    provider_order: Sequence[str] = (),
    reasoning_max_tokens: int | None = None,
    shared_prefix: str = "",
) -> dict[str, Any]:
    """Return the parameters of one chat completion: every field of its body but `messages`
    (the model, temperature 0, the token limit, usage accounting; the pinned providers with
    no fallbacks and the reasoning budget when given), and CACHE_BREAKPOINT when the model
    caches only at an explicit breakpoint and a message starts with `shared_prefix`.

    Plain JSON: stored beside the messages, it is what a replay of the request sends again.
    """
    parameters: dict[str, Any] = {
        "model": model,
        "temperature": 0,
        "max_tokens": max_tokens,
        "usage": {"include": True},
    }
    if provider_order:
        parameters["provider"] = {"order": list(provider_order), "allow_fallbacks": False}
    if reasoning_max_tokens is not None:
        parameters["reasoning"] = {"max_tokens": reasoning_max_tokens}
    at = _breakpoint_message(messages, shared_prefix) if needs_cache_breakpoint(model) else None
    if at is not None:
        parameters[CACHE_BREAKPOINT] = {"message": at, "chars": len(shared_prefix)}
    return parameters


def request_body(messages: Sequence[dict[str, Any]], parameters: dict[str, Any]) -> dict[str, Any]:
    """Return the body sent for `messages` with `parameters` (from `request_parameters`, or
    as stored, in whatever key order): its fields in the order sent, the messages with their
    cache breakpoint put back."""
    fields = {name: value for name, value in parameters.items() if name != CACHE_BREAKPOINT}
    wire: list[dict[str, Any]] = [dict(message) for message in messages]
    mark = parameters.get(CACHE_BREAKPOINT)
    if isinstance(mark, dict) and 0 <= int(mark["message"]) < len(wire):
        _mark_breakpoint(wire[int(mark["message"])], int(mark["chars"]))
    fields["messages"] = wire
    ordered = {name: fields.pop(name) for name in _BODY_ORDER if name in fields}
    return {**ordered, **dict(sorted(fields.items()))}


# --- the client -----------------------------------------------------------------------------


REDACTED = "[redacted]"


class OpenRouterClient:
    """A client for OpenRouter's chat completions, with its own `requests.Session`.

    Build it with keyword arguments, or with `from_settings()`. Raise OpenRouterNotConfigured
    (an OpenRouterAuthError and a ValueError) when there is no API key.
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        connect_timeout: float = 5.0,
        read_timeout: float = 30.0,
        max_retries: int = 3,
        backoff_seconds: float = 0.5,
        retry_after_cap_seconds: float = 60.0,
        app_name: str = DEFAULT_APP_NAME,
        referer: str = "",
    ) -> None:
        api_key = (api_key or "").strip()
        if not api_key:
            raise OpenRouterNotConfigured(
                "OPENROUTER_API_KEY is not set; configure it or use an offline agent"
            )
        if max_retries < 0:
            raise ValueError(f"max_retries={max_retries} must be 0 or more")
        self.base_url = base_url.rstrip("/")
        self.timeout = (float(connect_timeout), float(read_timeout))
        self.max_retries = max_retries
        self.backoff_seconds = max(0.0, float(backoff_seconds))
        self.retry_after_cap_seconds = max(0.0, float(retry_after_cap_seconds))
        # Kept only to strike it from what the upstream sends back (see `_attempt`).
        self._api_key = api_key
        self.session = requests.Session()
        self.session.headers.update(
            {
                "Authorization": f"Bearer {api_key}",
                "Content-Type": "application/json",
                "Accept": "application/json",
            }
        )
        if referer:
            self.session.headers["HTTP-Referer"] = referer
        if app_name:
            self.session.headers["X-Title"] = app_name

    @classmethod
    def from_settings(cls) -> OpenRouterClient:
        """Build a client from Django settings, read now (so tests can point it elsewhere)."""
        from django.conf import settings

        return cls(
            base_url=settings.OPENROUTER_BASE_URL,
            api_key=settings.OPENROUTER_API_KEY,
            connect_timeout=settings.HTTP_CONNECT_TIMEOUT,
            read_timeout=settings.HTTP_READ_TIMEOUT,
            max_retries=settings.HTTP_MAX_RETRIES,
            backoff_seconds=settings.HTTP_BACKOFF_SECONDS,
            retry_after_cap_seconds=settings.HTTP_RETRY_AFTER_CAP_SECONDS,
            app_name=settings.OPENROUTER_APP_NAME,
            referer=settings.OPENROUTER_REFERER,
        )

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> OpenRouterClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def complete(
        self,
        *,
        model: str,
        messages: list[dict[str, str]],
        max_tokens: int = DEFAULT_MAX_TOKENS,
        provider_order: Sequence[str] = (),
        reasoning_max_tokens: int | None = None,
        shared_prefix: str = "",
    ) -> Completion:
        """Return the model's completion of `messages` at temperature 0.

        With `provider_order`, only those providers are used, in that order, with no
        fallbacks. `reasoning_max_tokens` sets the model's thinking budget. `shared_prefix`
        is the start of a message that other calls share (the run's market table): for a
        model that caches only at an explicit breakpoint, one is put at its end; other models
        cache the prefix by themselves. See `send` for what is retried and raised.
        """
        parameters = request_parameters(
            model=model,
            messages=messages,
            max_tokens=max_tokens,
            provider_order=provider_order,
            reasoning_max_tokens=reasoning_max_tokens,
            shared_prefix=shared_prefix,
        )
        return self.send(messages=messages, parameters=parameters)

    def send(self, *, messages: Sequence[dict[str, Any]], parameters: dict[str, Any]) -> Completion:
        """Send the chat completion `request_body(messages, parameters)` and return it: a
        request as `request_parameters` built it, or one stored earlier, sent again as it was.

        Retry transient failures up to `max_retries` more times, then raise the typed
        OpenRouterError. Each call is a new, billed generation: a repeat is not idempotent.
        """
        model = str(parameters["model"])
        data = json.dumps(request_body(messages, parameters)).encode()
        url = f"{self.base_url}/chat/completions"
        started = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._attempt(url, data, model=model, started=started, attempt=attempt)
            except OpenRouterError as error:
                error.attempts = attempt
                if not error.retryable or attempt > self.max_retries:
                    raise
                time.sleep(self._wait_before_retry(error, attempt))

    def _attempt(
        self, url: str, data: bytes, *, model: str, started: float, attempt: int
    ) -> Completion:
        """Make one HTTP request and read its answer; raise a typed error on failure."""
        try:
            response = self.session.post(url, data=data, timeout=self.timeout)
        except requests.Timeout as exc:  # ConnectTimeout and ReadTimeout
            raise OpenRouterTimeout(f"no answer within {self.timeout} s: {exc}") from exc
        except requests.RequestException as exc:  # refused, reset, or a body cut short
            raise OpenRouterConnectionError(f"{type(exc).__name__}: {exc}") from exc
        # JSON is UTF-8 (RFC 8259); don't let requests guess a charset.
        raw_body = response.content.decode("utf-8", errors="replace")
        # An upstream that echoes the key (in an error, or in the answer itself) must not put
        # it in what is stored, shown, exported or sent back in a retry prompt.
        raw_body = raw_body.replace(self._api_key, REDACTED)
        if response.status_code != 200:
            raise _error_from_http(response, raw_body)
        return _completion_from_body(
            raw_body, requested_model=model, started=started, attempts=attempt
        )

    def _wait_before_retry(self, error: OpenRouterError, attempt: int) -> float:
        """Seconds to sleep after failed attempt number `attempt` (1-based)."""
        if error.retry_after is not None:
            return min(error.retry_after, self.retry_after_cap_seconds)
        return float(self.backoff_seconds * 2 ** (attempt - 1))
