"""Resolution and settlement: payouts, refunds and Brier scores."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q

from arena import clock, money
from arena.evidence import error_text, storable_text, traceback_summary
from arena.exceptions import OutcomesChanged
from arena.models import (
    Agent,
    PanelForecast,
    Position,
    ResolutionCheck,
    SystemEvent,
    Trade,
)
from arena.services.cohorts import cohorts_complete
from arena.services.events import Kind, Level, event_record
from arena.services.forecasts import forecasts_score
from arena.valuation import side_outcome_index
from markets import services as market_services
from markets.exceptions import GammaUnavailable
from markets.models import Market
from markets.parsing import parse_markets
from markets.resolution import Verdict, verdict_for_record
from markets.sources import MarketSource, market_source
from scoring.brier import bet_brier_for_outcome

logger = logging.getLogger(__name__)


# ------------------------------------------------------------- resolution and settlement


@dataclass
class ResolutionReport:
    checked: int = 0
    resolved: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    completed_cohorts: list[int] = field(default_factory=list)
    # Every market left unsettled, and why: not returned at all ({id, reason}), or returned
    # and still open ({id, why, reason}; `Verdict.why_open`).
    missing: list[dict[str, str]] = field(default_factory=list)
    still_open: list[dict[str, str]] = field(default_factory=list)
    # Settled markets read again (`markets_to_recheck`), and those whose final verdict
    # upstream is no longer the one they were settled on.
    rechecked: int = 0
    changed: list[str] = field(default_factory=list)
    error: str = ""

    def summary(self) -> str:
        if self.error:
            return f"resolution check failed, nothing settled: {self.error}"
        return (
            f"checked {self.checked} markets: {len(self.resolved)} resolved, "
            f"{len(self.cancelled)} cancelled (refunded), {len(self.failed)} failed to settle, "
            f"{len(self.missing)} not returned, {len(self.still_open)} still open; "
            f"{len(self.completed_cohorts)} cohorts completed"
            + (
                f"; {self.rechecked} settled markets read again, {len(self.changed)} changed"
                if self.rechecked
                else ""
            )
        )


def market_settle(*, polymarket_id: str, verdict: Verdict, now: datetime | None = None) -> bool:
    """Settle every open position in the market and mark it resolved or cancelled, in one
    transaction: the market is marked only if its settlement succeeds (002). Resolved: a
    winning share pays $1, a losing one $0, and every bet placed in the market gets its Brier
    score from its implied confidence. Cancelled: each position is refunded its cost basis,
    no Brier. Return False when there was nothing to do (already settled).

    A position wins by its outcome's name (`valuation.side_outcome_index`), never by where
    the record lists it: the market row holds the outcomes of the record the verdict was
    read from (the callers upsert it first). Raise OutcomesChanged, settling nothing, when
    that list no longer names an outcome a position in the market was bought on."""
    now = now or clock.now()
    with transaction.atomic():
        market = Market.objects.select_for_update(of=("self",)).get(polymarket_id=polymarket_id)
        if market.resolution != Market.Resolution.OPEN:
            return False
        resolved = verdict.state == "resolved"
        winner = _winning_index(market=market, verdict=verdict) if resolved else None
        positions = list(
            Position.objects.select_for_update(of=("self",))
            .filter(market=market, status=Position.Status.OPEN)
            .order_by("pk")
        )
        payouts = _positions_settle(
            positions=positions, outcomes=market.outcomes, winner=winner, now=now
        )
        for agent in (
            Agent.objects.select_for_update(of=("self",)).filter(pk__in=payouts).order_by("pk")
        ):
            if payouts[agent.pk]:
                Agent.objects.filter(pk=agent.pk).update(cash=agent.cash + payouts[agent.pk])
        if winner is not None:
            _bets_score(market=market, winner=winner, now=now)
            forecasts_score(market=market, yes=winner == 0, now=now)
        market.resolution = Market.Resolution.RESOLVED if resolved else Market.Resolution.CANCELLED
        market.winning_outcome = verdict.winning_outcome or "" if resolved else ""
        market.resolved_at = now
        market.resolution_note = verdict.reason
        market.save(
            update_fields=["resolution", "winning_outcome", "resolved_at", "resolution_note"]
        )
    return True


def _winning_index(*, market: Market, verdict: Verdict) -> int:
    """Return the index of the verdict's winner in the market's outcomes; raise
    OutcomesChanged when the outcomes no longer name a side a position was bought on."""
    outcomes = [str(o) for o in market.outcomes]
    if verdict.winning_outcome not in outcomes:
        raise ValueError(
            f"the winner {verdict.winning_outcome!r} is not an outcome of market "
            f"{market.polymarket_id} {outcomes}"
        )
    sides = (
        Position.objects.filter(market=market).order_by().values_list("side", flat=True).distinct()
    )
    unlisted = sorted(s for s in sides if side_outcome_index(side=s, outcomes=outcomes) is None)
    if unlisted:
        raise OutcomesChanged(
            polymarket_id=market.polymarket_id, outcomes=outcomes, unlisted_sides=unlisted
        )
    return outcomes.index(verdict.winning_outcome)


def _positions_settle(
    *, positions: list[Position], outcomes: list[str], winner: int | None, now: datetime
) -> dict[int, Decimal]:
    """Settle `positions` (locked) to the outcome at `winner`, or refund them when it is
    None; return the payout per agent."""
    payouts: dict[int, Decimal] = {}
    for position in positions:
        if winner is not None:
            won = side_outcome_index(side=position.side, outcomes=outcomes) == winner
            payout = money.cents_down(position.shares) if won else Decimal("0.00")
            position.status = Position.Status.SETTLED
        else:
            payout = position.cost_basis
            position.status = Position.Status.CANCELLED
        position.settlement_value = payout
        position.realized_pnl = position.realized_pnl + payout - position.cost_basis
        position.closed_at = now
        payouts[position.agent_id] = payouts.get(position.agent_id, Decimal(0)) + payout
    Position.objects.bulk_update(
        positions, ["status", "settlement_value", "realized_pnl", "closed_at"]
    )
    return payouts


def _bets_score(*, market: Market, winner: int, now: datetime) -> None:
    """Give every executed bet in the market its Brier score: its side won when its
    position's outcome is the one at `winner` in the market's outcomes (001 §1.3)."""
    bets = list(
        Trade.objects.select_related("position").filter(
            market=market, kind=Trade.Kind.BUY, status=Trade.Status.EXECUTED
        )
    )
    for bet in bets:
        won = (
            bet.position is not None
            and side_outcome_index(side=bet.position.side, outcomes=market.outcomes) == winner
        )
        bet.side_won = won
        bet.brier_score = bet_brier_for_outcome(
            confidence=bet.implied_confidence or 0.0, side_won=won
        )
        bet.scored_at = now
    Trade.objects.bulk_update(bets, ["side_won", "brier_score", "scored_at"])


def resolutions_check(
    *, now: datetime | None = None, source: MarketSource | None = None
) -> ResolutionReport:
    """Ask the market source about every market that has an open position or an executed,
    unscored bet (`markets_to_check`); settle those that resolved (or refund those resolved
    without a determinable winner); then complete the cohorts that hold nothing more. A
    failed fetch settles nothing and says why; a failed settlement leaves its market open
    for the next check, and the other markets go on."""
    now = now or clock.now()
    source = source or market_source()
    report = ResolutionReport()
    # Recorded however it ends, so the status page never shows an older check as the last.
    try:
        ids = markets_to_check()
        recheck = markets_to_recheck(now=now)
        report.checked, report.rechecked = len(ids), len(recheck)
        if ids or recheck:
            wanted = set(ids)
            try:
                # network, no transaction open
                records = source.fetch_markets_by_ids(ids + recheck)
            except GammaUnavailable as exc:
                report.error = str(exc)
                event_record(
                    kind=Kind.RESOLUTION_CHECK_FAILED,
                    level=Level.WARNING,
                    message=f"resolution check of {len(ids)} markets failed: {exc}",
                )
                return report
            batch = parse_markets(records)
            market_services.markets_upsert(
                markets=[m for m in batch.markets if m.polymarket_id in wanted], include_raw=False
            )
            returned = set()
            for record in records:
                if isinstance(record, dict) and str(record.get("id")) in wanted:
                    returned.add(str(record["id"]))
                    _record_settle(record=record, report=report, now=now)
            _markets_missing_record(
                missing=[pid for pid in ids if pid not in returned], source=source, report=report
            )
            again = set(recheck)
            for record in records:
                if isinstance(record, dict) and str(record.get("id")) in again:
                    _record_recheck(record=record, report=report, now=now)
        report.completed_cohorts = cohorts_complete(now=now)
    except Exception as exc:
        report.error = f"the check broke off: {error_text(exc)}"
        raise
    finally:
        _check_record(report=report, at=now)
    return report


def _record_settle(*, record: dict[str, Any], report: ResolutionReport, now: datetime) -> None:
    """Settle the market of one final record if its verdict is final, and report it. A
    failure is recorded on the market, which the next check retries, and goes no further."""
    pid = str(record["id"])
    try:
        verdict = verdict_for_record(record, now=now)
        if verdict.state == "open":
            report.still_open.append({"id": pid, "why": verdict.why_open, "reason": verdict.reason})
            return
        if market_settle(polymarket_id=pid, verdict=verdict, now=now):
            settled = report.resolved if verdict.state == "resolved" else report.cancelled
            settled.append(pid)
            market_settlement_event_record(polymarket_id=pid, verdict=verdict)
    except OutcomesChanged as exc:  # waits for staff; every check finds it again
        report.failed.append(pid)
        market_outcomes_changed_record(refusal=exc)
    except Exception as exc:  # a failed settlement must not stop the others
        logger.exception("settling market %s failed; the next check retries it", pid)
        report.failed.append(pid)
        event_record(
            kind=Kind.SETTLEMENT_FAILED,
            level=Level.ERROR,
            message=f"settling market {pid} failed; the next check retries it: {error_text(exc)}",
            market_id=Market.objects.filter(polymarket_id=pid).values_list("pk", flat=True).first(),
            data={"traceback": traceback_summary(exc)},
        )


def _markets_missing_record(
    *, missing: list[str], source: MarketSource, report: ResolutionReport
) -> None:
    """Report every market asked for that the source did not return, and tell staff once:
    one warning event when a market goes missing, none while the checks that follow find it
    missing again (the last check that read the source's answer says so); a market that
    comes back and goes missing again is told again (docs/resolution.md)."""
    reason = f"the {source.name} source did not return it when asked by id"
    report.missing += [{"id": pid, "reason": reason} for pid in missing]
    if not missing:
        return
    last = ResolutionCheck.objects.filter(error="").order_by("-checked_at", "-pk").first()
    known = {str(entry.get("id")) for entry in last.missing} if last else set()
    rows = Market.objects.filter(polymarket_id__in=missing).exclude(polymarket_id__in=known)
    for market_id, pid in rows.order_by("polymarket_id").values_list("pk", "polymarket_id"):
        event_record(
            kind=Kind.MARKET_MISSING,
            level=Level.WARNING,
            message=f"market {pid} is held but {reason}; it stays open, and is asked for at "
            "every check, until the source returns it or staff settle or cancel it by hand",
            market_id=market_id,
            data={"reason": reason},
        )


def market_outcomes_changed_record(*, refusal: OutcomesChanged) -> None:
    """Tell staff that a market was not settled because its outcomes changed: one error
    event per market and list of outcomes, however many checks find it so."""
    market_id = (
        Market.objects.filter(polymarket_id=refusal.polymarket_id)
        .values_list("pk", flat=True)
        .first()
    )
    told = SystemEvent.objects.filter(
        kind=Kind.OUTCOMES_CHANGED, market__polymarket_id=refusal.polymarket_id
    )
    if any(
        data.get("outcomes") == refusal.outcomes for data in told.values_list("data", flat=True)
    ):
        return
    event_record(
        kind=Kind.OUTCOMES_CHANGED,
        level=Level.ERROR,
        message=str(refusal),
        market_id=market_id,
        data={"outcomes": refusal.outcomes, "unlisted_sides": refusal.unlisted_sides},
    )


def _check_record(*, report: ResolutionReport, at: datetime) -> None:
    ResolutionCheck.objects.create(
        checked_at=at,
        markets_checked=report.checked,
        resolved=report.resolved,
        cancelled=report.cancelled,
        failed=report.failed,
        completed_cohorts=report.completed_cohorts,
        missing=report.missing,
        still_open=report.still_open,
        error=storable_text(report.error),
    )


def markets_to_recheck(*, now: datetime) -> list[str]:
    """Return the Polymarket ids (sorted) of the markets settled here without UMA's word in
    the last RESOLUTION_RECHECK_DAYS: closed with no UMA status, settled on terminal prices
    or refunded after the wait (rules 6 and 7 of docs/resolution.md), or by staff's hand.
    UMA may still resolve such a market, and differently. (A market read again is not
    upserted: its row keeps the blank UMA status it was settled with, so it stays in this
    list for the whole period.)"""
    since = now - timedelta(days=settings.RESOLUTION_RECHECK_DAYS)
    return sorted(
        Market.objects.exclude(resolution=Market.Resolution.OPEN)
        .filter(resolved_at__gte=since, uma_resolution_status="")
        .values_list("polymarket_id", flat=True)
    )


def _record_recheck(*, record: dict[str, Any], report: ResolutionReport, now: datetime) -> None:
    """Compare a settled market's final verdict now with the one it was settled on; when it
    differs, record it once for staff (an error event naming both). Nothing is paid back or
    paid again here: the settlement stands until staff correct it."""
    pid = str(record["id"])
    market = Market.objects.filter(polymarket_id=pid).first()
    if market is None:
        return
    verdict = verdict_for_record(record, now=now)
    if verdict.state == "open":
        return  # not final upstream (proposed, disputed): nothing to compare yet
    settled = (market.resolution, market.winning_outcome)
    upstream = (verdict.state, verdict.winning_outcome or "")
    if upstream == settled:
        return
    report.changed.append(pid)
    said = (
        f"{verdict.state} {verdict.winning_outcome!r}" if verdict.winning_outcome else "cancelled"
    )
    told = SystemEvent.objects.filter(
        kind=Kind.RESOLUTION_CHANGED, market=market, data__upstream=list(upstream)
    ).exists()
    if told:
        return
    event_record(
        kind=Kind.RESOLUTION_CHANGED,
        level=Level.ERROR,
        message=(
            f"market {pid} was settled as {market.resolution} "
            f"{market.winning_outcome!r} without UMA's word; upstream now says {said}: "
            f"{verdict.reason}. The settlement stands until staff correct it."
        ),
        market_id=market.pk,
        data={"settled": list(settled), "upstream": list(upstream)},
    )


def markets_to_check() -> list[str]:
    """Return the Polymarket ids (sorted) of every unresolved market in which a position is
    open, or an executed bet or a panel forecast (methodology v2) is still unscored. Whether
    a bet gets its Brier score never depends on what other agents hold: a market every agent
    sold out of is checked too."""
    holding = Position.objects.filter(market=OuterRef("pk"), status=Position.Status.OPEN)
    unscored = Trade.objects.filter(
        market=OuterRef("pk"),
        kind=Trade.Kind.BUY,
        status=Trade.Status.EXECUTED,
        brier_score__isnull=True,
    )
    forecast = PanelForecast.objects.filter(market=OuterRef("pk"), scored_at__isnull=True)
    return sorted(
        Market.objects.filter(resolution=Market.Resolution.OPEN)
        .filter(Q(Exists(holding)) | Q(Exists(unscored)) | Q(Exists(forecast)))
        .values_list("polymarket_id", flat=True)
    )


def market_settlement_event_record(*, polymarket_id: str, verdict: Verdict) -> None:
    market = Market.objects.filter(polymarket_id=polymarket_id).values_list("pk", "question")[0]
    if verdict.state == "resolved":
        event_record(
            kind=Kind.MARKET_SETTLED,
            message=f"market {polymarket_id} resolved {verdict.winning_outcome!r}: "
            f"{market[1][:120]}",
            market_id=market[0],
            data={"winning_outcome": verdict.winning_outcome, "reason": verdict.reason},
        )
    else:
        event_record(
            kind=Kind.MARKET_CANCELLED,
            level=Level.WARNING,
            message=f"market {polymarket_id} cancelled, positions refunded: {verdict.reason}",
            market_id=market[0],
            data={"reason": verdict.reason},
        )
