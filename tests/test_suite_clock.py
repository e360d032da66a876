"""The suite's own clock (tests/suite_clock.py): a run that would meet a week's seal runs on a
clock moved past it, and the seals it steers by are the arena's."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.conf import settings

from arena.seal import seal_at
from tests.suite_clock import MARGIN, seal_windows, suite_clock, suite_start

ROOT = Path(__file__).resolve().parent.parent
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
    assert settings.OUTSIDE_WINDOW_CLOSES_MINUTES == CLOSES
    assert suite_start(began) == runs_at


def test_the_windows_it_steers_by_are_the_arenas_seals() -> None:
    moment = SUNDAY - timedelta(days=1)
    while moment < SUNDAY + timedelta(days=8):
        inside = any(opens <= moment < end for opens, end in seal_windows(moment))
        assert inside == (seal_at(moment) is not None), moment
        moment += timedelta(minutes=5)  # landing on each window's first and last minutes


def test_a_run_in_the_seal_tells_the_processes_it_starts_where_its_clock_went() -> None:
    real = (SUNDAY + timedelta(minutes=20)).timestamp()
    start, inherited = suite_clock({}, real)
    assert start == SUNDAY + timedelta(minutes=CLOSES) + MARGIN
    assert inherited == {"SUITE_NOW": start.isoformat(), "SUITE_NOW_SET_AT": repr(real)}
    # A process started 90 s later keeps the same clock: its start plus the 90 s.
    later, again = suite_clock(inherited, real + 90)
    assert later == start + timedelta(seconds=90)
    assert again["SUITE_NOW"] == later.isoformat()
    # Far from a seal, the real clock; asked for a moment, that moment.
    assert suite_clock({}, (SUNDAY + timedelta(days=3)).timestamp()) == (None, {})
    wednesday = SUNDAY + timedelta(days=3)
    assert suite_clock({"SUITE_NOW": wednesday.isoformat()}, real)[0] == wednesday


@pytest.mark.drill
def test_a_worker_process_runs_on_the_suites_clock_and_a_drills_moment_on_top() -> None:
    """tests/worker_settings.py, as a drill's worker process reads it: the suite's clock (set
    in real time), then the drill's moment (set on the suite's clock), each running on."""
    real = time.time()
    moved = real + 3 * 86_400.0  # the test process's clock, three days on
    drill = datetime(2031, 1, 5, 0, 7, tzinfo=UTC)
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.worker_settings",
        "SUITE_NOW": datetime.fromtimestamp(moved - 60, UTC).isoformat(),
        "SUITE_NOW_SET_AT": repr(real - 60),
        "DRILL_NOW": drill.isoformat(),
        "DRILL_NOW_SET_AT": repr(moved - 30),  # read on the moved clock, 30 s ago
    }
    printed = subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; settings.DEBUG; "
         "import time; print(time.time())"],
        env=env, capture_output=True, text=True, check=True, cwd=ROOT,
    ).stdout  # fmt: skip
    assert float(printed) - drill.timestamp() == pytest.approx(30, abs=10)
