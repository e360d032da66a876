"""Reads of the frozen data releases: which cohorts await one, the releases newest first, and
the one file of a release a request may have."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import Exists, OuterRef, QuerySet

from arena.models import Cohort, DataRelease, Position, SystemEvent
from arena.selectors.ticks import agents_to_mark

# What a release's files are served as, by the end of their name.
CONTENT_TYPES = {
    ".csv": "text/csv; charset=utf-8",
    ".jsonl": "application/x-ndjson; charset=utf-8",
    ".json": "application/json",
    ".parquet": "application/vnd.apache.parquet",
    ".md": "text/markdown; charset=utf-8",
    ".cff": "text/plain; charset=utf-8",  # YAML, shown as text
}
PLAIN_TEXT = "text/plain; charset=utf-8"  # SHA256SUMS
PUBLISHER = "Forecaster Arena"
# A cohort whose publish failed is tried again no sooner than this after the failure.
RETRY_AFTER = timedelta(hours=1)


def cohorts_final() -> QuerySet[Cohort]:
    """Return the cohorts whose data is final: completed, and none of their agents still
    marked by the ticks (`agents_to_mark`: a baseline or outside agent holding an open
    position, or one whose position closed after its last snapshot). A cohort completes when
    its LLM agents' positions have settled; the others' may settle later, and until then
    snapshots keep changing."""
    return Cohort.objects.filter(status=Cohort.Status.COMPLETED).exclude(
        pk__in=agents_to_mark().values("cohort_id")
    )


def cohort_not_final_reason(cohort: Cohort) -> str:
    """Why the completed `cohort`'s data is not final yet, or "" when it is."""
    if not agents_to_mark().filter(cohort=cohort).exists():
        return ""
    if Position.objects.filter(agent__cohort=cohort, status=Position.Status.OPEN).exists():
        return (
            f"cohort {cohort.number} is not final: its baseline or outside agents' positions "
            "are still open"
        )
    return (
        f"cohort {cohort.number} is not final: a baseline's or outside agent's position settled "
        "after its last snapshot, and the final snapshot is not taken yet"
    )


def cohorts_awaiting_release(*, now: datetime) -> QuerySet[Cohort]:
    """Return the final cohorts without any release yet, oldest first, leaving out those
    whose publish failed less than `RETRY_AFTER` before `now`."""
    released = DataRelease.objects.filter(cohort=OuterRef("pk"))
    failed_lately = SystemEvent.objects.filter(
        cohort=OuterRef("pk"),
        kind=SystemEvent.Kind.RELEASE_FAILED,
        level=SystemEvent.Level.ERROR,
        created_at__gt=now - RETRY_AFTER,
    )
    return (
        cohorts_final().exclude(Exists(released)).exclude(Exists(failed_lately)).order_by("number")
    )


def release_latest(*, cohort: Cohort) -> DataRelease | None:
    """Return the cohort's latest release (highest version), or None."""
    return DataRelease.objects.filter(cohort=cohort).order_by("-version").first()


def releases_published() -> QuerySet[DataRelease]:
    """Return every release, newest first (one query, with its cohort)."""
    return DataRelease.objects.select_related("cohort").order_by("-published_at", "-pk")


def releases_latest_per_cohort() -> QuerySet[DataRelease]:
    """Return each cohort's latest release (its highest version), newest cohort first (one
    query, with its cohort)."""
    later = DataRelease.objects.filter(cohort=OuterRef("cohort"), version__gt=OuterRef("version"))
    return (
        DataRelease.objects.select_related("cohort")
        .exclude(Exists(later))
        .order_by("-cohort__number", "-pk")
    )


def release_versions(*, cohort: Cohort) -> QuerySet[DataRelease]:
    """Return every release of the cohort, latest version first."""
    return DataRelease.objects.filter(cohort=cohort).order_by("-version")


@dataclass(frozen=True)
class ReleaseFile:
    """One file of a release as the Data page lists it."""

    name: str
    bytes: int
    sha256: str
    dataset: str
    format: str
    rows: int | None


def release_files(release: DataRelease) -> list[ReleaseFile]:
    """Return the release's files: its data files (by dataset, then format) first, then the
    schema, readme, citation, manifest and checksums."""
    files = [
        ReleaseFile(
            name=str(f["name"]),
            bytes=int(f["bytes"]),
            sha256=str(f["sha256"]),
            dataset=str(f.get("dataset") or ""),
            format=str(f.get("format") or ""),
            rows=int(f["rows"]) if f.get("rows") is not None else None,
        )
        for f in release.files
    ]
    return sorted(files, key=lambda f: (not f.dataset, f.dataset, f.format, f.name))


def release_file_path(release: DataRelease, filename: str) -> Path | None:
    """Return the path of `filename` in the release's folder, or None unless it is one of the
    names the release lists (so no other path — `..`, a slash, a hidden file — is ever
    reachable) and is on the disk."""
    listed: set[Any] = {f.get("name") for f in release.files}
    if filename not in listed or "/" in filename or "\\" in filename or filename in (".", ".."):
        return None
    root = Path(settings.RELEASES_ROOT).resolve()
    path = (root / release.name / filename).resolve()
    if path.parent != root / release.name or not path.is_file():
        return None
    return path


def release_content_type(filename: str) -> str:
    return CONTENT_TYPES.get(Path(filename).suffix.lower(), PLAIN_TEXT)


def release_citation(
    *, name: str, cohort_number: int, version: int, published_at: datetime, methodology: str
) -> str:
    """Return the suggested citation of a release, as one line of text."""
    return (
        f"{PUBLISHER} ({published_at:%Y}). Forecaster Arena weekly data release {name}: "
        f"cohort {cohort_number}, version {version}, methodology {methodology} [Data set]. "
        f"Published {published_at:%Y-%m-%d}."
    )


def release_citation_of(release: DataRelease) -> str:
    return release_citation(
        name=release.name,
        cohort_number=release.cohort.number,
        version=release.version,
        published_at=release.published_at,
        methodology=release.methodology_version,
    )
