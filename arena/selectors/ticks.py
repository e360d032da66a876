"""Reads of what a 10-minute tick covers: the markets whose prices it refreshes and the agents
it snapshots. A cohort's data is final once none of its agents is left to snapshot, so the
releases read the same rule."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Q, QuerySet, Subquery

from agents.models import BenchmarkModel
from arena.models import Agent, Cohort, PortfolioSnapshot, Position


def held_market_ids() -> set[str]:
    """Return the Polymarket ids of every market in which an agent holds an open position
    (a baseline's position outlives its completed cohort, and is marked all the same)."""
    return set(
        Position.objects.filter(status=Position.Status.OPEN)
        .values_list("market__polymarket_id", flat=True)
        .order_by()  # the model's default ordering would widen the DISTINCT to every row
        .distinct()
    )


def agents_to_mark() -> QuerySet[Agent]:
    """Return the agents a tick marks: every agent of an active cohort, and every baseline
    or outside agent of a completed cohort that still holds an open position (a long-dated
    bet: the cohort completes without waiting for them) or whose last position closed after its
    last snapshot (one more snapshot, so its curve ends at the settled value it is ranked by)."""
    holding = Position.objects.filter(agent=OuterRef("pk"), status=Position.Status.OPEN)
    closed_since = Position.objects.filter(
        agent=OuterRef("pk"), closed_at__gte=OuterRef("last_snapshot_at")
    )
    last_snapshot_at = (
        PortfolioSnapshot.objects.filter(agent=OuterRef("pk"))
        .order_by("-snapshot_timestamp")
        .values("snapshot_timestamp")[:1]
    )
    return Agent.objects.annotate(last_snapshot_at=Subquery(last_snapshot_at)).filter(
        Q(cohort__status=Cohort.Status.ACTIVE)
        | Q(
            Exists(holding) | Exists(closed_since),
            model__kind__in=(BenchmarkModel.Kind.BASELINE, BenchmarkModel.Kind.OUTSIDE),
        )
    )
