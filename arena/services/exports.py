"""The bulk exports' files: CSV, JSON Lines and (with pyarrow) Parquet, and their manifest.

The rows come from arena/selectors/exports.py; this module turns them into bytes. One path,
`export_stream`, gives the bytes of the HTTP downloads, of the manifest computed over HTTP
(`stream_manifest`) and of the files `write_export` writes, so a checksum in a manifest is the
checksum of exactly the bytes a download streams. On PostgreSQL the database formats the
lines itself (`Dataset.formatted_batches`) in the cell formats below; elsewhere, and for the
datasets with JSON columns, the encoders here do (`dataset_stream`).

The cells, in every format:
- decimals (money, prices, shares) as decimal strings with their stored places ("100.00");
- timestamps ISO 8601 in UTC with a `Z` ("2026-01-04T00:10:00Z"), dates ISO ("2026-01-04");
- floats (Brier scores, implied confidence) with at most 15 significant digits, the most a
  double holds faithfully: a score computed as 0.053824000000000004 prints as 0.053824, and a
  mean recomputed from the file is the stored one to within 1e-15; in plain notation (1,
  0.0000001), which is a JSON number too;
- booleans `true`/`false`; JSON values as compact JSON text with sorted keys in CSV and as
  nested values in JSON Lines; a missing value an empty CSV cell or `null`.
CSV has a header row, `\\n` line ends and quotes what needs quoting; JSON Lines has one object
a line with the columns in order. Parquet columns are typed (decimal128 with the column's
places, timestamp[us, UTC], date32, float64 holding the stored value, JSON as text).

Nothing here writes to the database; `write_export` writes files, each under a temporary name
renamed into place when complete, so a crash never leaves a half file under a final name.
"""

from __future__ import annotations

import csv
import hashlib
import importlib.util
import json
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from decimal import Decimal
from itertools import islice
from json.encoder import encode_basestring
from pathlib import Path
from typing import Any, Literal

from django.db import connection, transaction

from arena import clock
from arena.selectors.exports import (
    DATASETS,
    Column,
    Dataset,
    Offline,
    StillHeld,
)
from arena.selectors.info import methodology_versions_reached

# The optional `parquet` extra. pyarrow is imported only when a Parquet file is written: it
# adds some 60 MB to every web and worker process that merely loads this module.
PARQUET_AVAILABLE = importlib.util.find_spec("pyarrow") is not None

Format = Literal["csv", "jsonl", "parquet"]
TEXT_FORMATS: tuple[Format, ...] = ("csv", "jsonl")
FORMATS: tuple[Format, ...] = ("csv", "jsonl", "parquet")
CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "jsonl": "application/x-ndjson; charset=utf-8",
    "parquet": "application/vnd.apache.parquet",
}
BATCH_ROWS = 2000  # rows encoded together: one chunk of a download, one progress report
PARQUET_ROW_GROUP = 64 * 1024
MANIFEST_NAME = "manifest.json"

Row = tuple[Any, ...]
Progress = Callable[[str, int], None]


class ExportError(ValueError):
    """An export asked for something that cannot be written (an unknown dataset or format)."""


# ------------------------------------------------------------------------------ the cells


def _timestamp(value: datetime) -> str:
    text = value.isoformat()
    if text.endswith("+00:00"):
        return text[:-6] + "Z"
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _day(value: date) -> str:
    return value.isoformat()


def _csv_float(value: float) -> str:
    """At most 15 significant digits, in plain notation: 0.053824, 1, 0.0000001."""
    return format(Decimal(f"{value:.15g}"), "f")


def _csv_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _csv_boolean(value: bool) -> str:
    return "true" if value else "false"


# Per type, what turns a non-None value into its cell; a type not listed goes in as it is
# (csv.writer writes str() of it: integers, text, decimals with their places).
CSV_CELLS: dict[str, Callable[[Any], Any]] = {
    "timestamp": _timestamp,
    "date": _day,
    "float": _csv_float,
    "json": _csv_json,
    "boolean": _csv_boolean,
}


def _quoted(text: str) -> str:
    return f'"{text}"'  # digits and punctuation: nothing to escape


# Per type, what turns a non-None value into its JSON text (None is `null`).
JSON_CELLS: dict[str, Callable[[Any], str]] = {
    "integer": str,
    "string": encode_basestring,  # json's own string escaping (non-ASCII kept as is)
    "decimal": lambda value: f'"{value}"',
    "float": _csv_float,  # plain notation is a JSON number too
    "boolean": _csv_boolean,
    "timestamp": lambda value: _quoted(_timestamp(value)),
    "date": lambda value: _quoted(_day(value)),
    # Sorted keys: PostgreSQL's jsonb reorders them, SQLite keeps them as written; sorted,
    # the same data gives the same bytes on either.
    "json": _csv_json,
}


def _converters(
    columns: tuple[Column, ...], cells: dict[str, Callable[[Any], Any]]
) -> tuple[tuple[int, Callable[[Any], Any]], ...]:
    return tuple((i, cells[c.type]) for i, c in enumerate(columns) if c.type in cells)


def _converted(
    batch: list[Row], converters: tuple[tuple[int, Callable[[Any], Any]], ...]
) -> Iterator[Any]:
    """The batch's rows with the listed cells converted (rows untouched when nothing is)."""
    if not converters:
        yield from batch
        return
    for row in batch:
        cells = list(row)
        for i, convert in converters:
            value = cells[i]
            if value is not None:
                cells[i] = convert(value)
        yield cells


class _Echo:
    """A file whose `write` hands back what it is given: `csv.writer(_Echo()).writerow(row)`
    returns the row's line."""

    def write(self, line: str) -> str:
        return line


class _CsvEncoder:
    def __init__(self, dataset: Dataset) -> None:
        self.names = dataset.column_names
        self.converters = _converters(dataset.columns, CSV_CELLS)
        # The writer quotes a cell holding any character of its line terminator, so "\r\n"
        # makes it quote a cell with a bare "\r" as well as one with "\n" (as PostgreSQL's
        # COPY does); each line's final "\r\n" is then written as "\n".
        self.writer = csv.writer(_Echo(), lineterminator="\r\n")

    def header(self) -> bytes:
        return self._written([self.names])

    def encode(self, batch: list[Row]) -> bytes:
        return self._written(_converted(batch, self.converters))

    def _written(self, rows: Iterable[Any]) -> bytes:
        line = self.writer.writerow
        return "".join([line(row)[:-2] + "\n" for row in rows]).encode()


class _JsonLinesEncoder:
    """One object a line, written cell by cell in the same texts PostgreSQL writes them
    (`Dataset.formatted_batches`), so both give the same bytes."""

    def __init__(self, dataset: Dataset) -> None:
        self.cells = tuple(
            (f'{"{" if i == 0 else ","}"{c.name}":', JSON_CELLS[c.type])
            for i, c in enumerate(dataset.columns)
        )

    def header(self) -> bytes:
        return b""

    def encode(self, batch: list[Row]) -> bytes:
        cells = self.cells
        lines = [
            "".join(
                [
                    key + ("null" if value is None else text(value))
                    for (key, text), value in zip(cells, row, strict=True)
                ]
            )
            + "}\n"
            for row in batch
        ]
        return "".join(lines).encode()


_TextEncoder = _CsvEncoder | _JsonLinesEncoder


def _text_encoder(dataset: Dataset, fmt: str) -> _TextEncoder:
    if fmt == "csv":
        return _CsvEncoder(dataset)
    if fmt == "jsonl":
        return _JsonLinesEncoder(dataset)
    raise ExportError(f"{fmt!r} is not a streamed format; choose from {', '.join(TEXT_FORMATS)}")


def _batch_rows(dataset: Dataset) -> int:
    return min(BATCH_ROWS, dataset.chunk_rows)


def _batches(rows: Iterable[Row], size: int) -> Iterator[list[Row]]:
    iterator = iter(rows)
    while batch := list(islice(iterator, size)):
        yield batch


def dataset_stream(dataset: Dataset, fmt: str, rows: Iterable[Row]) -> Iterator[bytes]:
    """Return the file's bytes in chunks (CSV or JSON Lines) written from `rows`."""
    encoder = _text_encoder(dataset, fmt)
    if header := encoder.header():
        yield header
    for batch in _batches(rows, _batch_rows(dataset)):
        yield encoder.encode(batch)


def _counted_chunks(
    dataset: Dataset, fmt: str, bounds: dict[str, Any]
) -> Iterator[tuple[int, bytes]]:
    """The bounded file's chunks with the rows each holds (the header holds none), formatted
    by the database where it can (`Dataset.formatted_batches`), else here."""
    encoder = _text_encoder(dataset, fmt)
    if header := encoder.header():
        yield 0, header
    formatted = dataset.formatted_batches(fmt, batch_rows=_batch_rows(dataset), **bounds)
    if formatted is not None:
        yield from formatted
        return
    for batch in _batches(dataset.rows(**bounds), _batch_rows(dataset)):
        yield len(batch), encoder.encode(batch)


def export_stream(
    dataset: Dataset,
    fmt: str,
    *,
    cohort: int | None = None,
    since: date | None = None,
    until: date | None = None,
    offline: Offline = "include",
) -> Iterator[bytes]:
    """Return the bounded file's bytes in chunks (CSV or JSON Lines): what a download streams
    and what `write_export` writes. Raise ExportError for another format."""
    bounds = {"cohort": cohort, "since": since, "until": until, "offline": offline}
    _text_encoder(dataset, fmt)  # an unknown format fails here, not mid-stream
    return (chunk for _, chunk in _counted_chunks(dataset, fmt, bounds))


# ------------------------------------------------------------------------------- parquet


def _arrow_type(column: Column) -> Any:
    import pyarrow as pa

    return {
        "integer": pa.int64(),
        "string": pa.string(),
        "decimal": pa.decimal128(38, column.scale or 0),
        "float": pa.float64(),
        "boolean": pa.bool_(),
        "timestamp": pa.timestamp("us", tz="UTC"),
        "date": pa.date32(),
        "json": pa.string(),
    }[column.type]


class _ParquetFile:
    """Rows written to a Parquet file in row groups of `PARQUET_ROW_GROUP` rows (ten chunks
    of a dataset whose rows are wide)."""

    def __init__(self, dataset: Dataset, path: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.dataset = dataset
        self.schema = pa.schema(
            [
                pa.field(c.name, _arrow_type(c), metadata={"description": c.description})
                for c in dataset.columns
            ],
            metadata={"dataset": dataset.name, "description": dataset.description},
        )
        self.json_columns = [i for i, c in enumerate(dataset.columns) if c.type == "json"]
        self.pending: list[Row] = []
        self.writer = pq.ParquetWriter(str(path), self.schema)

    def add(self, batch: list[Row]) -> None:
        self.pending.extend(batch)
        if len(self.pending) >= min(PARQUET_ROW_GROUP, 10 * self.dataset.chunk_rows):
            self._flush()

    def _flush(self) -> None:
        if not self.pending:
            return
        import pyarrow as pa

        columns = [list(values) for values in zip(*self.pending, strict=True)]
        for i in self.json_columns:
            columns[i] = [None if v is None else _csv_json(v) for v in columns[i]]
        arrays = [
            pa.array(values, type=field.type)
            for values, field in zip(columns, self.schema, strict=True)
        ]
        self.writer.write_table(pa.Table.from_arrays(arrays, schema=self.schema))
        self.pending = []

    def close(self) -> None:
        self._flush()
        self.writer.close()


# ------------------------------------------------------------------------------ the files


class _HashedFile:
    """A file being written under a temporary name, hashed and counted as it goes."""

    def __init__(self, final: Path) -> None:
        self.final = final
        self.temporary = final.with_name(f".{final.name}.partial")
        self.handle = self.temporary.open("wb")
        self.sha256 = hashlib.sha256()
        self.bytes = 0

    def write(self, chunk: bytes) -> None:
        self.handle.write(chunk)
        self.sha256.update(chunk)
        self.bytes += len(chunk)

    def publish(self) -> None:
        self.handle.close()
        os.replace(self.temporary, self.final)

    def discard(self) -> None:
        self.handle.close()
        self.temporary.unlink(missing_ok=True)


class _Digest:
    """Counts and hashes bytes that are not kept (the manifest over HTTP)."""

    def __init__(self) -> None:
        self.sha256 = hashlib.sha256()
        self.bytes = 0

    def write(self, chunk: bytes) -> None:
        self.sha256.update(chunk)
        self.bytes += len(chunk)


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _chosen(
    datasets: Iterable[str] | None, formats: Iterable[str]
) -> tuple[list[Dataset], list[str]]:
    names = list(DATASETS) if datasets is None else list(dict.fromkeys(datasets))
    unknown = [n for n in names if n not in DATASETS]
    if unknown:
        raise ExportError(
            f"unknown dataset {', '.join(unknown)}; choose from {', '.join(DATASETS)}"
        )
    chosen_formats = list(dict.fromkeys(formats))
    bad = [f for f in chosen_formats if f not in FORMATS]
    if bad:
        raise ExportError(f"unknown format {', '.join(bad)}; choose from {', '.join(FORMATS)}")
    if "parquet" in chosen_formats and not PARQUET_AVAILABLE:
        raise ExportError("Parquet needs pyarrow: install the `parquet` extra")
    if not names or not chosen_formats:
        raise ExportError("nothing to export: no dataset or no format chosen")
    return [DATASETS[n] for n in names], chosen_formats


def _bounds(
    cohort: int | None,
    since: date | None,
    until: date | None,
    offline: Offline,
    still_held: StillHeld,
) -> dict[str, Any]:
    bounds: dict[str, Any] = {
        "cohort": cohort,
        "since": since.isoformat() if since else None,
        "until": until.isoformat() if until else None,
        "offline": offline,
    }
    if still_held != "include":  # a release's bound only; the live downloads never set it
        bounds["still_held"] = still_held
    return bounds


def manifest_for(
    *,
    files: list[dict[str, Any]],
    datasets: list[Dataset],
    cohort: int | None,
    since: date | None,
    until: date | None,
    offline: Offline,
    still_held: StillHeld = "include",
) -> dict[str, Any]:
    """Return the manifest of an export: versions, time, bounds, files, each dataset's schema."""
    return {
        "methodology_versions": methodology_versions_reached(
            cohort=cohort, since=since, until=until
        ),
        "generated_at": _timestamp(clock.now().replace(microsecond=0)),
        "bounds": _bounds(cohort, since, until, offline, still_held),
        "files": files,
        "schema": {
            d.name: [
                {"name": c.name, "type": c.type, "description": c.description} for c in d.columns
            ]
            for d in datasets
        },
    }


def _file_entry(dataset: Dataset, fmt: str, rows: int, size: int, sha256: str) -> dict[str, Any]:
    return {
        "name": f"{dataset.name}.{fmt}",
        "dataset": dataset.name,
        "format": fmt,
        "rows": rows,
        "bytes": size,
        "sha256": sha256,
    }


def _check_bounds(since: date | None, until: date | None) -> None:
    if since is not None and until is not None and until < since:
        raise ExportError("until must not be before since")


@contextmanager
def export_snapshot() -> Iterator[None]:
    """Read every dataset of an export from one snapshot of the database, so the files and
    their counts agree with each other even while new rows arrive (PostgreSQL: a read-only
    REPEATABLE READ transaction; inside a caller's transaction, that transaction's view)."""
    if connection.in_atomic_block or connection.vendor != "postgresql":
        with transaction.atomic():
            yield
        return
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        yield


def write_export(
    folder: Path,
    *,
    cohort: int | None = None,
    since: date | None = None,
    until: date | None = None,
    offline: Offline = "include",
    still_held: StillHeld = "include",
    datasets: Iterable[str] | None = None,
    formats: Iterable[str] = TEXT_FORMATS,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Write `<dataset>.<format>` for each dataset and format, then `manifest.json`; return
    the manifest.

    CSV and JSON Lines are the very bytes the downloads stream (`export_stream`). All is read
    from one snapshot of the database (the caller's, when it opened one with
    `export_snapshot`). `still_held="exclude"` is a data release's bound: it leaves out the
    snapshots the ticks keep adding (arena.selectors.exports). `progress(dataset,
    rows_so_far)` is called after every `BATCH_ROWS` rows of each file and at its end. The
    folder is created if missing; files of the same names are replaced whole, each written
    under a temporary name and renamed when complete. Raise ExportError for an unknown
    dataset or format, Parquet without pyarrow, or `until` before `since`. Safe to repeat:
    the same data writes the same files.
    """
    _check_bounds(since, until)
    chosen, chosen_formats = _chosen(datasets, formats)
    bounds: dict[str, Any] = {
        "cohort": cohort,
        "since": since,
        "until": until,
        "offline": offline,
        "still_held": still_held,
    }
    folder.mkdir(parents=True, exist_ok=True)
    entries: list[dict[str, Any]] = []
    with export_snapshot():
        for dataset in chosen:
            for fmt in chosen_formats:
                if fmt == "parquet":
                    entries.append(_write_parquet(folder, dataset, bounds, progress))
                else:
                    entries.append(_write_text(folder, dataset, fmt, bounds, progress))
        manifest = manifest_for(files=entries, datasets=chosen, **bounds)
    target = _HashedFile(folder / MANIFEST_NAME)
    try:
        target.write(json.dumps(manifest, indent=2, ensure_ascii=False).encode() + b"\n")
    except BaseException:
        target.discard()
        raise
    target.publish()
    return manifest


def _write_text(
    folder: Path, dataset: Dataset, fmt: str, bounds: dict[str, Any], progress: Progress | None
) -> dict[str, Any]:
    target = _HashedFile(folder / f"{dataset.name}.{fmt}")
    count = 0
    try:
        for rows, chunk in _counted_chunks(dataset, fmt, bounds):
            target.write(chunk)
            count += rows
            if rows and progress is not None:
                progress(dataset.name, count)
        if progress is not None and count == 0:
            progress(dataset.name, 0)
    except BaseException:
        target.discard()
        raise
    target.publish()
    return _file_entry(dataset, fmt, count, target.bytes, target.sha256.hexdigest())


def _write_parquet(
    folder: Path, dataset: Dataset, bounds: dict[str, Any], progress: Progress | None
) -> dict[str, Any]:
    final = folder / f"{dataset.name}.parquet"
    partial = final.with_name(f".{final.name}.partial")
    count = 0
    try:
        parquet = _ParquetFile(dataset, partial)
        for batch in _batches(dataset.rows(**bounds), _batch_rows(dataset)):
            parquet.add(batch)
            count += len(batch)
            if progress is not None:
                progress(dataset.name, count)
        parquet.close()
        if progress is not None and count == 0:
            progress(dataset.name, 0)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, final)
    return _file_entry(dataset, "parquet", count, final.stat().st_size, _file_sha256(final))


def stream_manifest(
    *,
    cohort: int | None = None,
    since: date | None = None,
    until: date | None = None,
    offline: Offline = "include",
) -> dict[str, Any]:
    """Return the manifest of the CSV and JSON Lines downloads under these bounds, computed
    from exactly the bytes `export_stream` gives (rows counted, SHA-256), storing nothing.

    Reads every dataset once per format, from one snapshot. Raise ExportError when `until`
    is before `since`.
    """
    _check_bounds(since, until)
    chosen, formats = _chosen(None, TEXT_FORMATS)
    bounds: dict[str, Any] = {"cohort": cohort, "since": since, "until": until, "offline": offline}
    entries: list[dict[str, Any]] = []
    with export_snapshot():
        for dataset in chosen:
            for fmt in formats:
                digest, count = _Digest(), 0
                for rows, chunk in _counted_chunks(dataset, fmt, bounds):
                    digest.write(chunk)
                    count += rows
                entries.append(
                    _file_entry(dataset, fmt, count, digest.bytes, digest.sha256.hexdigest())
                )
        return manifest_for(files=entries, datasets=chosen, **bounds)
