"""Mend the past (`manage.py mend_past`): the records made under defects since fixed are
audited and marked, never rewritten, every release they change is published again saying
what changed, and the run is recorded as a staff action. A repeat changes nothing."""

from __future__ import annotations

from decimal import Decimal
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from arena.models import (
    FIRST_ROUND,
    KEPT_ROUND,
    Cohort,
    DataRelease,
    Decision,
    DeterminismCheck,
    Position,
    SystemEvent,
    Trade,
)
from arena.services.mend import VOID_FIRST_ROUND, past_mend, settlements_misnamed
from arena.services.releases import releases_publish_due
from markets.models import Market
from tests.arena.test_releases import (  # noqa: F401  (the module world and its fixtures)
    PUBLISHED_AT,
    after_last_snapshot,
    cohort,
    completed_world,
    csv_rows,
    long_dated_bet,
    outside_agent,
    root,
)

pytestmark = pytest.mark.django_db


def staff_actions() -> list[SystemEvent]:
    return list(SystemEvent.objects.filter(kind="staff_action", data__action="mend_past"))


def test_an_outside_trade_before_fair_entry_is_marked_and_its_release_published_again(
    root: Path,  # noqa: F811
    cohort: Cohort,  # noqa: F811
) -> None:
    n = cohort.number
    bet = long_dated_bet(outside_agent(cohort))  # executed at the snapshot, no live price
    assert releases_publish_due(now=PUBLISHED_AT).done == [f"cohort {n}: published cohort-{n}-r1"]
    lineup = Trade.objects.filter(agent__cohort=cohort, status="executed").exclude(pk=bet.pk)
    assert lineup.exists()

    report = past_mend(now=after_last_snapshot(cohort))

    assert report.before_fair_entry == 1
    bet.refresh_from_db()
    assert bet.before_fair_entry
    assert not lineup.filter(before_fair_entry=True).exists()  # the lineup had no such option
    assert report.republished == [f"cohort {n}: published cohort-{n}-r2"]
    r1, r2 = DataRelease.objects.order_by("version")
    trades = {row["trade_id"]: row for row in csv_rows(root / r2.name / "trades.csv")}
    assert trades[str(bet.pk)]["before_fair_entry"] == "true"
    released = {row["trade_id"]: row for row in csv_rows(root / r1.name / "trades.csv")}
    assert released[str(bet.pk)]["before_fair_entry"] == "false"  # r1 stays as published
    [action] = staff_actions()
    assert action.data["before_fair_entry"] == 1
    assert action.data["republished"] == report.republished

    again = past_mend(now=after_last_snapshot(cohort, days=4))
    assert (again.before_fair_entry, again.republished) == (0, [])
    assert DataRelease.objects.count() == 2


def test_an_outside_trade_priced_at_submission_is_not_marked(cohort: Cohort) -> None:  # noqa: F811
    bet = long_dated_bet(outside_agent(cohort))
    Trade.objects.filter(pk=bet.pk).update(snapshot_price="0.4", live_price="0.35")
    assert past_mend().before_fair_entry == 0


def test_a_first_round_determinism_check_is_void_and_no_longer_counted(
    cohort: Cohort,  # noqa: F811
    client: Client,
) -> None:
    decision = Decision.objects.filter(cohort=cohort).first()
    assert decision is not None

    def check(method: str) -> DeterminismCheck:
        return DeterminismCheck.objects.create(
            decision=decision,
            requested_model="m",
            matches=False,
            original=decision.parsed,
            checked_at=PUBLISHED_AT,
            method=method,
        )

    old, new = check(FIRST_ROUND), check(KEPT_ROUND)
    assert past_mend().void_checks == 1
    old.refresh_from_db()
    new.refresh_from_db()
    assert (old.void_reason, new.void_reason) == (VOID_FIRST_ROUND, "")
    page = client.get("/status/").content.decode()
    assert "1 check:" in page  # only the kept-round one is counted
    assert "1 earlier check made by a method that measured nothing" in page
    assert past_mend().void_checks == 0


def test_a_position_paid_on_another_outcome_than_its_side_names_is_reported(
    cohort: Cohort,  # noqa: F811
) -> None:
    """Settled by position in the list, not by name: the outcomes are listed ["No", "Yes"],
    "Yes" won, and a YES position stored with outcome index 0 was paid nothing."""
    bet = long_dated_bet(outside_agent(cohort))
    assert bet.position_id is not None
    assert bet.market_id is not None
    market = Market.objects.get(pk=bet.market_id)
    Market.objects.filter(pk=market.pk).update(
        outcomes=["No", "Yes"],
        resolution=Market.Resolution.RESOLVED,
        winning_outcome="Yes",
        resolved_at=PUBLISHED_AT,
    )
    Position.objects.filter(pk=bet.position_id).update(
        status=Position.Status.SETTLED, settlement_value=Decimal("0.00")
    )
    [found] = settlements_misnamed()
    assert found["position"] == bet.position_id
    assert (found["side"], found["winning_outcome"], found["paid"]) == ("YES", "Yes", "0.00")
    # Paid as the winner it is: nothing to report.
    Position.objects.filter(pk=bet.position_id).update(settlement_value=Decimal("125.00"))
    assert settlements_misnamed() == []


def test_the_command_prints_what_it_did_and_records_it(cohort: Cohort) -> None:  # noqa: F811
    out = StringIO()
    call_command("mend_past", stdout=out)
    assert "0 settled positions paid on another outcome" in out.getvalue()
    [action] = staff_actions()
    assert action.data["actor"]["username"] == "manage.py mend_past"
