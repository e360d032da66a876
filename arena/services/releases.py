"""Frozen weekly data releases: once a completed cohort's data is final, its
exports are published as the folder `RELEASES_ROOT/cohort-<n>-v<k>/`, which never changes.

A cohort completes when its LLM agents' positions have settled, while its baselines may still
hold open positions that the ticks keep marking (`arena.selectors.ticks.agents_to_mark`). Its
data is final — and only then published — when it is completed and none of its agents is
still marked: every position settled, baselines included, and the final snapshot taken
(`arena.selectors.releases.cohorts_final`).

A release holds every dataset of `arena.selectors.exports.DATASETS` bounded to the cohort, as
CSV and JSON Lines (and Parquet when pyarrow is installed), the export's `manifest.json`, a
schema description (`schema.json`, `README.md`), the release's own record (`release.json`),
checksums (`SHA256SUMS`) and a suggested citation (`CITATION.cff`, and in the README). A
correction — the cohort's CSV files differ from its latest release's — is a new version whose
`changes` says which datasets and row counts differ. The CSV files are the canonical bytes:
Parquet's depend on the pyarrow that wrote them, and a worker without pyarrow writes none, so
a format added or removed is said as such and alone never makes a new version.

How a release stays frozen and whole:
- the files are written into a hidden `.partial-…` folder, then renamed into place in one step
  (a rename within one file system is atomic): a reader never sees half a release;
- the `DataRelease` row is created only after that rename, in its own short transaction — no
  transaction is open while files are written;
- publishes of one cohort are serialised by an exclusive lock file next to the folders, so the
  version numbers cannot race; a crash leaves a `.partial-…` folder, which the next publish of
  that cohort removes before it starts;
- a published folder is never deleted and its name never reused. One without a row (its row
  failed to commit, or a database restored from before it) is adopted by the next publish of
  its cohort when its SHA256SUMS verifies, else moved aside to `.quarantine-<name>-<time>` and
  recorded; a new version is numbered past every folder name of the cohort;
- a publish whose CSV files match the latest release's checksums writes nothing: a repeat is
  safe, and so is delivering the task twice.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import transaction

from arena import clock
from arena.evidence import error_text, traceback_summary
from arena.models import Cohort, DataRelease
from arena.selectors.exports import DATASETS
from arena.selectors.releases import (
    PUBLISHER,
    cohort_not_final_reason,
    cohorts_awaiting_release,
    release_citation,
    release_latest,
)
from arena.services.events import Kind, Level, event_record
from arena.services.exports import PARQUET_AVAILABLE, write_export
from arena.services.operations import OperationReport

logger = logging.getLogger(__name__)

PARTIAL_PREFIX = ".partial-"
QUARANTINE_PREFIX = ".quarantine-"
LOCK_PREFIX = ".lock-"
CHECKSUMS = "SHA256SUMS"
MANIFEST = "manifest.json"
RELEASE_RECORD = "release.json"
SCHEMA = "schema.json"
README = "README.md"
CITATION = "CITATION.cff"
HASH_CHUNK = 1 << 20

Status = Literal["published", "unchanged", "busy", "not completed", "not final"]


@dataclass(frozen=True)
class PublishOutcome:
    """What one publish of a cohort did: `published` a new release, found its data
    `unchanged` since the latest one, found another publish of it `busy`, or refused a cohort
    `not completed` or `not final` (`reason` says why)."""

    cohort: int
    status: Status
    release: DataRelease | None = None
    reason: str = ""

    def summary(self) -> str:
        if self.status == "not final":
            return self.reason
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
    """Publish a frozen release of the cohort `cohort_number` once its data is final, or do
    nothing when its CSV files are the same as its latest release's. Return what happened.

    Version 1 on the first publish; a later publish whose CSV files differ is the next
    version, its `changes` saying what differs. A cohort not completed, or completed but not
    final (a baseline still marked), is refused and nothing is written. Call it outside any
    transaction: it writes files for as long as the export takes, and its row is committed on
    its own. Raise Cohort.DoesNotExist for an unknown number; any other failure is recorded as
    a `release_failed` event, leaves no row (and at most a folder the next publish adopts),
    and is raised again.
    """
    cohort = Cohort.objects.get(number=cohort_number)
    if cohort.status != Cohort.Status.COMPLETED:
        return PublishOutcome(cohort=cohort.number, status="not completed")
    reason = cohort_not_final_reason(cohort)
    if reason:
        return PublishOutcome(cohort=cohort.number, status="not final", reason=reason)
    root = Path(settings.RELEASES_ROOT)
    now = now or clock.now()
    try:
        root.mkdir(parents=True, exist_ok=True)
        with _cohort_lock(root, cohort.number) as held:
            if not held:
                return PublishOutcome(cohort=cohort.number, status="busy")
            _leftovers_settle(root, cohort)
            return _publish(root, cohort, now=now)
    except Exception as exc:
        logger.exception("publishing the data release of cohort %s failed", cohort.number)
        event_record(
            kind=Kind.RELEASE_FAILED,
            level=Level.ERROR,
            message=f"publishing the data release of cohort {cohort.number} failed, nothing "
            f"was published (a cohort still without a release is tried again an hour after "
            f"the failure at the earliest): {error_text(exc)}",
            cohort_id=cohort.pk,
            data={"traceback": traceback_summary(exc)},
        )
        raise


def releases_publish_due(*, now: datetime | None = None) -> OperationReport:
    """Publish the first release of every final cohort that has none yet (oldest first): run
    after every resolution check, it catches cohorts as they complete, as their baselines'
    positions settle later, and (an hour after the failure at the earliest) after a failed
    publish. One cohort's failure is reported (and recorded by `release_publish`) and the
    others go on."""
    now = now or clock.now()
    numbers = list(cohorts_awaiting_release(now=now).values_list("number", flat=True))
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
        except SoftTimeLimitExceeded:
            raise  # the task's time is up: stop, the cohorts left are due at the next run
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


def _leftovers_settle(root: Path, cohort: Cohort) -> None:
    """Deal with what a publish of this cohort left unfinished, under the cohort's lock:
    remove its `.partial-…` folders (never renamed into place, so never published); adopt a
    release folder without a row if its checksums verify, else move it aside. A published
    folder is never deleted: it may be downloaded and cited already."""
    recorded = set(DataRelease.objects.filter(cohort=cohort).values_list("name", flat=True))
    published = re.compile(rf"cohort-{cohort.number}-v[0-9]+")
    for path in sorted(root.iterdir(), key=lambda p: p.name):
        if not path.is_dir():
            continue
        if path.name.startswith(_partial_prefix(cohort.number)):
            logger.warning("removing %s, left by a publish that did not finish", path)
            shutil.rmtree(path)
        elif published.fullmatch(path.name) and path.name not in recorded:
            _orphan_settle(root, cohort, path)


def _orphan_settle(root: Path, cohort: Cohort, folder: Path) -> None:
    """Adopt `folder`, a release folder of `cohort` with no row, or move it aside."""
    try:
        release = _orphan_adopt(cohort, folder)
    except Exception as exc:  # unreadable, or not what its checksums say: not a whole release
        stamp = f"{clock.now():%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"
        aside = root / f"{QUARANTINE_PREFIX}{folder.name}-{stamp}"
        os.rename(folder, aside)
        _fsync(root)
        logger.warning("moved %s aside to %s: %s", folder, aside, exc)
        event_record(
            kind=Kind.RELEASE_FAILED,
            level=Level.WARNING,
            message=f"the folder {folder.name} of cohort {cohort.number} had no release row and "
            f"does not verify, so it was moved aside to {aside.name} (its name is never "
            f"reused): {error_text(exc)}",
            cohort_id=cohort.pk,
            data={"folder": folder.name, "moved_to": aside.name},
        )
        return
    event_record(
        kind=Kind.RELEASE_PUBLISHED,
        level=Level.WARNING,
        message=f"data release {release.name} of cohort {cohort.number} was on the disk "
        "without its row; its checksums verify, so it is listed again",
        cohort_id=cohort.pk,
        data={"release": release.name, "sha256": release.sha256, "adopted": True},
    )


def _orphan_adopt(cohort: Cohort, folder: Path) -> DataRelease:
    """Create the row of a release folder written in full whose row is missing, from its own
    files; raise ValueError (or an OSError, a JSON or key error) when its SHA256SUMS does not
    list exactly its files with their digests, or its record is not of this folder."""
    sums = (folder / CHECKSUMS).read_text(encoding="utf-8")
    listed: dict[str, str] = {}
    for line in sums.splitlines():
        digest, _, name = line.partition("  ")
        if not re.fullmatch(r"[0-9a-f]{64}", digest) or not name:
            raise ValueError(f"{CHECKSUMS} has an unreadable line: {line[:80]!r}")
        listed[name] = digest
    present = {p.name for p in folder.iterdir()} - {CHECKSUMS}
    if set(listed) != present:
        raise ValueError(f"the files on the disk are not the files {CHECKSUMS} lists")
    for name, digest in listed.items():
        if not (folder / name).is_file() or file_sha256(folder / name) != digest:
            raise ValueError(f"{name} does not match its checksum")
    record = json.loads((folder / RELEASE_RECORD).read_text(encoding="utf-8"))
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    version = int(record["version"])
    name = release_name(cohort_number=cohort.number, version=version)
    if record["name"] != folder.name or name != folder.name:
        raise ValueError(f"{RELEASE_RECORD} is of {record['name']!r}, not of {folder.name!r}")
    if manifest["bounds"]["cohort"] != cohort.number:
        raise ValueError(f"{MANIFEST} is not bounded to cohort {cohort.number}")
    files = _files(folder, _data_files(folder, manifest))
    with transaction.atomic():
        return DataRelease.objects.create(
            cohort=cohort,
            version=version,
            name=name,
            published_at=datetime.fromisoformat(record["published_at"]),
            methodology_version=str(record["methodology_version"]),
            manifest=manifest,
            files=files,
            sha256=hashlib.sha256(sums.encode()).hexdigest(),
            total_bytes=sum(int(f["bytes"]) for f in files),
            changes=str(record["changes"]),
        )


def _next_version(root: Path, cohort: Cohort, previous: DataRelease | None) -> int:
    """The version after the latest row's and every folder name of the cohort (published or
    moved aside), so a name once on the disk is never given again."""
    taken = re.compile(
        rf"(?:{re.escape(QUARANTINE_PREFIX)})?cohort-{cohort.number}-v([0-9]+)(?:-.*)?"
    )
    versions = [previous.version if previous else 0]
    for path in root.iterdir():
        if match := taken.fullmatch(path.name):
            versions.append(int(match.group(1)))
    return max(versions) + 1


def _partial_prefix(number: int) -> str:
    return f"{PARTIAL_PREFIX}cohort-{number}-"


def _publish(root: Path, cohort: Cohort, *, now: datetime) -> PublishOutcome:
    previous = release_latest(cohort=cohort)
    partial = root / f"{_partial_prefix(cohort.number)}{uuid.uuid4().hex[:12]}"
    partial.mkdir()
    try:
        manifest = write_export(partial, cohort=cohort.number, formats=release_formats())
        data_files = _data_files(partial, manifest)
        if previous is not None and _canonical(data_files) == _canonical(previous.files):
            return PublishOutcome(cohort=cohort.number, status="unchanged", release=previous)
        version = _next_version(root, cohort, previous)
        name = release_name(cohort_number=cohort.number, version=version)
        changes = release_changes(previous=previous, data_files=data_files)
        _descriptions_write(
            partial, cohort=cohort, name=name, version=version, published_at=now,
            data_files=data_files, changes=changes,
        )  # fmt: skip
        files = _files(partial, data_files)
        sums = "".join(f"{f['sha256']}  {f['name']}\n" for f in files)
        _text_write(partial / CHECKSUMS, sums)
        files.append(_file_entry(partial / CHECKSUMS))
        files.sort(key=lambda f: str(f["name"]))  # as an adoption reads them back
        for path in partial.iterdir():
            path.chmod(0o444)  # published files are read only
            _fsync(path)  # on the disk before the row says they are
        # Atomic; the name is free, as the version is past every name on the disk and the
        # cohort's lock keeps any other publish of it from adding one meanwhile.
        os.rename(partial, root / name)
        _fsync(root)
    finally:
        if partial.exists():
            shutil.rmtree(partial)
    # Should this fail, the folder stays: it is whole, and the next publish adopts it.
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
    event_record(
        kind=Kind.RELEASE_PUBLISHED,
        message=f"data release {name} of cohort {cohort.number} published"
        + (f": {changes.splitlines()[0]}" if changes else ""),
        cohort_id=cohort.pk,
        data={"release": name, "sha256": release.sha256, "bytes": release.total_bytes},
    )
    return PublishOutcome(cohort=cohort.number, status="published", release=release)


def _descriptions_write(
    folder: Path,
    *,
    cohort: Cohort,
    name: str,
    version: int,
    published_at: datetime,
    data_files: list[dict[str, Any]],
    changes: str,
) -> None:
    """Write what describes the release's data files into `folder`: the schema, the README
    (with the suggested citation), `CITATION.cff` and the release's own record, from which an
    adoption rebuilds the release's row."""
    citation = release_citation(
        name=name,
        cohort_number=cohort.number,
        version=version,
        published_at=published_at,
        methodology=cohort.methodology_version,
    )
    _text_write(folder / SCHEMA, json.dumps(_schema(data_files), indent=2) + "\n")
    _text_write(
        folder / README,
        _readme(
            name=name,
            cohort=cohort,
            version=version,
            published_at=published_at,
            data_files=data_files,
            changes=changes,
            citation=citation,
        ),
    )
    _text_write(
        folder / CITATION,
        _citation_cff(name=name, cohort=cohort, version=version, published_at=published_at),
    )
    record = {
        "name": name,
        "cohort": cohort.number,
        "version": version,
        "published_at": published_at.isoformat(),
        "methodology_version": cohort.methodology_version,
        "changes": changes,
    }
    _text_write(folder / RELEASE_RECORD, json.dumps(record, indent=2) + "\n")


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


def _canonical(files: list[dict[str, Any]]) -> dict[str, str]:
    """The checksums of the CSV data files: what decides whether the data changed."""
    return {
        str(f["name"]): str(f["sha256"])
        for f in files
        if f.get("dataset") and f.get("format") == "csv"
    }


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
    """Return what differs between `previous`'s data files and `data_files`: a line per
    dataset whose CSV file differs (its row count before and after), and a line per format
    added or removed (the same rows, in a format more or less). Empty when there is no
    previous release."""
    if previous is None:
        return ""
    old = [f for f in previous.files if f.get("dataset")]
    lines = [f"Corrects {previous.name}."]
    old_csv = {f["dataset"]: f for f in old if f.get("format") == "csv"}
    new_csv = {f["dataset"]: f for f in data_files if f.get("format") == "csv"}
    for dataset in sorted(old_csv.keys() | new_csv.keys()):
        before, after = old_csv.get(dataset), new_csv.get(dataset)
        if before is not None and after is not None and before["sha256"] == after["sha256"]:
            continue
        if before is None:
            what = f"new, {after['rows'] if after else 0} rows"
        elif after is None:
            what = f"removed (had {before['rows']} rows)"
        elif int(before["rows"]) != int(after["rows"]):
            what = f"{before['rows']} → {after['rows']} rows"
        else:
            what = f"{after['rows']} rows, content changed"
        lines.append(f"{dataset}: {what}.")
    formats_before = {f["format"] for f in old}
    formats_after = {f["format"] for f in data_files}
    for fmt in sorted(formats_after - formats_before):
        names = ", ".join(sorted(f["name"] for f in data_files if f["format"] == fmt))
        lines.append(f"Format {fmt} added ({names}): the same rows as the CSV files.")
    for fmt in sorted(formats_before - formats_after):
        names = ", ".join(sorted(f["name"] for f in old if f["format"] == fmt))
        lines.append(
            f"Format {fmt} removed ({names}): this version was written without it; the CSV "
            "files hold the same rows."
        )
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
        "This release was published once the cohort had completed and its data was final: "
        "every position settled, the baselines' included, and the final snapshot taken. It is "
        "frozen: its files never change. A later correction is published as a new version of "
        "the cohort's release, which says what changed.",
        "",
    ]
    if changes:
        out += ["## Changes", "", *(f"- {line}" for line in changes.splitlines()), ""]
    out += [
        "## Files",
        "",
        f"Check them with `sha256sum -c {CHECKSUMS}`; `{MANIFEST}` is the export's manifest, "
        f"`{SCHEMA}` the schema below as JSON, `{RELEASE_RECORD}` this release's name, version, "
        "publication time and changes.",
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
