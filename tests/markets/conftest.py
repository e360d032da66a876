"""Gamma replay helpers: serve the project's copies of real recorded records."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.replay import GAMMA_RECORDINGS, ReplayServer, Reply, Request

TOP_500 = "markets_active_limit500_2026-01-31.json"


def gamma_json(name: str) -> Any:
    return json.loads((GAMMA_RECORDINGS / name).read_text())


def by_id_handler(records: list[dict[str, Any]]) -> Any:
    """Answer GET /markets?id=…&id=… from `records`, as Gamma does (a list, unknown ids absent)."""
    index = {str(r["id"]): r for r in records}

    def handle(request: Request) -> Reply:
        ids = request.query.get("id")
        if ids:
            return Reply.json([index[i] for i in ids if i in index])
        return Reply.json({"type": "validation error", "error": "no id"}, 422)

    return handle


def listing_handler(records: list[dict[str, Any]], *, order_by_volume: bool = True) -> Any:
    """Answer GET /markets?limit&offset&order=volumeNum like Gamma: pages of ≤ 500."""
    ordered = (
        sorted(records, key=lambda r: float(r.get("volumeNum") or 0), reverse=True)
        if order_by_volume
        else list(records)
    )

    def handle(request: Request) -> Reply:
        limit = min(int(request.query.get("limit", ["500"])[0]), 500)
        offset = int(request.query.get("offset", ["0"])[0])
        return Reply.json(ordered[offset : offset + limit])

    return handle


@pytest.fixture
def top_500_records() -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = gamma_json(TOP_500)
    return records


@pytest.fixture
def gamma_listing(gamma_server: ReplayServer) -> ReplayServer:
    """Gamma answering the listing with the real 500-record response, verbatim (id order)."""
    body = (GAMMA_RECORDINGS / TOP_500).read_bytes()
    gamma_server.route("GET", "/markets", Reply(body=body))
    return gamma_server
