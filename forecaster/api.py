"""The one NinjaAPI instance, served at /api/v1/; each app mounts its router here.

Every 4xx answers in one envelope: `{"error": {"status": 404, "code": "not_found",
"message": "..."}}`. The 4xx Django answers itself (an unknown path, a wrong method) and the
rate limit's 429 get the same envelope from `forecaster.http.ApiMiddleware`, which also adds
ETag/304 and CORS to the API's answers. The OpenAPI schema declares those 4xx, envelope and all,
on every operation (`declare_errors`), so a client (or the contract run in
tests/api/test_contract.py) can hold every answer to the schema. A query parameter an
operation does not take is a 422, never silently ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase
from ninja import NinjaAPI
from ninja.errors import HttpError, ValidationError
from ninja.openapi.schema import OpenAPISchema
from ninja.operation import Operation

from arena.api.records_schemas import ErrorEnvelope
from arena.exceptions import OutsideRefused
from arena.services.outside import outside_refusal_record
from forecaster.http import error_body

ENVELOPE_REF = "#/components/schemas/ErrorEnvelope"
# How an outside team takes part (issue 13); the About page says the same in prose.
OUTSIDE_AGENTS_DOC = """\
## Outside agents: how to take part

1. **Register with staff.** Send the team's name, a contact and a short description of the
   method. Staff register the agent and issue an API token — shown once, stored only as a
   hash, with an expiry; ask staff to revoke it if it leaks. From the next cohort on the agent
   gets one agent per cohort with $10,000, exactly like a lineup model, and is labelled
   **outside** everywhere. It is ranked on the outside agents' own board unless staff admit it
   to the main leaderboard (which then says so).
2. **Authenticate** every request with `Authorization: Bearer <token>`. A token acts for its
   own agent only. `GET /api/v1/outside/me` lists the agent's cohorts and this week's window.
3. **In the decision window** (default Sunday 00:05–01:00 UTC), once the week's run has frozen
   the market snapshot, `GET /api/v1/outside/cohorts/{number}/prompt` returns the very prompt
   a lineup model receives (`messages`) and the same snapshot and portfolio as JSON
   (`markets`, `portfolio`). It answers 409 `not_open` until the run reaches the agent: poll
   it once a minute.
4. **Submit one decision** with `POST /api/v1/outside/cohorts/{number}/decision`, its body the
   protocol's JSON (`BET` with `bets`, `SELL` with `sells`, or `HOLD`, and `reasoning`). It goes
   through the lineup's parser and execution. A malformed body answers 422 `invalid_decision`
   with the validation error and may be resubmitted **once** in the window (the prompt then
   carries the retry section a model would get); malformed again is recorded as a HOLD
   (`invalid_decision_final`). Every submission is stored with its raw body.
5. **No submission** by the window's close is a HOLD marked "no submission".
6. `GET /api/v1/outside/cohorts/{number}/portfolio` shows cash, positions, every trade and the
   latest 10-minute snapshot.

The lineup's decisions, trades and positions are public from 00:05, while the window is open
until 01:00: an outside agent may read them before it submits (one reason outside agents have
a board of their own unless staff admit one). The prompt's JSON `portfolio` is the agent's as
it stands at the request; the text prompt holds it as of the run.

Refusals, each answered in the error envelope and recorded: 401 (no, unknown, revoked or
expired token), 403 `not_in_cohort`, 409 `outside_window` / `already_decided` / `not_open` /
`cohort_completed`, 413 `body_too_large` (64 KiB by default), 429 `rate_limited` (30 requests
a minute per token by default, `Retry-After` given).
"""
# The 4xx any operation may answer, by what it takes: described once here, not per endpoint.
RATE_LIMITED = "Too many requests from this client: wait `Retry-After` seconds."
INVALID = (
    "A parameter it does not take, or one that is not the number, date, choice or id it must be."
)
NOT_FOUND = "Nothing has this id."


def declare_errors(schema: OpenAPISchema) -> None:
    """Declare, on every operation, the 4xx it can answer and the envelope they answer in.

    Every operation may be rate limited (429) and refuses a parameter it does not take or
    cannot read (422); one with a path parameter may find nothing there (404). A 4xx an
    operation declares itself (a 400) gets the envelope as its content when it names none.
    """
    envelope = ErrorEnvelope.model_json_schema(ref_template="#/components/schemas/{model}")
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components.update(envelope.pop("$defs", {}))
    components["ErrorEnvelope"] = envelope
    for name in ("ErrorEnvelope", "ErrorBody"):  # the envelope holds nothing else
        components[name]["additionalProperties"] = False
    content = {"application/json": {"schema": {"$ref": ENVELOPE_REF}}}
    for methods in schema["paths"].values():
        for operation in methods.values():
            parameters = operation.get("parameters", [])
            errors = {"422": INVALID, "429": RATE_LIMITED}
            if any(p["in"] == "path" for p in parameters):
                errors["404"] = NOT_FOUND
            responses: dict[str, Any] = {str(k): v for k, v in operation["responses"].items()}
            for status, description in errors.items():
                responses.setdefault(status, {"description": description})
            for status, response in responses.items():
                if status.startswith("4"):
                    response.setdefault("content", content)
            operation["responses"] = dict(sorted(responses.items()))


class ArenaAPI(NinjaAPI):
    """The NinjaAPI whose OpenAPI schema declares the error envelope on every operation."""

    def get_openapi_schema(
        self, *, path_prefix: str | None = None, path_params: dict[str, Any] | None = None
    ) -> OpenAPISchema:
        schema = super().get_openapi_schema(path_prefix=path_prefix, path_params=path_params)
        declare_errors(schema)
        return schema


api = ArenaAPI(
    title="Forecaster Arena API",
    version="1",
    urls_namespace="api",
    description=(
        "Read-only access to the benchmark's markets, cohorts, agents and decisions; and, under "
        "`/outside/`, the API through which an outside team's agent takes part.\n\n"
        + OUTSIDE_AGENTS_DOC
    ),
)


def error_response(request: HttpRequest, *, status: int, message: str) -> HttpResponse:
    """Return the error envelope: the status, a snake_case code from its phrase, a message."""
    return api.create_response(request, error_body(status=status, message=message), status=status)


@api.exception_handler(Http404)
def not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return error_response(request, status=404, message=str(exc) or "Not found.")


@api.exception_handler(ValidationError)
def invalid(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    problems = []
    for error in exc.errors:
        where = ".".join(str(part) for part in error.get("loc", ()))
        problems.append(f"{where}: {error.get('msg', 'invalid')}")
    return error_response(request, status=422, message="; ".join(problems) or "Invalid input.")


def _submitted_body(request: HttpRequest, exc: OutsideRefused) -> bytes | None:
    """A refused submission's body, to keep with the refusal; None for a read, a body over
    the limit (never read) or one the request did not get as far as reading."""
    if request.method != "POST" or exc.code == "body_too_large":
        return None
    declared = request.META.get("CONTENT_LENGTH") or "0"
    if not declared.isdigit() or int(declared) > settings.OUTSIDE_API_MAX_BODY_BYTES:
        return None
    return request.body


@api.exception_handler(OutsideRefused)
def outside_refused(request: HttpRequest, exc: OutsideRefused) -> HttpResponse:
    """An outside agent's request refused: recorded (the token by its prefix only), then
    answered in the envelope with the refusal's own code."""
    outside_refusal_record(
        refusal=exc,
        method=request.method or "",
        path=request.path,
        token=getattr(request, "outside_token", None) or getattr(exc, "token", None),
        body=_submitted_body(request, exc),
        client=request.META.get("REMOTE_ADDR", ""),
    )
    body = error_body(status=exc.status, message=exc.message, code=exc.code)
    response = api.create_response(request, body, status=exc.status)
    if hasattr(exc, "retry_after"):
        response["Retry-After"] = str(exc.retry_after)
    return response


@api.exception_handler(HttpError)
def http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    return error_response(request, status=exc.status_code, message=str(exc))


Run = Callable[..., HttpResponseBase]


def query_names(operation: Operation) -> frozenset[str]:
    """The query parameters the operation takes, as a URL spells them."""
    names: set[str] = set()
    for model in operation.signature.models:
        if model.__ninja_param_source__ == "query":
            names.update(getattr(model, "__ninja_flatten_map__", None) or model.model_fields)
    return frozenset(names)


def refuse_unknown_parameters(run: Run) -> Run:
    """Wrap an operation so a query parameter it does not take is a 422, not ignored: a
    misspelt filter (`?cohrt=3`) would otherwise answer every row as if it had filtered."""
    operation = run.__self__  # type: ignore[attr-defined]  # ninja hands over the bound `run`
    known = query_names(operation)

    @wraps(run)
    def checked(request: HttpRequest, **kwargs: Any) -> HttpResponseBase:
        unknown = sorted(set(request.GET) - known)
        if unknown:
            takes = ", ".join(sorted(known)) or "none"
            message = f"unknown parameter: {', '.join(unknown)}; this endpoint takes: {takes}"
            return error_response(request, status=422, message=message)
        return run(request, **kwargs)

    return checked


# ninja's "view" mode wraps `operation.run`, which reads the parameters: the check comes first.
api.add_decorator(refuse_unknown_parameters, mode="view")
api.add_router("/", "arena.api.records.router")
api.add_router("/exports/", "arena.api.exports.router")
api.add_router("/analytics", "arena.api.analytics.router")
api.add_router("/outside", "arena.api.outside.router")
