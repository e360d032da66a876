"""The whole weekly run, end to end against both replay servers: Gamma serving the real
recorded top-500 listing, OpenRouter answering from the real recorded completion."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from arena.models import Decision, DecisionRun, PortfolioSnapshot, SnapshotMarket, Trade
from arena.services.cohorts import cohort_start
from arena.services.decisions.run import decisions_run_all
from arena.services.marking import snapshots_take
from tests.markets.conftest import TOP_500, by_id_handler, gamma_json
from tests.replay import GAMMA_RECORDINGS, OPENROUTER_RECORDINGS, ReplayServer, Reply, Request

pytestmark = pytest.mark.django_db

TOP_VOLUME_ID = "559687"  # the highest-volume market of the recorded listing (YES at 0.0085)


def completion_answering(content: str) -> bytes:
    """The real recorded OpenRouter success body with only message.content replaced: no
    real recording of a decision answer exists, the envelope (model, provider, usage, cost)
    is the real one."""
    body = json.loads(
        (OPENROUTER_RECORDINGS / "chat_completion_ok_json_content_with_reasoning.json").read_text()
    )
    body["choices"][0]["message"]["content"] = content
    return json.dumps(body).encode()


@pytest.fixture
def upstreams(
    gamma_server: ReplayServer, openrouter_server: ReplayServer
) -> tuple[ReplayServer, ReplayServer]:
    listing = (GAMMA_RECORDINGS / TOP_500).read_bytes()
    records = gamma_json(TOP_500)
    by_id = by_id_handler(records)

    def markets(request: Request) -> Reply:
        return by_id(request) if "id" in request.query else Reply(body=listing)

    gamma_server.route("GET", "/markets", markets)
    answer = {
        "action": "BET",
        "bets": [{"market_id": TOP_VOLUME_ID, "side": "NO", "amount": 500}],
        "reasoning": "The favourite is priced about right; a small NO position.",
    }
    openrouter_server.route(
        "POST",
        "/chat/completions",
        Reply(body=completion_answering(f"```json\n{json.dumps(answer)}\n```")),
    )
    return gamma_server, openrouter_server


def test_weekly_run_freezes_one_snapshot_calls_every_model_and_executes(
    upstreams: tuple[ReplayServer, ReplayServer], settings: Any
) -> None:
    gamma, openrouter = upstreams
    cohort, _ = cohort_start()
    report = decisions_run_all()

    run = DecisionRun.objects.get()
    assert run.universe_size == 500
    assert SnapshotMarket.objects.filter(run=run, rank__isnull=False).count() == 500
    llm_agents = cohort.agents.filter(model__kind="llm").count()
    calls = openrouter.requests_to("/chat/completions")
    assert len(calls) == llm_agents  # baselines answer without a model call
    sent = calls[0].json()
    assert sent["temperature"] == 0
    assert TOP_VOLUME_ID in sent["messages"][1]["content"]
    assert {c.json()["model"] for c in calls} == set(
        cohort.agents.filter(model__kind="llm").values_list("model__openrouter_id", flat=True)
    )
    assert {o.status for o in report.outcomes} == {"done"}

    llm_decisions = Decision.objects.filter(responder="openrouter")
    assert llm_decisions.count() == llm_agents
    decision = llm_decisions.first()
    assert decision is not None
    attempt = decision.attempts.get()
    assert attempt.response_model == "google/gemini-3-flash-preview"
    assert attempt.upstream_provider == "Google"
    assert attempt.cost_usd == Decimal("0.00321")
    trade = Trade.objects.get(decision=decision)
    assert trade.status == "executed"
    assert trade.side == "NO"
    assert trade.price == Decimal("0.991500")  # NO at 1 − 0.0085, the frozen price
    assert trade.implied_confidence == pytest.approx(0.2)  # $500 of a $2,500 maximum

    tick = snapshots_take()
    assert tick.written == cohort.agents.count()
    assert not tick.refresh_error
    assert PortfolioSnapshot.objects.count() == cohort.agents.count()
    assert any("id" in r.query for r in gamma.requests_to("/markets"))
