"""The one NinjaAPI instance, served at /api/v1/; each app mounts its router here.

Every 4xx answers in one envelope: `{"error": {"status": 404, "code": "not_found",
"message": "..."}}`. The 4xx Django answers itself (an unknown path, a wrong method) and the
rate limit's 429 get the same envelope from `forecaster.http.ApiMiddleware`, which also adds
ETag/304 and CORS to the API's answers.
"""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import HttpError, ValidationError

from arena.api import router as arena_router
from forecaster.http import error_body

api = NinjaAPI(
    title="Forecaster Arena API",
    version="1",
    urls_namespace="api",
    description="Read-only access to the benchmark's markets, cohorts, agents and decisions.",
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


@api.exception_handler(HttpError)
def http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    return error_response(request, status=exc.status_code, message=str(exc))


api.add_router("/", arena_router)
api.add_router("/exports/", "arena.exports.router")
