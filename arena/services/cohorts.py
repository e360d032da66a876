"""Cohorts: the weekly start, numbering, and completion."""

from __future__ import annotations

import logging
from datetime import UTC, date, datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Max

from agents.models import BenchmarkModel
from arena import clock
from arena.models import (
    STARTING_BALANCE,
    Agent,
    Cohort,
    Decision,
    Position,
)
from arena.services.marking import portfolio_snapshots_write

logger = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------- cohorts


def cohort_week_start(now: datetime | None = None) -> date:
    """Return the Sunday (UTC) of the week containing `now`: the cohort's week start."""
    moment = (now or clock.now()).astimezone(UTC)
    day = moment.date()
    return day - timedelta(days=(day.weekday() + 1) % 7)


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
    existing = Cohort.objects.filter(week_start=week_start).first()
    if existing:
        return existing, False
    started_at = datetime(week_start.year, week_start.month, week_start.day, tzinfo=UTC)
    try:
        with transaction.atomic():
            number = (Cohort.objects.aggregate(n=Max("number"))["n"] or 0) + 1
            cohort = Cohort.objects.create(
                number=number, week_start=week_start, started_at=min(started_at, now)
            )
            Agent.objects.bulk_create(
                Agent(cohort=cohort, model=model, cash=STARTING_BALANCE)
                for model in BenchmarkModel.objects.filter(active=True)
            )
    except IntegrityError:
        return Cohort.objects.get(week_start=week_start), False
    logger.info("started %s with %d agents", cohort, cohort.agents.count())
    return cohort, True


def cohorts_complete(*, now: datetime | None = None) -> list[int]:
    """Complete every active cohort that has decided at least once and holds no open
    position; its final return is then fixed. Return the completed cohort numbers."""
    now = now or clock.now()
    done = list(
        Cohort.objects.filter(status=Cohort.Status.ACTIVE, decisions__status=Decision.Status.DONE)
        .exclude(agents__positions__status=Position.Status.OPEN)
        .distinct()
        .values_list("pk", "number")
    )
    if done:
        with transaction.atomic():
            finishing = Cohort.objects.filter(
                pk__in=[pk for pk, _ in done], status=Cohort.Status.ACTIVE
            )
            # The curve ends at the final, all-cash value: later ticks skip completed cohorts.
            portfolio_snapshots_write(cohorts=finishing, at=now)
            finishing.update(status=Cohort.Status.COMPLETED, completed_at=now)
    return [number for _, number in done]
