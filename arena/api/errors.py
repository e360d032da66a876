"""The API's error envelope, and the outside agents' refusals answered in it.

Every 4xx of the API answers `{"error": {"status": 409, "code": "not_open", "message": "..."}}`.
`ErrorEnvelope` is its schema, which every router declares for the 4xx it answers. The
project's wiring (`forecaster/api.py`, `forecaster/http.py`) answers the 4xx that Django and
ninja raise in the same envelope and registers `outside_refused` for the outside agents'
refusals; arena does not import the project package, so the handler takes the API it answers
for as an argument, as ninja's own handlers do.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI, Schema

from arena.exceptions import OutsideRefused
from arena.services.outside import outside_refusal_record


class ErrorBody(Schema):
    status: int
    code: str
    message: str


class ErrorEnvelope(Schema):
    error: ErrorBody


def error_envelope(*, status: int, code: str, message: str) -> dict[str, Any]:
    """Return the error envelope with this status, snake_case code and message."""
    return {"error": {"status": status, "code": code, "message": message}}


def _submitted_body(request: HttpRequest, exc: OutsideRefused) -> bytes | None:
    """A refused submission's body, to keep with the refusal; None for a read, a body over
    the limit (never read) or one the request did not get as far as reading."""
    if request.method != "POST" or exc.code == "body_too_large":
        return None
    declared = request.META.get("CONTENT_LENGTH") or "0"
    if not declared.isdigit() or int(declared) > settings.OUTSIDE_API_MAX_BODY_BYTES:
        return None
    return request.body


def outside_refused(request: HttpRequest, exc: OutsideRefused, *, api: NinjaAPI) -> HttpResponse:
    """An outside agent's request refused: recorded (the token by its prefix only), then
    answered in the envelope with the refusal's own code. Register it on `api` with
    `functools.partial(outside_refused, api=api)`."""
    outside_refusal_record(
        refusal=exc,
        method=request.method or "",
        path=request.path,
        token=getattr(request, "outside_token", None) or exc.token,
        body=_submitted_body(request, exc),
        client=request.META.get("REMOTE_ADDR", ""),
    )
    body = error_envelope(status=exc.status, code=exc.code, message=exc.message)
    response = api.create_response(request, body, status=exc.status)
    if exc.retry_after is not None:
        response["Retry-After"] = str(exc.retry_after)
    return response
