"""Reads of the frozen data releases: which cohorts are due one (a first release, or the next
because their data changed since the latest), what a release leaves open, the releases newest
first, and the one file of a release a request may have.

A completed cohort's release is due once nothing the lineup is ranked by can change: every
executed bet of its LLM agents is scored, or its market cancelled (a bet sold out of is scored
when its market resolves, after the cohort completes). Baseline and outside agents never hold
it back: their positions still open are in the release as open (`release_open_items`), and
when they settle the cohort's data changes, which makes the next release due. The one wait
that is theirs is bounded: an agent whose position settled after its last snapshot is marked
once more by the next tick (at most 10 minutes), so its curve ends at its settled value before
a release holds it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import Exists, OuterRef, QuerySet

from agents.models import BenchmarkModel
from arena.models import (
    Agent,
    Cohort,
    DataRelease,
    Decision,
    PanelForecast,
    Position,
    SystemEvent,
    Trade,
)
from arena.selectors.ticks import agents_to_mark
from markets.models import Market

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


def _lineup_bets_unscored() -> QuerySet[Trade]:
    """The executed bets of LLM agents neither scored nor in a cancelled market."""
    return (
        Trade.objects.filter(
            agent__model__kind=BenchmarkModel.Kind.LLM,
            kind=Trade.Kind.BUY,
            status=Trade.Status.EXECUTED,
            brier_score__isnull=True,
        )
        .exclude(market__resolution=Market.Resolution.CANCELLED)
        .order_by()
    )


def _agents_awaiting_final_snapshot() -> QuerySet[Agent]:
    """The agents the next tick marks only to end their curve: a position of theirs closed
    after their last snapshot, and they hold none open (one that still holds one is marked
    every tick, and a release leaves its later snapshots out)."""
    holding = Position.objects.filter(agent=OuterRef("pk"), status=Position.Status.OPEN)
    return agents_to_mark().exclude(Exists(holding))


def _forecasts_unscored() -> QuerySet[PanelForecast]:
    """The panel forecasts (methodology v2) not yet scored, in markets not cancelled."""
    return (
        PanelForecast.objects.filter(scored_at__isnull=True)
        .exclude(market__resolution=Market.Resolution.CANCELLED)
        .order_by()
    )


def cohorts_final() -> QuerySet[Cohort]:
    """Return the completed cohorts whose release may be published: every executed bet of
    their LLM agents scored or its market cancelled, every panel forecast of their agents
    scored or its market cancelled, and no agent awaiting the final snapshot a settlement
    calls for. Baseline and outside agents' open positions never hold one back."""
    unscored = _lineup_bets_unscored().filter(agent__cohort=OuterRef("pk"))
    forecasts = _forecasts_unscored().filter(agent__cohort=OuterRef("pk"))
    return (
        Cohort.objects.filter(status=Cohort.Status.COMPLETED)
        .exclude(Exists(unscored))
        .exclude(Exists(forecasts))
        .exclude(pk__in=_agents_awaiting_final_snapshot().values("cohort_id"))
    )


def cohort_not_final_reason(cohort: Cohort) -> str:
    """Why the completed `cohort`'s release may not be published now, or "" when it may."""
    unscored = list(
        _lineup_bets_unscored()
        .filter(agent__cohort=cohort)
        .values_list("market__polymarket_id", flat=True)
        .distinct()
    )
    if unscored:
        count = _lineup_bets_unscored().filter(agent__cohort=cohort).count()
        markets = ", ".join(sorted(unscored)[:5]) + (", …" if len(unscored) > 5 else "")
        return (
            f"cohort {cohort.number} is not final: {count} of its LLM agents' bets are not "
            f"scored yet (markets {markets}); its release waits until each is scored or its "
            "market cancelled"
        )
    if _agents_awaiting_final_snapshot().filter(cohort=cohort).exists():
        return (
            f"cohort {cohort.number} is not final: a position settled after its agent's last "
            "snapshot, and the final snapshot is not taken yet (the next tick takes it)"
        )
    return ""


def cohort_release_states(cohort_ids: Iterable[int]) -> dict[int, str]:
    """Return, per cohort id, the SHA-256 of what can still change in a completed cohort's
    release: every position's shares, cost, P/L, status, payout and closing time; every
    trade's status, score and its market's resolution; every panel forecast's outcome,
    scores and its market's resolution; every decision's status, action and finishing time.
    Each is in the release's files, so a change of the files after the cohort completed
    changes this, and it is read in four queries for all the cohorts at once (hundreds of
    narrow rows a cohort), where comparing the files means exporting the cohort whole. The
    rest of a completed cohort's rows never change; the snapshots a tick
    adds are of an agent still holding a position (a release leaves them out) or one whose
    position just closed (which changed the position)."""
    ids = sorted(set(cohort_ids))
    digests = {pk: hashlib.sha256() for pk in ids}
    parts: list[tuple[str, Iterable[tuple[Any, ...]]]] = [
        (
            "position",
            Position.objects.filter(agent__cohort_id__in=ids)
            .order_by("pk")
            .values_list(
                "agent__cohort_id",
                "pk",
                "status",
                "shares",
                "cost_basis",
                "realized_pnl",
                "settlement_value",
                "closed_at",
            ),
        ),
        (
            "trade",
            Trade.objects.filter(agent__cohort_id__in=ids)
            .order_by("pk")
            .values_list(
                "agent__cohort_id",
                "pk",
                "status",
                "brier_score",
                "side_won",
                "scored_at",
                "market__resolution",
            ),
        ),
        (
            # Methodology v2's panel forecasts, scored as their markets resolve (none in v1).
            "forecast",
            PanelForecast.objects.filter(agent__cohort_id__in=ids)
            .order_by("pk")
            .values_list(
                "agent__cohort_id",
                "pk",
                "outcome",
                "brier_score",
                "log_score",
                "scored_at",
                "market__resolution",
            ),
        ),
        (
            "decision",
            Decision.objects.filter(cohort_id__in=ids)
            .order_by("pk")
            .values_list("cohort_id", "pk", "status", "action", "finished_at"),
        ),
    ]
    for kind, rows in parts:
        for cohort_id, *row in rows:
            cells = "\t".join(_state_cell(value) for value in row)
            digests[cohort_id].update(f"{kind}\t{cells}\n".encode())
    return {pk: digest.hexdigest() for pk, digest in digests.items()}


def _state_cell(value: Any) -> str:
    """A value as the same text whichever process or connection read it: a timestamp in UTC
    (its time zone object differs between drivers), a Decimal as stored, None apart from "",
    a float exactly."""
    if value is None:
        return "\\N"
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if isinstance(value, float):
        return value.hex()
    return str(value)


def _failed_lately(*, now: datetime) -> QuerySet[SystemEvent]:
    return SystemEvent.objects.filter(
        cohort=OuterRef("pk"),
        kind=SystemEvent.Kind.RELEASE_FAILED,
        level=SystemEvent.Level.ERROR,
        created_at__gt=now - RETRY_AFTER,
    )


def cohorts_due_release(*, now: datetime) -> list[int]:
    """Return the numbers of the final cohorts a release is due for, oldest first: those
    without any release yet, and those with one whose data may have changed since they were
    last compared with their latest release (`Cohort.release_state` differs from
    `cohort_release_states`; a release published before the state was kept has none). Either
    kind is left out for `RETRY_AFTER` after its publish failed.

    One read of the final cohorts for both kinds: what makes a cohort final is the costly part
    of the read, and every tick asks."""
    released = DataRelease.objects.filter(cohort=OuterRef("pk"))
    candidates = list(
        cohorts_final()
        .exclude(Exists(_failed_lately(now=now)))
        .annotate(has_release=Exists(released))
        .order_by("number")
        .values_list("pk", "number", "release_state", "has_release")
    )
    states = cohort_release_states(pk for pk, _, _, has_release in candidates if has_release)
    return [
        number
        for pk, number, kept, has_release in candidates
        if not has_release or states[pk] != kept
    ]


def release_open_items(cohort: Cohort) -> dict[str, list[dict[str, Any]]]:
    """Return what is still open in the cohort's data: the open positions, and the executed
    bets not scored whose market is not cancelled (a baseline's or outside agent's; a release
    waits for the LLM agents'), each with its agent's model and market. A release says so:
    these rows are in its files as open, and change when they settle."""
    positions = (
        Position.objects.filter(agent__cohort=cohort, status=Position.Status.OPEN)
        .order_by("pk")
        .values_list(
            "pk", "agent__model__internal_id", "agent__model__kind", "market__polymarket_id", "side"
        )
    )
    bets = (
        Trade.objects.filter(
            agent__cohort=cohort,
            kind=Trade.Kind.BUY,
            status=Trade.Status.EXECUTED,
            brier_score__isnull=True,
        )
        .exclude(market__resolution=Market.Resolution.CANCELLED)
        .order_by("pk")
        .values_list(
            "pk",
            "agent__model__internal_id",
            "agent__model__kind",
            "market__polymarket_id",
            "side",
            "position__status",
        )
    )
    return {
        "positions": [
            {
                "position_id": pk,
                "model": model,
                "model_kind": kind,
                "market_id": market,
                "side": side,
            }
            for pk, model, kind, market, side in positions
        ],
        "bets": [
            {
                "trade_id": pk,
                "model": model,
                "model_kind": kind,
                "market_id": market,
                "side": side,
                "sold_out": status == Position.Status.CLOSED,
            }
            for pk, model, kind, market, side, status in bets
        ],
    }


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
        f"cohort {cohort_number}, release r{version}, methodology {methodology} [Data set]. "
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
