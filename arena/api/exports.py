"""The bulk exports' router (mounted at `/api/v1/exports/`): streamed CSV and JSON Lines.

`GET <dataset>.csv` and `GET <dataset>.jsonl` stream one dataset (decisions, attempts, trades,
positions, snapshots, bets: columns and meanings in arena/selectors/exports.py, cells in
arena/services/exports.py), bounded by `?cohort=N` and/or `?since=&until=` (ISO dates, both
inclusive, UTC days on the row's natural day), with `?offline=include|exclude|only` (default
`include`) to keep or split off the rows of agents an offline stand-in answered for.
`GET manifest.json` with the same bounds gives each download's row count and SHA-256, computed
over the very bytes the downloads stream. A bad parameter is a 4xx in the error envelope,
never a 500.

A download is written to a file first and sent from it, in one of the web process's download
slots (arena/services/downloads.py): however slowly a client reads, it holds one thread, never
the site or the database. Past the slots, a 503 with `Retry-After`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import date
from typing import Any, Literal

from django.core.cache import cache
from django.http import FileResponse, HttpRequest, HttpResponse, JsonResponse
from ninja import Field, Router, Schema
from ninja.errors import HttpError
from ninja.params.functions import Query

from arena.api.errors import error_envelope
from arena.api.params import IsoDate
from arena.seal import sealed_from
from arena.selectors.exports import BET_COLUMNS, DATASETS, BetRow, Dataset, Offline
from arena.selectors.watermark import data_watermark
from arena.services.downloads import DownloadsBusy, download_slot, export_spooled
from arena.services.exports import CONTENT_TYPES, dataset_stream, stream_manifest
from arena.weeks import outside_window

MANIFEST_CACHE_SECONDS = 600  # a tick's interval

router = Router(tags=["exports"])

Format = Literal["csv", "jsonl"]
MAX_ID = 2**31 - 1  # the largest value a cohort number column holds
# The query parameters, shared by every download and the manifest.
COHORT = Query(None, ge=1, le=MAX_ID, description="Only this cohort's rows (its number).")
SINCE = Query(None, description="Only rows of this UTC day or later (ISO date).")
UNTIL = Query(None, description="Only rows of this UTC day or earlier; not before since.")
OFFLINE = Query(
    "include",
    description="Rows of agents an offline stand-in answered for: include (the default), "
    "exclude (the real models' rows, which the leaderboard's real rows pool) or only (the "
    "rows its offline rows pool).",
)


SEALED = (
    "The week's decisions are sealed (Sunday 00:00 UTC until the outside agents' window "
    "closes): the downloads pause until then."
)


def _file_responses(dataset: Dataset, fmt: Format) -> dict[str, object]:
    """The OpenAPI description of a streamed file and of the 4xx a bad parameter gets."""
    return {
        "responses": {
            200: {
                "description": f"{dataset.description} As {fmt.upper()}, an attachment "
                "whose Content-Length is given.",
                "content": {CONTENT_TYPES[fmt].split(";")[0]: {"schema": {"type": "string"}}},
            },
            400: {"description": "`until` before `since`."},
            422: {"description": "A parameter that is not a number, date or choice it must be."},
            503: {
                "description": f"{SEALED} Or every download slot of the server is busy: "
                "ask again after `Retry-After` seconds."
            },
        }
    }


def bets_stream(rows: Iterable[BetRow], fmt: Format) -> Iterator[str]:
    """Return the bets export's body, as text chunks, for rows keyed by `BET_COLUMNS`: CSV
    with a header row (an empty cell for None), or JSON Lines (decimals as strings)."""
    tuples = (tuple(row[c] for c in BET_COLUMNS) for row in rows)
    return (chunk.decode() for chunk in dataset_stream(DATASETS["bets"], fmt, tuples))


def export_filename(
    dataset: str,
    *,
    cohort: int | None,
    since: date | None,
    until: date | None,
    offline: Offline,
    fmt: str,
) -> str:
    """Return the download's file name, which names its bounds: `bets-cohort-3.csv`."""
    parts = [dataset]
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


def bets_filename(
    *, cohort: int | None, since: date | None, until: date | None, offline: Offline, fmt: Format
) -> str:
    return export_filename(
        "bets", cohort=cohort, since=since, until=until, offline=offline, fmt=fmt
    )


def _check_bounds(since: date | None, until: date | None) -> None:
    if since is not None and until is not None and until < since:
        raise HttpError(400, "until must not be before since")


def _check_unsealed() -> None:
    """The downloads pause while the week is sealed (arena/seal.py). The pages and the API
    show the arena as it stood when the seal began; a download's rows are read by the
    database itself (COPY on PostgreSQL), which could not show a position as it stood then,
    so none is served until the week's decisions are final."""
    seal = sealed_from()
    if seal is not None:
        lifts = outside_window(seal.date())[1]
        raise HttpError(
            503,
            f"The downloads pause while the week's decisions are sealed: from "
            f"{seal:%Y-%m-%d %H:%M} to {lifts:%H:%M} UTC. Ask again after {lifts:%H:%M} UTC.",
        )


def _download(
    dataset: Dataset,
    fmt: Format,
    cohort: int | None,
    since: date | None,
    until: date | None,
    offline: Offline,
) -> HttpResponse | FileResponse:
    _check_bounds(since, until)
    _check_unsealed()
    try:
        give_back = download_slot()
    except DownloadsBusy as busy:
        return _busy(busy)
    spooled = export_spooled(
        dataset, fmt, give_back, cohort=cohort, since=since, until=until, offline=offline
    )
    name = export_filename(
        dataset.name, cohort=cohort, since=since, until=until, offline=offline, fmt=fmt
    )
    # The response closes the file when it is sent or the client goes: the slot comes back.
    return FileResponse(
        spooled,
        as_attachment=True,
        filename=name,
        content_type=CONTENT_TYPES[fmt],
    )


def _busy(busy: DownloadsBusy) -> JsonResponse:
    """Every download slot of this process is taken: 503, and when to ask again."""
    answer = JsonResponse(
        error_envelope(status=503, code="downloads_busy", message=str(busy)), status=503
    )
    answer["Retry-After"] = str(busy.retry_after)
    return answer


def _register(dataset: Dataset, fmt: Format) -> None:
    """Route `GET <dataset>.<fmt>` (URL name `<dataset>_<fmt>`)."""

    def download(
        request: HttpRequest,
        cohort: int | None = COHORT,
        since: IsoDate | None = SINCE,
        until: IsoDate | None = UNTIL,
        offline: Offline = OFFLINE,
    ) -> HttpResponse | FileResponse:
        return _download(dataset, fmt, cohort, since, until, offline)

    download.__doc__ = (
        f"{dataset.description} Sent as a file with its length; columns in the manifest's schema."
    )
    label = "CSV" if fmt == "csv" else "JSON Lines"
    route: Callable[[Any], Any] = router.get(
        f"/{dataset.name}.{fmt}",
        url_name=f"{dataset.name}_{fmt}",
        operation_id=f"export_{dataset.name}_{fmt}",
        summary=f"{dataset.name.capitalize()} as {label}",
        openapi_extra=_file_responses(dataset, fmt),
    )
    route(download)


FORMATS: tuple[Format, ...] = ("csv", "jsonl")
for _dataset in DATASETS.values():
    for _fmt in FORMATS:
        _register(_dataset, _fmt)


class ColumnOut(Schema):
    name: str
    type: str
    description: str


class FileOut(Schema):
    name: str
    dataset: str
    format: str
    rows: int
    bytes: int
    sha256: str


class BoundsOut(Schema):
    cohort: int | None
    since: date | None
    until: date | None
    offline: str


class ManifestOut(Schema):
    methodology_versions: list[str]
    generated_at: str
    bounds: BoundsOut
    files: list[FileOut]
    # `schema` would shadow pydantic's own attribute: the field is named in the JSON only.
    columns: dict[str, list[ColumnOut]] = Field(alias="schema")


@router.get(
    "/manifest.json",
    url_name="exports_manifest",
    operation_id="export_manifest",
    summary="The downloads' manifest",
    response={200: ManifestOut},
    openapi_extra={
        "responses": {
            400: {"description": "`until` before `since`."},
            503: {"description": f"{SEALED} Or every download slot of the server is busy."},
        }
    },
    by_alias=True,
)
def manifest(
    request: HttpRequest,
    cohort: int | None = COHORT,
    since: IsoDate | None = SINCE,
    until: IsoDate | None = UNTIL,
    offline: Offline = OFFLINE,
) -> dict[str, Any] | JsonResponse:
    """Each CSV and JSON Lines download under these bounds: rows, bytes and SHA-256 of exactly
    what it sends; with the methodology versions, the time and every dataset's columns."""
    _check_bounds(since, until)
    _check_unsealed()
    # Computing it reads every dataset twice: the answer is kept until the data may have
    # changed (the watermark moves) or for MANIFEST_CACHE_SECONDS, whichever comes first.
    key = f"export-manifest:{cohort}:{since}:{until}:{offline}:{data_watermark()}"
    found: dict[str, Any] | None = cache.get(key)
    if found is None:
        # It reads as much as every download together: it takes a download slot while it does.
        try:
            give_back = download_slot()
        except DownloadsBusy as busy:
            return _busy(busy)
        try:
            found = stream_manifest(cohort=cohort, since=since, until=until, offline=offline)
        finally:
            give_back()
        cache.set(key, found, timeout=MANIFEST_CACHE_SECONDS)
    return found
