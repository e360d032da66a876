"""The bulk exports: every dataset's columns and cells, the bounds, the files and
their manifest, the downloads over HTTP and their manifest, Parquet read back."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from arena.api import exports as exports_router
from arena.models import (
    Decision,
    DecisionAttempt,
    PortfolioSnapshot,
    Position,
    Trade,
)
from arena.selectors.exports import BET_COLUMNS, DATASETS, Dataset
from arena.services import exports as export_services
from arena.services.exports import (
    PARQUET_AVAILABLE,
    ExportError,
    dataset_stream,
    write_export,
)
from tests.api.helpers import assert_envelope
from tests.page_world import World, build_world
from tests.worlds import ModuleWorld, module_world

TYPES = {"integer", "string", "decimal", "float", "boolean", "timestamp", "date", "json"}
NAMES = ["decisions", "attempts", "trades", "positions", "snapshots", "bets", "forecasts"]


@dataclass(frozen=True)
class Worlds:
    first: World
    second: World


@module_world()
def two_worlds() -> Worlds:
    """Two page worlds, the first with quotes, a line break and accents in every text field:
    built once for the module (tests/worlds.py)."""
    return Worlds(build_world(scale=2, text='Yes, "quoted"\nand ünïcode'), build_world(scale=1))


@pytest.fixture
def worlds(db: None, two_worlds: ModuleWorld[Worlds]) -> Worlds:
    built = two_worlds.value
    return Worlds(built.first.refetched(), built.second.refetched())


def csv_of(dataset: Dataset, **bounds: Any) -> list[dict[str, str]]:
    body = b"".join(dataset_stream(dataset, "csv", dataset.rows(**bounds))).decode()
    reader = csv.reader(io.StringIO(body))
    header = next(reader)
    assert tuple(header) == dataset.column_names
    return [dict(zip(header, line, strict=True)) for line in reader]


def served_csv(name: str) -> list[dict[str, str]]:
    """The rows of the CSV a download serves (on PostgreSQL, formatted by the database)."""
    body = b"".join(export_services.export_stream(DATASETS[name], "csv")).decode()
    return list(csv.DictReader(io.StringIO(body, newline="")))


def jsonl_of(dataset: Dataset, **bounds: Any) -> list[dict[str, Any]]:
    body = b"".join(dataset_stream(dataset, "jsonl", dataset.rows(**bounds))).decode()
    return [json.loads(line) for line in body.splitlines()]


def z(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


# ------------------------------------------------------------------------------ the columns


def test_the_datasets_are_the_issues_plus_attempts_and_v2s_forecasts() -> None:
    assert list(DATASETS) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_every_column_has_a_known_type_a_description_and_a_unique_name(name: str) -> None:
    dataset = DATASETS[name]
    assert dataset.description
    assert len(set(dataset.column_names)) == len(dataset.columns)
    for column in dataset.columns:
        assert column.type in TYPES, column
        assert column.description, column
        assert (column.scale is not None) == (column.type == "decimal"), column


def test_the_bets_columns_are_still_exactly_the_issues() -> None:
    assert DATASETS["bets"].column_names == BET_COLUMNS
    assert BET_COLUMNS[0] == "trade_id"
    assert BET_COLUMNS[-1] == "brier"


# --------------------------------------------------------------------- a row against the DB


def test_a_decision_row_carries_its_prompts_reasoning_and_parsed_answer(worlds: Worlds) -> None:
    decision = worlds.first.decision
    rows = {int(r["decision_id"]): r for r in csv_of(DATASETS["decisions"])}
    row = rows[decision.pk]
    assert row["model"] == decision.agent.model.internal_id
    assert row["cohort"] == str(decision.cohort.number)
    assert row["agent_id"] == str(decision.agent_id)
    assert row["week_start"] == decision.week_start.isoformat()
    assert row["system_prompt"] == decision.system_prompt
    assert row["user_prompt"] == decision.user_prompt
    assert row["reasoning"] == decision.reasoning == 'Yes, "quoted"\nand ünïcode'
    assert json.loads(row["parsed"]) == decision.parsed
    assert row["parse_failed"] == "false"
    assert row["action"] == "BET"
    assert row["run_id"] == str(decision.run_id)
    assert row["created_at"] == z(decision.created_at)
    assert row["finished_at"] == ""  # never set: an empty cell
    assert row["tries"] == "2"


def test_attempt_rows_carry_the_messages_and_raw_responses(worlds: Worlds) -> None:
    decision = worlds.first.decision
    attempts = list(DecisionAttempt.objects.filter(decision=decision).order_by("pk"))
    got = [r for r in jsonl_of(DATASETS["attempts"]) if r["decision_id"] == decision.pk]
    assert [r["attempt_id"] for r in got] == [a.pk for a in attempts]
    assert [r["number"] for r in got] == [1, 2, 3]
    for row, attempt in zip(got, attempts, strict=True):
        assert row["raw_response"] == attempt.raw_response
        assert row["request_messages"] == attempt.request_messages  # nested JSON, not text
        assert row["cost_usd"] == "0.004200"  # a decimal string with its stored places
        assert row["valid"] is attempt.valid
        assert row["started_at"] == z(attempt.started_at)
        assert row["model"] == decision.agent.model.internal_id
        assert row["cohort"] == decision.cohort.number


def test_trade_rows_keep_buys_sells_and_rejections(worlds: Worlds) -> None:
    agent = worlds.first.agent
    rows = [r for r in csv_of(DATASETS["trades"]) if r["agent_id"] == str(agent.pk)]
    trades = list(Trade.objects.filter(agent=agent).order_by("pk"))
    assert [int(r["trade_id"]) for r in rows] == [t.pk for t in trades]
    assert {(r["kind"], r["status"]) for r in rows} == {
        ("BUY", "executed"),
        ("BUY", "rejected"),
        ("SELL", "executed"),
    }
    for row, trade in zip(rows, trades, strict=True):
        assert row["reject_reason"] == trade.reject_reason
        assert row["market_id"] == (trade.market.polymarket_id if trade.market else "")
        assert row["amount"] == ("" if trade.amount is None else f"{trade.amount:.2f}")
        assert row["price"] == ("" if trade.price is None else f"{trade.price:.6f}")
        assert row["created_at"] == z(trade.created_at)
        assert row["brier"] == ("" if trade.brier_score is None else repr(trade.brier_score))
        assert row["side_won"] == {None: "", True: "true", False: "false"}[trade.side_won]


def test_position_rows_match_the_positions(worlds: Worlds) -> None:
    position = Position.objects.filter(agent=worlds.first.agent, status="settled").first()
    assert position is not None
    row = {int(r["position_id"]): r for r in csv_of(DATASETS["positions"])}[position.pk]
    assert row["market_id"] == position.market.polymarket_id
    assert row["status"] == "settled"
    assert row["shares"] == "125.000000"
    assert row["cost_basis"] == "50.00"
    assert row["settlement_value"] == "125.00"
    assert row["realized_pnl"] == "75.00"
    assert row["last_price"] == "0.400000"
    assert row["opened_at"] == z(position.opened_at)
    assert row["closed_at"] == ""


def test_snapshot_rows_are_the_portfolio_snapshots_in_id_order(worlds: Worlds) -> None:
    rows = jsonl_of(DATASETS["snapshots"])
    snapshots = list(PortfolioSnapshot.objects.order_by("pk").select_related("agent__model"))
    assert [r["snapshot_id"] for r in rows] == [s.pk for s in snapshots]
    first, snapshot = rows[0], snapshots[0]
    assert first == {
        "snapshot_id": snapshot.pk,
        "agent_id": snapshot.agent_id,
        "model": snapshot.agent.model.internal_id,
        "model_kind": snapshot.agent.model.kind,
        "cohort": snapshot.agent.cohort.number,
        "snapshot_timestamp": z(snapshot.snapshot_timestamp),
        "cash": "9000.00",
        "positions_value": "300.00",
        "total_value": "9300.00",
        "total_pnl": "-700.00",
        "total_pnl_percent": "-7.0000",
        "brier": None,
        "resolved_bets": 0,
        "prices_stale": False,
    }


def test_every_dataset_says_which_kind_of_model_each_row_is() -> None:
    """Outside agents are labelled in the exports too: `model_kind` (llm, baseline or
    outside) follows `model` in every dataset, the bets' included."""
    for name, dataset in DATASETS.items():
        names = list(dataset.column_names)
        assert names[names.index("model") + 1] == "model_kind", name


def test_a_noisy_float_prints_short_and_reads_back_within_a_hair() -> None:
    noisy = 0.053824000000000004  # as a Brier score computed in floats came out
    assert export_services._csv_float(noisy) == "0.053824"
    assert float(export_services._csv_float(noisy)) == pytest.approx(noisy, rel=1e-15, abs=0)
    assert export_services._csv_float(1.0) == "1"  # plain notation, as PostgreSQL prints it
    assert export_services._csv_float(1e-7) == "0.0000001"
    assert json.loads(export_services.JSON_CELLS["float"](1e-7)) == 1e-7  # a JSON number


def test_timestamps_are_written_in_utc_whatever_their_zone() -> None:
    from zoneinfo import ZoneInfo

    paris = datetime(2026, 1, 4, 1, 30, tzinfo=ZoneInfo("Europe/Paris"))
    assert export_services._timestamp(paris) == "2026-01-04T00:30:00Z"
    assert export_services._timestamp(datetime(2026, 1, 4, 0, 30, 0, 5, tzinfo=UTC)) == (
        "2026-01-04T00:30:00.000005Z"
    )


# ----------------------------------------------------------------------------------- bounds


@pytest.mark.parametrize("name", NAMES)
def test_bounded_by_cohort(worlds: Worlds, name: str) -> None:
    dataset = DATASETS[name]
    first = csv_of(dataset, cohort=worlds.first.cohort.number)
    second = csv_of(dataset, cohort=worlds.second.cohort.number)
    assert first
    assert second
    assert {r["cohort"] for r in first} == {str(worlds.first.cohort.number)}
    assert len(first) + len(second) == len(csv_of(dataset))
    assert csv_of(dataset, cohort=999_999) == []


@pytest.mark.parametrize("name", NAMES)
def test_bounded_by_utc_days_both_ends_inclusive(worlds: Worlds, name: str) -> None:
    dataset = DATASETS[name]
    day = worlds.second.cohort.week_start  # every row of a world falls on its first day
    on_the_day = csv_of(dataset, since=day, until=day)
    assert on_the_day == csv_of(dataset, cohort=worlds.second.cohort.number)
    assert csv_of(dataset, until=day - timedelta(days=1)) == csv_of(
        dataset, cohort=worlds.first.cohort.number
    )
    assert csv_of(dataset, since=day + timedelta(days=1)) == []


def test_the_day_bound_is_the_rows_own_utc_day(worlds: Worlds) -> None:
    late = worlds.second.cohort.started_at + timedelta(days=2, hours=23, minutes=59)
    PortfolioSnapshot.objects.filter(pk=PortfolioSnapshot.objects.order_by("-pk")[0].pk).update(
        snapshot_timestamp=late
    )
    day = late.date()
    rows = csv_of(DATASETS["snapshots"], since=day, until=day)
    assert [r["snapshot_timestamp"] for r in rows] == [z(late)]
    assert csv_of(DATASETS["snapshots"], since=day + timedelta(days=1)) == []


@pytest.mark.parametrize("name", NAMES)
def test_the_offline_filter_splits_every_dataset(worlds: Worlds, name: str) -> None:
    decision = worlds.first.decision
    Decision.objects.filter(pk=decision.pk).update(responder=Decision.Responder.OFFLINE)
    dataset = DATASETS[name]
    offline = csv_of(dataset, offline="only")
    real = csv_of(dataset, offline="exclude")
    agent = (decision.agent.model.internal_id, str(decision.cohort.number))
    assert offline
    assert {(r["model"], r["cohort"]) for r in offline} == {agent}
    assert agent not in {(r["model"], r["cohort"]) for r in real}
    assert len(offline) + len(real) == len(csv_of(dataset))


@pytest.mark.parametrize("name", NAMES)
def test_one_query_a_dataset_whatever_the_number_of_rows(db: None, name: str) -> None:
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            csv_of(DATASETS[name], offline="exclude")
        return len(captured.captured_queries)

    build_world(scale=1)
    few = queries()
    build_world(scale=3)
    assert queries() == few == 1


# ----------------------------------------------------------------------- files and manifest


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def formats() -> tuple[str, ...]:
    return ("csv", "jsonl", "parquet") if PARQUET_AVAILABLE else ("csv", "jsonl")


def test_write_export_writes_a_file_per_dataset_and_format_and_the_manifest(
    worlds: Worlds, tmp_path: Path
) -> None:
    manifest = write_export(tmp_path, formats=formats())
    expected = {f"{n}.{f}" for n in NAMES for f in formats()} | {"manifest.json"}
    assert set(files_of(tmp_path)) == expected
    assert json.loads((tmp_path / "manifest.json").read_text()) == manifest
    assert manifest["methodology_versions"] == ["v2"]  # the page worlds run v2
    assert manifest["bounds"] == {
        "cohort": None,
        "since": None,
        "until": None,
        "offline": "include",
    }
    assert datetime.fromisoformat(manifest["generated_at"]).tzinfo is not None
    assert list(manifest["schema"]) == NAMES
    assert manifest["schema"]["bets"] == [
        {"name": c.name, "type": c.type, "description": c.description}
        for c in DATASETS["bets"].columns
    ]
    for entry in manifest["files"]:
        body = (tmp_path / entry["name"]).read_bytes()
        assert entry["sha256"] == hashlib.sha256(body).hexdigest()
        assert entry["bytes"] == len(body)
        assert entry["rows"] == DATASETS[entry["dataset"]].count()
        assert entry["name"] == f"{entry['dataset']}.{entry['format']}"
    csv_rows = {e["dataset"]: e["rows"] for e in manifest["files"] if e["format"] == "csv"}
    assert csv_rows["snapshots"] == PortfolioSnapshot.objects.count() > 0


def test_two_exports_of_the_same_data_are_byte_identical(worlds: Worlds, tmp_path: Path) -> None:
    one = write_export(tmp_path / "one", formats=formats())
    two = write_export(tmp_path / "two", formats=formats())
    first, second = files_of(tmp_path / "one"), files_of(tmp_path / "two")
    del first["manifest.json"], second["manifest.json"]  # generated_at differs
    assert first == second
    assert one["files"] == two["files"]


def test_the_files_are_what_the_downloads_stream(worlds: Worlds, tmp_path: Path) -> None:
    write_export(tmp_path)
    for name in NAMES:
        for fmt in ("csv", "jsonl"):
            rows = DATASETS[name].rows()
            streamed = b"".join(dataset_stream(DATASETS[name], fmt, rows))
            assert (tmp_path / f"{name}.{fmt}").read_bytes() == streamed, (name, fmt)


def test_bounds_subsets_and_progress(worlds: Worlds, tmp_path: Path) -> None:
    seen: list[tuple[str, int]] = []
    number = worlds.second.cohort.number
    manifest = write_export(
        tmp_path,
        cohort=number,
        since=worlds.second.cohort.week_start,
        datasets=["snapshots", "bets"],
        formats=["csv"],
        progress=lambda dataset, rows: seen.append((dataset, rows)),
    )
    assert [f["name"] for f in manifest["files"]] == ["snapshots.csv", "bets.csv"]
    assert list(manifest["schema"]) == ["snapshots", "bets"]
    assert manifest["bounds"]["cohort"] == number
    snapshots = PortfolioSnapshot.objects.filter(agent__cohort__number=number).count()
    assert seen[-2:] == [("snapshots", snapshots), ("bets", manifest["files"][1]["rows"])]
    assert set(files_of(tmp_path)) == {"snapshots.csv", "bets.csv", "manifest.json"}


def test_progress_is_reported_every_batch(
    worlds: Worlds, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(export_services, "BATCH_ROWS", 5)
    seen: list[int] = []
    write_export(
        tmp_path,
        datasets=["snapshots"],
        formats=["csv"],
        progress=lambda dataset, rows: seen.append(rows),
    )
    total = PortfolioSnapshot.objects.count()
    assert seen == [*range(5, total, 5), total] if total % 5 else list(range(5, total + 1, 5))


def test_a_crash_mid_export_leaves_no_file_under_a_final_name(
    worlds: Worlds, tmp_path: Path
) -> None:
    write_export(tmp_path, datasets=["bets"])
    before = files_of(tmp_path)

    def crash(dataset: str, rows: int) -> None:
        if dataset == "snapshots":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_export(tmp_path, datasets=["bets", "snapshots"], formats=formats(), progress=crash)
    after = files_of(tmp_path)
    assert not any(name.startswith(".") for name in after)  # no partial file left behind
    assert not any(name.startswith("snapshots") for name in after)
    assert after["manifest.json"] == before["manifest.json"]  # the old export's, untouched


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"datasets": ["bets", "wagers"]}, "unknown dataset wagers"),
        ({"formats": ["xlsx"]}, "unknown format xlsx"),
        ({"formats": []}, "nothing to export"),
        ({"since": date(2026, 2, 1), "until": date(2026, 1, 1)}, "until must not be before"),
    ],
)
def test_an_impossible_export_is_refused_before_writing(
    db: None, tmp_path: Path, arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(ExportError, match=message):
        write_export(tmp_path / "out", **arguments)
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(not PARQUET_AVAILABLE, reason="pyarrow is not installed")
@pytest.mark.parametrize("name", NAMES)
def test_parquet_reads_back_to_the_same_rows(worlds: Worlds, tmp_path: Path, name: str) -> None:
    import pyarrow.parquet as pq

    write_export(tmp_path, datasets=[name], formats=["parquet"])
    dataset = DATASETS[name]
    table = pq.read_table(tmp_path / f"{name}.parquet")
    assert tuple(table.column_names) == dataset.column_names
    got = [tuple(r.values()) for r in table.to_pylist()]
    json_at = [i for i, c in enumerate(dataset.columns) if c.type == "json"]
    want = []
    for row in dataset.rows():
        cells = list(row)
        for i in json_at:
            cells[i] = None if cells[i] is None else export_services._csv_json(cells[i])
        want.append(tuple(cells))
    assert got == want
    assert len(got) == dataset.count() > 0
    for column, field in zip(dataset.columns, table.schema, strict=True):
        assert field.metadata[b"description"].decode() == column.description


# ------------------------------------------------------------------------------- over HTTP


def download(client: Client, name: str, fmt: str, **params: Any) -> bytes:
    response = client.get(reverse(f"api:{name}_{fmt}"), params)
    assert response.status_code == 200, response.content
    return b"".join(response.streaming_content)  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", NAMES)
def test_every_dataset_downloads_as_csv_and_json_lines(
    worlds: Worlds, client: Client, name: str
) -> None:
    number = worlds.first.cohort.number
    for fmt, content_type in (("csv", "text/csv"), ("jsonl", "application/x-ndjson")):
        response = client.get(reverse(f"api:{name}_{fmt}"), {"cohort": number})
        assert response.status_code == 200
        assert response["Content-Type"].startswith(content_type)
        assert response["Content-Disposition"] == (
            f'attachment; filename="{name}-cohort-{number}.{fmt}"'
        )
        body = b"".join(response.streaming_content)  # type: ignore[attr-defined]
        dataset = DATASETS[name]
        assert body == b"".join(dataset_stream(dataset, fmt, dataset.rows(cohort=number)))


def test_the_manifest_over_http_hashes_exactly_the_streamed_bytes(
    worlds: Worlds, client: Client
) -> None:
    bounds: dict[str, Any] = {"cohort": worlds.first.cohort.number, "offline": "exclude"}
    response = client.get(reverse("api:exports_manifest"), bounds)
    assert response.status_code == 200
    manifest = response.json()
    assert [(f["dataset"], f["format"]) for f in manifest["files"]] == [
        (n, f) for n in NAMES for f in ("csv", "jsonl")
    ]
    for entry in manifest["files"]:
        body = download(client, entry["dataset"], entry["format"], **bounds)
        assert entry["sha256"] == hashlib.sha256(body).hexdigest(), entry["name"]
        assert entry["bytes"] == len(body)
        lines = body.count(b"\n") if entry["format"] == "jsonl" else None
        if lines is not None:
            assert entry["rows"] == lines
    assert manifest["bounds"] == {
        "cohort": worlds.first.cohort.number,
        "since": None,
        "until": None,
        "offline": "exclude",
    }
    assert manifest["methodology_versions"] == ["v2"]  # the page worlds run v2
    assert set(manifest["schema"]) == set(NAMES)
    assert manifest["schema"]["snapshots"][0] == {
        "name": "snapshot_id",
        "type": "integer",
        "description": "The snapshot's id.",
    }


def test_the_manifest_over_http_matches_the_written_one(
    worlds: Worlds, client: Client, tmp_path: Path
) -> None:
    written = write_export(tmp_path, since=worlds.first.cohort.week_start)
    served = client.get(
        reverse("api:exports_manifest"), {"since": worlds.first.cohort.week_start.isoformat()}
    ).json()
    assert served["files"] == written["files"]
    assert served["schema"] == written["schema"]


def test_the_manifest_is_kept_until_the_data_moves(
    worlds: Worlds, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    computed: list[dict[str, Any]] = []
    real = export_services.stream_manifest

    def counting(**bounds: Any) -> dict[str, Any]:
        computed.append(bounds)
        return real(**bounds)

    monkeypatch.setattr(exports_router, "stream_manifest", counting)
    url = reverse("api:exports_manifest")
    first = client.get(url)
    again = client.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304  # the same answer, not computed again
    assert len(computed) == 1
    client.get(url, {"cohort": worlds.first.cohort.number})  # other bounds, another answer
    assert len(computed) == 2
    # A tick writes a snapshot: the data moved, so the manifest is computed afresh.
    snapshot = PortfolioSnapshot.objects.order_by("pk").first()
    assert snapshot is not None
    snapshot.pk = None
    snapshot.snapshot_timestamp += timedelta(days=400)
    snapshot.save()
    fresh = client.get(url).json()
    assert len(computed) == 3
    rows = {f["name"]: f["rows"] for f in fresh["files"]}
    assert rows["snapshots.csv"] == PortfolioSnapshot.objects.count()
    assert (
        rows["snapshots.csv"]
        == {f["name"]: f["rows"] for f in first.json()["files"]}["snapshots.csv"] + 1
    )


HOSTILE = [
    {"cohort": "abc"},
    {"cohort": "-1"},
    {"cohort": "0"},
    {"cohort": str(10**30)},
    {"since": "2026-13-45"},
    {"until": "yesterday"},
    {"since": "2026-02-01", "until": "2026-01-01"},
    {"since": "0000-01-01"},
    {"until": "99999-01-01"},
    {"offline": "sometimes"},
    {"cohort": "1; DROP TABLE arena_trade"},
]


@pytest.mark.parametrize("params", HOSTILE)
def test_hostile_parameters_get_a_4xx_in_the_envelope_on_every_export(
    db: None, client: Client, params: dict[str, str]
) -> None:
    urls = [reverse(f"api:{n}_{f}") for n in NAMES for f in ("csv", "jsonl")]
    for url in [*urls, reverse("api:exports_manifest")]:
        response = client.get(url, params)
        assert response.status_code in (400, 422), (url, params)
        assert response["Content-Type"].startswith("application/json")
        assert_envelope(response.json(), response.status_code)


def test_a_huge_range_is_simply_everything(worlds: Worlds, client: Client) -> None:
    body = download(client, "bets", "csv", since="0001-01-01", until="9999-12-31")
    assert body == download(client, "bets", "csv")


def test_an_unknown_dataset_is_a_404_in_the_envelope(db: None, client: Client) -> None:
    response = client.get("/api/v1/exports/wagers.csv")
    assert response.status_code == 404
    assert_envelope(response.json(), 404)


def test_the_stream_is_utf8_and_quotes_hostile_text(worlds: Worlds) -> None:
    rows = csv_of(DATASETS["decisions"], cohort=worlds.first.cohort.number)
    assert {r["reasoning"] for r in rows} == {'Yes, "quoted"\nand ünïcode'}
    assert Decimal(csv_of(DATASETS["bets"])[0]["amount"]) == Decimal("50.00")


def test_a_bare_carriage_return_stays_inside_its_cell(worlds: Worlds) -> None:
    decision = Decision.objects.filter(agent=worlds.first.agent).first()
    assert decision is not None
    Decision.objects.filter(pk=decision.pk).update(reasoning="first line\rsecond line")
    buy = Trade.objects.filter(agent=worlds.first.agent, kind="BUY").order_by("pk").first()
    assert buy is not None
    Trade.objects.filter(pk=buy.pk).update(requested_position_id="one\rtwo")
    decisions = served_csv("decisions")
    assert len(decisions) == Decision.objects.count()
    assert {int(r["decision_id"]): r for r in decisions}[decision.pk]["reasoning"] == (
        "first line\rsecond line"
    )
    trades = served_csv("trades")  # on PostgreSQL, formatted by the database
    assert len(trades) == Trade.objects.count()
    assert {int(r["trade_id"]): r for r in trades}[buy.pk]["requested_position_id"] == "one\rtwo"


def test_json_cells_list_their_keys_sorted_whatever_the_database(worlds: Worlds) -> None:
    decision = Decision.objects.filter(agent=worlds.first.agent).first()
    assert decision is not None
    Decision.objects.filter(pk=decision.pk).update(parsed={"zeta": 1, "alpha": {"y": 2, "b": 3}})
    body = b"".join(export_services.export_stream(DATASETS["decisions"], "jsonl")).decode()
    assert '"parsed":{"alpha":{"b":3,"y":2},"zeta":1}' in body
    csv_body = b"".join(export_services.export_stream(DATASETS["decisions"], "csv")).decode()
    assert '{""alpha"":{""b"":3,""y"":2},""zeta"":1}' in csv_body


def test_the_database_writes_the_same_bytes_as_python_for_awkward_cells(worlds: Worlds) -> None:
    """On PostgreSQL the text files are formatted by the database (`formatted_batches`);
    elsewhere by Python. Either way they are the cells the Python writer gives."""
    buys = Trade.objects.filter(agent=worlds.first.agent, kind="BUY", status="executed")
    first, second = buys.order_by("pk")[:2]
    Trade.objects.filter(pk=first.pk).update(
        brier_score=0.053824000000000004,  # float noise
        implied_confidence=1.0,  # an integral float
        side_won=False,
        created_at=datetime(2031, 1, 12, 0, 5, 0, 5, tzinfo=UTC),  # microseconds
        scored_at=datetime(2031, 1, 12, 0, 6, 0, 500000, tzinfo=UTC),
        realized_pnl=Decimal("-0.01"),
        reject_reason="",  # empty, not missing
        requested_position_id='tab\there, "quotes", back\\slash, \x01 control',
    )
    Trade.objects.filter(pk=second.pk).update(
        brier_score=0.0,
        implied_confidence=1e-7,
        requested_position_id="a bare\rcarriage return",  # quoted, as a newline is
    )
    for name in NAMES:
        dataset = DATASETS[name]
        for fmt in ("csv", "jsonl"):
            written = b"".join(export_services.export_stream(dataset, fmt))
            assert written == b"".join(dataset_stream(dataset, fmt, dataset.rows())), (name, fmt)
    row = {int(r["trade_id"]): r for r in csv_of(DATASETS["trades"])}[first.pk]
    assert (row["brier"], row["implied_confidence"]) == ("0.053824", "1")
    assert (row["created_at"], row["scored_at"]) == (
        "2031-01-12T00:05:00.000005Z",
        "2031-01-12T00:06:00.500000Z",
    )
    assert (row["realized_pnl"], row["side_won"], row["reject_reason"]) == ("-0.01", "false", "")
    line = {r["trade_id"]: r for r in jsonl_of(DATASETS["trades"])}[first.pk]
    assert (line["brier"], line["implied_confidence"], line["reject_reason"]) == (0.053824, 1, "")
    assert line["requested_position_id"] == 'tab\there, "quotes", back\\slash, \x01 control'
    tiny = {r["trade_id"]: r for r in jsonl_of(DATASETS["trades"])}[second.pk]
    assert (tiny["brier"], tiny["implied_confidence"]) == (0, 1e-7)
