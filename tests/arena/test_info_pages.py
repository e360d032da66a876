"""The methodology, status and about pages.

The methodology page renders docs/methodology.md and shows the running version's prompt
templates verbatim; the status page shows each job's last run with its outcome, the next
scheduled runs, the operations record and the determinism audit, and says so plainly when
nothing has run yet; the about page explains the benchmark and how to cite it.
"""

from __future__ import annotations

import html
import re
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from celery.schedules import crontab
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django_celery_beat.models import PeriodicTask

from agents.prompts import PROMPT_VERSION
from arena.models import (
    Decision,
    DecisionRun,
    DeterminismCheck,
    ResolutionCheck,
    SnapshotTick,
    SystemEvent,
)
from arena.selectors.status import next_run
from arena.services.schedule import schedules_sync
from arena.views.info import METHODOLOGY_PATH, PROMPT_DIR, PROMPT_FILES
from markets.models import MarketSyncRun
from tests.arena.factories import AgentFactory, CohortFactory

NOW = datetime(2026, 11, 23, 12, 3, tzinfo=UTC)  # a Monday
HOSTILE = '<script>alert("pwned")</script> & <img src=x onerror=alert(1)>'

# Every formula the site shows, as the methodology states it.
FORMULAS = [
    "Total value = cash + Σ open positions × side-correct price",
    "Return % = (total value − $10,000) ÷ $10,000 × 100",
    "mean of its agents' cohort returns",
    "Brier = (1 ÷ n) × Σ (implied confidence − side won)²",
    "Implied confidence = min(bet ÷ max bet, 1)",
    "max bet = 25% of the cash before the bet, floored to the cent",
    "Win rate = resolved bets whose side won ÷ resolved bets",
    "An agent counts as offline when any of its decisions was answered by an offline stand-in",
    "Cost per decision = Σ the cost of the calls of each decision that made a call",
    "p95 latency = the nearest-rank 95th percentile of the latency of every model call",
    "Malformed-answer rate = decisions whose first answer could not be parsed",
    "HOLD share = valid answers that were HOLD ÷ valid answers",
    "Rejected trades = rejected orders ÷ all orders",
]
# The v1 rules, each as the page states it.
RULES = [
    "Sunday at 00:00 UTC",
    "Sunday at 00:05 UTC",
    "$10,000",
    "top 500 markets by volume",
    "BET",
    "SELL",
    "HOLD",
    "Minimum bet | $50",
    "Maximum single bet | 25% of the cash at that moment",
    "one open position per market per side",
    "Partial sells",
    "Side-correct prices",
    "Every 10 minutes",
    "a winning share pays $1",
    "refunded its cost basis and marked CANCELLED",
    "implied confidence",
    "Completion",
]
CITATIONS = [
    "001 §1.2",
    "001 §1.3",
    "001 §1.4",
    "001 §2.1",
    "001 §2.3",
    "001 §2.4",
    "001 §3",
    "001 Appendix A",
    '002 "Cohorts"',
    '002 "Starting balance and constraints"',
    '002 "Execution"',
    '002 "Brier score"',
    '002 "Portfolio snapshots"',
    '002 "Resolution"',
    '002 "Ambiguous resolution"',
    '002 "Parsing and fallback"',
]
BUCKETS = [
    ("10M", "10 min"),
    ("1H", "10 min"),
    ("1D", "10 min"),
    ("1W", "1 h"),
    ("1M", "6 h"),
    ("3M", "1 day"),
    ("ALL", "1 week, or finer (below)"),  # as fine as a history needs for 168 points
]


def _text(response: Any) -> str:
    """The page's visible text, tags removed, entities decoded, whitespace collapsed."""
    body = re.sub(r"<[^>]+>", " ", response.content.decode())
    text = re.sub(r"\s+", " ", html.unescape(body))
    return re.sub(r" ([:,.;)])", r"\1", text)  # "<b>Failed</b>: …" reads "Failed: …"


def _get(client: Client, name: str) -> Any:
    response = client.get(reverse(name))
    assert response.status_code == 200
    return response


# --- Methodology ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_methodology_states_every_formula_the_site_shows(client: Client) -> None:
    text = _text(_get(client, "arena:methodology"))
    for formula in FORMULAS:
        assert formula in text, formula


@pytest.mark.django_db
def test_methodology_states_the_v1_rules(client: Client) -> None:
    source = re.sub(r"\s+", " ", METHODOLOGY_PATH.read_text(encoding="utf-8")).replace("**", "")
    text = _text(_get(client, "arena:methodology"))
    for rule in RULES:
        assert rule in source, rule
        if "|" not in rule:  # table rows are checked in the source
            assert rule in text, rule


@pytest.mark.django_db
def test_methodology_cites_the_spec_section_of_each_rule(client: Client) -> None:
    text = _text(_get(client, "arena:methodology"))
    for citation in CITATIONS:
        assert citation in text, citation


@pytest.mark.django_db
def test_methodology_states_the_retry_bounds_by_default_and_as_configured(
    client: Client, settings: Any
) -> None:
    text = _text(_get(client, "arena:methodology"))
    assert "at most 3 rounds in all" in text  # the stated defaults, and why
    assert "retry deadline, 24 hours into the week" in text
    assert "the end of the week's first day" in text
    assert "Retries in use" in text
    assert "asked at most 3 rounds in all, and never after 24 hours into its week" in text
    settings.DECISION_MAX_ROUNDS, settings.DECISION_RETRY_DEADLINE_HOURS = 5, 48

    configured = _text(_get(client, "arena:methodology"))

    assert "asked at most 5 rounds in all, and never after 48 hours into its week" in configured


@pytest.mark.django_db
def test_methodology_gives_the_chart_downsampling_buckets(client: Client) -> None:
    content = _get(client, "arena:methodology").content.decode()
    for key, bucket in BUCKETS:
        assert re.search(
            rf"<td>{key}</td>\s*<td>[^<]*</td>\s*<td>{re.escape(bucket)}</td>", content
        ), key
    assert "at least 168 buckets" in content


@pytest.mark.django_db
def test_methodology_headings_have_ids_for_anchors(client: Client) -> None:
    content = _get(client, "arena:methodology").content.decode()
    for anchor in ("the-rules", "pooled-brier", "implied-confidence", "the-offline-rule"):
        assert f'id="{anchor}"' in content, anchor


@pytest.mark.django_db
def test_methodology_shows_each_prompt_template_verbatim_and_escaped(client: Client) -> None:
    content = _get(client, "arena:methodology").content.decode()
    assert PROMPT_VERSION in content
    for name in PROMPT_FILES:
        template = (PROMPT_DIR / PROMPT_VERSION / name).read_text(encoding="utf-8")
        pre = re.search(
            rf'<h3 id="prompt-{name.replace(".", "")}">{name}</h3>\s*<pre class="block prompt">'
            r"(.*?)</pre>",
            content,
            re.S,
        )
        assert pre, name
        assert html.unescape(pre.group(1)) == template, name
    # The retry template's markers are text, not markup.
    assert "&lt;&lt;&lt;PREVIOUS RESPONSE" in content


@pytest.mark.django_db
def test_methodology_shows_the_version_each_cohort_ran(client: Client) -> None:
    assert "No cohort has started yet" in _text(_get(client, "arena:methodology"))
    first = CohortFactory.create()
    CohortFactory.create()
    text = _text(_get(client, "arena:methodology"))
    assert (
        f"Methodology v1: 2 cohorts, effective from cohort {first.number} "
        f"(cohorts {first.number} to {first.number + 1})"
    ) in text
    assert "New cohorts run methodology v1." in text  # the suite's setting (tests/conftest.py)


# --- Status: nothing yet ---------------------------------------------------------------------


@pytest.mark.django_db
def test_status_says_plainly_when_nothing_has_run_yet(client: Client) -> None:
    text = _text(_get(client, "arena:status"))
    assert "No market sync has run yet." in text
    assert "No decision run has run yet." in text
    assert "No snapshot tick has run yet." in text
    assert "No resolution check has run yet." in text
    assert "The determinism audit has not run yet." in text
    assert "No system event has been recorded yet." in text
    # With no schedule installed, the declared ones are shown, and said to be not installed.
    assert "not installed in the scheduler's database yet" in text
    assert "arena.run_decisions" in text


# --- Status: the last runs -------------------------------------------------------------------


def _sync(*, at: datetime, status: str = MarketSyncRun.Status.OK, error: str = "") -> None:
    MarketSyncRun.objects.create(
        source="gamma",
        requested=500,
        fetched=498,
        created=3,
        updated=495,
        rejected=2,
        status=status,
        error=error,
        started_at=at - timedelta(seconds=20),
        finished_at=at,
    )


@pytest.mark.django_db
def test_status_shows_the_last_market_sync_and_its_outcome(
    client: Client, time_machine: Any
) -> None:
    time_machine.move_to(NOW, tick=False)
    _sync(at=NOW - timedelta(hours=2))
    _sync(at=NOW - timedelta(minutes=4), status=MarketSyncRun.Status.FAILED, error=HOSTILE)
    response = _get(client, "arena:status")
    text = _text(response)
    assert "2026-11-23 11:59" in text
    assert f"Failed: {HOSTILE} — 498 fetched of 500 requested" in text
    assert "<script>alert" not in response.content.decode()
    row = re.search(r'<dd id="status-sync">(.*?)</dd>', response.content.decode(), re.S)
    assert row
    assert "stale" not in row.group(1)


@pytest.mark.django_db
def test_status_flags_a_sync_older_than_twice_its_interval(
    client: Client, time_machine: Any
) -> None:
    time_machine.move_to(NOW, tick=False)
    _sync(at=NOW - timedelta(minutes=10, seconds=1))  # syncs run every 5 minutes
    content = _get(client, "arena:status").content.decode()
    row = re.search(r'<dd id="status-sync">(.*?)</dd>', content, re.S)
    assert row
    assert "stale" in row.group(1)
    assert "Older than twice its interval (5 min)" in _text(_get(client, "arena:status"))


@pytest.mark.django_db
def test_status_shows_the_last_snapshot_tick_and_flags_it_when_stale(
    client: Client, time_machine: Any
) -> None:
    time_machine.move_to(NOW, tick=False)
    SnapshotTick.objects.create(
        slot=datetime(2026, 11, 23, 11, 40, tzinfo=UTC),
        markets_refreshed=12,
        snapshots_written=9,
        refresh_error="Gamma answered 503",
    )
    text = _text(_get(client, "arena:status"))
    assert "2026-11-23 11:40 stale" in text  # 23 minutes old; ticks run every 10
    assert "Price refresh failed (valued at the last known prices): Gamma answered 503" in text
    assert "12 markets refreshed, 9 snapshots written" in text


@pytest.mark.django_db
def test_status_shows_the_last_decision_run_with_its_decisions_outcomes(client: Client) -> None:
    run = DecisionRun.objects.create(
        week_start=date(2026, 11, 22),
        started_at=datetime(2026, 11, 22, 0, 5, tzinfo=UTC),
        finished_at=datetime(2026, 11, 22, 0, 41, tzinfo=UTC),
        source="gamma",
        universe_size=500,
    )
    cohort = CohortFactory.create(week_start=run.week_start)
    statuses = [Decision.Status.DONE, Decision.Status.DONE, Decision.Status.RETRYABLE]
    for i, status in enumerate(statuses):
        Decision.objects.create(
            agent=AgentFactory.create(cohort=cohort, model=_model(i)),
            cohort=cohort,
            week_start=run.week_start,
            run=run,
            status=status,
            parse_failed=i == 1,
        )
    text = _text(_get(client, "arena:status"))
    assert "2026-11-22 00:05" in text
    assert (
        "2026-11-22 00:05 — week of 2026-11-22, 500 markets frozen, finished 2026-11-22 00:41."
        in text
    )
    assert "3 decisions: 2 done, 1 retryable failure; 1 defaulted to HOLD" in text


@pytest.mark.django_db
def test_status_shows_an_unfinished_run(client: Client) -> None:
    DecisionRun.objects.create(
        week_start=date(2026, 11, 22),
        started_at=datetime(2026, 11, 22, 0, 5, tzinfo=UTC),
        source="gamma",
    )
    text = _text(_get(client, "arena:status"))
    assert "not finished" in text
    assert "No decision yet." in text


def _model(i: int) -> Any:
    from agents.models import BenchmarkModel

    return BenchmarkModel.objects.filter(kind="llm").order_by("display_order")[i]


def _event(kind: str, message: str, *, at: datetime, level: str = "info") -> SystemEvent:
    return SystemEvent.objects.create(kind=kind, level=level, message=message, created_at=at)


@pytest.mark.django_db
def test_status_shows_the_last_resolution_check_and_its_outcome(client: Client) -> None:
    ResolutionCheck.objects.create(
        checked_at=datetime(2026, 11, 23, 10, 37, tzinfo=UTC),
        markets_checked=9,
        resolved=["517310"],
        cancelled=["517311"],
        completed_cohorts=[3],
    )
    text = _text(_get(client, "arena:status"))
    assert (
        "Resolution check 2026-11-23 10:37 — OK: 9 markets checked, 1 resolved, "
        "1 cancelled (refunded), 1 cohort completed." in text
    )

    ResolutionCheck.objects.create(
        checked_at=datetime(2026, 11, 23, 11, 37, tzinfo=UTC),
        markets_checked=4,
        error="Gamma unavailable <script>",
    )
    html = _get(client, "arena:status").content.decode()
    assert (
        '<strong class="neg">Failed</strong>: Gamma unavailable &lt;script&gt; — nothing settled.'
        in html
    )


@pytest.mark.django_db
def test_status_shows_markets_that_failed_to_settle(client: Client) -> None:
    ResolutionCheck.objects.create(
        checked_at=datetime(2026, 11, 23, 11, 37, tzinfo=UTC), markets_checked=4, failed=["1"]
    )
    text = _text(_get(client, "arena:status"))
    assert "1 market failed to settle (retried at the next check); 4 markets checked" in text


@pytest.mark.django_db
def test_status_shows_a_resolution_check_that_settled_nothing_as_ok(client: Client) -> None:
    ResolutionCheck.objects.create(
        checked_at=datetime(2026, 11, 23, 11, 37, tzinfo=UTC), markets_checked=0
    )
    text = _text(_get(client, "arena:status"))
    assert "OK: 0 markets checked, 0 resolved, 0 cancelled (refunded), 0 cohorts completed." in text


# --- Status: the next scheduled runs ---------------------------------------------------------


@pytest.mark.parametrize(
    ("schedule", "after", "expected"),
    [
        # The weekly decision run, at both sides of Sunday 00:05 UTC.
        (
            crontab(minute=5, hour=0, day_of_week="sun"),
            datetime(2026, 11, 28, 23, 59, 59, tzinfo=UTC),
            datetime(2026, 11, 29, 0, 5, tzinfo=UTC),
        ),
        (
            crontab(minute=5, hour=0, day_of_week="sun"),
            datetime(2026, 11, 29, 0, 5, tzinfo=UTC),
            datetime(2026, 12, 6, 0, 5, tzinfo=UTC),
        ),
        (
            crontab(minute=0, hour=0, day_of_week="sun"),
            datetime(2026, 11, 29, 0, 0, tzinfo=UTC),
            datetime(2026, 12, 6, 0, 0, tzinfo=UTC),
        ),
        (
            crontab(minute="7,37"),
            datetime(2026, 11, 23, 12, 7, tzinfo=UTC),
            datetime(2026, 11, 23, 12, 37, tzinfo=UTC),
        ),
        (
            crontab(minute="*/10"),
            datetime(2026, 12, 31, 23, 55, tzinfo=UTC),
            datetime(2027, 1, 1, 0, 0, tzinfo=UTC),
        ),
        (
            crontab(minute=0, hour=0, day_of_month=29, month_of_year=2),
            NOW,
            datetime(2028, 2, 29, 0, 0, tzinfo=UTC),
        ),
    ],
)
def test_next_run_of_a_crontab_in_utc(
    schedule: crontab, after: datetime, expected: datetime | None
) -> None:
    assert next_run(schedule, after=after) == expected


@pytest.mark.django_db
def test_status_shows_the_next_runs_computed_from_the_installed_crontabs(
    client: Client, time_machine: Any
) -> None:
    time_machine.move_to(NOW, tick=False)
    schedules_sync()
    PeriodicTask.objects.filter(name="take-snapshots").update(
        last_run_at=datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    )
    PeriodicTask.objects.filter(name="retry-decisions").update(enabled=False)
    content = _get(client, "arena:status").content.decode()
    text = _text(_get(client, "arena:status"))
    assert "not installed" not in text
    expected = {
        "sync-markets": "Mon 2026-11-23 12:05",
        "check-resolutions": "Mon 2026-11-23 12:07",
        "take-snapshots": "Mon 2026-11-23 12:10",
        "start-cohort": "Sun 2026-11-29 00:00",
        "run-decisions": "Sun 2026-11-29 00:05",
    }
    for name, when in expected.items():
        cells = rf'<td class="nowrap">{name}</td>\s*<td class="nowrap">{when}</td>'
        assert re.search(cells, content), name
    assert (
        "take-snapshots Mon 2026-11-23 12:10 2026-11-23 12:00 */10 * * * * arena.take_snapshots"
        in text
    )
    assert "retry-decisions disabled never 35 * * * * arena.retry_decisions" in text
    # Soonest first.
    order = [text.index(name) for name in expected]
    assert order == sorted(order)


# --- Status: events and the determinism audit ------------------------------------------------


@pytest.mark.django_db
def test_status_lists_recent_system_events_escaped_with_their_level(client: Client) -> None:
    base = datetime(2026, 11, 20, tzinfo=UTC)
    for i in range(55):
        _event(SystemEvent.Kind.MARKET_SETTLED, f"settled {i}", at=base + timedelta(minutes=i))
    _event(
        SystemEvent.Kind.DECISION_FAILED,
        HOSTILE,
        at=base + timedelta(hours=5),
        level=SystemEvent.Level.ERROR,
    )
    response = _get(client, "arena:status")
    content = response.content.decode()
    text = _text(response)
    assert "<script>alert" not in content
    assert "<img src=x" not in content
    assert html.escape(HOSTILE) in content
    assert f"2026-11-20 05:00 Error: Decision failed {HOSTILE}" in text
    # The 50 most recent: the hostile one and settled 54 … 6; 5 … 0 are left to the admin.
    assert "settled 6 " in text
    assert "settled 54 " in text
    assert "settled 5 " not in text
    assert "The 50 most recent events" in text


@pytest.mark.django_db
def test_status_shows_the_determinism_audit_results(client: Client) -> None:
    agent = AgentFactory.create()
    decision = Decision.objects.create(
        agent=agent, cohort=agent.cohort, week_start=agent.cohort.week_start
    )
    at = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
    for i, matches in enumerate([True, True, True, False, None]):
        DeterminismCheck.objects.create(
            decision=decision,
            requested_model="openai/gpt-5.2",
            response_model="openai/gpt-5.2-20261101",
            matches=matches,
            error=HOSTILE if matches is None else "",
            cost_usd=Decimal("0.1"),
            checked_at=at + timedelta(minutes=i),
        )
    response = _get(client, "arena:status")
    text = _text(response)
    assert "5 checks" in text
    assert "3 repeated the decision, 1 did not, 1 could not be compared" in text
    assert "Match rate: 75% of the compared checks." in text
    assert text.count(" matches ") >= 3
    assert "differs" in text
    assert "unknown" in text
    assert "<script>alert" not in response.content.decode()
    assert reverse("arena:decision", args=[decision.pk]) in response.content.decode()


# --- Status: constant queries ----------------------------------------------------------------


def _status_world(scale: int) -> None:
    at = NOW - timedelta(days=scale)
    for i in range(scale * 3):
        _sync(at=at + timedelta(minutes=5 * i))
        SnapshotTick.objects.create(slot=at + timedelta(minutes=10 * i), snapshots_written=3)
        _event(SystemEvent.Kind.SYNC_FAILED, f"failed {i}", at=at, level="warning")
    cohort = CohortFactory.create()
    run = DecisionRun.objects.create(
        week_start=cohort.week_start, started_at=at, source="gamma", universe_size=10
    )
    for i in range(scale * 2):
        agent = AgentFactory.create(cohort=cohort, model=_model(i))
        decision = Decision.objects.create(
            agent=agent,
            cohort=cohort,
            week_start=cohort.week_start,
            run=run,
            status=[Decision.Status.DONE, Decision.Status.SKIPPED][i % 2],
        )
        event = _event(SystemEvent.Kind.DECISION_FAILED, f"decision {i}", at=at, level="error")
        SystemEvent.objects.filter(pk=event.pk).update(cohort=cohort, decision=decision)
        DeterminismCheck.objects.create(
            decision=decision, requested_model="m", matches=i % 3 == 0, checked_at=at
        )


@pytest.mark.django_db
def test_status_issues_the_same_queries_whatever_the_data_size(
    client: Client, time_machine: Any
) -> None:
    time_machine.move_to(NOW, tick=False)
    schedules_sync()
    _status_world(scale=1)
    client.get(reverse("arena:status"))  # warm per-process caches
    with CaptureQueriesContext(connection) as small:
        _get(client, "arena:status")
    _status_world(scale=3)
    with CaptureQueriesContext(connection) as large:
        _get(client, "arena:status")
    assert len(small.captured_queries) == len(large.captured_queries) <= 13


# --- About ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_about_explains_the_benchmark_demo_data_offline_and_the_baselines(
    client: Client,
) -> None:
    text = _text(_get(client, "arena:about"))
    assert "measures whether language models can make useful, calibrated forecasts" in text
    assert 'What "Demo data" means' in text
    assert "nothing on it is live" in text
    assert 'What "offline" means' in text
    assert "never pooled" in text
    assert "Random bettor" in text
    assert "Market follower" in text
    assert "GPT-5.2" in text
    assert "gpt-5.1" in text  # display name and stable id


@pytest.mark.django_db
def test_about_names_the_methodology_versions_in_use_and_labels_the_prompts_version_apart(
    client: Client, settings: Any
) -> None:
    # Cohorts keep the methodology they started with: v1 for the first, v2 from the second;
    # the prompt's wording has versions of its own, never to be read as the methodology's.
    first = CohortFactory.create(methodology_version="v1")
    second = CohortFactory.create(methodology_version="v2")
    settings.METHODOLOGY_VERSION = "v2"
    text = _text(_get(client, "arena:about"))
    assert (
        f"gives every rule and formula (methodology v1 from cohort {first.number}, methodology "
        f"v2 from cohort {second.number}; new cohorts take v2), with the prompts verbatim "
        f"(prompt version {PROMPT_VERSION})" in text
    )
    assert "Methodology v1 and v2}" in text  # the citation's note
    assert "states its probabilities" in text
    assert f"methodology {PROMPT_VERSION}" not in text.lower()
    assert f"Methodology {PROMPT_VERSION}" not in text


@pytest.mark.django_db
def test_about_gives_a_bibtex_entry_with_the_sites_own_url(client: Client, settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["arena.example.org"]
    response = client.get(reverse("arena:about"), HTTP_HOST="arena.example.org")
    assert response.status_code == 200
    bibtex = re.search(
        r'<pre class="block" id="bibtex">(.*?)</pre>', response.content.decode(), re.S
    )
    assert bibtex
    entry = html.unescape(bibtex.group(1))
    assert entry.startswith("@misc{forecasterarena2026,")
    assert "title        = {Forecaster Arena" in entry
    assert "author       = {{Forecaster Arena}}," in entry
    assert "year         = {2026}," in entry
    assert "howpublished = {\\url{http://arena.example.org/}}," in entry


@pytest.mark.django_db
def test_every_page_links_to_methodology_status_and_about(client: Client) -> None:
    content = _get(client, "arena:leaderboard").content.decode()
    for name in ("arena:methodology", "arena:status", "arena:about", "arena:models"):
        assert f'href="{reverse(name)}"' in content, name


@pytest.mark.django_db
def test_a_market_event_links_to_its_market(client: Client) -> None:
    from markets.models import Market

    market = Market.objects.create(
        polymarket_id="517310", question="Q?", outcomes=["Yes", "No"], outcome_prices=["1", "0"]
    )
    SystemEvent.objects.create(
        kind=SystemEvent.Kind.MARKET_SETTLED,
        message="market 517310 resolved 'Yes'",
        market=market,
        created_at=datetime(2026, 11, 23, 11, 7, tzinfo=UTC),
    )
    html = _get(client, "arena:status").content.decode()
    assert '<a href="/markets/517310/">market</a>' in html
