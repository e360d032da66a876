"""HTTP hygiene for the JSON API (`/api/v1/`), one middleware; the HTML site is left alone.

- Rate limiting: a fixed window per client, counted in the `api_rate` cache (Redis when
  REDIS_URL is set, so all processes share one count; an unreachable cache lets requests
  through and logs a warning rather than failing them); over the limit, `429`
  with `Retry-After` (seconds to the window's end) in the error envelope. The client is
  `REMOTE_ADDR`: behind a reverse proxy every request would share the proxy's address, so a
  deployment there would key on the forwarded header the proxy sets (`X-Forwarded-For`'s last
  hop it appends) instead. `API_RATE_LIMIT=0` turns the limit off.
- The error envelope for the 4xx Django answers itself in HTML (an unknown path, a 404) or as
  plain text (ninja's 405 for a wrong method), so every API 4xx reads alike.
- `ETag` and `304 Not Modified` on GET/HEAD (Django's conditional GET: a strong ETag, the hash of
  the body). Files (the exports, a release's files) pass through untouched, sent as they are.
  The HTML pages don't take it: each carries a fresh CSRF token, so their hash never repeats.
- HEAD answered as the GET it mirrors (ninja routes GET only).
- CORS open for reading: `Access-Control-Allow-Origin: *` on GET/HEAD/OPTIONS answers, a
  preflight OPTIONS answered `204`; no credentials. Its `Allow` names the methods the
  endpoint takes (`POST, OPTIONS` on a submission), as a 405 does.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from http import HTTPStatus
from typing import Any, cast

from django.conf import settings
from django.core.cache import caches
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    JsonResponse,
    StreamingHttpResponse,
)
from django.middleware.http import ConditionalGetMiddleware
from django.shortcuts import render
from django.urls import Resolver404, resolve
from ninja.operation import PathView

from arena import clock
from arena.seal import public_view

logger = logging.getLogger(__name__)

API_PREFIX = "/api/v1/"
OUTSIDE_PREFIX = f"{API_PREFIX}outside/"  # the outside agents' router (arena/api/outside.py)
READ_METHODS = ("GET", "HEAD", "OPTIONS")
CORS_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Expose-Headers": "ETag, Retry-After",
}
PREFLIGHT_HEADERS = {
    "Access-Control-Allow-Methods": ", ".join(READ_METHODS),
    "Access-Control-Allow-Headers": "If-None-Match, Content-Type",
    "Access-Control-Max-Age": "86400",
}


def error_body(*, status: int, message: str, code: str | None = None) -> dict[str, object]:
    """Return the error envelope; the code defaults to the status phrase in snake_case."""
    if code is None:
        code = HTTPStatus(status).phrase.lower().replace(" ", "_").replace("-", "_")
    return {"error": {"status": status, "code": code, "message": message}}


def allowed_methods(path: str) -> str:
    """The methods the API endpoint at `path` takes, for an `Allow` header: its operations'
    own, HEAD wherever GET is (the middleware answers it), and OPTIONS. A path that names no
    endpoint is answered as the read-only API it would be."""
    try:
        view = resolve(path).func
    except Resolver404:
        return ", ".join(READ_METHODS)
    # ninja's view is a closure over its PathView, which holds the path's operations.
    owner = inspect.getclosurevars(view).nonlocals.get("self")
    if not isinstance(owner, PathView):
        return ", ".join(READ_METHODS)
    methods = {method for operation in owner.operations for method in operation.methods}
    if "GET" in methods:
        methods.add("HEAD")
    methods.add("OPTIONS")
    order = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
    return ", ".join(sorted(methods, key=lambda m: order.index(m) if m in order else len(order)))


def rate_limited(request: HttpRequest) -> int | None:
    """Count the request in its client's window; return the seconds to wait if over the limit."""
    limit: int = settings.API_RATE_LIMIT
    if limit <= 0:
        return None
    window: int = settings.API_RATE_WINDOW_SECONDS
    now = time.time()
    number = int(now // window)
    key = f"api-rate:{request.META.get('REMOTE_ADDR', '')}:{number}"
    counts = caches["api_rate"]
    try:
        counts.add(key, 0, timeout=window + 1)
        try:
            count = counts.incr(key)
        except ValueError:  # expired between add and incr: this request opens a new count
            counts.set(key, 1, timeout=window + 1)
            count = 1
    except Exception as exc:  # the cache is down: serve the request rather than fail it
        logger.warning("API rate limit not counted: the api_rate cache failed: %s", exc)
        return None
    if count <= limit:
        return None
    return max(1, int((number + 1) * window - now + 0.999))


def _is_json(response: HttpResponseBase) -> bool:
    return response.get("Content-Type", "").startswith("application/json")


class ApiMiddleware:
    """Rate limit, error envelope, ETag/304 and CORS for paths under /api/v1/."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response
        self.conditional = ConditionalGetMiddleware(get_response)

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if not request.path.startswith(API_PREFIX):
            return self.get_response(request)
        response = self.answer(request)
        if request.method in READ_METHODS:
            for header, value in CORS_HEADERS.items():
                response[header] = value
        if request.path.startswith(OUTSIDE_PREFIX):
            # An outside agent's answers depend on its token: no shared cache may keep them.
            response["Cache-Control"] = "private, no-store"
        return response

    def answer(self, request: HttpRequest) -> HttpResponseBase:
        wait = rate_limited(request)
        if wait is not None:
            message = f"Too many requests: try again in {wait} seconds."
            body = error_body(status=429, code="rate_limited", message=message)
            limited = JsonResponse(body, status=429)
            limited["Retry-After"] = str(wait)
            return limited
        if request.method == "OPTIONS":
            preflight = HttpResponse(status=204)
            for header, value in PREFLIGHT_HEADERS.items():
                preflight[header] = value
            preflight["Allow"] = allowed_methods(request.path_info)
            return preflight
        head = request.method == "HEAD"
        if head:  # ninja routes GET only: answer HEAD as GET (the server drops the body)
            request.method = "GET"
        try:
            response = self.get_response(request)
        finally:
            if head:
                request.method = "HEAD"
        if 400 <= response.status_code < 500 and not response.streaming:
            if not _is_json(response):
                response = self.envelope(request, response)
        # Conditional GET: ETag on a complete GET/HEAD body, 304 when If-None-Match matches.
        return self.conditional.process_response(request, response)

    @staticmethod
    def envelope(request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        status = response.status_code
        if status == 404:
            message = f"No API endpoint at {request.path}."
        elif status == 405:
            message = f"{request.method} is not allowed here; allowed: {response.get('Allow')}."
        else:
            message = HTTPStatus(status).description or HTTPStatus(status).phrase
        converted = JsonResponse(error_body(status=status, message=message), status=status)
        if "Allow" in response:
            converted["Allow"] = response["Allow"]
        return converted


class SealMiddleware:
    """Every public request reads under the seal (arena/seal.py): from Sunday 00:00 UTC until
    the outside window closes, the arena as it stood at 00:00. The staff admin sees
    everything, and an outside agent's token API shows that agent its own books only.

    A streamed answer reads its rows after the view has returned: each chunk is read under
    the same seal, fixed when the request came in. A file's bytes are written by then (a
    download, a release's file), and it is sent as it is."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if request.path.startswith((ADMIN_PREFIX, OUTSIDE_PREFIX)):
            return self.get_response(request)
        now = clock.now()
        with public_view(now):
            response = self.get_response(request)
        if (
            isinstance(response, StreamingHttpResponse)
            and not isinstance(response, FileResponse)
            and not response.is_async
        ):
            response.streaming_content = _sealed_chunks(
                cast(Iterator[bytes], response.streaming_content), now
            )
        return response


def _sealed_chunks(chunks: Iterable[Any], now: datetime) -> Iterator[Any]:
    iterator = iter(chunks)
    while True:
        with public_view(now):
            chunk = next(iterator, _END)
        if chunk is _END:
            return
        yield chunk


_END = object()
ADMIN_PREFIX = "/admin/"


class NotFoundPageMiddleware:
    """A page that names something that does not exist (a model, cohort, agent, market or
    release) answers with the site's own 404 page in every mode, as an unknown decision does:
    with DEBUG on, Django would show its technical page instead. The API answers with its
    error envelope (ApiMiddleware) and the admin with its own page, so both are left alone."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, Http404) or request.path.startswith(("/api/", "/admin/")):
            return None
        return render(request, "404.html", status=HTTPStatus.NOT_FOUND)
