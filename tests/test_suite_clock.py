"""The suite's own clock (tests/suite_clock.py): a run that would meet a week's seal runs on a
clock moved past it, and the seals it steers by are the arena's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings

from arena.seal import seal_at
from tests.suite_clock import MARGIN, seal_windows, suite_start

CLOSES = 60  # minutes after Sunday 00:00: the outside window's default close
SUNDAY = datetime(2026, 11, 29, tzinfo=UTC)


@pytest.mark.parametrize(
    ("began", "runs_at"),
    [
        (SUNDAY + timedelta(minutes=20), SUNDAY + timedelta(minutes=CLOSES) + MARGIN),
        (SUNDAY - timedelta(minutes=10), SUNDAY + timedelta(minutes=CLOSES) + MARGIN),
        (SUNDAY - MARGIN, SUNDAY + timedelta(minutes=CLOSES) + MARGIN),
        (SUNDAY - MARGIN - timedelta(seconds=1), None),  # ends before the seal begins
        (SUNDAY + timedelta(minutes=CLOSES), None),  # the seal has lifted
        (SUNDAY + timedelta(days=3, hours=12), None),
    ],
)
def test_a_run_near_or_in_a_seal_runs_past_its_end(
    began: datetime, runs_at: datetime | None
) -> None:
    assert suite_start(began, CLOSES) == runs_at


def test_the_windows_it_steers_by_are_the_arenas_seals() -> None:
    closes = settings.OUTSIDE_WINDOW_CLOSES_MINUTES
    moment = SUNDAY - timedelta(days=1)
    while moment < SUNDAY + timedelta(days=8):
        inside = any(opens <= moment < end for opens, end in seal_windows(moment, closes))
        assert inside == (seal_at(moment) is not None), moment
        moment += timedelta(minutes=7)
