"""Where market records come from: the live Gamma API, or the recordings shipped with the
project (the embedded demo). Both hand back raw Gamma records, so everything downstream —
parsing, upserts, snapshots, resolution — runs the same code either way."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, Protocol

from django.conf import settings

from markets.clients import GammaClient, volume_of

RECORDINGS = Path(__file__).resolve().parent / "recordings" / "gamma"

# The recordings the demo draws its catalogue from (see recordings/README.md).
DEMO_LISTINGS = (
    "markets_active_limit500_2026-01-31.json",
    "markets_open_order_volume_desc_offset0_limit100_2026-02-07.json",
    "markets_closed_order_volume_desc_offset0_limit100_2026-02-07.json",
)
DEMO_SINGLE_MARKETS = (
    "market_open.json",
    "market_open_past_end_date_unresolved.json",
    "market_open_uma_disputed.json",
    "market_resolved_yes.json",
    "market_resolved_no.json",
    "market_resolved_team_outcomes.json",
    "market_closed_resolved_50_50.json",
    "market_closed_uma_proposed.json",
)
DEMO_EVENTS = (
    "event_negrisk_multi_outcome_open.json",
    "events_by_slug_mixed_resolved_and_open.json",
)


class MarketSource(Protocol):
    name: str

    def fetch_top_markets(self, limit: int) -> list[Any]: ...

    def fetch_markets_by_ids(self, ids: list[str]) -> list[Any]: ...


class GammaSource:
    """The live Gamma API."""

    name = "gamma"

    def __init__(self, client: GammaClient | None = None) -> None:
        self.client = client or GammaClient.from_settings()

    def fetch_top_markets(self, limit: int) -> list[Any]:
        return self.client.fetch_top_markets(limit)

    def fetch_markets_by_ids(self, ids: list[str]) -> list[Any]:
        return self.client.fetch_markets_by_ids(ids)


@cache
def demo_records() -> dict[str, dict[str, Any]]:
    """Return every recorded market by id (later files win), events' markets included."""
    records: dict[str, dict[str, Any]] = {}

    def add(record: Any, event: dict[str, Any] | None = None) -> None:
        if isinstance(record, dict) and record.get("id") is not None:
            if event is not None and not record.get("events"):
                record = {**record, "events": [{k: v for k, v in event.items() if k != "markets"}]}
            records[str(record["id"])] = record

    for name in DEMO_LISTINGS:
        for record in json.loads((RECORDINGS / name).read_text()):
            add(record)
    for name in DEMO_SINGLE_MARKETS:
        add(json.loads((RECORDINGS / name).read_text()))
    for name in DEMO_EVENTS:
        body = json.loads((RECORDINGS / name).read_text())
        for event in body if isinstance(body, list) else [body]:
            for market in event.get("markets", []):
                add(market, event)
    return records


class RecordedSource:
    """The recordings shipped in markets/recordings, as one moment of the market."""

    name = "demo"

    def fetch_top_markets(self, limit: int) -> list[Any]:
        open_records = [
            r
            for r in demo_records().values()
            if r.get("active", True) and not r.get("closed", False)
        ]
        return sorted(open_records, key=volume_of, reverse=True)[:limit]

    def fetch_markets_by_ids(self, ids: list[str]) -> list[Any]:
        records = demo_records()
        return [records[i] for i in ids if i in records]


def market_source() -> MarketSource:
    """Return the source the settings name (MARKET_SOURCE: gamma or demo)."""
    if settings.MARKET_SOURCE == "demo":
        return RecordedSource()
    return GammaSource()


# A live read made while someone waits on it (an outside team's submission, which holds its
# decision's claim meanwhile): one retry at most, a short read timeout, a short Retry-After,
# so it ends in about half a minute whatever Polymarket does, well within the claim's
# OUTSIDE_SUBMISSION_CLAIM_SECONDS.
LIVE_READ_RETRIES = 1
LIVE_READ_TIMEOUT_SECONDS = 10.0
LIVE_READ_RETRY_AFTER_CAP_SECONDS = 2.0


def live_read_source() -> MarketSource:
    """The settings' source for a read someone waits on: Gamma's client with the settings'
    timeouts and retries cut to the LIVE_READ_* bounds (never raised above the settings')."""
    if settings.MARKET_SOURCE == "demo":
        return RecordedSource()
    return GammaSource(
        GammaClient.from_settings(
            most_retries=LIVE_READ_RETRIES,
            most_timeout=LIVE_READ_TIMEOUT_SECONDS,
            most_retry_after=LIVE_READ_RETRY_AFTER_CAP_SECONDS,
        )
    )
