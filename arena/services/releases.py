"""Frozen weekly data releases (issue 10): when a cohort completes, its exports are published
once, as the folder `RELEASES_ROOT/cohort-<n>-v<k>/`, and never change afterwards.

A release holds every dataset of `arena.selectors.exports.DATASETS` bounded to the cohort, as
CSV and JSON Lines (and Parquet when pyarrow is installed), the export's `manifest.json`, a
schema description (`schema.json`, `README.md`), checksums (`SHA256SUMS`) and a suggested
citation (`CITATION.cff`, and in the README). A correction — the cohort's data differs from its
latest release, say a baseline's bet scored after completion — is a new version whose
`changes` says which datasets and row counts differ.

How a release stays frozen and whole:
- the files are written into a hidden `.partial-…` folder, then renamed into place in one step
  (a rename within one file system is atomic): a reader never sees half a release;
- the `DataRelease` row is created only after that rename, in its own short transaction — no
  transaction is open while files are written;
- publishes of one cohort are serialised by an exclusive lock file next to the folders, so the
  version numbers cannot race; a crash leaves a `.partial-…` folder (or a renamed folder whose
  row never committed), which the next publish of that cohort removes before it starts;
- a publish whose data files match the latest release's checksums writes nothing: a repeat is
  safe, and so is delivering the task twice.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from django.conf import settings
from django.db import transaction

from arena import clock
from arena.evidence import error_text, traceback_summary
from arena.models import Cohort, DataRelease
from arena.selectors.exports import DATASETS
from arena.selectors.releases import (
    PUBLISHER,
    cohorts_awaiting_release,
    release_citation,
    release_latest,
)
from arena.services.events import Kind, Level, event_record
from arena.services.exports import PARQUET_AVAILABLE, write_export
from arena.services.operations import OperationReport

logger = logging.getLogger(__name__)

PARTIAL_PREFIX = ".partial-"
LOCK_PREFIX = ".lock-"
CHECKSUMS = "SHA256SUMS"
MANIFEST = "manifest.json"
SCHEMA = "schema.json"
README = "README.md"
CITATION = "CITATION.cff"
HASH_CHUNK = 1 << 20

Status = Literal["published", "unchanged", "busy", "not completed"]


@dataclass(frozen=True)
class PublishOutcome:
    """What one publish of a cohort did: `published` a new release, found its data
    `unchanged` since the latest one, found another publish of it `busy`, or refused a cohort
    `not completed`."""

    cohort: int
    status: Status
    release: DataRelease | None = None

    def summary(self) -> str:
        if self.status == "published" and self.release is not None:
            return f"cohort {self.cohort}: published {self.release.name}"
        if self.status == "unchanged" and self.release is not None:
            return f"cohort {self.cohort}: unchanged since {self.release.name}, nothing published"
        if self.status == "busy":
            return f"cohort {self.cohort}: another publish of it is under way"
        return f"cohort {self.cohort}: not completed, nothing published"


def release_name(*, cohort_number: int, version: int) -> str:
    return f"cohort-{cohort_number}-v{version}"


def release_formats() -> tuple[str, ...]:
    """The formats a release holds: CSV and JSON Lines, and Parquet when pyarrow is here."""
    return ("csv", "jsonl", "parquet") if PARQUET_AVAILABLE else ("csv", "jsonl")


# ------------------------------------------------------------------------------ publishing


def release_publish(*, cohort_number: int, now: datetime | None = None) -> PublishOutcome:
    """Publish a frozen release of the completed cohort `cohort_number`, or do nothing when its
    data is the same as its latest release's. Return what happened.

    Version 1 on the first publish; a later publish whose data files differ is the next
    version, its `changes` saying what differs. Call it outside any transaction: it writes
    files for as long as the export takes, and its row is committed on its own. Raise
    Cohort.DoesNotExist for an unknown number; any other failure is recorded as a
    `release_failed` event, leaves no row and no folder, and is raised again.
    """
    cohort = Cohort.objects.get(number=cohort_number)
    if cohort.status != Cohort.Status.COMPLETED:
        return PublishOutcome(cohort=cohort.number, status="not completed")
    root = Path(settings.RELEASES_ROOT)
    try:
        root.mkdir(parents=True, exist_ok=True)
        with _cohort_lock(root, cohort.number) as held:
            if not held:
                return PublishOutcome(cohort=cohort.number, status="busy")
            _leftovers_remove(root, cohort)
            return _publish(root, cohort, now=now or clock.now())
    except Exception as exc:
        logger.exception("publishing the data release of cohort %s failed", cohort.number)
        event_record(
            kind=Kind.RELEASE_FAILED,
            level=Level.ERROR,
            message=f"publishing the data release of cohort {cohort.number} failed, nothing "
            f"was published (a cohort still without a release is tried again after the next "
            f"resolution check): {error_text(exc)}",
            cohort_id=cohort.pk,
            data={"traceback": traceback_summary(exc)},
        )
        raise


def releases_publish_due(*, now: datetime | None = None) -> OperationReport:
    """Publish the first release of every completed cohort that has none yet (oldest first):
    the hourly catch-up after completions and after failed publishes. One cohort's failure is
    reported (and recorded by `release_publish`) and the others go on."""
    numbers = list(cohorts_awaiting_release().values_list("number", flat=True))
    return releases_publish(cohort_numbers=numbers, now=now)


def releases_publish(*, cohort_numbers: list[int], now: datetime | None = None) -> OperationReport:
    """Publish each cohort's data again (`release_publish`): a new version where it changed,
    nothing where it did not. The admin's action; each cohort's failure is reported with its
    reason and the others go on."""
    report = OperationReport()
    for number in sorted(set(cohort_numbers)):
        try:
            outcome = release_publish(cohort_number=number, now=now)
        except Cohort.DoesNotExist:
            report.failed.append(f"cohort {number}: no such cohort")
            continue
        except Exception as exc:  # one cohort's failure must not stop the others
            report.failed.append(f"cohort {number}: publishing failed: {error_text(exc)}")
            continue
        if outcome.status in ("published", "unchanged"):
            report.done.append(outcome.summary())
        else:
            report.failed.append(outcome.summary())
    return report


@contextmanager
def _cohort_lock(root: Path, number: int) -> Iterator[bool]:
    """Hold the cohort's exclusive publish lock, or yield False at once if another process
    (or thread) holds it. The kernel drops the lock of a process that dies."""
    with open(root / f"{LOCK_PREFIX}cohort-{number}", "a+b") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _leftovers_remove(root: Path, cohort: Cohort) -> None:
    """Remove what a crashed publish of this cohort left: its `.partial-…` folders, and any
    release folder whose row never committed. Only called under the cohort's lock."""
    recorded = set(DataRelease.objects.filter(cohort=cohort).values_list("name", flat=True))
    prefix = f"cohort-{cohort.number}-v"
    for path in root.iterdir():
        if not path.is_dir():
            continue
        partial = path.name.startswith(_partial_prefix(cohort.number))
        orphan = (
            path.name.startswith(prefix)
            and path.name[len(prefix) :].isdigit()
            and path.name not in recorded
        )
        if partial or orphan:
            logger.warning("removing %s, left by a publish that did not finish", path)
            shutil.rmtree(path)


def _partial_prefix(number: int) -> str:
    return f"{PARTIAL_PREFIX}cohort-{number}-"


def _publish(root: Path, cohort: Cohort, *, now: datetime) -> PublishOutcome:
    previous = release_latest(cohort=cohort)
    partial = root / f"{_partial_prefix(cohort.number)}{uuid.uuid4().hex[:12]}"
    partial.mkdir()
    final: Path | None = None
    try:
        manifest = write_export(partial, cohort=cohort.number, formats=release_formats())
        data_files = _data_files(partial, manifest)
        if previous is not None and _checksums(data_files) == _checksums(
            [f for f in previous.files if f.get("dataset")]
        ):
            return PublishOutcome(cohort=cohort.number, status="unchanged", release=previous)
        version = previous.version + 1 if previous else 1
        name = release_name(cohort_number=cohort.number, version=version)
        changes = release_changes(previous=previous, data_files=data_files)
        citation = release_citation(
            name=name,
            cohort_number=cohort.number,
            version=version,
            published_at=now,
            methodology=cohort.methodology_version,
        )
        _text_write(partial / SCHEMA, json.dumps(_schema(data_files), indent=2) + "\n")
        _text_write(
            partial / README,
            _readme(
                name=name,
                cohort=cohort,
                version=version,
                published_at=now,
                data_files=data_files,
                changes=changes,
                citation=citation,
            ),
        )
        _text_write(
            partial / CITATION,
            _citation_cff(name=name, cohort=cohort, version=version, published_at=now),
        )
        files = _files(partial, data_files)
        sums = "".join(f"{f['sha256']}  {f['name']}\n" for f in files)
        _text_write(partial / CHECKSUMS, sums)
        files.append(_file_entry(partial / CHECKSUMS))
        for path in partial.iterdir():
            path.chmod(0o444)  # published files are read only
            _fsync(path)  # on the disk before the row says they are
        final = root / name
        # Atomic. The name is free: a folder of it without a row was removed above.
        os.rename(partial, final)
        _fsync(root)
    finally:
        if partial.exists():
            shutil.rmtree(partial)
    try:
        with transaction.atomic():
            release = DataRelease.objects.create(
                cohort=cohort,
                version=version,
                name=name,
                published_at=now,
                methodology_version=cohort.methodology_version,
                manifest=manifest,
                files=files,
                sha256=hashlib.sha256(sums.encode()).hexdigest(),
                total_bytes=sum(int(f["bytes"]) for f in files),
                changes=changes,
            )
    except Exception:
        shutil.rmtree(final, ignore_errors=True)  # no row, so no folder
        raise
    event_record(
        kind=Kind.RELEASE_PUBLISHED,
        message=f"data release {name} of cohort {cohort.number} published"
        + (f": {changes.splitlines()[0]}" if changes else ""),
        cohort_id=cohort.pk,
        data={"release": name, "sha256": release.sha256, "bytes": release.total_bytes},
    )
    return PublishOutcome(cohort=cohort.number, status="published", release=release)


# --------------------------------------------------------------------------- the files


def _fsync(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _file_entry(path: Path, **extra: Any) -> dict[str, Any]:
    return {"name": path.name, "bytes": path.stat().st_size, "sha256": file_sha256(path), **extra}


def _data_files(folder: Path, manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """Return the manifest's data files as read back from the disk; raise ValueError when a
    file is missing or its checksum or size is not the manifest's (a broken write)."""
    entries = []
    for listed in manifest["files"]:
        path = folder / str(listed["name"])
        if path.name != listed["name"] or not path.is_file():
            raise ValueError(f"the export lists {listed['name']!r} but did not write it")
        entry = _file_entry(
            path, dataset=listed["dataset"], format=listed["format"], rows=int(listed["rows"])
        )
        if entry["sha256"] != listed["sha256"] or entry["bytes"] != listed["bytes"]:
            raise ValueError(f"{path.name} on disk is not what the export's manifest says")
        entries.append(entry)
    return sorted(entries, key=lambda e: e["name"])


def _checksums(files: list[dict[str, Any]]) -> dict[str, str]:
    return {str(f["name"]): str(f["sha256"]) for f in files}


def _files(folder: Path, data_files: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every file of the folder (data files with their dataset, format and rows), by name."""
    by_name = {f["name"]: f for f in data_files}
    return [
        by_name.get(path.name) or _file_entry(path)
        for path in sorted(folder.iterdir(), key=lambda p: p.name)
    ]


def _text_write(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(text)


def release_changes(*, previous: DataRelease | None, data_files: list[dict[str, Any]]) -> str:
    """Return what differs between `previous`'s data files and `data_files`, a line per
    dataset: its row count before and after and the files that differ; files added or
    removed. Empty when there is no previous release."""
    if previous is None:
        return ""
    old = {f["name"]: f for f in previous.files if f.get("dataset")}
    new = {f["name"]: f for f in data_files}
    lines = [f"Corrects {previous.name}."]
    datasets = sorted({f["dataset"] for f in [*old.values(), *new.values()]})
    for dataset in datasets:
        names = sorted(
            n
            for n in old.keys() | new.keys()
            if (old.get(n) or new[n])["dataset"] == dataset
            and (old.get(n) or {}).get("sha256") != (new.get(n) or {}).get("sha256")
        )
        if not names:
            continue
        rows_before = next((int(f["rows"]) for f in old.values() if f["dataset"] == dataset), None)
        rows_after = next((int(f["rows"]) for f in new.values() if f["dataset"] == dataset), None)
        if rows_before is None:
            what = f"new, {rows_after} rows"
        elif rows_after is None:
            what = f"removed (had {rows_before} rows)"
        elif rows_before != rows_after:
            what = f"{rows_before} → {rows_after} rows"
        else:
            what = f"{rows_after} rows, content changed"
        details = []
        for n in names:
            if n not in old:
                details.append(f"{n} added")
            elif n not in new:
                details.append(f"{n} removed")
            else:
                details.append(f"{n} differs")
        lines.append(f"{dataset}: {what} ({', '.join(details)}).")
    return "\n".join(lines)


def _schema(data_files: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "datasets": {
            name: {
                "description": dataset.description,
                "files": [f["name"] for f in data_files if f["dataset"] == name],
                "columns": [
                    {"name": c.name, "type": c.type, "description": c.description}
                    for c in dataset.columns
                ],
            }
            for name, dataset in DATASETS.items()
            if any(f["dataset"] == name for f in data_files)
        }
    }


def _cell(text: object) -> str:
    """A Markdown table cell: on one line, its pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _readme(
    *,
    name: str,
    cohort: Cohort,
    version: int,
    published_at: datetime,
    data_files: list[dict[str, Any]],
    changes: str,
    citation: str,
) -> str:
    completed = f"{cohort.completed_at:%Y-%m-%d %H:%M} UTC" if cohort.completed_at else "—"
    out = [
        f"# Forecaster Arena data release {name}",
        "",
        f"Cohort {cohort.number} (week starting Sunday {cohort.week_start:%Y-%m-%d}, completed "
        f"{completed}), release version {version}, methodology {cohort.methodology_version}, "
        f"published {published_at:%Y-%m-%d %H:%M} UTC.",
        "",
        "This release is frozen: its files never change. A correction is published as a new "
        "version of the cohort's release, which says what changed.",
        "",
    ]
    if changes:
        out += ["## Changes", "", *(f"- {line}" for line in changes.splitlines()), ""]
    out += [
        "## Files",
        "",
        f"Check them with `sha256sum -c {CHECKSUMS}`; `{MANIFEST}` is the export's manifest, "
        f"`{SCHEMA}` the schema below as JSON.",
        "",
        "| file | dataset | format | rows | bytes | SHA-256 |",
        "|---|---|---|---:|---:|---|",
    ]
    out += [
        f"| {f['name']} | {f['dataset']} | {f['format']} | {f['rows']} | {f['bytes']} | "
        f"`{f['sha256']}` |"
        for f in data_files
    ]
    out += ["", "## Datasets", ""]
    for dataset_name, dataset in DATASETS.items():
        if not any(f["dataset"] == dataset_name for f in data_files):
            continue
        out += [
            f"### {dataset_name}",
            "",
            _cell(dataset.description),
            "",
            "| column | type | description |",
            "|---|---|---|",
            *(
                f"| `{_cell(c.name)}` | {_cell(c.type)} | {_cell(c.description)} |"
                for c in dataset.columns
            ),
            "",
        ]
    out += [
        "## How to cite",
        "",
        citation,
        "",
        f"The same, as citation metadata: `{CITATION}`.",
        "",
    ]
    return "\n".join(out)


def _citation_cff(*, name: str, cohort: Cohort, version: int, published_at: datetime) -> str:
    title = f"Forecaster Arena weekly data release {name} (cohort {cohort.number}, v{version})"
    return "\n".join(
        [
            "cff-version: 1.2.0",
            'message: "If you use this data, please cite it as below."',
            "type: dataset",
            f'title: "{title}"',
            "authors:",
            f'  - name: "{PUBLISHER}"',
            f'version: "{name}"',
            f'date-released: "{published_at:%Y-%m-%d}"',
            "keywords:",
            '  - "forecasting"',
            '  - "prediction markets"',
            '  - "LLM benchmark"',
            f'abstract: "The record of cohort {cohort.number} of Forecaster Arena (week '
            f"starting {cohort.week_start:%Y-%m-%d}, methodology {cohort.methodology_version}), "
            f'one table per dataset: {", ".join(DATASETS)}."',
            "",
        ]
    )
