"""Nothing stalls silently (docs/resolution.md): a held market the resolution check leaves
unsettled is recorded on the check with its reason; one that Gamma stops returning is told
once, in one event; past the stated age the status page names it; staff settle it by hand,
by the winning outcome's name, or cancel it, refunded at cost."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from arena.models import Agent, Cohort, ResolutionCheck, SystemEvent
from arena.services.settlement import resolutions_check
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
from tests.markets.conftest import gamma_json
from tests.replay import ReplayServer

HELD = "522900"  # the market Gamma stops returning
OTHER = "253898"  # held too, and still returned


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
