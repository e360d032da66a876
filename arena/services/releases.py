"""Frozen data releases: a completed cohort's data is published as the folder
`RELEASES_ROOT/cohort-<n>-r<k>/` once nothing the lineup is ranked by can change, and again,
as the next release `r<k+1>`, whenever the data it holds changes afterwards. A published
folder never changes.

When a release is due (arena.selectors.releases):
- the first, once the cohort has completed and every executed bet of its LLM agents is scored
  or its market cancelled (`cohorts_final`): a bet sold out of before completion is scored
  when its market resolves, and until then the release waits. Baseline and outside agents
  never hold it back: their positions still open are in the files as open, and the release
  lists them (`open_at_release`, in its record and README). The one wait of theirs is
  bounded: an agent whose position settled after its last snapshot waits for the next tick's
  final snapshot (10 minutes), so its curve ends at its settled value;
- the next, when what the cohort's release would hold now differs from its latest release.
  Each run compares, per released cohort, a cheap digest of what can still change (positions'
  settlement, trades' scores, markets' resolutions, decisions' status:
  `cohort_release_states`) with the one kept on the cohort from its last comparison
  (`Cohort.release_state`); where it differs, the cohort is exported again and its CSV files
  are compared with its latest release's. A late settlement of a baseline's or outside
  agent's position, a bet scored after its position was sold, a market settled again: each
  is a new release whose `changes` names each position settled, each bet scored and each
  dataset changed.

What a release holds: every dataset of `arena.selectors.exports.DATASETS` bounded to the
cohort, as CSV and JSON Lines (and Parquet when pyarrow is installed), with `still_held`
excluded: the snapshots taken after completion of an agent still holding an open position
are left out, since the ticks add one every 10 minutes until it settles (the release that
follows the settlement holds them all). Then the export's `manifest.json`, a schema
description (`schema.json`, `README.md`), the release's own record (`release.json`),
checksums (`SHA256SUMS`) and a suggested citation (`CITATION.cff`, and in the README). The
CSV files are the canonical bytes: Parquet's depend on the pyarrow that wrote them, and a
worker without pyarrow writes none, so a format added or removed is said as such and alone
never makes a new release.

Names: `cohort-<n>-r<k>`, `r` for release, so a release number is never read as a
methodology version (`v1`). The releases published before this rule keep their names,
`cohort-<n>-v<k>` (their files, checksums and citations hold them); they are read, served and
adopted as before, and the cohort's next release is numbered after them (`cohort-3-v1`, then
`cohort-3-r2`).

How a release stays frozen and whole:
- the files are written into a hidden `.partial-…` folder, then renamed into place in one step
  (a rename within one file system is atomic): a reader never sees half a release;
- the files, the cohort's digest and what was open are read in one snapshot of the database
  (read only); the `DataRelease` row is created only after the rename, in its own short
  transaction with the cohort's digest;
- publishes of one cohort are serialised by an exclusive lock file next to the folders, so the
  release numbers cannot race; a crash leaves a `.partial-…` folder, which the next publish of
  that cohort removes before it starts;
- a published folder is never deleted and its name never reused. One without a row (its row
  failed to commit, or a database restored from before it) is adopted by the next publish of
  its cohort when its SHA256SUMS verifies and its record is of this cohort's week, else moved
  aside to `.quarantine-<name>-<time>` and recorded; a new release is numbered past every
  folder name of the cohort;
- a publish whose CSV files match the latest release's checksums writes nothing (it keeps the
  digest it compared): a repeat is safe, and so is delivering the task twice.
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
from arena.selectors.releases import (
    cohort_not_final_reason,
    cohort_release_states,
    cohorts_due_release,
    release_citation,
    release_latest,
    release_open_items,
)
from arena.services.events import Kind, Level, event_record
from arena.services.exports import PARQUET_AVAILABLE, export_snapshot, write_export
from arena.services.operations import OperationReport
from arena.services.release_texts import (
    CHECKSUMS,
    CITATION,
    MANIFEST,
    README,
    RELEASE_RECORD,
    SCHEMA,
    release_changes,
    release_citation_cff,
    release_readme,
    release_schema,
)

logger = logging.getLogger(__name__)

PARTIAL_PREFIX = ".partial-"
QUARANTINE_PREFIX = ".quarantine-"
LOCK_PREFIX = ".lock-"
HASH_CHUNK = 1 << 20


def _release_folder(number: str = "[0-9]+") -> str:
    """The pattern of a release folder's name, of cohort `number` (a pattern itself): an r
    name (`cohort-3-r2`) or one from before them (`cohort-3-v1`), its version the group."""
    return rf"cohort-{number}-[rv]([0-9]+)"


# Every name a publish gives an entry of RELEASES_ROOT: a release folder, one moved aside, a
# partial folder, a lock file.
RELEASE_ENTRY = re.compile(
    rf"{_release_folder()}|{re.escape(QUARANTINE_PREFIX)}{_release_folder()}-.+"
    rf"|{re.escape(PARTIAL_PREFIX)}cohort-[0-9]+-.+|{re.escape(LOCK_PREFIX)}cohort-[0-9]+"
)

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
    """The name of the cohort's release number `version`: `cohort-12-r2`."""
    return f"cohort-{cohort_number}-r{version}"


def _names_of(cohort_number: int, version: int) -> tuple[str, str]:
    """The names release `version` of the cohort may have on the disk: its own, and the one
    a release published before the r names has (`cohort-12-v1`)."""
    return (
        release_name(cohort_number=cohort_number, version=version),
        f"cohort-{cohort_number}-v{version}",
    )


def release_formats() -> tuple[str, ...]:
    """The formats a release holds: CSV and JSON Lines, and Parquet when pyarrow is here."""
    return ("csv", "jsonl", "parquet") if PARQUET_AVAILABLE else ("csv", "jsonl")


# ------------------------------------------------------------------------------ publishing


def release_publish(*, cohort_number: int, now: datetime | None = None) -> PublishOutcome:
    """Publish a frozen release of the cohort `cohort_number` once it is final, or do
    nothing when its CSV files are the same as its latest release's. Return what happened.

    r1 on the first publish; a later publish whose CSV files differ is the next release, its
    `changes` saying what differs. A cohort not completed, or completed but not final (an LLM
    agent's bet not scored yet, or a settlement's final snapshot not taken yet), is refused
    and nothing is written. Either way the digest of the data it compared is kept on the
    cohort, so the due runs leave it alone until that changes. Call it outside any
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
            f"was published (its release is tried again an hour after the failure at the "
            f"earliest): {error_text(exc)}",
            cohort_id=cohort.pk,
            data={"traceback": traceback_summary(exc)},
        )
        raise


def releases_publish_due(*, now: datetime | None = None) -> OperationReport:
    """Publish every release that is due (oldest cohort first): the first of every final
    cohort without one, and the next of every released cohort whose data may have changed
    since it was last compared (a digest of it differs; `cohorts_due_release`).
    Run after every resolution check, it catches cohorts as they complete, as their bets sold
    out of are scored, as their baselines' and outside agents' positions settle later, and
    (an hour after the failure at the earliest) after a failed publish. A cohort whose digest
    moved but whose files did not is reported unchanged, once. One cohort's failure is
    reported (and recorded by `release_publish`) and the others go on."""
    now = now or clock.now()
    return releases_publish(cohort_numbers=cohorts_due_release(now=now), now=now)


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
    published = re.compile(_release_folder(str(cohort.number)))
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
    list exactly its files with their digests, or its record is not of this folder and this
    cohort's week."""
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
    name = folder.name
    if record["name"] != name or name not in _names_of(cohort.number, version):
        raise ValueError(f"{RELEASE_RECORD} is of {record['name']!r}, not of {folder.name!r}")
    if manifest["bounds"]["cohort"] != cohort.number:
        raise ValueError(f"{MANIFEST} is not bounded to cohort {cohort.number}")
    # Whole and named right, a folder may still come from another database (a fresh one given
    # an old deployment's releases): its cohort of the same number began another week. A
    # record from before the week was kept in it says nothing either way.
    week = cohort.week_start.isoformat()
    if "week_start" in record and record["week_start"] != week:
        raise ValueError(
            f"{RELEASE_RECORD} is of the cohort of the week of {record['week_start']}, "
            f"not of {week}"
        )
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
            open_at_release=dict(record.get("open_at_release") or {}),
        )


def _next_version(root: Path, cohort: Cohort, previous: DataRelease | None) -> int:
    """The number after the latest row's and every folder name of the cohort (published or
    moved aside, an r name or an earlier v name), so a number once on the disk is never given
    again."""
    taken = re.compile(
        rf"(?:{re.escape(QUARANTINE_PREFIX)})?{_release_folder(str(cohort.number))}(?:-.*)?"
    )
    versions = [previous.version if previous else 0]
    for path in root.iterdir():
        if match := taken.fullmatch(path.name):
            versions.append(int(match.group(1)))
    return max(versions) + 1


def _partial_prefix(number: int) -> str:
    return f"{PARTIAL_PREFIX}cohort-{number}-"


@dataclass(frozen=True)
class _Read:
    """What one publish read of the cohort, from one snapshot of the database."""

    manifest: dict[str, Any]
    state: str  # `cohort_release_states`: kept on the cohort once compared
    open_at_release: dict[str, Any]


def _read(folder: Path, cohort: Cohort) -> _Read | str:
    """Export the cohort into `folder` as a release holds it, and read its digest and what
    is still open, all in one snapshot of the database; or return why it is not final, read
    again in that snapshot (an LLM agent's bet may have been found unscored meanwhile, never
    the other way round, but a settlement may have committed since the first look and
    awaits its final snapshot)."""
    with export_snapshot():
        reason = cohort_not_final_reason(cohort)
        if reason:
            return reason
        manifest = write_export(
            folder, cohort=cohort.number, still_held="exclude", formats=release_formats()
        )
        return _Read(
            manifest=manifest,
            state=cohort_release_states([cohort.pk])[cohort.pk],
            open_at_release=release_open_items(cohort),
        )


def _state_keep(cohort: Cohort, state: str) -> None:
    """Keep the digest of the data a publish compared with the cohort's latest release: the
    due runs read the cohort again only once it differs."""
    Cohort.objects.filter(pk=cohort.pk).update(release_state=state)


def _publish(root: Path, cohort: Cohort, *, now: datetime) -> PublishOutcome:
    previous = release_latest(cohort=cohort)
    partial = root / f"{_partial_prefix(cohort.number)}{uuid.uuid4().hex[:12]}"
    partial.mkdir()
    try:
        read = _read(partial, cohort)
        if isinstance(read, str):
            return PublishOutcome(cohort=cohort.number, status="not final", reason=read)
        data_files = _data_files(partial, read.manifest)
        if previous is not None and _canonical(data_files) == _canonical(previous.files):
            _state_keep(cohort, read.state)
            return PublishOutcome(cohort=cohort.number, status="unchanged", release=previous)
        version = _next_version(root, cohort, previous)
        name = release_name(cohort_number=cohort.number, version=version)
        changes = release_changes(
            previous=previous,
            data_files=data_files,
            previous_folder=root / previous.name if previous is not None else None,
            folder=partial,
        )
        _descriptions_write(
            partial, cohort=cohort, name=name, version=version, published_at=now,
            data_files=data_files, changes=changes, open_at_release=read.open_at_release,
        )  # fmt: skip
        files = _files(partial, data_files)
        sums = "".join(f"{f['sha256']}  {f['name']}\n" for f in files)
        _text_write(partial / CHECKSUMS, sums)
        files.append(_file_entry(partial / CHECKSUMS))
        files.sort(key=lambda f: str(f["name"]))  # as an adoption reads them back
        for path in partial.iterdir():
            path.chmod(0o444)  # published files are read only
            _fsync(path)  # on the disk before the row says they are
        # Atomic; the name is free, as the number is past every name on the disk and the
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
            manifest=read.manifest,
            files=files,
            sha256=hashlib.sha256(sums.encode()).hexdigest(),
            total_bytes=sum(int(f["bytes"]) for f in files),
            changes=changes,
            open_at_release=read.open_at_release,
        )
        _state_keep(cohort, read.state)
    _published_record(release, previous=previous)
    return PublishOutcome(cohort=cohort.number, status="published", release=release)


def _published_record(release: DataRelease, *, previous: DataRelease | None) -> None:
    still_open = {kind: len(rows) for kind, rows in release.open_at_release.items()}
    changed = len(release.changes.splitlines()) - 1
    event_record(
        kind=Kind.RELEASE_PUBLISHED,
        message=f"data release {release.name} of cohort {release.cohort.number} published"
        + (f", superseding {previous.name} ({changed} changes listed)" if previous else "")
        + (
            f"; open at release time: {still_open.get('positions', 0)} position(s), "
            f"{still_open.get('bets', 0)} bet(s) of baseline or outside agents"
            if any(still_open.values())
            else ""
        ),
        cohort_id=release.cohort_id,
        data={
            "release": release.name,
            "sha256": release.sha256,
            "bytes": release.total_bytes,
            "open_at_release": still_open,
        },
    )


def _descriptions_write(
    folder: Path,
    *,
    cohort: Cohort,
    name: str,
    version: int,
    published_at: datetime,
    data_files: list[dict[str, Any]],
    changes: str,
    open_at_release: dict[str, Any],
) -> None:
    """Write what describes the release's data files into `folder`: the schema, the README
    (with the suggested citation and what was still open), `CITATION.cff` and the release's
    own record, from which an adoption rebuilds the release's row."""
    citation = release_citation(
        name=name,
        cohort_number=cohort.number,
        version=version,
        published_at=published_at,
        methodology=cohort.methodology_version,
    )
    _text_write(folder / SCHEMA, json.dumps(release_schema(data_files), indent=2) + "\n")
    _text_write(
        folder / README,
        release_readme(
            name=name,
            cohort=cohort,
            version=version,
            published_at=published_at,
            data_files=data_files,
            changes=changes,
            open_at_release=open_at_release,
            citation=citation,
        ),
    )
    _text_write(
        folder / CITATION,
        release_citation_cff(name=name, cohort=cohort, version=version, published_at=published_at),
    )
    record = {
        "name": name,
        "cohort": cohort.number,
        "week_start": cohort.week_start.isoformat(),
        "version": version,
        "published_at": published_at.isoformat(),
        "methodology_version": cohort.methodology_version,
        "changes": changes,
        "open_at_release": open_at_release,
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
