"""Offline stand-ins are never pooled with the real model (engine-integrity issue): one lineup
model with an agent answered through OpenRouter in one cohort and an agent answered offline in
another, each with resolved, scored bets. Every per-model figure keeps them apart, the offline
one labelled, on the leaderboard and on the cohort and agent pages."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils.html import escape

from agents.models import BenchmarkModel
from arena.models import Agent, Cohort, Decision, Trade
from arena.selectors import standings as standings_selectors
from markets.models import Market
from tests.arena.factories import AgentFactory, CohortFactory

BADGE = r'<span class="badge offline"[^>]*>offline</span>'


@dataclass(frozen=True)
class Split:
    model: BenchmarkModel
    real: Agent
    offline: Agent


def scored_agent(
    *,
    cohort: Cohort,
    responder: str,
    cash: str,
    bets: list[tuple[float, bool]],
    model: str = "gpt-5.1",
) -> Agent:
    """An agent of `model` in `cohort` with one decision answered by `responder` and its
    resolved buys: (Brier score, side won) each."""
    agent: Agent = AgentFactory.create(
        cohort=cohort, cash=Decimal(cash), model=BenchmarkModel.objects.get(internal_id=model)
    )
    decision = Decision.objects.create(
        agent=agent,
        cohort=cohort,
        week_start=cohort.week_start,
        status=Decision.Status.DONE,
        action=Decision.Action.BET,
        responder=responder,
    )
    for index, (brier, won) in enumerate(bets):
        market = Market.objects.create(
            polymarket_id=f"9{cohort.number}{index}",
            question=f"Question {index} of cohort {cohort.number}?",
            outcomes=["Yes", "No"],
            outcome_prices=["1", "0"] if won else ["0", "1"],
            closed=True,
        )
        Trade.objects.create(
            decision=decision,
            agent=agent,
            order_index=index,
            kind=Trade.Kind.BUY,
            status=Trade.Status.EXECUTED,
            market=market,
            side="YES",
            price=Decimal("0.5"),
            shares=Decimal("200"),
            amount=Decimal("100.00"),
            brier_score=brier,
            side_won=won,
            created_at=cohort.started_at + timedelta(minutes=5),
        )
    return agent


@pytest.fixture
def split(db: None) -> Split:
    """gpt-5.1: real in one cohort (+10%, one lost bet, Brier 0.36); offline in the next
    (−20%, two won bets, Brier 0.04 and 0.16: better, so pooling or ranking them together
    would show)."""
    first, second = CohortFactory.create_batch(2)
    real = scored_agent(
        cohort=first, responder=Decision.Responder.OPENROUTER, cash="11000", bets=[(0.36, False)]
    )
    offline = scored_agent(
        cohort=second,
        responder=Decision.Responder.OFFLINE,
        cash="8000",
        bets=[(0.04, True), (0.16, True)],
    )
    return Split(real.model, real, offline)


def scored_agent_of(model: BenchmarkModel, *, responder: str, cash: str) -> Agent:
    """An agent of `model` in a new cohort, with one decision answered by `responder` and one
    won bet (Brier 0.25)."""
    return scored_agent(
        cohort=CohortFactory.create(),
        responder=responder,
        cash=cash,
        bets=[(0.25, True)],
        model=model.internal_id,
    )


def rows_of(model: BenchmarkModel) -> list[standings_selectors.ModelRow]:
    llms, _ = standings_selectors.leaderboard()
    return [row for row in llms if row.model.pk == model.pk]


def test_a_model_has_a_real_row_and_an_offline_row_never_pooled(split: Split) -> None:
    real, offline = rows_of(split.model)  # the real row ranks first, though its Brier is worse
    assert not real.offline
    assert (real.cohorts, real.resolved_bets, real.wins) == (1, 1, 0)
    assert real.brier == pytest.approx(0.36)
    assert real.avg_return == Decimal("10")
    assert real.win_rate == 0.0

    assert offline.offline
    assert (offline.cohorts, offline.resolved_bets, offline.wins) == (1, 2, 2)
    assert offline.brier == pytest.approx(0.10)
    assert offline.avg_return == Decimal("-20")
    assert offline.win_rate == 1.0


def test_offline_rows_rank_after_real_ones_by_return_too(split: Split) -> None:
    other = BenchmarkModel.objects.get(internal_id="claude-opus-4.5")
    scored_agent_of(other, responder=Decision.Responder.OFFLINE, cash="15000")
    llms, _ = standings_selectors.leaderboard(sort="return")
    scored = [(r.model.internal_id, r.offline) for r in llms if r.cohorts]
    # claude's offline +50% is the best return, and still ranks after gpt-5.1's real row
    assert scored == [("gpt-5.1", False), ("claude-opus-4.5", True), ("gpt-5.1", True)]


def test_an_agent_with_any_offline_decision_counts_as_offline(split: Split) -> None:
    # a second week of the real agent answered offline: the agent as a whole is offline
    Decision.objects.create(
        agent=split.real,
        cohort=split.real.cohort,
        week_start=split.real.cohort.week_start + timedelta(weeks=1),
        status=Decision.Status.DONE,
        action=Decision.Action.HOLD,
        responder=Decision.Responder.OFFLINE,
    )
    (standing,) = standings_selectors.agent_standings(agents=Agent.objects.filter(pk=split.real.pk))
    assert standing.offline
    (offline,) = rows_of(split.model)  # no real figure is left for gpt-5.1
    assert offline.offline
    assert (offline.cohorts, offline.resolved_bets, offline.wins) == (2, 3, 2)
    assert offline.brier == pytest.approx((0.36 + 0.04 + 0.16) / 3)


def test_an_active_model_with_no_agent_has_one_empty_real_row(split: Split) -> None:
    other = BenchmarkModel.objects.get(internal_id="claude-opus-4.5")
    (row,) = rows_of(other)
    assert not row.offline
    assert row.cohorts == 0
    assert row.brier is None


def test_the_leaderboard_page_shows_both_rows_the_offline_one_labelled(
    split: Split, client: Client
) -> None:
    html = client.get("/").content.decode()
    # The main board: its ranked table, then its provisional one (each row here has a bet or
    # two, so both are provisional: the real row first, then the offline one).
    board = "".join(
        t for t in re.findall(r"<table.*?</table>", html, flags=re.S) if "main-board" in t
    )
    name = f">{escape(split.model.display_name)}</a>"
    real, offline = [r for r in re.findall(r"<tr[^>]*>.*?</tr>", board, flags=re.S) if name in r]
    assert not re.search(BADGE, real)
    assert re.search(BADGE, offline)
    assert ">0.3600 <" in real  # Brier, its interval (none for one week) after it
    assert ">+10%<" in real  # average return
    assert ">0.1000 <" in offline
    assert ">−20%<" in offline
    assert "never pooled" in html  # the note under the table says what an offline row is


def test_the_cohort_and_agent_pages_label_only_the_offline_agent(
    split: Split, client: Client
) -> None:
    for agent, labelled in ((split.real, False), (split.offline, True)):
        number = agent.cohort.number
        cohort_page = client.get(f"/cohorts/{number}/").content.decode()
        agent_page = client.get(f"/cohorts/{number}/agents/{agent.pk}/").content.decode()
        heading = re.search(r"<h1>.*?</h1>", agent_page, flags=re.S)
        assert heading is not None
        assert bool(re.search(BADGE, heading.group(0))) is labelled
        standings = next(
            t
            for t in re.findall(r"<table.*?</table>", cohort_page, flags=re.S)
            if "Total value" in t
        )
        assert bool(re.search(BADGE, standings)) is labelled


def count_queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return len(queries.captured_queries)


def test_splitting_rows_keeps_the_leaderboard_query_count_constant(
    split: Split, client: Client, django_assert_num_queries: Any
) -> None:
    before = count_queries(client, "/")
    for internal_id in ("claude-opus-4.5", "grok-4", "kimi-k2"):
        model = BenchmarkModel.objects.get(internal_id=internal_id)
        scored_agent_of(model, responder=Decision.Responder.OFFLINE, cash="9000")
        scored_agent_of(model, responder=Decision.Responder.OPENROUTER, cash="10500")
    with django_assert_num_queries(before):
        client.get("/")
