"""Reads of the information pages (methodology, about): the lineup and the methodology
versions the cohorts ran."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Max, Min, QuerySet

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
