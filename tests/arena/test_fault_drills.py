"""Fault drills, through the real clients against local servers:

- Polymarket's Gamma API answering HTML error pages (a proxy's 502) for a week: the weekly run
  freezes the catalogue as it stands and says why, every agent still decides, the ticks keep
  snapshotting at the last known prices;
- OpenRouter answering a storm of 429s and timeouts through a run: every LLM agent ends
  retryable with its reason, and the next run decides exactly those.

After each, every agent's books balance to the cent.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from agents.models import BenchmarkModel
from arena.models import Agent, Decision, DecisionRun, PortfolioSnapshot
from arena.services.cohorts import cohort_start
from arena.services.decisions.run import decisions_run_all
from arena.services.marking import snapshots_take
from markets.models import Market
from markets.sources import GammaSource, RecordedSource
from tests.arena.books import assert_books_balance
from tests.replay import OPENROUTER_RECORDINGS, ReplayServer, Reply, Request

FIRST_SUNDAY = datetime(2026, 5, 3, tzinfo=UTC)
COMPLETIONS = "/chat/completions"
OK_RECORDING = OPENROUTER_RECORDINGS / "chat_completion_ok_json_content_with_reasoning.json"
RATE_LIMITED = OPENROUTER_RECORDINGS / "error_429_upstream_rate_limited.json"
HOLD = json.dumps({"action": "HOLD", "reasoning": "Nothing is mispriced enough this week."})
BAD_GATEWAY = Reply(
    status=502,
    body=b"<html><head><title>502 Bad Gateway</title></head><body>cloudflare</body></html>",
    content_type="text/html",
)


def completion(content: str) -> bytes:
    """The real recorded completion with only the model's answer replaced."""
    body = json.loads(OK_RECORDING.read_text())
    body["choices"][0]["message"]["content"] = content
    return json.dumps(body).encode()


def test_a_week_of_gamma_error_pages_freezes_the_catalogue_as_it_stands(
    db: None, time_machine: Any, gamma_server: ReplayServer, settings: Any
) -> None:
    settings.HTTP_MAX_RETRIES = 1
    settings.HTTP_BACKOFF_SECONDS = 0
    lineup = BenchmarkModel.objects.filter(active=True).count()
    # A healthy first week from the recordings fills the catalogue and opens positions.
    time_machine.move_to(FIRST_SUNDAY, tick=False)
    cohort_start()
    time_machine.move_to(FIRST_SUNDAY + timedelta(minutes=5), tick=False)
    first = decisions_run_all(source=RecordedSource())
    assert first.run_id is not None
    catalogue = Market.objects.count()
    assert catalogue > 0

    # The next week Gamma answers every request with an HTML error page.
    gamma_server.route("GET", "/markets", BAD_GATEWAY)
    gamma_server.route("GET", "/events", BAD_GATEWAY)
    sunday = FIRST_SUNDAY + timedelta(weeks=1)
    time_machine.move_to(sunday, tick=False)
    second_cohort, created = cohort_start()
    assert created
    time_machine.move_to(sunday + timedelta(minutes=5), tick=False)
    report = decisions_run_all(source=GammaSource())
    assert gamma_server.requests_to("/markets"), "the run did ask Gamma"
    assert report.run_id is not None
    run = DecisionRun.objects.get(pk=report.run_id)
    assert "fail" in run.sync_summary.lower()  # the run says its catalogue was not refreshed
    assert run.universe_size > 0  # frozen from the catalogue as it stands
    assert Market.objects.count() == catalogue  # nothing half-written or lost
    # Every agent of both cohorts decided for the week, or is recorded as failed with a reason.
    week = Decision.objects.filter(week_start=sunday.date())
    assert week.count() == 2 * lineup
    assert not week.filter(status__in=[Decision.Status.PENDING, Decision.Status.RUNNING]).exists()
    for decision in week.exclude(status=Decision.Status.DONE):
        assert decision.error, decision

    # The tick after it refreshes nothing and snapshots at the last known prices, saying so.
    time_machine.move_to(sunday + timedelta(minutes=10), tick=False)
    tick = snapshots_take(source=GammaSource())
    assert tick.refresh_error
    assert tick.written == Agent.objects.count()
    assert PortfolioSnapshot.objects.filter(prices_stale=True).count() == tick.written
    assert second_cohort.agents.count() == lineup
    assert_books_balance()


def test_a_storm_of_429s_and_timeouts_leaves_every_llm_retryable_and_the_next_run_decides(
    db: None, time_machine: Any, openrouter_server: ReplayServer, settings: Any
) -> None:
    # Through the run, OpenRouter answers rate limits and, for some calls, nothing in time:
    # every LLM agent's decision ends retryable with its reason (the baselines decide on their
    # own); an hour later the storm is over and the next run decides exactly those agents.
    settings.HTTP_MAX_RETRIES = 1
    settings.HTTP_BACKOFF_SECONDS = 0
    settings.HTTP_RETRY_AFTER_CAP_SECONDS = 0
    settings.HTTP_READ_TIMEOUT = 0.2
    settings.MARKET_UNIVERSE_SIZE = 40
    storm = {"on": True}
    calls: list[str] = []

    def answer(request: Request) -> Reply:
        model = request.json()["model"]
        calls.append(model)
        if storm["on"]:
            if len(calls) % 3 == 0:
                return Reply(body=completion(HOLD), delay=0.6)  # past the read timeout
            return Reply(status=429, body=RATE_LIMITED.read_bytes(), headers={"Retry-After": "0"})
        return Reply(body=completion(HOLD))

    openrouter_server.route("POST", COMPLETIONS, answer)
    time_machine.move_to(FIRST_SUNDAY, tick=False)
    cohort, _ = cohort_start()
    time_machine.move_to(FIRST_SUNDAY + timedelta(minutes=5), tick=False)
    first = decisions_run_all(source=RecordedSource())
    assert first.run_id is not None
    decisions = Decision.objects.filter(cohort=cohort).select_related("agent__model")
    llm = [d for d in decisions if not d.agent.model.is_baseline]
    assert llm
    assert all(d.status == Decision.Status.RETRYABLE for d in llm), [d.status for d in llm]
    assert all(d.error for d in llm)  # each with its reason
    assert all(d.status == Decision.Status.DONE for d in decisions if d.agent.model.is_baseline)
    assert_books_balance()

    storm["on"] = False
    time_machine.move_to(FIRST_SUNDAY + timedelta(hours=1, minutes=5), tick=False)
    rerun = decisions_run_all(source=RecordedSource())
    assert rerun.run_id is not None
    assert len(rerun.outcomes) == len(llm)
    assert {o.decision_id for o in rerun.outcomes} == {d.pk for d in llm}
    assert not Decision.objects.filter(cohort=cohort).exclude(status=Decision.Status.DONE).exists()
    assert Decision.objects.filter(cohort=cohort).count() == decisions.count()
    assert_books_balance()
