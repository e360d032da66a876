"""Reads of the information pages (methodology, about): the lineup and the methodology
versions the cohorts ran."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time

from django.db.models import Count, Max, Min, Q, QuerySet

from agents.models import BenchmarkModel
from arena.models import Cohort


@dataclass(frozen=True)
class VersionUse:
    """A methodology version and the cohorts (by number) that ran it."""

    version: str
    cohorts: int
    first_number: int
    last_number: int


def methodology_versions() -> list[VersionUse]:
    """Return each methodology version stored on a cohort, oldest first (one query)."""
    rows = (
        Cohort.objects.order_by()
        .values("methodology_version")
        .annotate(n=Count("pk"), first=Min("number"), last=Max("number"))
        .order_by("first")
    )
    return [
        VersionUse(
            version=row["methodology_version"],
            cohorts=row["n"],
            first_number=row["first"],
            last_number=row["last"],
        )
        for row in rows
    ]


def lineup() -> QuerySet[BenchmarkModel]:
    """Return the active lineup, LLMs first, in display order."""
    return BenchmarkModel.objects.filter(active=True).order_by(
        "-kind", "display_order", "internal_id"
    )


def methodology_versions_reached(
    *, cohort: int | None = None, since: date | None = None, until: date | None = None
) -> list[str]:
    """Return the methodology versions of the cohorts the bounds reach, sorted.

    A cohort is reached when its number is `cohort` (if given), it started on or before
    `until` and it was still running on or after `since`.
    """
    cohorts: QuerySet[Cohort] = Cohort.objects.all()
    if cohort is not None:
        cohorts = cohorts.filter(number=cohort)
    if until is not None:
        cohorts = cohorts.filter(week_start__lte=until)
    if since is not None:
        cohorts = cohorts.filter(
            Q(completed_at__isnull=True)
            | Q(completed_at__gte=datetime.combine(since, time.min, tzinfo=UTC))
        )
    versions = cohorts.order_by().values_list("methodology_version", flat=True).distinct()
    return sorted(set(versions))
