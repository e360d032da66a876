"""`manage.py export <folder>`: a full export to a folder, with a progress bar on a terminal."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from arena.management.commands.export import Command as ExportCommand
from arena.models import PortfolioSnapshot
from arena.selectors.exports import DATASETS
from arena.services import exports as export_services
from arena.services.exports import PARQUET_AVAILABLE
from tests.page_world import World, build_world


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def world(db: None) -> World:
    return build_world(scale=2)


def run(*args: str, stderr: io.StringIO | None = None) -> tuple[str, str]:
    out, err = io.StringIO(), stderr if stderr is not None else io.StringIO()
    call_command("export", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_writes_every_dataset_as_csv_and_jsonl_and_prints_the_manifest_path(
    world: World, tmp_path: Path
) -> None:
    out, err = run(str(tmp_path / "export"))
    manifest_path = tmp_path / "export" / "manifest.json"
    assert out.strip() == str(manifest_path)
    manifest = json.loads(manifest_path.read_text())
    assert {f["name"] for f in manifest["files"]} == {
        f"{name}.{fmt}" for name in DATASETS for fmt in ("csv", "jsonl")
    }
    for entry in manifest["files"]:
        body = (tmp_path / "export" / entry["name"]).read_bytes()
        assert hashlib.sha256(body).hexdigest() == entry["sha256"]
    total = sum(DATASETS[name].count() for name in DATASETS)
    # Not a terminal: no bar, only the closing line.
    assert err.count("\n") == 1
    assert err.startswith(f"exported {total:,} rows of {len(DATASETS)} datasets as csv, jsonl")
    assert "\r" not in err


def test_on_a_terminal_a_progress_bar_runs_per_dataset(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(export_services, "BATCH_ROWS", 7)
    terminal = Terminal()
    run(str(tmp_path), "--dataset", "snapshots", "--dataset", "bets", stderr=terminal)
    err = terminal.getvalue()
    lines = err.split("\n")  # a line is redrawn after each "\r"
    snapshots = PortfolioSnapshot.objects.count()
    bets = DATASETS["bets"].count()
    assert lines[0].startswith("\rsnapshots  [")
    assert lines[0].endswith(f"] 100% {snapshots:,}/{snapshots:,} rows")
    assert lines[1].endswith(f"] 100% {bets:,}/{bets:,} rows")
    assert "#" * 30 in lines[1]
    assert lines[2].startswith(f"exported {snapshots + bets:,} rows of 2 datasets")
    assert lines[3] == ""


def test_bounds_datasets_and_formats_from_the_options(world: World, tmp_path: Path) -> None:
    formats = ["--format", "csv"] + (["--format", "parquet"] if PARQUET_AVAILABLE else [])
    day = world.cohort.week_start.isoformat()
    run(
        str(tmp_path),
        "--cohort",
        str(world.cohort.number),
        "--since",
        day,
        "--until",
        day,
        "--offline",
        "exclude",
        "--dataset",
        "positions",
        *formats,
    )
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["bounds"] == {
        "cohort": world.cohort.number,
        "since": day,
        "until": day,
        "offline": "exclude",
    }
    wanted = DATASETS["positions"].count(cohort=world.cohort.number, offline="exclude")
    assert [(f["name"], f["rows"]) for f in manifest["files"]] == [
        (f"positions.{fmt}", wanted) for fmt in formats[1::2]
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--since", "2026-02-30"], "not an ISO date"),
        (["--since", "2026-02-01", "--until", "2026-01-01"], "until must not be before since"),
    ],
)
def test_impossible_options_are_a_clear_error(
    db: None, tmp_path: Path, args: list[str], message: str
) -> None:
    with pytest.raises(CommandError, match=message):
        run(str(tmp_path / "out"), *args)
    assert not (tmp_path / "out").exists()


def test_an_unknown_dataset_is_refused_by_the_parser(db: None, tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="invalid choice: 'wagers'"):
        run(str(tmp_path), "--dataset", "wagers")


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_outside_any_transaction_every_file_comes_from_one_snapshot(tmp_path: Path) -> None:
    """Run as an operator runs it (autocommit): on PostgreSQL the export opens its own
    read-only REPEATABLE READ transaction, and every file's count is the table's."""
    build_world(scale=1)
    out, _ = run(str(tmp_path))
    manifest = json.loads(Path(out.strip()).read_text())
    counts = {(f["dataset"], f["format"]): f["rows"] for f in manifest["files"]}
    for name, dataset in DATASETS.items():
        assert counts[(name, "csv")] == counts[(name, "jsonl")] == dataset.count() > 0


def test_progress_on_a_colour_terminal_is_not_styled_as_an_error(
    world: World, tmp_path: Path
) -> None:
    # As `manage.py export` runs from a shell: Django paints a terminal's stderr as an error.
    terminal = Terminal()
    command = ExportCommand(stdout=io.StringIO(), stderr=terminal, force_color=True)
    parser = command.create_parser("manage.py", "export")
    options = parser.parse_args(
        [str(tmp_path), "--dataset", "bets", "--force-color", "--skip-checks"]
    )
    command.execute(**vars(options))
    err = terminal.getvalue()
    assert "exported" in err
    assert "\x1b[" not in err  # no ANSI colour codes
