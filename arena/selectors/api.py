"""Reads only the JSON API needs (`arena/api.py`): the decisions across every agent, filtered.

The pages list decisions per cohort or per agent (`standings.cohort_decisions`,
`standings.agent_decisions`); the API lists them all, filtered and newest first, without the
prompts (`standings.LIST_DEFERRED`), in one query per page plus one count.
"""

from __future__ import annotations

from datetime import date

from django.db.models import QuerySet

from agents.models import BenchmarkModel
from arena.models import Cohort, Decision
from arena.selectors.standings import LIST_DEFERRED


def decision_list(
    *,
    model: BenchmarkModel | None = None,
    cohort: Cohort | None = None,
    week: date | None = None,
    action: str | None = None,
    status: str | None = None,
) -> QuerySet[Decision]:
    """Return the decisions matching every filter given, newest week first, then by model
    (LLMs before baselines, in display order), then by id: a stable order for paging."""
    decisions = Decision.objects.select_related("agent__model", "cohort").defer(*LIST_DEFERRED)
    if model is not None:
        decisions = decisions.filter(agent__model=model)
    if cohort is not None:
        decisions = decisions.filter(cohort=cohort)
    if week is not None:
        decisions = decisions.filter(week_start=week)
    if action is not None:
        decisions = decisions.filter(action=action)
    if status is not None:
        decisions = decisions.filter(status=status)
    return decisions.order_by(
        "-week_start", "agent__model__kind", "agent__model__display_order", "-pk"
    )
