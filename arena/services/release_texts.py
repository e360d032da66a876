"""What a data release says of itself: what changed since the cohort's release before it (a
line per position settled, bet scored or row otherwise changed, then a line per dataset and per
format), its README (with what was still open when it was published), its schema and its
citation metadata. Pure text from the files and rows given; arena/services/releases.py writes
it into the release's folder."""

from __future__ import annotations

import csv
import itertools
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from arena.models import Cohort, DataRelease
from arena.selectors.exports import DATASETS
from arena.selectors.releases import PUBLISHER

CHECKSUMS = "SHA256SUMS"
MANIFEST = "manifest.json"
RELEASE_RECORD = "release.json"
SCHEMA = "schema.json"
README = "README.md"
CITATION = "CITATION.cff"
# Rows named one by one in a release's changes, per dataset; the rest are counted.
ROWS_NAMED = 40

Row = dict[str, str]


# ------------------------------------------------------------------------------- changes


def release_changes(
    *,
    previous: DataRelease | None,
    data_files: list[dict[str, Any]],
    previous_folder: Path | None = None,
    folder: Path | None = None,
) -> str:
    """Return what differs between `previous` and the release of `data_files`: a line per
    position or bet whose row changed (read from the CSV files of `previous_folder` and
    `folder`, when both are given and on the disk: which position settled or was refunded,
    which bet was scored, which was scored again), then a line per dataset whose CSV file
    differs (its row count before and after), and a line per format added or removed (the
    same rows, in a format more or less). Empty when there is no previous release."""
    if previous is None:
        return ""
    lines = [f"Supersedes {previous.name}."]
    if previous_folder is not None and folder is not None:
        lines += _row_changes(previous_folder, folder)
    old = [f for f in previous.files if f.get("dataset")]
    old_csv = {f["dataset"]: f for f in old if f.get("format") == "csv"}
    new_csv = {f["dataset"]: f for f in data_files if f.get("format") == "csv"}
    for dataset in sorted(old_csv.keys() | new_csv.keys()):
        before, after = old_csv.get(dataset), new_csv.get(dataset)
        if before is not None and after is not None and before["sha256"] == after["sha256"]:
            continue
        columns = (
            _columns_change(previous_folder / before["name"], folder / after["name"])
            if previous_folder is not None and folder is not None and before and after
            else None
        )
        if before is None:
            what = f"new, {after['rows'] if after else 0} rows"
        elif after is None:
            what = f"removed (had {before['rows']} rows)"
        elif int(before["rows"]) != int(after["rows"]):
            what = f"{before['rows']} → {after['rows']} rows"
        elif columns is not None and columns.same_rows:
            what = f"{after['rows']} rows, the same in the columns both have"
        else:
            what = f"{after['rows']} rows, content changed"
        if columns is not None:
            what += columns.text
        lines.append(f"{dataset}: {what}.")
    formats_before = {f["format"] for f in old}
    formats_after = {f["format"] for f in data_files}
    for fmt in sorted(formats_after - formats_before):
        names = ", ".join(sorted(f["name"] for f in data_files if f["format"] == fmt))
        lines.append(f"Format {fmt} added ({names}): the same rows as the CSV files.")
    for fmt in sorted(formats_before - formats_after):
        names = ", ".join(sorted(f["name"] for f in old if f["format"] == fmt))
        lines.append(
            f"Format {fmt} removed ({names}): this release was written without it; the CSV "
            "files hold the same rows."
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class _ColumnsChange:
    """How a dataset's columns differ between two releases' CSV files, and whether every row
    is the same in the columns both have."""

    added: list[str]
    removed: list[str]
    same_rows: bool

    @property
    def text(self) -> str:
        said = [f"; columns added: {', '.join(self.added)}" if self.added else ""]
        said.append(f"; columns removed: {', '.join(self.removed)}" if self.removed else "")
        return "".join(said)


def _columns_change(before: Path, after: Path) -> _ColumnsChange | None:
    """None when the two files have the same columns (or either cannot be read)."""
    try:
        with (
            open(before, encoding="utf-8", newline="") as old,
            open(after, encoding="utf-8", newline="") as new,
        ):
            old_rows, new_rows = csv.DictReader(old), csv.DictReader(new)
            old_names, new_names = list(old_rows.fieldnames or []), list(new_rows.fieldnames or [])
            if old_names == new_names:
                return None
            shared = [name for name in new_names if name in old_names]
            same = all(
                a is not None and b is not None and all(a[n] == b[n] for n in shared)
                for a, b in itertools.zip_longest(old_rows, new_rows)
            )
    except (OSError, csv.Error):
        return None
    return _ColumnsChange(
        added=[n for n in new_names if n not in old_names],
        removed=[n for n in old_names if n not in new_names],
        same_rows=same,
    )


def _csv_rows(path: Path, key: str) -> dict[str, Row]:
    """The file's rows by `key`, each a mapping of its header's columns to its cells."""
    with open(path, encoding="utf-8", newline="") as handle:
        return {row[key]: row for row in csv.DictReader(handle)}


def _row_changes(previous_folder: Path, folder: Path) -> list[str]:
    """A line per position and per bet whose row differs between the two folders' CSV files;
    none when either file is missing (a release whose folder is gone says only what its
    row lists)."""
    lines: list[str] = []
    for filename, key, line, noun in (
        ("positions.csv", "position_id", _position_line, "positions"),
        ("bets.csv", "trade_id", _bet_line, "bets"),
    ):
        try:
            before = _csv_rows(previous_folder / filename, key)
            after = _csv_rows(folder / filename, key)
        except (OSError, KeyError, csv.Error):
            continue
        shared = _shared_columns(before, after)
        before = {k: {n: row[n] for n in shared} for k, row in before.items()}
        after = {k: {n: row[n] for n in shared} for k, row in after.items()}
        changed = [
            text
            for row_id in sorted(before.keys() | after.keys(), key=_number_first)
            if (text := line(before.get(row_id), after.get(row_id)))
        ]
        lines += changed[:ROWS_NAMED]
        if len(changed) > ROWS_NAMED:
            lines.append(f"… and {len(changed) - ROWS_NAMED} more {noun} changed ({filename}).")
    return lines


def _shared_columns(before: dict[str, Row], after: dict[str, Row]) -> list[str]:
    """The columns both files have, in the later file's order: a release written with other
    columns is compared on these, so a column added is not read as every row changed."""
    old = next(iter(before.values()), None)
    new = next(iter(after.values()), None)
    if old is None or new is None:
        return list((old or new or {}).keys())
    return [name for name in new if name in old]


def _number_first(row_id: str) -> tuple[int, str]:
    return (int(row_id), "") if row_id.isdigit() else (0, row_id)


def _money(value: str) -> str:
    return f"−${value[1:]}" if value.startswith("-") else f"${value}"


def _position_line(old: Row | None, new: Row | None) -> str:
    row = new or old
    if row is None or old == new:
        return ""
    what = (
        f"Position {row['position_id']} ({row['model']}, {row['model_kind']}; market "
        f"{row['market_id']}, {row['side']})"
    )
    if old is None or new is None:
        return f"{what} is new." if old is None else f"{what} is no longer in the data."
    if old["status"] == "open" and new["status"] == "settled":
        return (
            f"{what} settled: paid {_money(new['settlement_value'])}, realized P/L "
            f"{_money(new['realized_pnl'])}."
        )
    if old["status"] == "open" and new["status"] == "cancelled":
        return f"{what} cancelled: its market was refunded, {_money(new['settlement_value'])}."
    fields = [f for f in new if f in old and old[f] != new[f]]
    return (
        f"{what} changed: "
        + "; ".join(f"{f} {old[f] or '(empty)'} → {new[f] or '(empty)'}" for f in fields)
        + "."
    )


def _bet_line(old: Row | None, new: Row | None) -> str:
    row = new or old
    if row is None or old == new:
        return ""
    what = f"Bet {row['trade_id']} ({row['model']}; market {row['market_id']}, {row['side']})"
    if old is None or new is None:
        return f"{what} is new." if old is None else f"{what} is no longer in the data."
    if old["status"] == "open" and new["status"] in ("won", "lost"):
        return f"{what} scored: {new['status']}, Brier {new['brier']}."
    if old["status"] == "open" and new["status"] == "cancelled":
        return f"{what}: its market was cancelled; refunded, never scored."
    return (
        f"{what} scored again: {old['status']} (Brier {old['brier'] or 'none'}) → "
        f"{new['status']} (Brier {new['brier'] or 'none'})."
    )


# ---------------------------------------------------------------------- the descriptions


def release_schema(data_files: list[dict[str, Any]]) -> dict[str, Any]:
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


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _cell(text: object) -> str:
    """A Markdown table cell: on one line, its pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _table(header: list[str], rows: list[list[object]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(_cell(c) for c in row) + " |" for row in rows),
    ]


def release_open_text(open_at_release: dict[str, Any]) -> list[str]:
    """The README's section on what was still open when the release was published, or no
    lines when nothing was."""
    positions = list(open_at_release.get("positions") or [])
    bets = list(open_at_release.get("bets") or [])
    if not positions and not bets:
        return []
    out = [
        "## Open at release time",
        "",
        f"{_count(len(positions), 'position')} and {_count(len(bets), 'bet')} of baseline or "
        "outside agents were still open when this release was published; they are in its "
        "files as open (status `open`, no settlement, no Brier score). Every bet of the "
        "cohort's LLM agents was scored (or its market cancelled), so nothing the lineup is "
        "ranked by can change. When these settle, the cohort's next release holds them and "
        "says so.",
        "",
    ]
    if positions:
        rows = [
            [p["position_id"], p["model"], p["model_kind"], p["market_id"], p["side"]]
            for p in positions
        ]
        out += [*_table(["position", "model", "kind", "market", "side"], rows), ""]
    if bets:
        rows = [
            [
                b["trade_id"],
                b["model"],
                b["model_kind"],
                b["market_id"],
                b["side"],
                "yes" if b.get("sold_out") else "no",
            ]
            for b in bets
        ]
        out += [*_table(["bet (trade)", "model", "kind", "market", "side", "sold out"], rows), ""]
    return out


def release_readme(
    *,
    name: str,
    cohort: Cohort,
    version: int,
    published_at: datetime,
    data_files: list[dict[str, Any]],
    changes: str,
    open_at_release: dict[str, Any],
    citation: str,
) -> str:
    completed = f"{cohort.completed_at:%Y-%m-%d %H:%M} UTC" if cohort.completed_at else "—"
    out = [
        f"# Forecaster Arena data release {name}",
        "",
        f"Cohort {cohort.number} (week starting Sunday {cohort.week_start:%Y-%m-%d}, completed "
        f"{completed}), release r{version}, methodology {cohort.methodology_version}, "
        f"published {published_at:%Y-%m-%d %H:%M} UTC.",
        "",
        "This release was published once the cohort had completed and every bet of its LLM "
        "agents was scored (or its market cancelled). It is frozen: its files never change. "
        "When the cohort's data changes later (a baseline's or outside agent's position "
        "settles, a market is settled again), the cohort's next release holds the change and "
        "says what changed.",
        "",
    ]
    if changes:
        out += ["## Changes", "", *(f"- {line}" for line in changes.splitlines()), ""]
    out += release_open_text(open_at_release)
    out += [
        "## Files",
        "",
        f"Check them with `sha256sum -c {CHECKSUMS}`; `{MANIFEST}` is the export's manifest, "
        f"`{SCHEMA}` the schema below as JSON, `{RELEASE_RECORD}` this release's name, cohort, "
        "week, number, publication time, changes and what was open.",
        "",
        *_table(
            ["file", "dataset", "format", "rows", "bytes", "SHA-256"],
            [
                [f["name"], f["dataset"], f["format"], f["rows"], f["bytes"], f"`{f['sha256']}`"]
                for f in data_files
            ],
        ),
        "",
        "## Datasets",
        "",
    ]
    for dataset_name, dataset in DATASETS.items():
        if not any(f["dataset"] == dataset_name for f in data_files):
            continue
        out += [
            f"### {dataset_name}",
            "",
            _cell(dataset.description),
            "",
            *_table(
                ["column", "type", "description"],
                [[f"`{c.name}`", c.type, c.description] for c in dataset.columns],
            ),
            "",
        ]
    out += ["## How to cite", "", citation, ""]
    out += [f"The same, as citation metadata: `{CITATION}`.", ""]
    return "\n".join(out)


def release_citation_cff(*, name: str, cohort: Cohort, version: int, published_at: datetime) -> str:
    title = (
        f"Forecaster Arena weekly data release {name} (cohort {cohort.number}, release r{version})"
    )
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
