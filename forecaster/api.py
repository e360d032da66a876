"""The one NinjaAPI instance, served at /api/v1/; each app mounts its router here.

Every 4xx answers in one envelope: `{"error": {"status": 404, "code": "not_found",
"message": "..."}}`. The 4xx Django answers itself (an unknown path, a wrong method) and the
rate limit's 429 get the same envelope from `forecaster.http.ApiMiddleware`, which also adds
ETag/304 and CORS to the API's answers. The OpenAPI schema declares those 4xx, envelope and all,
on every operation (`declare_errors`), so a client (or the contract run in
tests/api/test_contract.py) can hold every answer to the schema. A query parameter an
operation does not take, or one given twice, is a 422, never silently ignored. The
envelope's schema and the outside agents' refusals belong to the routers
(`arena/api/errors.py`): registered here.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial, wraps
from types import UnionType
from typing import Any, Union, get_args, get_origin

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase
from ninja import NinjaAPI
from ninja.errors import HttpError, ValidationError
from ninja.openapi.schema import OpenAPISchema
from ninja.operation import Operation

from arena.api.errors import ErrorEnvelope, outside_refused
from arena.api.outside import OUTSIDE_AGENTS_DOC
from arena.exceptions import OutsideRefused
from forecaster.http import error_body

ENVELOPE_REF = "#/components/schemas/ErrorEnvelope"
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


# Every change to /api/v1 is listed here, dated, newest first, and one that can break a reader
# says so first. A field that becomes required of outside agents is announced here before it is.
API_CHANGES = """

## Changes

- **2026-11-28, sort by P(rank 1).** `/api/v1/leaderboard?sort=p_first` (and the page's
  "P(rank 1)") orders each board by the share of the bootstrap's resampled worlds in which
  a row ranks first by Brier, highest first; rows with no rank range (provisional ones) last.
  The default order is unchanged.
- **2026-11-28, the bets export's columns.** Breaking for a reader by position: `bets`
  gains `model_kind` after `model`, as every other dataset has it, and `first_outcome` after
  `side`: the market's first outcome when it has exactly two, the frame of the Murphy terms
  (empty otherwise), so every later column moves two places. Readers by column name (every
  JSON Lines reader, and CSV read by its header) are unaffected. Releases already published
  keep their columns; a cohort's next release names the columns added in its changes.
- **2026-11-28, `/models` is paginated.** A breaking change: `/api/v1/models` answers a page,
  `{count, page, page_size, results}`, like every other list, with `page_size` 100 by default
  (up to the usual maximum), so the whole lineup still fits in one page. `/models/{id}` adds
  what the lineup admin keeps of the model (`openrouter_id`, `upstream_model_id`,
  `release_date`, `reasoning_mode`, `reasoning_max_tokens`) and `versions_answering`, the
  model versions its calls' replies named.
- **2026-11-28, difficulty interval.** Analytics rows carry
  `difficulty_adjusted_brier_interval` (leaderboard rows `difficulty_adjusted_brier_ci_low`
  and `…_ci_high`): a t interval from each bet's influence on the figure, clustered by week
  and market. The figure is now fitted over the bets of the linked part it is shown for.
- **2026-11-28, bootstrap precision.** Intervals carry `monte_carlo_error`: for a bootstrap
  interval, the 95% half-width of its bounds over fresh resamples (null for a t interval).
  The pages write a bootstrap bound to the places it supports.
- **2026-11-28, the panel leads.** `/api/v1/forecasts/leaderboard` rows carry `rank`, each
  row's place in its own table (real LLM rows, or offline stand-ins among themselves; null
  when not ranked), and its comparisons `questions_needed` (the power analysis's shared
  questions to separate the pair). The default leaderboard page leads with this table once
  a panel question has resolved.
- **2026-11-28, intervals by week.** Every interval and test of the analytics is clustered by
  the weekly run (every cohort active in a week decides in its one run, on one snapshot)
  and by market, no longer by cohort, and its variance never falls below either one-way
  variance.
  - Intervals carry `weeks` (their clusters) and `markets`; `cohorts`, which counted the
    clusters when they were cohorts, now carries the same count as `weeks` and is deprecated.
  - Leaderboard rows carry `alpha_claim` and `brier_claim`: "too early to tell" under 10
    weeks, then "not significant" or "significant".
  - Pairwise comparisons carry `holm_p_value`, `verdict` and `weeks` (`cohorts` deprecated,
    the same count).
  - The Murphy terms (`murphy`, `market_murphy`, `anatomy`, the leaderboard's `reliability`,
    `resolution`, `uncertainty`, and the references') are over the two-outcome bets read as
    forecasts of YES, no longer each bet in its own side's frame; `multi_murphy` and
    `multi_market_murphy` give the bets on markets of more outcomes apart.
  - `/leaderboard?sort=` also takes `alpha`, `cohorts`, `cost`, `latency` and `malformed`
    (as the page does); the default order is Brier's still.
  - `/leaderboard` rows carry `rank` (their place in their own table), `provisional` (under
    30 resolved bets or 5 weeks: never ranked), `weeks`, and the rank range by Brier over the
    bootstrap's worlds: `rank_low`, `rank_high`, `p_rank_first` and `tier`.
- **2026-11-28, methodology v2** (docs/methodology.md). Cohorts started from now on run v2
  unless the operators say otherwise; a cohort already running keeps v1.
  - In a v2 cohort, every bet of an outside submission must carry `probability`, its
    stated probability that its side wins (a JSON number strictly between 0 and 1), and every
    submission `forecasts`, one per question of the prompt's new `panel` (missing or invalid
    ones are recorded as missing, never refused). A v1 cohort's submissions are unchanged.
  - `/forecasts` lists the panel forecasts (by model, cohort, agent, market, run or week);
    `/forecasts/leaderboard` gives every row's panel figures with n, coverage and intervals.
  - The bets export has `stated_probability`; the new `forecasts` export has a row per
    agent, week and panel question.
- **2026-11-28**
  - Exports (`/exports/*.csv`, `*.jsonl`) are sent as files with a `Content-Length`. While
    the server is sending its most downloads at once, a download, or a manifest not yet
    computed, is a 503 `downloads_busy` with `Retry-After`.
  - The outside prompt carries `methodology_version`: the rules the cohort is scored by,
    distinct from `prompt_version`, the prompt's wording.
  - An outside submission sent without a `Content-Length` (chunked, or none declared) is
    a 411 `length_required`, unread, and uses no submission.
"""


api = ArenaAPI(
    title="Forecaster Arena API",
    version="1",
    urls_namespace="api",
    description=(
        "Read-only access to the benchmark's markets, cohorts, agents and decisions; and, under "
        "`/outside/`, the API through which an outside team's agent takes part.\n\n"
        "Parameters are read as declared, or refused with a 422 in the error envelope: one "
        "an operation does not take, one given twice (unless declared a list), and a day "
        "not written YYYY-MM-DD (a number is never read as a Unix timestamp).\n\n"
        + OUTSIDE_AGENTS_DOC
        + API_CHANGES
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


# An outside agent's refusal is recorded, then answered with its own code.
api.add_exception_handler(OutsideRefused, partial(outside_refused, api=api))


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


def _is_list(annotation: Any) -> bool:
    """Whether a parameter's type is a list (`list[int]`, `list[int] | None`)."""
    if get_origin(annotation) is list or annotation is list:
        return True
    return get_origin(annotation) in (Union, UnionType) and any(
        _is_list(member) for member in get_args(annotation)
    )


def query_list_names(operation: Operation) -> frozenset[str]:
    """The query parameters the operation declares as lists: the only ones a URL may repeat."""
    names: set[str] = set()
    for model in operation.signature.models:
        if model.__ninja_param_source__ == "query":
            names.update(
                name for name, field in model.model_fields.items() if _is_list(field.annotation)
            )
    return frozenset(names)


def refuse_unknown_parameters(run: Run) -> Run:
    """Wrap an operation so a query parameter it does not take is a 422, not ignored: a
    misspelt filter (`?cohrt=3`) would otherwise answer every row as if it had filtered. So
    is one given twice that is not a list (`?cohort=1&cohort=2`): the last would silently win."""
    operation = run.__self__  # type: ignore[attr-defined]  # ninja hands over the bound `run`
    known = query_names(operation)
    lists = query_list_names(operation)

    @wraps(run)
    def checked(request: HttpRequest, **kwargs: Any) -> HttpResponseBase:
        unknown = sorted(set(request.GET) - known)
        if unknown:
            takes = ", ".join(sorted(known)) or "none"
            message = f"unknown parameter: {', '.join(unknown)}; this endpoint takes: {takes}"
            return error_response(request, status=422, message=message)
        repeated = sorted(
            name for name in request.GET if name not in lists and len(request.GET.getlist(name)) > 1
        )
        if repeated:
            message = f"parameter given more than once: {', '.join(repeated)}; each takes one value"
            return error_response(request, status=422, message=message)
        return run(request, **kwargs)

    return checked


# ninja's "view" mode wraps `operation.run`, which reads the parameters: the check comes first.
api.add_decorator(refuse_unknown_parameters, mode="view")
api.add_router("/", "arena.api.records.router")
api.add_router("/commitments", "arena.api.commitments.router")
api.add_router("/exports/", "arena.api.exports.router")
api.add_router("/analytics", "arena.api.analytics.router")
api.add_router("/forecasts", "arena.api.forecasts.router")
api.add_router("/outside", "arena.api.outside.router")
