"""Mend the past: the records a live benchmark made under defects since fixed.

The fixes change what happens from now on; the records made before stay as they were made,
and are marked rather than rewritten, so a reader sees both what happened and what it is
worth (`past_mend`, run by `manage.py mend_past` and recorded as a staff action):

- every settled position is audited for a settlement by outcome position rather than name
  (the outcome it was paid on is not the one its side names): reported, never re-paid here;
- an outside agent's order executed at the snapshot's price before orders were priced at
  submission is marked `before_fair_entry`;
- a determinism check made by the first-round method (the first attempt's prompt compared
  with the final answer, which measured nothing) is void, with the reason;
- every cohort whose released data this changes is published again: the next release,
  which says what changed. Run again, it marks and publishes nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from django.db import transaction

from agents.models import BenchmarkModel
from arena import clock
from arena.models import FIRST_ROUND, DataRelease, DeterminismCheck, Position, Trade
from arena.services.events import staff_action_record
from arena.services.releases import releases_publish
from arena.valuation import side_outcome_index
from markets.models import Market

VOID_FIRST_ROUND = (
    "made by the first-round method: the first attempt's prompt was re-sent and its answer "
    "compared with the decision's final answer, which may come from a later prompt; it "
    "measured no determinism"
)


@dataclass
class MendReport:
    # Settled positions paid on another outcome than the one their side names: id, side,
    # the outcome it was paid on, the outcome that won.
    misnamed: list[dict[str, object]] = field(default_factory=list)
    before_fair_entry: int = 0
    void_checks: int = 0
    republished: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"{len(self.misnamed)} settled positions paid on another outcome than their side "
            f"names; {self.before_fair_entry} outside trades marked as before fair entry; "
            f"{self.void_checks} determinism checks void; releases published again: "
            f"{', '.join(self.republished) or 'none'}"
            + (f"; failed: {'; '.join(self.failed)}" if self.failed else "")
        )


def settlements_misnamed() -> list[dict[str, object]]:
    """Every settled position of a resolved market whose payout disagrees with its side's
    name: paid as a winner while the outcome its side names lost, or the other way round."""
    found = []
    settled = Position.objects.filter(
        status=Position.Status.SETTLED, market__resolution=Market.Resolution.RESOLVED
    ).select_related("market")
    for position in settled.iterator(chunk_size=2000):
        market = position.market
        names = [str(o) for o in market.outcomes]
        held = side_outcome_index(side=position.side, outcomes=names)
        won = market.winning_outcome in names and held == names.index(market.winning_outcome)
        paid = (position.settlement_value or Decimal(0)) > 0
        if won != paid:
            found.append(
                {
                    "position": position.pk,
                    "market": market.polymarket_id,
                    "side": position.side,
                    "paid_outcome_index": position.outcome_index,
                    "winning_outcome": market.winning_outcome,
                    "paid": str(position.settlement_value),
                }
            )
    return found


def past_mend(*, actor: str = "manage.py mend_past", now: datetime | None = None) -> MendReport:
    """Audit, mark and publish again, as the module says; record it as a staff action."""
    now = now or clock.now()
    report = MendReport(misnamed=settlements_misnamed())
    unfair = Trade.objects.filter(
        agent__model__kind=BenchmarkModel.Kind.OUTSIDE,
        status=Trade.Status.EXECUTED,
        live_price__isnull=True,
        before_fair_entry=False,
    )
    with transaction.atomic():
        cohorts = set(unfair.values_list("agent__cohort__number", flat=True))
        report.before_fair_entry = unfair.update(before_fair_entry=True)
        report.void_checks = DeterminismCheck.objects.filter(
            method=FIRST_ROUND, void_reason=""
        ).update(void_reason=VOID_FIRST_ROUND)
    released = set(DataRelease.objects.values_list("cohort__number", flat=True))
    if cohorts & released:
        published = releases_publish(cohort_numbers=sorted(cohorts & released), now=now)
        report.republished, report.failed = published.done, published.failed
    staff_action_record(
        actor_id=None,
        actor_username=actor,
        action="mend_past",
        summary=report.summary(),
        failed=bool(report.failed),
        data={
            "misnamed": report.misnamed[:200],
            "misnamed_count": len(report.misnamed),
            "before_fair_entry": report.before_fair_entry,
            "void_checks": report.void_checks,
            "republished": report.republished,
        },
    )
    return report
