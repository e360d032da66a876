"""Issue 10, weekly data releases: when a cohort completes, a frozen, versioned release of its
data — the exports, a schema description, checksums, a suggested citation — is published and
never changes afterwards; a later correction becomes a new release that says what changed.

Releases are written under a RELEASES_ROOT of the test's own (tmp_path). The cohorts come from
tests/page_world.py (decisions with attempts, bets open and scored, a rejection, a sell,
snapshots), completed by hand unless a test is about the completion itself.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import stat
import subprocess
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from celery.result import AsyncResult
from django.db import IntegrityError

from arena.models import (
    Cohort,
    DataRelease,
    Decision,
    PortfolioSnapshot,
    SystemEvent,
    Trade,
)
from arena.selectors.exports import DATASETS
from arena.services import releases as release_services
from arena.services.cohorts import cohort_start
from arena.services.exports import PARQUET_AVAILABLE
from arena.services.releases import release_publish, releases_publish_due
from tests.page_world import World, build_world

PUBLISHED_AT = datetime(2031, 3, 2, 1, 0, tzinfo=UTC)
CORRECTED_AT = datetime(2031, 3, 9, 1, 0, tzinfo=UTC)


@pytest.fixture
def root(settings: Any, tmp_path: Path) -> Path:
    settings.RELEASES_ROOT = tmp_path / "releases"
    return Path(settings.RELEASES_ROOT)


def completed(world: World, *, at: datetime = PUBLISHED_AT) -> Cohort:
    Cohort.objects.filter(pk=world.cohort.pk).update(
        status=Cohort.Status.COMPLETED, completed_at=at - timedelta(hours=1)
    )
    return Cohort.objects.get(pk=world.cohort.pk)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def folders(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.is_dir())


def csv_rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


# ------------------------------------------------------------------------ the first release


@pytest.mark.django_db
def test_a_completed_cohort_is_published_as_version_1_with_every_dataset(root: Path) -> None:
    cohort = completed(build_world(scale=2))

    outcome = release_publish(cohort_number=cohort.number, now=PUBLISHED_AT)

    assert outcome.status == "published"
    release = DataRelease.objects.get()
    assert outcome.release == release
    assert (release.cohort, release.version, release.name) == (
        cohort,
        1,
        f"cohort-{cohort.number}-v1",
    )
    assert release.published_at == PUBLISHED_AT
    assert release.methodology_version == cohort.methodology_version
    assert release.changes == ""
    formats = ("csv", "jsonl", "parquet") if PARQUET_AVAILABLE else ("csv", "jsonl")
    data_files = {f"{name}.{fmt}" for name in DATASETS for fmt in formats}
    documents = {"manifest.json", "schema.json", "README.md", "CITATION.cff", "SHA256SUMS"}
    folder = root / release.name
    assert {p.name for p in folder.iterdir()} == data_files | documents
    assert {f["name"] for f in release.files} == data_files | documents
    assert release.manifest == json.loads((folder / "manifest.json").read_text())
    assert release.manifest["bounds"]["cohort"] == cohort.number
    assert release.total_bytes == sum(p.stat().st_size for p in folder.iterdir())
    # nothing else is left in the root: no partial folder (only the cohort's lock file)
    assert folders(root) == [release.name]
    event = SystemEvent.objects.get(kind=SystemEvent.Kind.RELEASE_PUBLISHED)
    assert event.cohort_id == cohort.pk
    assert release.name in event.message


@pytest.mark.django_db
def test_the_release_holds_only_its_cohorts_rows_and_every_one_of_them(root: Path) -> None:
    other = build_world(scale=1)  # another cohort, never in this release
    world = build_world(scale=2)
    cohort = completed(world)
    completed(other)

    release = release_publish(cohort_number=cohort.number, now=PUBLISHED_AT).release
    assert release is not None

    folder = root / release.name
    bets = csv_rows(folder / "bets.csv")
    executed_buys = Trade.objects.filter(
        agent__cohort=cohort, kind=Trade.Kind.BUY, status=Trade.Status.EXECUTED
    )
    assert sorted(int(b["trade_id"]) for b in bets) == sorted(
        executed_buys.values_list("pk", flat=True)
    )
    assert {b["cohort"] for b in bets} == {str(cohort.number)}
    snapshots = [json.loads(line) for line in (folder / "snapshots.jsonl").read_text().splitlines()]
    assert len(snapshots) == PortfolioSnapshot.objects.filter(agent__cohort=cohort).count()
    rows = {f["name"]: f["rows"] for f in release.files if f.get("dataset")}
    assert rows["bets.csv"] == rows["bets.jsonl"] == len(bets)
    assert rows["decisions.csv"] == Decision.objects.filter(cohort=cohort).count()


@pytest.mark.django_db
def test_every_files_sha256_matches_the_manifest_the_row_and_sha256sums(root: Path) -> None:
    release = release_publish(
        cohort_number=completed(build_world(scale=1)).number, now=PUBLISHED_AT
    ).release
    assert release is not None
    folder = root / release.name

    for entry in release.manifest["files"]:
        assert sha256(folder / entry["name"]) == entry["sha256"], entry["name"]
        assert (folder / entry["name"]).stat().st_size == entry["bytes"]
    for entry in release.files:
        assert sha256(folder / entry["name"]) == entry["sha256"], entry["name"]
    sums = (folder / "SHA256SUMS").read_text()
    listed = {name: digest for digest, name in (line.split("  ", 1) for line in sums.splitlines())}
    assert set(listed) == {f["name"] for f in release.files} - {"SHA256SUMS"}
    assert all(listed[name] == sha256(folder / name) for name in listed)
    assert release.sha256 == sha256(folder / "SHA256SUMS")
    # the check a downloader runs
    check = subprocess.run(
        ["sha256sum", "--check", "--strict", "SHA256SUMS"],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.django_db
def test_the_schema_readme_and_citation_describe_the_release(root: Path) -> None:
    cohort = completed(build_world(scale=1))
    release = release_publish(cohort_number=cohort.number, now=PUBLISHED_AT).release
    assert release is not None
    folder = root / release.name

    schema = json.loads((folder / "schema.json").read_text())
    assert set(schema["datasets"]) == set(DATASETS)
    for name, dataset in DATASETS.items():
        described = schema["datasets"][name]
        assert described["description"] == dataset.description
        assert [(c["name"], c["type"], c["description"]) for c in described["columns"]] == [
            (c.name, c.type, c.description) for c in dataset.columns
        ]
    readme = (folder / "README.md").read_text()
    assert release.name in readme
    for dataset in DATASETS.values():
        assert f"### {dataset.name}" in readme
        for column in dataset.columns:
            assert f"| `{column.name}` | {column.type} |" in readme
    citation = (folder / "CITATION.cff").read_text()
    assert f'version: "{release.name}"' in citation
    assert f'date-released: "{PUBLISHED_AT:%Y-%m-%d}"' in citation
    assert "type: dataset" in citation
    assert f"Published {PUBLISHED_AT:%Y-%m-%d}" in readme  # the suggested citation, as text


@pytest.mark.django_db
def test_published_files_are_read_only(root: Path) -> None:
    release = release_publish(
        cohort_number=completed(build_world(scale=1)).number, now=PUBLISHED_AT
    ).release
    assert release is not None
    for path in (root / release.name).iterdir():
        assert not path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH), path


@pytest.mark.django_db
def test_an_active_cohort_gets_no_release(root: Path) -> None:
    world = build_world(scale=1)

    outcome = release_publish(cohort_number=world.cohort.number, now=PUBLISHED_AT)

    assert outcome.status == "not completed"
    assert not DataRelease.objects.exists()
    assert not root.exists() or folders(root) == []


# ------------------------------------------------------------------ repeats and corrections


@pytest.mark.django_db
def test_publishing_again_unchanged_data_does_nothing(root: Path) -> None:
    cohort = completed(build_world(scale=1))
    first = release_publish(cohort_number=cohort.number, now=PUBLISHED_AT).release
    assert first is not None
    stamps = {p.name: p.stat().st_mtime_ns for p in (root / first.name).iterdir()}

    again = release_publish(cohort_number=cohort.number, now=CORRECTED_AT)

    assert again.status == "unchanged"
    assert again.release == first
    assert DataRelease.objects.count() == 1
    assert folders(root) == [first.name]
    assert {p.name: p.stat().st_mtime_ns for p in (root / first.name).iterdir()} == stamps
    assert SystemEvent.objects.filter(kind=SystemEvent.Kind.RELEASE_PUBLISHED).count() == 1


@pytest.mark.django_db
def test_a_correction_is_version_2_saying_what_changed_and_version_1_stays(root: Path) -> None:
    world = build_world(scale=2)
    cohort = completed(world)
    v1 = release_publish(cohort_number=cohort.number, now=PUBLISHED_AT).release
    assert v1 is not None
    v1_sums = (root / v1.name / "SHA256SUMS").read_bytes()
    v1_bets = {f["name"]: f["rows"] for f in v1.files if f.get("dataset") == "bets"}
    snapshots_before = PortfolioSnapshot.objects.filter(agent__cohort=cohort).count()
    # The correction: an open bet is scored, and one more snapshot is found.
    open_bet = Trade.objects.filter(
        agent__cohort=cohort, kind=Trade.Kind.BUY, status="executed", brier_score__isnull=True
    ).first()
    assert open_bet is not None
    Trade.objects.filter(pk=open_bet.pk).update(
        brier_score=0.0004, side_won=True, scored_at=CORRECTED_AT
    )
    PortfolioSnapshot.objects.create(
        agent=world.agent,
        snapshot_timestamp=CORRECTED_AT - timedelta(days=6),
        cash=Decimal("9000"),
        positions_value=Decimal("0"),
        total_value=Decimal("9000"),
        total_pnl=Decimal("-1000"),
        total_pnl_percent=Decimal("-10"),
    )

    outcome = release_publish(cohort_number=cohort.number, now=CORRECTED_AT)

    assert outcome.status == "published"
    v2 = outcome.release
    assert v2 is not None
    assert (v2.version, v2.name) == (2, f"cohort-{cohort.number}-v2")
    lines = v2.changes.splitlines()
    assert lines[0] == f"Corrects {v1.name}."
    snapshots = next(line for line in lines if line.startswith("snapshots:"))
    assert f"{snapshots_before} → {snapshots_before + 1} rows" in snapshots
    assert "snapshots.csv differs" in snapshots
    bets = next(line for line in lines if line.startswith("bets:"))
    assert f"{v1_bets['bets.csv']} rows, content changed" in bets
    assert "bets.jsonl differs" in bets
    assert not any(line.startswith("decisions:") for line in lines)  # unchanged: not listed
    assert v2.changes.splitlines()[1] in (root / v2.name / "README.md").read_text()
    # version 1 is untouched, and both are listed
    assert (root / v1.name / "SHA256SUMS").read_bytes() == v1_sums
    assert DataRelease.objects.get(pk=v1.pk).sha256 == v1.sha256
    assert folders(root) == sorted([v1.name, v2.name])
    # and the correction, published again, is unchanged
    assert release_publish(cohort_number=cohort.number).status == "unchanged"
    assert DataRelease.objects.count() == 2


@pytest.mark.django_db
def test_each_weeks_completed_cohort_gets_its_own_release(root: Path) -> None:
    worlds = [build_world(scale=1) for _ in range(3)]
    for week, world in enumerate(worlds):
        completed(world, at=PUBLISHED_AT + timedelta(weeks=week))

    report = releases_publish_due(now=PUBLISHED_AT)

    assert report.failed == []
    numbers = [w.cohort.number for w in worlds]
    assert sorted(DataRelease.objects.values_list("cohort__number", "version", "name")) == [
        (n, 1, f"cohort-{n}-v1") for n in numbers
    ]
    for number in numbers:
        bets = csv_rows(root / f"cohort-{number}-v1" / "bets.csv")
        assert bets
        assert {b["cohort"] for b in bets} == {str(number)}
    # nothing is due any more
    assert releases_publish_due().done == []
    assert DataRelease.objects.count() == 3


# ------------------------------------------------------------------------------- failures


@pytest.mark.django_db
def test_a_crash_while_writing_leaves_no_row_no_folder_and_the_next_publish_succeeds(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cohort = completed(build_world(scale=1))
    real_write = release_services.write_export  # type: ignore[attr-defined]

    def crashing_write(folder: Path, **kw: Any) -> dict[str, Any]:
        real_write(folder, **kw)  # every file written …
        raise OSError("disk full")  # … then the crash

    monkeypatch.setattr(release_services, "write_export", crashing_write)
    with pytest.raises(OSError, match="disk full"):
        release_publish(cohort_number=cohort.number, now=PUBLISHED_AT)

    assert not DataRelease.objects.exists()
    assert folders(root) == []
    failure = SystemEvent.objects.get(kind=SystemEvent.Kind.RELEASE_FAILED)
    assert failure.level == SystemEvent.Level.ERROR
    assert failure.cohort_id == cohort.pk
    assert "disk full" in failure.message

    monkeypatch.setattr(release_services, "write_export", real_write)
    outcome = release_publish(cohort_number=cohort.number, now=PUBLISHED_AT)

    assert outcome.status == "published"
    assert outcome.release is not None
    assert outcome.release.version == 1
    assert folders(root) == [outcome.release.name]


@pytest.mark.django_db
def test_what_a_killed_publish_left_is_removed_by_the_next_one(root: Path) -> None:
    """A process killed mid-write leaves its partial folder; killed after the rename, a
    release folder whose row never committed. The next publish of the cohort removes both and
    publishes version 1 whole; another cohort's folders are not touched."""
    cohort = completed(build_world(scale=1))
    n = cohort.number
    root.mkdir(parents=True)
    (root / f".partial-cohort-{n}-0123456789ab").mkdir()
    (root / f".partial-cohort-{n}-0123456789ab" / "bets.csv").write_text("trade_id\n1\n")
    (root / f"cohort-{n}-v1").mkdir()
    (root / f"cohort-{n}-v1" / "bets.csv").write_text("half a file")
    (root / f"cohort-{n}0-v1").mkdir()  # cohort 10n's: not this cohort's

    outcome = release_publish(cohort_number=n, now=PUBLISHED_AT)

    assert outcome.status == "published"
    release = DataRelease.objects.get()
    assert release.name == f"cohort-{n}-v1"
    assert folders(root) == sorted([f"cohort-{n}-v1", f"cohort-{n}0-v1"])
    assert sha256(root / release.name / "bets.csv") == next(
        f["sha256"] for f in release.files if f["name"] == "bets.csv"
    )


@pytest.mark.django_db
def test_a_row_that_fails_to_commit_takes_its_folder_away(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cohort = completed(build_world(scale=1))

    def refused(**kw: Any) -> DataRelease:
        raise IntegrityError("duplicate key value violates unique constraint")

    monkeypatch.setattr(DataRelease.objects, "create", refused)
    with pytest.raises(IntegrityError):
        release_publish(cohort_number=cohort.number, now=PUBLISHED_AT)

    assert folders(root) == []
    assert SystemEvent.objects.filter(kind=SystemEvent.Kind.RELEASE_FAILED).exists()


@pytest.mark.django_db
def test_a_publish_finds_another_publish_of_the_cohort_busy(root: Path) -> None:
    cohort = completed(build_world(scale=1))
    root.mkdir(parents=True)

    with release_services._cohort_lock(root, cohort.number) as held:
        assert held
        outcome = release_publish(cohort_number=cohort.number, now=PUBLISHED_AT)

    assert outcome.status == "busy"
    assert not DataRelease.objects.exists()
    assert release_publish(cohort_number=cohort.number).status == "published"


@pytest.mark.django_db
def test_one_cohorts_failure_does_not_stop_the_others(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken, fine = (completed(build_world(scale=1)) for _ in range(2))
    real_write = release_services.write_export  # type: ignore[attr-defined]

    def write(folder: Path, *, cohort: int, **kw: Any) -> dict[str, Any]:
        if cohort == broken.number:
            raise RuntimeError("the export broke")
        return real_write(folder, cohort=cohort, **kw)

    monkeypatch.setattr(release_services, "write_export", write)
    report = releases_publish_due(now=PUBLISHED_AT)

    assert [line for line in report.failed if f"cohort {broken.number}" in line]
    assert "the export broke" in report.failed[0]
    assert report.done == [f"cohort {fine.number}: published cohort-{fine.number}-v1"]
    assert list(DataRelease.objects.values_list("cohort", flat=True)) == [fine.pk]


# ------------------------------------------------------------- completion through the task


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.celery_worker
def test_the_resolution_check_task_publishes_the_cohort_it_completes(
    root: Path, settings: Any, celery_worker_on_redis: Any
) -> None:
    """The hourly check completes the cohort (every agent decided, nothing held), and once
    that committed the release task runs on its own and publishes version 1."""
    from arena.tasks import check_resolutions

    settings.MARKET_SOURCE = "demo"
    settings.OPENROUTER_API_KEY = ""
    week = date(2031, 6, 1)  # a Sunday
    cohort, _ = cohort_start(week_start=week, now=datetime(2031, 6, 1, tzinfo=UTC))
    for agent in cohort.agents.all():
        Decision.objects.create(
            agent=agent,
            cohort=cohort,
            week_start=week,
            status=Decision.Status.DONE,
            action=Decision.Action.HOLD,
            responder=Decision.Responder.OFFLINE,
        )

    summary = check_resolutions.delay().get(timeout=60)

    assert "1 cohorts completed" in summary
    queued = summary.rsplit("data releases: task ", 1)[1]
    assert AsyncResult(queued).get(timeout=120) == (
        f"cohort {cohort.number}: published cohort-{cohort.number}-v1"
    )
    release = DataRelease.objects.get()
    assert release.cohort_id == cohort.pk
    assert Cohort.objects.get(pk=cohort.pk).status == Cohort.Status.COMPLETED
    decisions = csv_rows(root / release.name / "decisions.csv")
    assert len(decisions) == cohort.agents.count()
    # the next check finds nothing due
    again = check_resolutions.delay().get(timeout=60)
    assert AsyncResult(again.rsplit("data releases: task ", 1)[1]).get(timeout=60) == (
        "no release is due"
    )
    assert DataRelease.objects.count() == 1
    assert folders(root) == [release.name]
