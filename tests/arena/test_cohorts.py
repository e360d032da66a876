"""Cohorts (002 "Cohorts"): one per normalized UTC week start, from Sunday 00:00 UTC, one agent
per active lineup model with $10,000."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest
from django.db import IntegrityError, transaction

from agents.models import BenchmarkModel
from arena.models import Agent, Cohort
from arena.services.cohorts import cohort_start
from arena.weeks import cohort_week_start

LLM_LINEUP = {
    "gpt-5.1",
    "gemini-2.5-flash",
    "grok-4",
    "claude-opus-4.5",
    "deepseek-v3.1",
    "kimi-k2",
    "qwen-3-next",
}
BASELINES = {"baseline-random", "baseline-market"}


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        (datetime(2026, 3, 7, 23, 59, 59, tzinfo=UTC), date(2026, 3, 1)),  # Saturday night
        (datetime(2026, 3, 8, 0, 0, tzinfo=UTC), date(2026, 3, 8)),  # Sunday midnight
        (datetime(2026, 3, 8, 0, 5, tzinfo=UTC), date(2026, 3, 8)),  # the decision run
        (datetime(2026, 3, 14, 23, 59, 59, tzinfo=UTC), date(2026, 3, 8)),  # end of that week
    ],
)
def test_cohort_week_starts_at_sunday_midnight_utc(
    time_machine: Any, now: datetime, expected: date
) -> None:
    time_machine.move_to(now, tick=False)
    assert cohort_week_start() == expected


@pytest.mark.django_db
def test_cohort_start_creates_one_agent_per_active_lineup_model_with_10000() -> None:
    cohort, created = cohort_start(
        week_start=date(2026, 3, 8), now=datetime(2026, 3, 8, 0, 0, tzinfo=UTC)
    )

    assert created is True
    assert cohort.week_start == date(2026, 3, 8)
    assert cohort.started_at == datetime(2026, 3, 8, 0, 0, tzinfo=UTC)
    agents = list(cohort.agents.select_related("model"))
    assert {a.model.internal_id for a in agents} == LLM_LINEUP | BASELINES
    assert len(agents) == 9
    assert all(a.cash == Decimal("10000.00") for a in agents)
    assert all(a.status == Agent.Status.ACTIVE for a in agents)


@pytest.mark.django_db
def test_cohort_start_of_this_week_at_sunday_midnight(time_machine: Any) -> None:
    time_machine.move_to(datetime(2026, 3, 8, 0, 0, tzinfo=UTC), tick=False)

    cohort, created = cohort_start()

    assert created is True
    assert cohort.week_start == date(2026, 3, 8)


@pytest.mark.django_db
def test_starting_the_same_week_twice_is_a_no_op() -> None:
    first, created = cohort_start(week_start=date(2026, 3, 8))
    assert created is True

    again, created_again = cohort_start(week_start=date(2026, 3, 8))

    assert created_again is False
    assert again.pk == first.pk
    assert Cohort.objects.count() == 1
    assert Agent.objects.count() == 9


@pytest.mark.django_db
@pytest.mark.parametrize("week_start", [date(2026, 3, 7), date(2026, 3, 9), date(2026, 3, 11)])
def test_a_cohort_cannot_start_on_a_day_other_than_sunday(week_start: date) -> None:
    with pytest.raises(ValueError, match="not a Sunday"):
        cohort_start(week_start=week_start)
    assert not Cohort.objects.exists()


@pytest.mark.django_db
def test_an_inactive_lineup_model_gets_no_agent() -> None:
    BenchmarkModel.objects.filter(internal_id="grok-4").update(active=False)

    cohort, _ = cohort_start(week_start=date(2026, 3, 8))

    ids = set(cohort.agents.values_list("model__internal_id", flat=True))
    assert "grok-4" not in ids
    assert ids == (LLM_LINEUP - {"grok-4"}) | BASELINES


@pytest.mark.django_db
def test_the_database_allows_one_cohort_per_week_start() -> None:
    cohort_start(week_start=date(2026, 3, 8))

    with pytest.raises(IntegrityError), transaction.atomic():
        Cohort.objects.create(
            number=99, week_start=date(2026, 3, 8), started_at=datetime(2026, 3, 8, tzinfo=UTC)
        )
    assert Cohort.objects.filter(week_start=date(2026, 3, 8)).count() == 1
