"""Staff permissions: a staff user without the superuser flag sees only what their group
allows — no group sees nothing, Viewers read every arena, markets and agents page and run
nothing, Operators also run the actions — and every action run is recorded with who ran it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client, RequestFactory
from django.urls import reverse

from agents.models import BenchmarkModel
from arena.models import Cohort, DataRelease, Decision, SystemEvent
from arena.services.events import STAFF_ACTION
from arena.weeks import cohort_week_start
from markets.models import Market
from markets.parsing import parse_market
from markets.services import markets_upsert
from tests.arena.conftest import RUN_AT
from tests.markets.conftest import by_id_handler, gamma_json
from tests.replay import ReplayServer

APPS = ("arena", "markets", "agents")
NO_GROUP, VIEWERS, OPERATORS, SUPERUSER = "no group", "Viewers", "Operators", "superuser"
ROLES = (NO_GROUP, VIEWERS, OPERATORS, SUPERUSER)
START_WEEK = reverse("admin:arena_cohort_start_week")
AUDIT = reverse("admin:arena_determinismcheck_audit")
RESOLVED_YES = "market_resolved_yes.json"  # 522900, closed upstream, resolved "Yes"

# The actions each admin offers, and the permission each one asks for.
ACTIONS = {
    Cohort: {"publish_release"},
    Decision: {"retry"},
    DataRelease: {"publish_again"},
    Market: {"resync", "check_resolution"},
}
OPERATIONS = {
    "arena.start_cohort",
    "arena.publish_datarelease",
    "arena.retry_decision",
    "arena.run_determinismcheck",
    "markets.resync_market",
    "markets.check_market_resolution",
}


def our_admins() -> list[type[Any]]:
    return [m for m in admin.site._registry if m._meta.app_label in APPS]


def changelist(model: type[Any]) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")


def staff_user(role: str) -> Any:
    """A staff user of `role`: in no group, in one of the two groups, or a superuser."""
    user = get_user_model().objects.create_user(
        username=f"{role.replace(' ', '-')}-staff",
        password=None,
        is_staff=True,
        is_superuser=role == SUPERUSER,
    )
    if role in (VIEWERS, OPERATORS):
        user.groups.add(Group.objects.get(name=role))
    return user


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def actions_offered(model: type[Any], user: Any) -> set[str]:
    request = RequestFactory().get(changelist(model))
    request.user = user
    return set(admin.site._registry[model].get_actions(request))


def recorded(action: str) -> list[SystemEvent]:
    return list(SystemEvent.objects.filter(kind=STAFF_ACTION, data__action=action))


def assert_recorded_by(action: str, user: Any) -> SystemEvent:
    """Assert one event recorded the run of `action`, naming `user`; return it."""
    (event,) = recorded(action)
    assert event.data["actor"] == {"username": user.get_username(), "id": user.pk}
    assert event.message.startswith(f"{user.get_username()} ran {action} in the admin: ")
    return event


def post_action(client: Client, model: type[Any], action: str, pks: list[int]) -> Any:
    return client.post(changelist(model), {"action": action, "_selected_action": pks}, follow=True)


# ------------------------------------------------------------------------------- the groups


@pytest.mark.django_db
def test_viewers_may_view_every_model_and_operators_also_run_the_operations() -> None:
    views = {
        f"{model._meta.app_label}.view_{model._meta.model_name}"
        for app_label in APPS
        for model in apps.get_app_config(app_label).get_models()
    }
    viewer, operator = staff_user(VIEWERS), staff_user(OPERATORS)
    assert viewer.get_all_permissions() == views
    assert operator.get_all_permissions() == views | OPERATIONS


# -------------------------------------------------------------------------- what each sees


@pytest.mark.django_db
@pytest.mark.parametrize("role", ROLES)
def test_the_admin_index_lists_only_what_the_role_may_see(role: str) -> None:
    html = signed_in(staff_user(role)).get(reverse("admin:index")).content.decode()
    for model in our_admins():
        assert (f'href="{changelist(model)}"' in html) == (role != NO_GROUP), model
    assert ('href="/admin/auth/user/"' in html) == (role == SUPERUSER)
    if role == NO_GROUP:
        assert "permission to view or edit anything" in html


@pytest.mark.django_db
@pytest.mark.parametrize("role", ROLES)
def test_every_changelist_answers_403_to_no_group_and_200_to_the_groups(role: str) -> None:
    client = signed_in(staff_user(role))
    for model in our_admins():
        status = client.get(changelist(model)).status_code
        assert status == (403 if role == NO_GROUP else 200), (model, status)


@pytest.mark.django_db
@pytest.mark.parametrize("role", ROLES)
def test_actions_are_offered_to_operators_and_superusers_only(role: str) -> None:
    user = staff_user(role)
    for model, actions in ACTIONS.items():
        offered = actions_offered(model, user)
        assert offered == (actions if role in (OPERATORS, SUPERUSER) else set()), model


@pytest.mark.django_db
@pytest.mark.parametrize("role", [VIEWERS, OPERATORS])
def test_a_group_member_edits_nothing_the_lineup_included(role: str) -> None:
    client = signed_in(staff_user(role))
    model = BenchmarkModel.objects.order_by("pk").first()
    assert model is not None
    page = reverse("admin:agents_benchmarkmodel_change", args=[model.pk])
    html = client.get(page).content.decode()
    assert 'name="_save"' not in html
    assert 'name="form-0-active"' not in client.get(changelist(BenchmarkModel)).content.decode()
    assert client.post(page, {"display_name": "renamed"}).status_code == 403
    assert client.get(reverse("admin:agents_benchmarkmodel_add")).status_code == 403
    model.refresh_from_db()
    assert model.display_name != "renamed"


# ---------------------------------------------------------------- refused to those without


@pytest.mark.django_db
@pytest.mark.parametrize("role", [NO_GROUP, VIEWERS])
def test_starting_a_cohort_and_sending_the_audit_are_refused_without_the_permission(
    role: str,
) -> None:
    client = signed_in(staff_user(role))
    assert client.post(START_WEEK).status_code == 403
    assert client.post(AUDIT, {"size": "5"}).status_code == 403
    assert client.get(AUDIT).status_code == (403 if role == NO_GROUP else 200)  # looking
    assert not Cohort.objects.exists()
    assert not SystemEvent.objects.filter(kind=STAFF_ACTION).exists()


def test_a_viewer_posting_an_action_runs_nothing(decision: Decision) -> None:
    Decision.objects.filter(pk=decision.pk).update(status=Decision.Status.RETRYABLE)
    before = Decision.objects.get(pk=decision.pk)
    post_action(signed_in(staff_user(VIEWERS)), Decision, "retry", [decision.pk])
    after = Decision.objects.get(pk=decision.pk)
    assert (after.status, after.tries) == (Decision.Status.RETRYABLE, before.tries)
    assert not recorded("retry")


# ---------------------------------------------------------- run, and recorded with who ran


@pytest.fixture(params=(OPERATORS, SUPERUSER))
def operator(request: pytest.FixtureRequest, db: None) -> Any:
    return staff_user(request.param)


def test_a_retry_run_is_recorded_with_who_ran_it(
    operator: Any, decision: Decision, time_machine: Any
) -> None:
    time_machine.move_to(RUN_AT + timedelta(hours=1))  # within the week's retry deadline
    Decision.objects.filter(pk=decision.pk).update(status=Decision.Status.RETRYABLE)
    post_action(signed_in(operator), Decision, "retry", [decision.pk])
    decision.refresh_from_db()
    assert decision.status in Decision.DECIDED  # the offline agent answered this time
    event = assert_recorded_by("retry", operator)
    assert (event.data["decisions"], len(event.data["done"])) == ([decision.pk], 1)
    assert LogEntry.objects.filter(
        user=operator, action_flag=CHANGE, object_id=str(decision.pk)
    ).exists()


def test_starting_a_cohort_is_recorded_with_who_started_it(operator: Any) -> None:
    signed_in(operator).post(START_WEEK)
    cohort = Cohort.objects.get(week_start=cohort_week_start())
    event = assert_recorded_by("start_week", operator)
    assert (event.cohort_id, event.data["created"]) == (cohort.pk, True)
    assert LogEntry.objects.filter(
        user=operator, action_flag=ADDITION, object_id=str(cohort.pk)
    ).exists()


def test_publishing_a_cohort_not_yet_final_is_refused_and_recorded(
    operator: Any, cohort: Cohort
) -> None:
    post_action(signed_in(operator), Cohort, "publish_release", [cohort.pk])
    event = assert_recorded_by("publish_release", operator)
    assert (event.level, event.data["cohorts"], event.data["done"]) == (
        SystemEvent.Level.WARNING,
        [cohort.number],
        [],
    )
    assert len(event.data["failed"]) == 1
    assert not DataRelease.objects.exists()


def test_publishing_a_release_again_is_recorded(operator: Any, cohort: Cohort) -> None:
    release = DataRelease.objects.create(
        cohort=cohort,
        version=1,
        name=f"cohort-{cohort.number}-v1",
        published_at=datetime(2031, 2, 1, tzinfo=UTC),
        methodology_version="v1",
        manifest={"files": []},
        files=[],
        sha256="0" * 64,
        total_bytes=0,
    )
    post_action(signed_in(operator), DataRelease, "publish_again", [release.pk])
    event = assert_recorded_by("publish_again", operator)
    assert event.data["cohorts"] == [cohort.number]
    assert LogEntry.objects.filter(user=operator, object_id=str(release.pk)).exists()


def test_the_determinism_audit_sent_is_recorded(operator: Any, settings: Any) -> None:
    settings.OPENROUTER_API_KEY = ""  # nothing is sent, and the run is still recorded
    signed_in(operator).post(AUDIT, {"size": "3", "seed": "7"})
    event = assert_recorded_by("determinism_audit", operator)
    assert (event.data["size"], event.data["seed"]) == (3, 7)
    assert event.data["failed"] == ["OPENROUTER_API_KEY is not set: nothing sent"]


@pytest.fixture
def open_market(db: None) -> Market:
    """Market 522900 in the catalogue still open, as last synced before it closed."""
    record = {
        **gamma_json(RESOLVED_YES),
        "closed": False,
        "umaResolutionStatus": "",
        "outcomePrices": json.dumps(["0.4", "0.6"]),
    }
    markets_upsert(markets=[parse_market(record)])
    return Market.objects.get(polymarket_id=str(record["id"]))


def test_a_resync_and_a_resolution_check_are_recorded(
    operator: Any, open_market: Market, gamma_server: ReplayServer
) -> None:
    gamma_server.route("GET", "/markets", by_id_handler([gamma_json(RESOLVED_YES)]))
    client = signed_in(operator)
    post_action(client, Market, "resync", [open_market.pk])
    event = assert_recorded_by("resync", operator)
    assert event.data["markets"] == ["522900"]
    post_action(client, Market, "check_resolution", [open_market.pk])
    event = assert_recorded_by("check_resolution", operator)
    assert event.data["markets"] == ["522900"]
    assert LogEntry.objects.filter(user=operator, object_id=str(open_market.pk)).count() == 2


@pytest.mark.django_db
def test_a_superusers_lineup_edit_is_recorded() -> None:
    user = staff_user(SUPERUSER)
    model = BenchmarkModel.objects.order_by("pk").first()
    assert model is not None
    page = reverse("admin:agents_benchmarkmodel_change", args=[model.pk])
    form = {
        "display_name": "Renamed",
        "provider": model.provider,
        "openrouter_id": model.openrouter_id,
        "active": "on" if model.active else "",
        "display_order": model.display_order,
    }
    response = signed_in(user).post(page, form)
    assert response.status_code == 302, response.content.decode()[:2000]
    event = assert_recorded_by("change_model", user)
    assert (event.data["model"], event.data["fields"]) == (model.internal_id, ["display_name"])


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("role", "shown"), [(VIEWERS, False), (OPERATORS, True), (SUPERUSER, True)]
)
def test_the_start_button_shows_only_to_those_who_may_start(role: str, shown: bool) -> None:
    page = signed_in(staff_user(role)).get(changelist(Cohort)).content.decode()
    assert (START_WEEK in page) is shown
