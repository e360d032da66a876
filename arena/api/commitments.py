"""The commitments' router (mounted at `/api/v1/commitments`): the SHA-256 committed to for
each stored response, public from the moment it was stored, with its schemas.

Each response an agent gave (an attempt with a body: a model's answer, an outside team's
submission, an error body) is committed to as it is stored: `sha256` is the SHA-256 of the
UTF-8 bytes of the attempt's `commitment_salt`, a newline and its `raw_response`
(`arena.evidence.commitment_sha256`). While a week's answers are hidden, this list is how
anyone sees they exist and are fixed; once shown (`/api/v1/decisions/{id}` gives each
attempt's response, salt and commitment), anyone recomputes the digest and compares.
"""

from __future__ import annotations

from datetime import date, datetime

from django.http import HttpRequest
from ninja import Router, Schema
from ninja.errors import HttpError

from arena.api.params import IsoDate, Page, PageSize, QueryId
from arena.models import Agent, AnswerCommitment, Cohort
from arena.selectors import commitments

router = Router(tags=["arena"])

SUNDAY = 6  # date.weekday()


class CommitmentOut(Schema):
    """The commitment to one stored response, and whose response it is."""

    decision: int  # the decision's id (`/api/v1/decisions/{id}`)
    attempt_number: int  # the attempt's `number` among the decision's attempts
    agent: int
    model: str  # the stable id (`internal_id`)
    cohort: int  # the cohort's number
    week_start: date  # the Sunday (UTC) the decision's week starts
    sha256: str  # 64 hex digits: SHA-256 of commitment_salt + "\n" + raw_response, UTF-8
    committed_at: datetime  # when the response was stored


class CommitmentPage(Schema):
    count: int
    page: int
    page_size: int
    results: list[CommitmentOut]  # newest first


def _commitment(row: AnswerCommitment) -> CommitmentOut:
    return CommitmentOut(
        decision=row.decision_id,
        attempt_number=row.attempt_number,
        agent=row.agent_id,
        model=row.agent.model.internal_id,
        cohort=row.cohort.number,
        week_start=row.week_start,
        sha256=row.sha256,
        committed_at=row.committed_at,
    )


@router.get(
    "",
    response=CommitmentPage,
    summary="Commitments to the stored responses, newest first",
    operation_id="arena_api_commitment_list",
)
def commitment_list(
    request: HttpRequest,
    week: IsoDate | None = None,
    cohort: QueryId | None = None,
    agent: QueryId | None = None,
    page: Page = 1,
    page_size: PageSize = 20,
) -> CommitmentPage:
    """Every commitment matching the filters, newest first: `week` the ISO date of a week's
    Sunday, `cohort` a number, `agent` an id; another day, or an unknown cohort or agent, is
    a 422. Attempts stored before commitments were made have none."""
    if week is not None and week.weekday() != SUNDAY:
        raise HttpError(422, "week: must be the Sunday (UTC) a week starts on")
    found_cohort = None if cohort is None else Cohort.objects.filter(number=cohort).first()
    if cohort is not None and found_cohort is None:
        raise HttpError(422, "cohort: no cohort has this number")
    found_agent = None if agent is None else Agent.objects.filter(pk=agent).first()
    if agent is not None and found_agent is None:
        raise HttpError(422, "agent: no agent has this id")
    rows = commitments.commitment_list(week=week, cohort=found_cohort, agent=found_agent)
    start = (page - 1) * page_size
    return CommitmentPage(
        count=rows.count(),
        page=page,
        page_size=page_size,
        results=[_commitment(row) for row in rows[start : start + page_size]],
    )
