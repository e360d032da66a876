"""Nothing stalls silently (docs/resolution.md): a held market the resolution check leaves
unsettled is recorded on the check with its reason; one that Gamma stops returning is told
once, in one event; past the stated age the status page names it; staff settle it by hand,
by the winning outcome's name, or cancel it, refunded at cost."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from arena.models import Agent, Cohort, Position, ResolutionCheck, SystemEvent
from arena.services.settlement import resolutions_check
from markets.models import Market
from tests.arena.books import assert_books_balance
from tests.arena.test_settlement import (
    PROPOSED,
    RESOLVED_YES,
    SETTLE_AT,
    Gamma,
    agent_named,
    bet,
    decision_for,
    list_and_freeze,
    trading,
)
from tests.arena.test_staff import OPERATORS, VIEWERS, signed_in, staff_user
from tests.markets.conftest import gamma_json
from tests.replay import ReplayServer

HELD = "522900"  # the market Gamma stops returning
OTHER = "253898"  # held too, and still returned


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings: Any) -> None:
    """The admin user's password is hashed once per test; PBKDF2 would take seconds."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def gamma(gamma_server: ReplayServer) -> Gamma:
    return Gamma(gamma_server)


@pytest.fixture
def held(gamma: Gamma, cohort: Cohort) -> tuple[Agent, Agent]:
    """Two agents hold market 522900 (YES and NO) and one holds 253898; then Gamma stops
    returning 522900 by id (its answer omits it) while it still answers for 253898."""
    yes_agent = agent_named(cohort, "gpt-5.1")
    no_agent = agent_named(cohort, "claude-opus-4.5")
    frozen = list_and_freeze(
        gamma, trading(RESOLVED_YES, ["0.4", "0.6"]), trading(PROPOSED, ["0.4", "0.6"])
    )
    yes_decision, no_decision = decision_for(yes_agent), decision_for(no_agent)
    bet(yes_decision, frozen, HELD, "YES", "400.00")
    bet(no_decision, frozen, HELD, "NO", "600.00")
    bet(yes_decision, frozen, OTHER, "NO", "300.00", index=1)
    del gamma.records[HELD]
    gamma.serve(gamma_json(PROPOSED))  # closed, UMA "proposed": awaiting resolution
    return yes_agent, no_agent


def missing_events() -> list[SystemEvent]:
    return list(SystemEvent.objects.filter(kind=SystemEvent.Kind.MARKET_MISSING))


def test_a_held_market_gamma_does_not_return_is_recorded_with_its_reason_and_told_once(
    held: tuple[Agent, Agent],
) -> None:
    reports = [resolutions_check(now=SETTLE_AT + timedelta(hours=h)) for h in range(3)]

    for report in reports:
        assert report.checked == 2
        assert report.missing == [
            {"id": HELD, "reason": "the gamma source did not return it when asked by id"}
        ]
        assert [(o["id"], o["why"]) for o in report.still_open] == [(OTHER, "awaiting_resolution")]
        assert "1 not returned, 1 still open" in report.summary()
    checks = list(ResolutionCheck.objects.order_by("checked_at"))
    assert [c.missing for c in checks] == [report.missing for report in reports]
    assert all("UMA resolution proposed" in c.still_open[0]["reason"] for c in checks)
    (event,) = missing_events()  # three checks, one event
    assert event.level == SystemEvent.Level.WARNING
    assert event.market is not None
    assert event.market.polymarket_id == HELD
    assert "did not return it" in event.message


def test_a_market_that_comes_back_and_goes_missing_again_is_told_again(
    gamma: Gamma, held: tuple[Agent, Agent]
) -> None:
    resolutions_check(now=SETTLE_AT)
    gamma.serve(trading(RESOLVED_YES, ["0.4", "0.6"]))
    back = resolutions_check(now=SETTLE_AT + timedelta(hours=1))
    assert back.missing == []
    assert {o["id"]: o["why"] for o in back.still_open}[HELD] == "trading"
    del gamma.records[HELD]
    resolutions_check(now=SETTLE_AT + timedelta(hours=2))
    assert len(missing_events()) == 2


@pytest.mark.parametrize(
    ("change", "why", "said"),
    [
        ({"outcomePrices": None}, "unreadable_record", "record cannot be read"),
        ({"umaResolutionStatus": "challenged"}, "unknown_uma_status", "'challenged'"),
    ],
)
def test_an_unreadable_record_or_an_unknown_uma_status_is_recorded_as_why_it_stays_open(
    gamma: Gamma, held: tuple[Agent, Agent], change: dict[str, Any], why: str, said: str
) -> None:
    gamma.serve({**gamma_json(RESOLVED_YES), **change})
    report = resolutions_check(now=SETTLE_AT)
    (entry,) = [o for o in ResolutionCheck.objects.get().still_open if o["id"] == HELD]
    assert entry["why"] == why
    assert said in entry["reason"]
    assert report.resolved == []
    assert report.missing == []
    assert missing_events() == []
    assert_books_balance()
    assert Agent.objects.get(pk=held[0].pk).cash == Decimal("9300.00")


def status_text(client: Client) -> str:
    response = client.get(reverse("arena:status"))
    assert response.status_code == 200
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", response.content.decode()))


def test_past_the_stated_age_the_status_page_warns_naming_the_market_and_why(
    client: Client, held: tuple[Agent, Agent], settings: Any
) -> None:
    """RESOLUTION_STALL_DAYS (14 by default) past its end date, a held market still
    unsettled is named on the status page with the reason the last check left it open."""
    assert settings.RESOLUTION_STALL_DAYS == 14
    resolutions_check(now=SETTLE_AT)
    ends = timezone.now() - timedelta(days=14, hours=-1)
    Market.objects.filter(polymarket_id__in=[HELD, OTHER]).update(close_date=ends)

    text = status_text(client)
    assert "held market" not in text  # 13 days and 23 hours: not yet
    assert "1 market not returned by the market source (522900): each stays open" in text

    Market.objects.filter(polymarket_id=HELD).update(close_date=ends - timedelta(hours=2))
    text = status_text(client)
    assert "1 held market still unsettled more than 14 days past its end date." in text
    assert f"522900: {Market.objects.get(polymarket_id=HELD).question[:40]}" in text
    assert (
        "14 days unsettled; not returned by the market source: the gamma source did not "
        "return it when asked by id" in text
    )
    assert "253898" not in text.split("Last runs")[0]

    settings.RESOLUTION_STALL_DAYS = 30
    assert "held market" not in status_text(client)


# ------------------------------------------------------------------ staff settle by hand


def settle_page(polymarket_id: str) -> str:
    market = Market.objects.get(polymarket_id=polymarket_id)
    return reverse("admin:markets_market_settle", args=[market.pk])


def cash(agent: Agent) -> Decimal:
    value: Decimal = Agent.objects.get(pk=agent.pk).cash
    return value


def staff_actions() -> list[dict[str, Any]]:
    return [
        e.data
        for e in SystemEvent.objects.filter(kind=SystemEvent.Kind.STAFF_ACTION).order_by("pk")
    ]


def test_staff_settle_a_missing_market_by_hand_by_the_winning_outcomes_name(
    admin_client: Client, held: tuple[Agent, Agent]
) -> None:
    yes_agent, no_agent = held
    resolutions_check(now=SETTLE_AT)
    page = admin_client.get(settle_page(HELD))
    assert page.status_code == 200
    assert b"2 open positions" in page.content

    response = admin_client.post(
        settle_page(HELD),
        {"choice": "settle", "outcome": "Yes", "note": "Polymarket shows it resolved Yes"},
        follow=True,
    )

    assert b"market 522900: resolved &#x27;Yes&#x27;" in response.content
    market = Market.objects.get(polymarket_id=HELD)
    assert (market.resolution, market.winning_outcome) == (Market.Resolution.RESOLVED, "Yes")
    assert "settled by hand by staff: Polymarket shows it resolved Yes" in market.resolution_note
    assert cash(yes_agent) == Decimal("10300.00")  # 9,300 + 1,000 YES shares at $1
    assert cash(no_agent) == Decimal("9400.00")  # 1,000 NO shares at $0
    assert set(
        Position.objects.filter(market=market).values_list("status", "settlement_value")
    ) == {(Position.Status.SETTLED, Decimal("1000.00")), (Position.Status.SETTLED, Decimal(0))}
    assert_books_balance()
    (action,) = staff_actions()
    assert action["action"] == "settle_by_hand"
    assert action["actor"]["username"] == "admin"
    assert (action["market"], action["winning_outcome"]) == (HELD, "Yes")
    assert SystemEvent.objects.filter(kind=SystemEvent.Kind.MARKET_SETTLED, market=market).exists()
    later = resolutions_check(now=SETTLE_AT + timedelta(hours=1))
    assert later.missing == []  # settled: no longer asked for


def test_staff_cancel_a_missing_market_by_hand_and_every_position_is_refunded_at_cost(
    admin_client: Client, held: tuple[Agent, Agent]
) -> None:
    yes_agent, no_agent = held
    admin_client.post(
        settle_page(HELD), {"choice": "cancel", "note": "gone from Gamma for a month"}
    )

    market = Market.objects.get(polymarket_id=HELD)
    assert market.resolution == Market.Resolution.CANCELLED
    assert cash(yes_agent) == Decimal("9700.00")  # its $400 back
    assert cash(no_agent) == Decimal("10000.00")  # its $600 back
    assert set(Position.objects.filter(market=market).values_list("status", flat=True)) == {
        Position.Status.CANCELLED
    }
    assert_books_balance()
    (action,) = staff_actions()
    assert (action["action"], action["winning_outcome"]) == ("cancel_by_hand", None)
    assert action["failed"] == []


def test_a_winner_not_named_among_the_outcomes_settles_nothing_and_is_recorded_as_failed(
    admin_client: Client, held: tuple[Agent, Agent]
) -> None:
    response = admin_client.post(
        settle_page(HELD), {"choice": "settle", "outcome": "Maybe", "note": "x"}, follow=True
    )
    assert b"&#x27;Maybe&#x27; is not one of its outcomes (Yes, No); nothing settled" in (
        response.content
    )
    assert Market.objects.get(polymarket_id=HELD).resolution == Market.Resolution.OPEN
    (action,) = staff_actions()
    assert action["failed"]
    assert_books_balance()


def test_a_viewer_may_not_settle_by_hand_and_an_operator_may(held: tuple[Agent, Agent]) -> None:
    choice = {"choice": "cancel", "note": "gone from Gamma"}
    viewer = signed_in(staff_user(VIEWERS))
    assert viewer.post(settle_page(HELD), choice).status_code == 403
    assert Market.objects.get(polymarket_id=HELD).resolution == Market.Resolution.OPEN
    assert staff_actions() == []
    operator = signed_in(staff_user(OPERATORS))
    assert operator.post(settle_page(HELD), choice).status_code == 302
    assert Market.objects.get(polymarket_id=HELD).resolution == Market.Resolution.CANCELLED
    (action,) = staff_actions()
    assert action["actor"]["username"] == "Operators-staff"
    assert_books_balance()
