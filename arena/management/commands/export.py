"""`manage.py export <folder>`: write a full bulk export (every dataset, a manifest) to a folder."""

from __future__ import annotations

import time
from datetime import date
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from arena.selectors.exports import DATASETS, OFFLINE_CHOICES
from arena.services.exports import (
    FORMATS,
    MANIFEST_NAME,
    PARQUET_AVAILABLE,
    TEXT_FORMATS,
    ExportError,
    write_export,
)

BAR_WIDTH = 30
REDRAW_SECONDS = 0.2  # a terminal redrawn more often only slows the export down


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError as exc:
        raise CommandError(f"{text!r} is not an ISO date (YYYY-MM-DD)") from exc


class Command(BaseCommand):
    help = (
        "Write the bulk export to FOLDER: one file per dataset and format "
        f"({', '.join(DATASETS)}; csv and jsonl unless --format says otherwise) and "
        f"{MANIFEST_NAME} with row counts and SHA-256. Prints the manifest's path."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("folder", type=Path)
        parser.add_argument("--cohort", type=int, help="only this cohort (its number)")
        parser.add_argument("--since", type=_day, help="only rows of this UTC day or later")
        parser.add_argument("--until", type=_day, help="only rows of this UTC day or earlier")
        parser.add_argument("--offline", choices=OFFLINE_CHOICES, default="include")
        parser.add_argument(
            "--format",
            dest="formats",
            action="append",
            choices=FORMATS,
            help="repeat for several (default: csv and jsonl; parquet needs pyarrow)",
        )
        parser.add_argument(
            "--dataset",
            dest="datasets",
            action="append",
            choices=list(DATASETS),
            help="repeat for several (default: all)",
        )

    def handle(
        self,
        *args: Any,
        folder: Path,
        cohort: int | None,
        since: date | None,
        until: date | None,
        offline: str,
        formats: list[str] | None,
        datasets: list[str] | None,
        **options: Any,
    ) -> None:
        if "parquet" in (formats or ()) and not PARQUET_AVAILABLE:
            raise CommandError("Parquet needs pyarrow: install the `parquet` extra")
        bounds: dict[str, Any] = {
            "cohort": cohort,
            "since": since,
            "until": until,
            "offline": offline,
        }
        names = datasets or list(DATASETS)
        # Django styles stderr as an error on a terminal: progress is not one.
        self.stderr.style_func = None
        bar = _ProgressBar(self.stderr) if self.stderr.isatty() else None
        if bar is not None:
            # Counting first gives the bar its end; one cheap query per dataset.
            bar.totals = {n: DATASETS[n].count(**bounds) for n in names if n in DATASETS}
        started = time.monotonic()
        try:
            manifest = write_export(
                folder,
                datasets=names,
                formats=formats or TEXT_FORMATS,
                progress=bar.update if bar is not None else None,
                **bounds,
            )
        except ExportError as exc:
            raise CommandError(str(exc)) from exc
        finally:
            if bar is not None:
                bar.finish()
        rows = sum({f["dataset"]: f["rows"] for f in manifest["files"]}.values())
        seconds = time.monotonic() - started
        self.stderr.write(
            f"exported {rows:,} rows of {len(names)} datasets as "
            f"{', '.join(dict.fromkeys(f['format'] for f in manifest['files']))} "
            f"in {seconds:.1f}s"
        )
        self.stdout.write(str(folder / MANIFEST_NAME))


class _ProgressBar:
    """One line on a terminal, redrawn in place: the dataset, a bar, rows done of its total."""

    def __init__(self, out: Any) -> None:
        self.out = out
        self.totals: dict[str, int] = {}
        self.drawn_at = 0.0
        self.current: str | None = None

    def update(self, dataset: str, rows: int) -> None:
        now = time.monotonic()
        total = self.totals.get(dataset, 0)
        done = rows >= total
        if dataset == self.current and not done and now - self.drawn_at < REDRAW_SECONDS:
            return
        if self.current is not None and dataset != self.current:
            self.out.write("", ending="\n")
        self.current, self.drawn_at = dataset, now
        share = rows / total if total else 1.0
        filled = int(BAR_WIDTH * min(share, 1.0))
        bar = "#" * filled + "-" * (BAR_WIDTH - filled)
        self.out.write(f"\r{dataset:<10} [{bar}] {share:>4.0%} {rows:,}/{total:,} rows", ending="")
        self.out.flush()

    def finish(self) -> None:
        if self.current is not None:
            self.out.write("", ending="\n")
