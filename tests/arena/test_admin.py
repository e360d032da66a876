"""The admin: a staff user inspects everything stored and operates the system through
actions that call services. Read-only pages offer no Save and no delete; every page renders
with hostile text escaped and issues the same queries whatever the data size; each action
shows what it did, and a failure says why and changes nothing."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from html import unescape
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Q
from django.http import HttpRequest
from django.test import Client, RequestFactory
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from agents.models import BenchmarkModel
from arena.models import (
    Agent,
    Cohort,
    Decision,
    DecisionAttempt,
    DecisionRun,
    DeterminismCheck,
    Position,
    ResolutionCheck,
    SnapshotTick,
    SystemEvent,
)
from arena.services.cohorts import cohort_start
from arena.services.frozen import run_prepare
from arena.weeks import cohort_week_start
from markets.models import Market, MarketSyncRun
from markets.parsing import parse_market
from markets.services import markets_upsert
from markets.sources import RecordedSource
from tests.arena.conftest import COHORT_AT, OFFLINE, RUN_AT, WEEK
from tests.markets.conftest import by_id_handler, gamma_json
from tests.page_world import World, build_world, published_release
from tests.replay import OPENROUTER_RECORDINGS, ReplayServer, Reply
from tests.worlds import ModuleWorld, module_world

HOSTILE = '<script>alert("admin")</script>'
ESCAPED = "&lt;script&gt;alert(&quot;admin&quot;)&lt;/script&gt;"
COMPLETIONS = "/chat/completions"
OK_RECORDING = OPENROUTER_RECORDINGS / "chat_completion_ok_json_content_with_reasoning.json"
CREDITS_402 = OPENROUTER_RECORDINGS / "error_402_insufficient_credits.json"
RESOLVED_YES = "market_resolved_yes.json"  # 522900, closed upstream, resolved "Yes"

# The admins that only show what is stored: the lineup (BenchmarkModelAdmin) is the one
# arena-side admin staff may edit; auth and the beat schedules are Django's and the package's.
EDITABLE = {"benchmarkmodel", "outsideagent", "user", "group"}


def html_of(response: Any) -> str:
    assert response.status_code == 200, response.status_code
    return str(response.content.decode())


def messages_of(response: Any) -> list[tuple[str, str]]:
    """Return (level, text) of each message the admin shows, as rendered (escaped)."""
    return re.findall(r'<li class="(success|warning|error|info)">(.*?)</li>', html_of(response))


def changelist(model: type[Any]) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")


def change_page(obj: Any) -> str:
    return reverse(f"admin:{obj._meta.app_label}_{obj._meta.model_name}_change", args=[obj.pk])


def our_admins() -> list[type[Any]]:
    return [m for m in admin.site._registry if m._meta.app_label in ("arena", "markets", "agents")]


def audit_rows(world: World) -> None:
    """The stored rows page_world does not write: an audit check, a tick, a catalogue sync,
    a data release, an outside agent's API token."""
    from arena.services.outside import outside_token_issue

    outside = BenchmarkModel.objects.create(
        internal_id=f"outside-{BenchmarkModel.objects.count()}",
        display_name=HOSTILE[:100],
        kind=BenchmarkModel.Kind.OUTSIDE,
        owner=HOSTILE[:200],
        method_description=HOSTILE,
    )
    outside_token_issue(model=outside, actor_id=None)
    published_release(world.cohort, changes=HOSTILE)
    DeterminismCheck.objects.create(
        decision=world.decision,
        requested_model="test/model",
        matches=None,
        original=world.decision.parsed,
        raw_response=HOSTILE,
        error=HOSTILE,
        checked_at=datetime(2031, 2, 1, tzinfo=UTC),
    )
    SnapshotTick.objects.get_or_create(
        slot=datetime(2031, 2, 1, tzinfo=UTC), defaults={"refresh_error": HOSTILE}
    )
    ResolutionCheck.objects.create(
        checked_at=datetime(2031, 2, 1, tzinfo=UTC), markets_checked=1, error=HOSTILE
    )
    MarketSyncRun.objects.create(
        source="gamma",
        requested=1,
        status=MarketSyncRun.Status.FAILED,
        error=HOSTILE,
        rejections=[{"id": "1", "reason": HOSTILE}],
        started_at=datetime(2031, 2, 1, tzinfo=UTC),
        finished_at=datetime(2031, 2, 1, tzinfo=UTC),
    )


# ------------------------------------------------------------------- every page renders


@pytest.mark.django_db
def test_every_changelist_and_change_page_renders_with_hostile_text_escaped(
    admin_client: Client,
) -> None:
    world = build_world(scale=2, text=HOSTILE)
    audit_rows(world)
    for model, model_admin in admin.site._registry.items():
        pages = [changelist(model)]
        obj = model_admin.get_queryset(_request(admin_client)).order_by("-pk").first()
        if obj is not None:
            pages.append(change_page(obj))
        for url in pages:
            html = html_of(admin_client.get(url))
            assert HOSTILE not in html, url
    # The hostile text was shown (escaped) where staff read it.
    for url in (
        changelist(Market),
        change_page(world.decision),
        changelist(SystemEvent),
        change_page(DeterminismCheck.objects.get()),
    ):
        assert ESCAPED in html_of(admin_client.get(url)), url


def _request(client: Client) -> HttpRequest:
    """A request as the logged-in superuser, for an admin's get_queryset."""
    request = RequestFactory().get("/")
    request.user = get_user_model().objects.get(is_superuser=True)
    return request


@pytest.mark.django_db
def test_read_only_pages_show_no_save_and_no_delete(admin_client: Client) -> None:
    world = build_world(scale=1, text="plain")
    audit_rows(world)
    checked = []
    for model, model_admin in admin.site._registry.items():
        if model._meta.model_name in EDITABLE or model._meta.app_label == "django_celery_beat":
            continue
        obj = model_admin.get_queryset(_request(admin_client)).first()
        assert obj is not None, f"no {model.__name__} to look at"
        html = html_of(admin_client.get(change_page(obj)))
        for control in ('name="_save"', 'name="_continue"', 'name="_addanother"', "deletelink"):
            assert control not in html, f"{model.__name__} page shows {control}"
        assert 'class="closelink"' in html  # the submit row offers only Close
        assert admin_client.get(change_page(obj).replace("/change/", "/delete/")).status_code == 403
        listing = html_of(admin_client.get(changelist(model)))
        assert 'value="delete_selected"' not in listing
        checked.append(model._meta.model_name)
    assert {"market", "cohort", "agent", "decision", "portfoliosnapshot", "snapshottick"} <= set(
        checked
    )
    assert {"determinismcheck", "systemevent", "snapshotmarket", "decisionrun"} <= set(checked)


@module_world()
def audited_page_world() -> None:
    """A page world with the rows it does not write (audit_rows): once for the module."""
    audit_rows(build_world(scale=1))


@pytest.mark.django_db
@pytest.mark.parametrize(
    "model", our_admins(), ids=lambda m: f"{m._meta.app_label}.{m._meta.model_name}"
)
def test_each_changelist_issues_the_same_queries_at_three_times_the_data(
    admin_client: Client, audited_page_world: ModuleWorld[None], model: type[Any]
) -> None:
    url = changelist(model)
    admin_client.get(url)  # warm the per-process caches (content types, session)
    with CaptureQueriesContext(connection) as small:
        html_of(admin_client.get(url))
    build_world(scale=1)
    build_world(scale=3)
    with CaptureQueriesContext(connection) as large:
        html_of(admin_client.get(url))
    assert len(large.captured_queries) == len(small.captured_queries), [
        q["sql"][:200] for q in large.captured_queries
    ]


# ------------------------------------------------------------------- the agent list


@pytest.mark.django_db
def test_agent_list_shows_cash_total_value_and_return(admin_client: Client) -> None:
    # Each agent of the world holds $9,000 cash and one open position of 125 YES shares in a
    # market priced 0.40: total value $9,050.00, return (9,050 − 10,000) / 10,000 = −9.50%.
    world = build_world(scale=1)
    html = html_of(admin_client.get(changelist(Agent), {"cohort__id__exact": world.cohort.pk}))
    row = re.search(rf"{re.escape(world.model.display_name)}.*?</tr>", html, re.S)
    assert row is not None
    assert '<td class="field-cash_usd">$9,000.00</td>' in row[0]
    assert '<td class="field-total_value">$9,050.00</td>' in row[0]
    assert '<td class="field-return_percent">-9.50%</td>' in row[0]


def listed_agents(response: Any) -> set[int]:
    return {int(pk) for pk in re.findall(r"/admin/arena/agent/(\d+)/change/", html_of(response))}


@pytest.mark.django_db
def test_agent_list_searches_by_model_name_id_and_cohort_number(admin_client: Client) -> None:
    first, second = build_world(scale=1, text="alpha"), build_world(scale=1, text="beta")
    # Each world's cohort has an agent of every active model, earlier worlds' models too.
    alphas = set(Agent.objects.filter(model=first.model).values_list("pk", flat=True))
    assert listed_agents(admin_client.get(changelist(Agent), {"q": "alpha"})) == alphas
    assert listed_agents(admin_client.get(changelist(Agent), {"q": second.model.internal_id})) == {
        second.agent.pk
    }
    by_cohort = listed_agents(admin_client.get(changelist(Agent), {"q": str(second.cohort.number)}))
    assert by_cohort == set(second.cohort.agents.values_list("pk", flat=True))


@pytest.mark.django_db
def test_cohort_list_searches_by_number_and_week(admin_client: Client) -> None:
    first, second = build_world(scale=1), build_world(scale=1)

    def numbers(q: str) -> set[str]:
        html = html_of(admin_client.get(changelist(Cohort), {"q": q}))
        return set(re.findall(r'<th class="field-number"><a [^>]*>(\d+)</a>', html))

    assert numbers(str(first.cohort.number)) == {str(first.cohort.number)}
    assert numbers(f"{second.cohort.week_start:%Y-%m-%d}") == {str(second.cohort.number)}


@pytest.mark.django_db
def test_position_list_searches_by_id_market_question_id_and_model(admin_client: Client) -> None:
    first, second = build_world(scale=1, text="gamma"), build_world(scale=1, text="delta")

    def positions(q: str) -> set[int]:
        html = html_of(admin_client.get(changelist(Position), {"q": q}))
        return {int(pk) for pk in re.findall(r'<th class="field-id"><a [^>]*>(\d+)</a>', html)}

    # "gamma" is the first world's questions and its model's name (an agent in both cohorts).
    of_gamma = Position.objects.filter(
        Q(market__question__startswith="gamma") | Q(agent__model=first.model)
    )
    assert positions("gamma") == set(of_gamma.values_list("pk", flat=True))
    assert positions(second.market.polymarket_id) == set(
        second.market.positions.values_list("pk", flat=True)
    )
    assert positions(first.model.internal_id) == set(
        Position.objects.filter(agent__model=first.model).values_list("pk", flat=True)
    )
    some = Position.objects.filter(agent__model=second.model).first()
    assert some is not None
    assert some.pk in positions(str(some.pk))  # by the id the decision page names


@pytest.mark.django_db
def test_decision_search_by_text_never_breaks_on_the_id_column(admin_client: Client) -> None:
    world = build_world(scale=1, text="epsilon")
    html = html_of(admin_client.get(changelist(Decision), {"q": "epsilon"}))
    assert f"/admin/arena/decision/{world.decision.pk}/change/" in html
    html = html_of(admin_client.get(changelist(Decision), {"q": str(world.decision.pk)}))
    assert f"/admin/arena/decision/{world.decision.pk}/change/" in html


# ------------------------------------------------------------------------------ actions


def post_action(client: Client, model: type[Any], action: str, pks: list[int]) -> Any:
    return client.post(changelist(model), {"action": action, "_selected_action": pks}, follow=True)


@dataclass(frozen=True)
class FrozenWeek:
    cohort_id: int
    run_id: int


@module_world(settings=OFFLINE)
def frozen_week() -> FrozenWeek:
    """The cohort of WEEK and its run frozen from the recordings, as tests/arena/conftest.py's
    `cohort` and `run` make them: once for the module's decision actions (tests/worlds.py)."""
    cohort, created = cohort_start(week_start=WEEK, now=COHORT_AT)
    assert created
    run = run_prepare(now=RUN_AT, source=RecordedSource())
    return FrozenWeek(cohort_id=cohort.pk, run_id=run.pk)


@pytest.fixture
def run(db: None, frozen_week: ModuleWorld[FrozenWeek]) -> DecisionRun:
    return DecisionRun.objects.get(pk=frozen_week.value.run_id)


@pytest.fixture
def agent(db: None, frozen_week: ModuleWorld[FrozenWeek]) -> Agent:
    """The GPT agent of the frozen week (`decision` claims its decision)."""
    return Agent.objects.select_related("model").get(
        cohort_id=frozen_week.value.cohort_id, model__internal_id="gpt-5.1"
    )


@pytest.fixture
def other_agent(db: None, frozen_week: ModuleWorld[FrozenWeek]) -> Agent:
    return Agent.objects.select_related("model").get(
        cohort_id=frozen_week.value.cohort_id, model__internal_id="claude-opus-4.5"
    )


def test_retry_action_retries_a_retryable_decision_and_refuses_a_final_one(
    admin_client: Client, decision: Decision, other_decision: Decision, time_machine: Any
) -> None:
    time_machine.move_to(RUN_AT + timedelta(hours=1))  # within the week's retry deadline
    Decision.objects.filter(pk=decision.pk).update(status=Decision.Status.RETRYABLE)
    Decision.objects.filter(pk=other_decision.pk).update(
        status=Decision.Status.DONE, action=Decision.Action.HOLD
    )
    runs = DecisionRun.objects.count()
    response = post_action(admin_client, Decision, "retry", [decision.pk, other_decision.pk])
    shown = messages_of(response)
    decision.refresh_from_db()
    assert decision.status in Decision.DECIDED  # the offline agent answered this time
    assert DecisionRun.objects.count() == runs + 1  # a freshly frozen snapshot for the retry
    assert (
        "success",
        f"Retry: 1 done — decision {decision.pk}: {decision.status}, "
        f"{decision.trades.filter(status='executed').count()} orders executed, "
        f"{decision.trades.filter(status='rejected').count()} rejected",
    ) in shown
    assert (
        "error",
        f"Retry: 1 failed — decision {other_decision.pk} is done, not retryable",
    ) in shown
    other_decision.refresh_from_db()
    assert (other_decision.status, other_decision.tries) == (Decision.Status.DONE, 1)


def test_retry_action_refuses_a_decision_under_a_live_claim_and_changes_nothing(
    admin_client: Client, decision: Decision
) -> None:
    Decision.objects.filter(pk=decision.pk).update(claimed_at=timezone.now())  # a live claim
    runs = DecisionRun.objects.count()
    response = post_action(admin_client, Decision, "retry", [decision.pk])
    assert messages_of(response) == [
        (
            "error",
            f"Retry: 1 failed — decision {decision.pk} is running by a live claim, not retryable",
        )
    ]
    after = Decision.objects.get(pk=decision.pk)
    assert (after.status, after.tries) == (Decision.Status.RUNNING, decision.tries)
    assert DecisionRun.objects.count() == runs


@pytest.fixture
def held_resolved_market(cohort: Cohort) -> tuple[Market, Position]:
    """Market 522900 in the catalogue still open (as last synced before it closed), and a GPT
    agent holding 100 YES shares of it at a cost of $40."""
    record = gamma_json(RESOLVED_YES)
    still_open = {
        **record,
        "closed": False,
        "umaResolutionStatus": "",
        "outcomePrices": json.dumps(["0.4", "0.6"]),
    }
    markets_upsert(markets=[parse_market(still_open)])
    market = Market.objects.get(polymarket_id=str(record["id"]))
    agent = cohort.agents.get(model__internal_id="gpt-5.1")
    Agent.objects.filter(pk=agent.pk).update(cash=Decimal("9960.00"))
    position = Position.objects.create(
        agent=agent,
        market=market,
        side="YES",
        outcome_index=0,
        shares=Decimal("100"),
        cost_basis=Decimal("40.00"),
        opened_at=datetime(2026, 3, 8, 0, 5, tzinfo=UTC),
    )
    return market, position


def test_check_resolution_action_settles_a_resolved_market(
    admin_client: Client,
    held_resolved_market: tuple[Market, Position],
    gamma_server: ReplayServer,
) -> None:
    market, position = held_resolved_market
    gamma_server.route("GET", "/markets", by_id_handler([gamma_json(RESOLVED_YES)]))
    response = post_action(admin_client, Market, "check_resolution", [market.pk])
    assert messages_of(response) == [
        ("success", "Resolution check: 1 done — market 522900: resolved &#x27;Yes&#x27;")
    ]
    (request,) = gamma_server.requests_to("/markets")
    assert request.query["id"] == ["522900"]
    market.refresh_from_db()
    position.refresh_from_db()
    assert (market.resolution, market.winning_outcome) == (Market.Resolution.RESOLVED, "Yes")
    assert (position.status, position.settlement_value) == (
        Position.Status.SETTLED,
        Decimal("100.00"),
    )
    assert Agent.objects.get(pk=position.agent_id).cash == Decimal("10060.00")
    assert SystemEvent.objects.filter(kind=SystemEvent.Kind.MARKET_SETTLED, market=market).exists()
    # A repeat settles nothing twice.
    again = post_action(admin_client, Market, "check_resolution", [market.pk])
    assert messages_of(again) == [
        ("success", "Resolution check: 1 done — market 522900: already settled, nothing to do")
    ]
    assert Agent.objects.get(pk=position.agent_id).cash == Decimal("10060.00")


def test_check_resolution_action_reports_a_failed_fetch_and_settles_nothing(
    admin_client: Client,
    held_resolved_market: tuple[Market, Position],
    gamma_server: ReplayServer,
    settings: Any,
) -> None:
    settings.HTTP_MAX_RETRIES = 1
    market, position = held_resolved_market
    gamma_server.route("GET", "/markets", Reply.json({"error": "internal"}, 500))
    response = post_action(admin_client, Market, "check_resolution", [market.pk])
    ((level, text),) = messages_of(response)
    assert level == "error"
    assert text.startswith(
        "Resolution check: 1 failed — market 522900: check failed, nothing settled: "
        "GET /markets answered HTTP 500"
    ), text
    market.refresh_from_db()
    position.refresh_from_db()
    assert (market.resolution, position.status) == (Market.Resolution.OPEN, Position.Status.OPEN)
    assert Agent.objects.get(pk=position.agent_id).cash == Decimal("9960.00")


def test_check_resolution_action_keeps_a_settlement_whose_cohort_completion_failed(
    admin_client: Client,
    held_resolved_market: tuple[Market, Position],
    gamma_server: ReplayServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Completing the cohorts breaks after the market settled: the settlement stands and the
    message says what happened, instead of a server error."""
    market, position = held_resolved_market
    gamma_server.route("GET", "/markets", by_id_handler([gamma_json(RESOLVED_YES)]))

    def broken(**kwargs: Any) -> list[int]:
        raise RuntimeError("database went away while completing")

    monkeypatch.setattr("arena.services.operations.cohorts_complete", broken)
    ((level, text),) = messages_of(
        post_action(admin_client, Market, "check_resolution", [market.pk])
    )
    assert level == "error"
    assert "market 522900: resolved &#x27;Yes&#x27;, but completing its cohorts failed" in text
    position.refresh_from_db()
    assert position.status == Position.Status.SETTLED


def test_check_resolution_action_leaves_a_market_still_trading_open(
    admin_client: Client, held_resolved_market: tuple[Market, Position], gamma_server: ReplayServer
) -> None:
    market, position = held_resolved_market
    trading = {**gamma_json(RESOLVED_YES), "closed": False, "umaResolutionStatus": ""}
    trading["outcomePrices"] = json.dumps(["0.55", "0.45"])
    gamma_server.route("GET", "/markets", by_id_handler([trading]))
    ((level, text),) = messages_of(
        post_action(admin_client, Market, "check_resolution", [market.pk])
    )
    assert (level, text.split(" (")[0]) == (
        "success",
        "Resolution check: 1 done — market 522900: still open",
    )
    market.refresh_from_db()
    assert (market.resolution, market.price) == (Market.Resolution.OPEN, Decimal("0.550000"))
    assert Position.objects.get(pk=position.pk).status == Position.Status.OPEN


START_WEEK = reverse("admin:arena_cohort_start_week")


@pytest.mark.django_db
def test_start_cohort_starts_this_weeks_cohort_once(admin_client: Client) -> None:
    week = cohort_week_start()
    active = BenchmarkModel.objects.filter(active=True).count()
    response = admin_client.post(START_WEEK, follow=True)
    cohort = Cohort.objects.get(week_start=week)
    assert cohort.agents.count() == active
    assert messages_of(response) == [
        ("success", f"Started Cohort {cohort.number} ({week:%Y-%m-%d}) with {active} agents")
    ]
    assert response.redirect_chain[-1][0] == changelist(Cohort)
    again = admin_client.post(START_WEEK, follow=True)
    assert messages_of(again) == [
        (
            "warning",
            f"Cohort {cohort.number} ({week:%Y-%m-%d}) already exists ({active} agents): "
            "nothing started",
        )
    ]
    assert Cohort.objects.filter(week_start=week).count() == 1
    assert Agent.objects.filter(cohort=cohort).count() == active


@pytest.mark.django_db
def test_start_cohort_needs_a_post_from_staff(client: Client, admin_client: Client) -> None:
    assert admin_client.get(START_WEEK).status_code == 405
    assert client.post(START_WEEK).status_code == 302  # to the login page
    assert not Cohort.objects.exists()
    html = html_of(admin_client.get(changelist(Cohort)))
    assert f'action="{START_WEEK}"' in html  # the button is on the cohort list


AUDIT = reverse("admin:arena_determinismcheck_audit")
HOLD = {"action": "HOLD", "reasoning": "Nothing is mispriced.", "bets": [], "sells": []}


@pytest.fixture
def answered(decision: Decision) -> Decision:
    """The GPT agent's decision as OpenRouter answered it: a valid HOLD."""
    Decision.objects.filter(pk=decision.pk).update(
        status=Decision.Status.DONE,
        action=Decision.Action.HOLD,
        responder=Decision.Responder.OPENROUTER,
        requested_model="openai/gpt-5.1",
        parsed=HOLD,
        parsed_try=1,
        cost_usd=Decimal("0.0123"),
    )
    DecisionAttempt.objects.create(
        decision=decision,
        number=1,
        responder="openrouter",
        requested_model="openai/gpt-5.1",
        request_messages=[{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
        valid=True,
        started_at=datetime(2026, 3, 8, 0, 5, tzinfo=UTC),
    )
    return Decision.objects.get(pk=decision.pk)


def completion(content: str) -> Reply:
    body = json.loads(OK_RECORDING.read_text())
    body["choices"][0]["message"]["content"] = content
    return Reply.json(body)


def test_audit_page_shows_the_sample_and_its_cost_before_sending(
    admin_client: Client, answered: Decision, openrouter_server: ReplayServer
) -> None:
    html = html_of(admin_client.get(AUDIT, {"size": "3", "seed": "7"}))
    assert "1 decision to re-send; they cost $0.0123 the first time" in html
    assert reverse("admin:arena_decision_change", args=[answered.pk]) in html
    assert not openrouter_server.requests  # looking costs nothing
    assert not DeterminismCheck.objects.exists()


def test_audit_action_resends_the_sample_and_records_each_check(
    admin_client: Client, answered: Decision, openrouter_server: ReplayServer
) -> None:
    openrouter_server.route(
        "POST", COMPLETIONS, completion(json.dumps({"action": "HOLD", "reasoning": "Still."}))
    )
    response = admin_client.post(AUDIT, {"size": "5", "seed": "0"}, follow=True)
    assert messages_of(response) == [
        (
            "success",
            f"Determinism audit: 1 done — decision {answered.pk} (openai/gpt-5.1): repeated",
        )
    ]
    (request,) = openrouter_server.requests_to(COMPLETIONS)
    assert request.json()["model"] == "openai/gpt-5.1"
    assert request.json()["messages"] == [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
    ]
    check = DeterminismCheck.objects.get()
    assert (check.decision_id, check.matches) == (answered.pk, True)


def test_audit_action_reports_a_failed_call_with_its_reason(
    admin_client: Client, answered: Decision, openrouter_server: ReplayServer, settings: Any
) -> None:
    settings.OPENROUTER_MAX_RETRIES = 0
    openrouter_server.route("POST", COMPLETIONS, Reply(status=402, body=CREDITS_402.read_bytes()))
    response = admin_client.post(AUDIT, {"size": "5"}, follow=True)
    ((level, text),) = messages_of(response)
    assert level == "error"
    assert text.startswith(f"Determinism audit: 1 failed — decision {answered.pk}: "), text
    check = DeterminismCheck.objects.get()
    assert check.matches is None
    assert check.error in unescape(text)


def test_audit_action_without_an_openrouter_key_sends_nothing(
    admin_client: Client, answered: Decision, settings: Any
) -> None:
    settings.OPENROUTER_API_KEY = ""
    response = admin_client.post(AUDIT, {"size": "5"}, follow=True)
    assert messages_of(response) == [
        ("error", "Determinism audit: 1 failed — OPENROUTER_API_KEY is not set: nothing sent")
    ]
    assert not DeterminismCheck.objects.exists()
