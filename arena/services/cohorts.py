"""Cohorts: the weekly start, numbering, and completion."""

from __future__ import annotations

import logging
from datetime import date, datetime

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Exists, F, Max, OuterRef, QuerySet

from agents.models import BenchmarkModel
from arena import clock
from arena.models import (
    STARTING_BALANCE,
    Agent,
    Cohort,
    Decision,
    Position,
)
from arena.services.events import Kind, event_record
from arena.services.marking import portfolio_snapshots_write
from arena.services.schedule import cohort_missed_record
from arena.weeks import cohort_week_start, week_opens, within_start_grace

logger = logging.getLogger(__name__)

COHORT_NUMBER_TRIES = 20


# ---------------------------------------------------------------------------------- cohorts


def cohort_start(
    *, week_start: date | None = None, now: datetime | None = None
) -> tuple[Cohort, bool]:
    """Start the cohort of `week_start` (default: this week) with one agent per active lineup
    model, $10,000 each. Return (cohort, created); a repeat returns the existing cohort and
    False. The unique week start makes a concurrent start a no-op too."""
    now = now or clock.now()
    week_start = week_start or cohort_week_start(now)
    if week_start.weekday() != 6:
        raise ValueError(f"{week_start} is not a Sunday: cohorts start on Sunday 00:00 UTC")
    started_at = week_opens(week_start)
    # Two starts for different weeks can read the same max(number); the loser's INSERT then
    # fails on the unique number and it tries again with the new max. A failure on the week
    # means another start of this very week won: its cohort is returned.
    for _ in range(COHORT_NUMBER_TRIES):
        existing = Cohort.objects.filter(week_start=week_start).first()
        if existing:
            return existing, False
        try:
            with transaction.atomic():
                number = (Cohort.objects.aggregate(n=Max("number"))["n"] or 0) + 1
                cohort = Cohort.objects.create(
                    number=number,
                    week_start=week_start,
                    started_at=min(started_at, now),
                    methodology_version=settings.METHODOLOGY_VERSION,
                )
                Agent.objects.bulk_create(
                    Agent(cohort=cohort, model=model, cash=STARTING_BALANCE)
                    for model in BenchmarkModel.objects.filter(active=True)
                )
        except IntegrityError:
            continue
        logger.info("started %s with %d agents", cohort, cohort.agents.count())
        event_record(
            kind=Kind.COHORT_STARTED,
            message=f"{cohort} started with {cohort.agents.count()} agents",
            cohort_id=cohort.pk,
        )
        return cohort, True
    raise RuntimeError(f"could not number the cohort of {week_start} after retries")


def cohort_start_scheduled(*, now: datetime | None = None) -> tuple[Cohort | None, bool]:
    """The weekly start (Sunday 00:00 UTC): start this week's cohort as `cohort_start` does,
    but only within its grace (`within_start_grace`), as a decision run would. A start that
    comes later (a restarted beat fires the missed Sunday on Tuesday) starts nothing: its
    cohort would first decide on Tuesday's prices. It records the week as missed instead
    (once; the status page says so, with the command an operator runs to start it) and
    returns (None, False); a cohort that exists is returned as by a repeat."""
    now = now or clock.now()
    week_start = cohort_week_start(now)
    if within_start_grace(week_start, now):
        return cohort_start(week_start=week_start, now=now)
    existing = Cohort.objects.filter(week_start=week_start).first()
    if existing:
        return existing, False
    cohort_missed_record(week_start=week_start, start_fired=True)
    return None, False


def cohorts_completable() -> QuerySet[Cohort]:
    """Return the active cohorts that may complete now.

    A cohort completes when every one of its agents has decided in its first week (DONE or
    SKIPPED) or is bankrupt, and no LLM agent holds an open position. Baseline and outside
    agents never keep a cohort alive — they must not change what the LLMs experience — so
    their positions left open stay open, and keep being marked and settled.
    """
    first_week_decided = Decision.objects.filter(
        agent=OuterRef("pk"), week_start=F("cohort__week_start"), status__in=Decision.DECIDED
    )
    owing = (
        Agent.objects.filter(cohort=OuterRef("pk"))
        .exclude(status=Agent.Status.BANKRUPT)
        .exclude(Exists(first_week_decided))
    )
    llm_open = Position.objects.filter(
        agent__cohort=OuterRef("pk"),
        status=Position.Status.OPEN,
        # Outside agents, like the baselines, must not change what the LLMs experience: a
        # long-dated bet of theirs would keep the lineup deciding for weeks.
        agent__model__kind=BenchmarkModel.Kind.LLM,
    )
    return (
        Cohort.objects.filter(status=Cohort.Status.ACTIVE)
        .filter(Exists(Agent.objects.filter(cohort=OuterRef("pk"))))
        .exclude(Exists(owing))
        .exclude(Exists(llm_open))
    )


def cohorts_complete(*, now: datetime | None = None) -> list[int]:
    """Complete every cohort `cohorts_completable` returns; its final return is then fixed
    (a final snapshot at completion). Return the completed cohort numbers."""
    now = now or clock.now()
    candidates = list(cohorts_completable().values_list("pk", flat=True))
    if not candidates:
        return []
    with transaction.atomic():
        # A trade locks its cohort's row before it opens a position and refuses a completed
        # cohort; so, with the rows locked, the rule is read again: a bet that committed
        # meanwhile keeps its cohort active, and none can land after completion.
        locked = list(
            Cohort.objects.select_for_update(of=("self",))
            .filter(pk__in=candidates, status=Cohort.Status.ACTIVE)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        done = list(
            cohorts_completable()
            .filter(pk__in=locked)
            .values_list("pk", "number")
            .order_by("number")
        )
        if done:
            finishing = Cohort.objects.filter(pk__in=[pk for pk, _ in done])
            # The curve ends at the final value: later ticks mark only the baselines'
            # positions still open, never a completed cohort's LLM agents.
            portfolio_snapshots_write(agents=Agent.objects.filter(cohort__in=finishing), at=now)
            finishing.update(status=Cohort.Status.COMPLETED, completed_at=now)
    if done:
        for pk, number in done:
            baseline_open = Position.objects.filter(
                agent__cohort_id=pk, status=Position.Status.OPEN
            ).count()
            event_record(
                kind=Kind.COHORT_COMPLETED,
                message=f"cohort {number} completed"
                + (
                    f"; {baseline_open} baseline positions stay open and are marked and settled"
                    if baseline_open
                    else ""
                ),
                cohort_id=pk,
            )
    return [number for _, number in done]
