"""Each weekly run picks its forecast panel when it freezes its snapshot (methodology v2,
arena/panel.py): stored with the run, with its seed, and picked again, the same, by anyone
holding the run's frozen markets."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from arena.models import SnapshotMarket
from arena.panel import END_AFTER_WINDOW, Candidate, panel_eligible
from arena.services.frozen import run_panel, run_prepare
from arena.weeks import outside_window
from markets.sources import RecordedSource
from tests.arena.conftest import RUN_AT

pytestmark = pytest.mark.django_db


def test_a_run_stores_the_panel_its_frozen_markets_give(settings: Any) -> None:
    settings.MARKET_UNIVERSE_SIZE = 500
    run = run_prepare(now=RUN_AT, source=RecordedSource())
    frozen = {row.polymarket_id: row for row in SnapshotMarket.objects.filter(run=run)}
    assert run.panel_seed
    assert len(run.panel) == settings.PANEL_SIZE
    earliest_end = outside_window(run.week_start)[1] + END_AFTER_WINDOW
    for market_id in run.panel:
        row = frozen[market_id]
        assert row.rank is not None
        assert panel_eligible(
            Candidate(
                market_id=market_id,
                outcomes=tuple(row.outcomes),
                prices=tuple(str(p) for p in row.outcome_prices),
                liquidity=row.liquidity,
                close_date=row.close_date,
                closed=row.closed,
            ),
            earliest_end=earliest_end,
        )
    # Anyone holding the run's frozen markets picks the same panel with the same seed.
    assert run_panel(run.week_start, reversed(list(frozen.values()))) == (run.panel_seed, run.panel)


def test_two_runs_of_one_week_on_the_same_prices_pick_the_same_panel(settings: Any) -> None:
    settings.MARKET_UNIVERSE_SIZE = 100
    first = run_prepare(now=RUN_AT, source=RecordedSource())
    again = run_prepare(now=RUN_AT, source=RecordedSource())
    assert (again.panel_seed, again.panel) == (first.panel_seed, first.panel)
    assert first.panel


def test_a_market_frozen_only_because_an_agent_holds_it_is_no_question(settings: Any) -> None:
    run = run_prepare(now=RUN_AT, source=RecordedSource())
    rows = list(SnapshotMarket.objects.filter(run=run, polymarket_id__in=run.panel))
    for row in rows:
        row.rank = None  # as if outside the top of the catalogue
    assert run_panel(run.week_start, rows)[1] == []


def test_staff_see_the_runs_panel_questions_on_its_admin_page(admin_client: Client) -> None:
    run = run_prepare(now=RUN_AT, source=RecordedSource())
    page = admin_client.get(reverse("admin:arena_decisionrun_change", args=[run.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert run.panel_seed in html
    for row in SnapshotMarket.objects.filter(run=run, polymarket_id__in=run.panel):
        assert f"{row.polymarket_id}: {escape(row.question)}" in html


def test_a_panel_that_cannot_be_picked_never_costs_the_week_its_snapshot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from arena.services import frozen

    def broken(*args: object) -> tuple[str, list[str]]:
        raise ZeroDivisionError("a bug in the panel's rule")

    monkeypatch.setattr(frozen, "run_panel", broken)
    run = run_prepare(now=RUN_AT, source=RecordedSource())
    run.refresh_from_db()
    assert (run.panel_seed, run.panel) == ("", [])
    assert SnapshotMarket.objects.filter(run=run).count() == run.universe_size
