"""The bulk exports' router (mounted at `/api/v1/exports/`): streamed CSV and JSON Lines.

`GET bets.csv` and `GET bets.jsonl` stream one row per executed BUY (columns and meanings:
arena/selectors/exports.py), bounded by `?cohort=N` and/or `?since=&until=` (ISO dates, both
inclusive, the UTC day the bet was placed), with `?offline=include|exclude|only` (default
`include`) to keep or split off the bets of agents an offline stand-in answered for. A bad
parameter is a 4xx with a JSON body, never a 500.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from datetime import date
from decimal import Decimal
from typing import Literal

from django.http import HttpRequest, StreamingHttpResponse
from ninja import Router
from ninja.errors import HttpError
from ninja.params.functions import Query

from arena.selectors.exports import BET_COLUMNS, BetRow, Offline, bet_rows

router = Router(tags=["exports"])

Format = Literal["csv", "jsonl"]
CONTENT_TYPES: dict[Format, str] = {
    "csv": "text/csv; charset=utf-8",
    "jsonl": "application/x-ndjson; charset=utf-8",
}
MAX_ID = 2**31 - 1  # the largest value a cohort number column holds
# The query parameters, shared by both formats.
COHORT = Query(None, ge=1, le=MAX_ID, description="Only this cohort's bets (its number).")
SINCE = Query(None, description="Only bets placed on or after this UTC day (ISO date).")
UNTIL = Query(None, description="Only bets placed on or before this UTC day; not before since.")
OFFLINE = Query(
    "include",
    description="Bets of agents an offline stand-in answered for: include (the default), "
    "exclude (the real models' bets, which the leaderboard's real rows pool) or only (the "
    "bets its offline rows pool).",
)


def _file_responses(fmt: Format) -> dict[str, object]:
    """The OpenAPI description of a streamed file and of the 4xx a bad parameter gets."""
    return {
        "responses": {
            200: {
                "description": f"The bets as {fmt.upper()}, streamed as an attachment.",
                "content": {CONTENT_TYPES[fmt].split(";")[0]: {"schema": {"type": "string"}}},
            },
            400: {"description": "`until` before `since`."},
            422: {"description": "A parameter that is not a number, date or choice it must be."},
        }
    }


class _Echo:
    """A file-like object whose `write` hands back what it was given, for `csv.writer`."""

    def write(self, value: str) -> str:
        return value


def _csv_lines(rows: Iterable[BetRow]) -> Iterator[str]:
    writer = csv.writer(_Echo(), lineterminator="\n")
    yield writer.writerow(BET_COLUMNS)
    for row in rows:
        yield writer.writerow(["" if row[c] is None else row[c] for c in BET_COLUMNS])


def _json_default(value: object) -> str:
    if isinstance(value, Decimal):
        return str(value)  # money and prices as decimal strings
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _jsonl_lines(rows: Iterable[BetRow]) -> Iterator[str]:
    for row in rows:
        yield json.dumps(row, default=_json_default, separators=(",", ":")) + "\n"


def bets_stream(rows: Iterable[BetRow], fmt: Format) -> Iterator[str]:
    """Return the export's body as an iterator of text lines: CSV with a header row (an empty
    cell for None), or JSON Lines (one object a line, decimals as strings, None as null)."""
    return _csv_lines(rows) if fmt == "csv" else _jsonl_lines(rows)


def bets_filename(
    *, cohort: int | None, since: date | None, until: date | None, offline: Offline, fmt: Format
) -> str:
    parts = ["bets"]
    if cohort is not None:
        parts.append(f"cohort-{cohort}")
    if since is not None:
        parts.append(f"from-{since.isoformat()}")
    if until is not None:
        parts.append(f"to-{until.isoformat()}")
    if cohort is None and since is None and until is None:
        parts.append("all")
    if offline != "include":
        parts.append(f"offline-{offline}")
    return "-".join(parts) + f".{fmt}"


def _bets_response(
    fmt: Format, cohort: int | None, since: date | None, until: date | None, offline: Offline
) -> StreamingHttpResponse:
    if since is not None and until is not None and until < since:
        raise HttpError(400, "until must not be before since")
    rows = bet_rows(cohort=cohort, since=since, until=until, offline=offline)
    response = StreamingHttpResponse(bets_stream(rows, fmt), content_type=CONTENT_TYPES[fmt])
    name = bets_filename(cohort=cohort, since=since, until=until, offline=offline, fmt=fmt)
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@router.get(
    "/bets.csv", url_name="bets_csv", summary="Bets as CSV", openapi_extra=_file_responses("csv")
)
def bets_csv(
    request: HttpRequest,
    cohort: int | None = COHORT,
    since: date | None = SINCE,
    until: date | None = UNTIL,
    offline: Offline = OFFLINE,
) -> StreamingHttpResponse:
    """One row per executed BUY, streamed: enough to recompute the leaderboard's Brier."""
    return _bets_response("csv", cohort, since, until, offline)


@router.get(
    "/bets.jsonl",
    url_name="bets_jsonl",
    summary="Bets as JSON Lines",
    openapi_extra=_file_responses("jsonl"),
)
def bets_jsonl(
    request: HttpRequest,
    cohort: int | None = COHORT,
    since: date | None = SINCE,
    until: date | None = UNTIL,
    offline: Offline = OFFLINE,
) -> StreamingHttpResponse:
    """One JSON object a line per executed BUY, streamed (decimals as strings)."""
    return _bets_response("jsonl", cohort, since, until, offline)
