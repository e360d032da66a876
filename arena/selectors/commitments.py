"""Reads of the commitments to stored responses (`AnswerCommitment`): the API's list, a
decision's digests beside its attempts, and this week's for the status page.

A commitment is public from the moment its response is stored, even while the week's
attempts are hidden; it names the agent, the decision and the attempt's number, and holds
only a digest of the response.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime

from django.db.models import Count, QuerySet, Window

from arena.models import Agent, AnswerCommitment, Cohort
from arena.weeks import cohort_week_start

RECENT_COMMITMENTS = 10
# Newest first, then by id: a stable order, so pages never skip or repeat a row.
COMMITMENT_ORDER = ("-committed_at", "-pk")


def commitment_list(
    *, week: date | None = None, cohort: Cohort | None = None, agent: Agent | None = None
) -> QuerySet[AnswerCommitment]:
    """Return the commitments matching every filter given (`week` the Sunday a decision's
    week starts), newest first, each with its agent's model and its cohort."""
    rows = AnswerCommitment.objects.select_related("agent__model", "cohort")
    if week is not None:
        rows = rows.filter(week_start=week)
    if cohort is not None:
        rows = rows.filter(cohort=cohort)
    if agent is not None:
        rows = rows.filter(agent=agent)
    return rows.order_by(*COMMITMENT_ORDER)


def attempt_digests(*, decision_id: int) -> dict[int, str]:
    """Return the SHA-256 committed to for each of the decision's attempts that has one, by
    attempt id (one query)."""
    return dict(
        AnswerCommitment.objects.filter(decision_id=decision_id).values_list("attempt_id", "sha256")
    )


@dataclass(frozen=True)
class WeekCommitments:
    """The commitments of one week: how many, and the latest few, newest first."""

    week_start: date
    count: int
    latest: Sequence[AnswerCommitment] = ()


def week_commitments(*, now: datetime, limit: int = RECENT_COMMITMENTS) -> WeekCommitments:
    """Return the commitments of the week `now` is in, in one query: the latest `limit`,
    each carrying the week's count (a window over every row, taken before the limit)."""
    week = cohort_week_start(now)
    latest = list(commitment_list(week=week).annotate(week_count=Window(Count("pk")))[:limit])
    count = latest[0].week_count if latest else 0
    return WeekCommitments(week_start=week, count=count, latest=latest)
