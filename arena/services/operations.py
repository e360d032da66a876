"""Operations a staff member starts by hand (the admin's actions): each composes the engine's
own services, one unit at a time, and reports what it did and why each failure failed.

None of them opens a transaction around a network call: the services they call fetch first
and write after, each in its own short transaction (STYLE §2).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.conf import settings

from arena import clock
from arena.evidence import error_text, traceback_summary
from arena.exceptions import DecisionNotRetryable, OutcomesChanged
from arena.models import Decision
from arena.services.audit import determinism_check, determinism_sample
from arena.services.cohorts import cohorts_complete
from arena.services.decisions.run import decision_retry
from arena.services.events import Kind, Level, event_record
from arena.services.settlement import (
    market_outcomes_changed_record,
    market_settle,
    market_settlement_event_record,
)
from markets import services as market_services
from markets.exceptions import GammaUnavailable
from markets.models import Market
from markets.parsing import parse_markets
from markets.resolution import Verdict, verdict_for_record
from markets.sources import MarketSource, market_source

logger = logging.getLogger(__name__)


@dataclass
class OperationReport:
    """What one operation did, unit by unit: a line per unit that went through and a line per
    unit that failed, with its reason."""

    done: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------ decisions


def decisions_retry(
    *, decision_ids: Iterable[int], source: MarketSource | None = None
) -> OperationReport:
    """Retry each decision now (`decision_retry`: a RETRYABLE one, or one left RUNNING by a
    dead worker). A decision that is not retryable, or whose retry fails, is reported with
    its reason and the others go on. A retry that ends DONE or SKIPPED is done; one that is
    still not final (the model failed again) is reported as failed, with the notes."""
    report = OperationReport()
    for decision_id in sorted(set(decision_ids)):
        try:
            outcome = decision_retry(decision_id=decision_id, source=source)
        except DecisionNotRetryable as exc:
            report.failed.append(str(exc))
            continue
        except Exception as exc:  # one decision's failure must not stop the others
            logger.exception("retrying decision %s failed", decision_id)
            report.failed.append(f"decision {decision_id}: retry failed: {error_text(exc)}")
            continue
        line = (
            f"decision {decision_id}: {outcome.status}, {outcome.executed} orders executed, "
            f"{outcome.rejected} rejected"
        )
        if outcome.status in Decision.DECIDED:
            report.done.append(line)
        else:
            notes = "; ".join(outcome.notes)
            report.failed.append(line + (f" ({notes})" if notes else ""))
    return report


# ------------------------------------------------------------------------------- markets


def market_resolution_check(
    *, polymarket_id: str, source: MarketSource | None = None
) -> OperationReport:
    """Ask the market source about one market now, whether or not an agent holds it; settle
    it if it resolved (refund every position if it resolved without a determinable winner),
    then complete the cohorts that hold nothing more — the hourly check's path for one id.

    A failed fetch writes nothing but the failure event; an open market is left as it is.
    A repeat is safe: a settled market is not settled twice.
    """
    report = OperationReport()
    source = source or market_source()
    try:
        records = source.fetch_markets_by_ids([polymarket_id])  # network, no transaction open
    except GammaUnavailable as exc:
        report.failed.append(f"market {polymarket_id}: check failed, nothing settled: {exc}")
        event_record(
            kind=Kind.RESOLUTION_CHECK_FAILED,
            level=Level.WARNING,
            message=f"resolution check of market {polymarket_id} (by hand) failed: {exc}",
            market_id=Market.objects.filter(polymarket_id=polymarket_id)
            .values_list("pk", flat=True)
            .first(),
        )
        return report
    record = next(
        (r for r in records if isinstance(r, dict) and str(r.get("id")) == polymarket_id), None
    )
    if record is None:
        report.failed.append(
            f"market {polymarket_id}: the {source.name} source does not know it; nothing settled"
        )
        return report
    batch = parse_markets([record])
    market_services.markets_upsert(markets=list(batch.markets), include_raw=False)
    try:
        verdict = verdict_for_record(record, now=clock.now())
        settled = verdict.state != "open" and market_settle(
            polymarket_id=polymarket_id, verdict=verdict
        )
    except OutcomesChanged as exc:  # staff decide; the event says why, as the hourly check's
        report.failed.append(str(exc))
        market_outcomes_changed_record(refusal=exc)
        return report
    except Exception as exc:  # recorded like the hourly check's failures; the market stays open
        logger.exception("settling market %s failed", polymarket_id)
        report.failed.append(f"market {polymarket_id}: settlement failed: {error_text(exc)}")
        event_record(
            kind=Kind.SETTLEMENT_FAILED,
            level=Level.ERROR,
            message=f"settling market {polymarket_id} (by hand) failed: {error_text(exc)}",
            market_id=Market.objects.filter(polymarket_id=polymarket_id)
            .values_list("pk", flat=True)
            .first(),
            data={"traceback": traceback_summary(exc)},
        )
        return report
    if verdict.state == "open":
        report.done.append(f"market {polymarket_id}: still open ({verdict.reason})")
        return report
    return _settled_report(report, polymarket_id=polymarket_id, verdict=verdict, settled=settled)


def _settled_report(
    report: OperationReport, *, polymarket_id: str, verdict: Verdict, settled: bool
) -> OperationReport:
    """After a settlement by staff: its event and the cohorts it completes, or that the market
    was settled already."""
    if not settled:
        report.done.append(f"market {polymarket_id}: already settled, nothing to do")
        return report
    market_settlement_event_record(polymarket_id=polymarket_id, verdict=verdict)
    _cohorts_complete_after(report=report, polymarket_id=polymarket_id, verdict=verdict)
    return report


def _cohorts_complete_after(
    *, report: OperationReport, polymarket_id: str, verdict: Verdict
) -> None:
    """Complete the cohorts that hold nothing more now that the market settled, and report
    the settlement with them."""
    outcome = (
        f"resolved {verdict.winning_outcome!r}"
        if verdict.state == "resolved"
        else "cancelled, positions refunded"
    )
    try:
        completed = cohorts_complete()
    except Exception as exc:  # the settlement stands; the next check completes the cohorts
        logger.exception("completing cohorts after settling market %s failed", polymarket_id)
        report.failed.append(
            f"market {polymarket_id}: {outcome}, but completing its cohorts failed: "
            f"{error_text(exc)}; the next resolution check completes them"
        )
        return
    report.done.append(
        f"market {polymarket_id}: {outcome}"
        + (f"; cohorts completed: {', '.join(map(str, completed))}" if completed else "")
    )


def market_settle_by_hand(
    *, polymarket_id: str, winning_outcome: str | None, note: str
) -> OperationReport:
    """Settle a market by a staff member's word, for the market the source no longer answers
    for, or answers for with a record nothing can be decided from (docs/resolution.md).

    `winning_outcome` names the winner BY NAME, exactly as the market lists it: every
    position on it is paid $1 a share, every other $0, and every bet is scored, as the
    hourly check settles a resolved market. None cancels the market: every open position
    is refunded its cost basis, nothing is scored — the rule of an ambiguous resolution.
    `note` says why, and is kept on the market. Then the cohorts that hold nothing more are
    completed. A market already settled is left as it is; no network is asked."""
    report = OperationReport()
    market = Market.objects.filter(polymarket_id=polymarket_id).first()
    if market is None:
        report.failed.append(f"market {polymarket_id}: not in the catalogue")
        return report
    outcomes = [str(o) for o in market.outcomes]
    if winning_outcome is not None and winning_outcome not in outcomes:
        report.failed.append(
            f"market {polymarket_id}: {winning_outcome!r} is not one of its outcomes "
            f"({', '.join(outcomes)}); nothing settled"
        )
        return report
    why = f"settled by hand by staff: {note.strip() or 'no note given'}"
    verdict = (
        Verdict("cancelled", None, None, f"{why}; refunded")
        if winning_outcome is None
        else Verdict("resolved", winning_outcome, outcomes.index(winning_outcome), why)
    )
    try:
        settled = market_settle(polymarket_id=polymarket_id, verdict=verdict)
    except Exception as exc:  # reported to staff; the market stays open as it was
        logger.exception("settling market %s by hand failed", polymarket_id)
        report.failed.append(f"market {polymarket_id}: settlement failed: {error_text(exc)}")
        return report
    return _settled_report(report, polymarket_id=polymarket_id, verdict=verdict, settled=settled)


def markets_resolution_check(
    *, polymarket_ids: Iterable[str], source: MarketSource | None = None
) -> OperationReport:
    """Check each market's resolution now (`market_resolution_check`), in the order given, and
    report them together. A market whose check raises is reported with its reason and the
    others go on. A repeat is safe: a settled market is not settled twice."""
    report = OperationReport()
    for polymarket_id in polymarket_ids:
        try:
            one = market_resolution_check(polymarket_id=polymarket_id, source=source)
        except Exception as exc:  # one market's failure must not hide the others' results
            report.failed.append(f"market {polymarket_id}: check failed: {error_text(exc)}")
            continue
        report.done += one.done
        report.failed += one.failed
    return report


# ------------------------------------------------------------------------------ the audit


def determinism_audit(*, size: int, seed: int = 0) -> OperationReport:
    """Re-send a seeded sample of `size` stored OpenRouter prompts at temperature 0 and record
    a DeterminismCheck for each (`determinism_sample`, `determinism_check`). Costs money:
    about what the sampled decisions cost the first time. Without an OpenRouter key nothing
    is sent and the report says why."""
    report = OperationReport()
    if not settings.OPENROUTER_API_KEY:
        report.failed.append("OPENROUTER_API_KEY is not set: nothing sent")
        return report
    for decision in determinism_sample(size=size, seed=seed):
        try:
            check = determinism_check(decision=decision)
        except Exception as exc:  # one prompt's failure must not stop the others
            logger.exception("determinism check of decision %s failed", decision.pk)
            report.failed.append(f"decision {decision.pk}: {error_text(exc)}")
            continue
        if check.matches is None:
            report.failed.append(f"decision {decision.pk}: {check.error}")
        else:
            verdict = "repeated" if check.matches else "differs"
            report.done.append(f"decision {decision.pk} ({decision.requested_model}): {verdict}")
    return report
