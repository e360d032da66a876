"""Staff register outside agents in the admin: a token is issued shown once and
stored hashed, revoked, and an agent admitted to the main leaderboard; each change is recorded
with who made it, and the token never shows again on any page."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents.models import BenchmarkModel
from arena.models import OutsideAgentToken, SystemEvent
from arena.services.outside import outside_token_authenticate

pytestmark = pytest.mark.django_db

AGENTS = reverse("admin:arena_outsideagent_changelist")
TOKENS = reverse("admin:arena_outsideagenttoken_changelist")


@pytest.fixture
def team(admin_client: Client) -> BenchmarkModel:
    """Registered through the admin's add form, as staff do."""
    response = admin_client.post(
        reverse("admin:arena_outsideagent_add"),
        {
            "internal_id": "team-x",
            "display_name": "Team X",
            "owner": "The X Lab",
            "contact": "x@example.org",
            "method_description": "Base rates, then a small model.",
            "active": "on",
            "outside_tokens-TOTAL_FORMS": "0",
            "outside_tokens-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    return BenchmarkModel.objects.get(internal_id="team-x")


def staff_actions(action: str) -> list[SystemEvent]:
    return list(SystemEvent.objects.filter(kind="staff_action", data__action=action))


def issue(admin_client: Client, team: BenchmarkModel) -> tuple[Any, str]:
    response = admin_client.post(AGENTS, {"action": "issue_token", "_selected_action": [team.pk]})
    assert response.status_code == 200
    html = response.content.decode()
    start = html.index('class="outside-token">') + len('class="outside-token">')
    return response, html[start : html.index("</code>", start)]


def test_registering_an_outside_agent_makes_it_kind_outside_and_is_recorded(
    team: BenchmarkModel,
) -> None:
    assert team.is_outside
    assert team.owner == "The X Lab"
    assert not team.admitted_to_main_board
    [event] = staff_actions("register_outside_agent")
    assert event.data["actor"]["username"] == "admin"


def test_a_token_is_shown_once_and_stored_hashed(admin_client: Client, team: Any) -> None:
    response, token = issue(admin_client, team)
    assert "no-store" in response["Cache-Control"]
    row = OutsideAgentToken.objects.get(model=team)
    assert token.startswith(f"fa_{row.prefix}_")
    assert outside_token_authenticate(token=token) == row
    secret = token.split("_", 2)[2]
    for page in (AGENTS, TOKENS, reverse("admin:arena_outsideagent_change", args=[team.pk])):
        assert secret not in admin_client.get(page).content.decode(), page
    [event] = staff_actions("issue_outside_token")
    assert event.data["token_prefix"] == row.prefix
    assert secret not in event.message + str(event.data)


def test_staff_revoke_a_token(admin_client: Client, team: Any) -> None:
    _, token = issue(admin_client, team)
    row = OutsideAgentToken.objects.get(model=team)
    admin_client.post(TOKENS, {"action": "revoke", "_selected_action": [row.pk]})
    row.refresh_from_db()
    assert row.revoked_at is not None
    assert staff_actions("revoke_outside_token")


def test_staff_admit_an_outside_agent_to_the_main_board_and_withdraw_it(
    admin_client: Client, team: BenchmarkModel
) -> None:
    admin_client.post(AGENTS, {"action": "admit", "_selected_action": [team.pk]})
    team.refresh_from_db()
    assert team.admitted_to_main_board
    admin_client.post(AGENTS, {"action": "withdraw", "_selected_action": [team.pk]})
    team.refresh_from_db()
    assert not team.admitted_to_main_board
    assert len(staff_actions("admit_outside_agent")) == 1
    assert len(staff_actions("withdraw_outside_agent")) == 1


def test_the_outside_agents_list_holds_outside_agents_only(
    admin_client: Client, team: BenchmarkModel
) -> None:
    html = admin_client.get(AGENTS).content.decode()
    assert "team-x" in html
    lineup = BenchmarkModel.objects.filter(kind="llm").first()
    assert lineup is not None
    assert f">{lineup.internal_id}<" not in html
