"""The suite's clock: the real one, unless the run would meet a week's seal.

From Sunday 00:00 UTC until the outside window closes (01:00 by default) every public read
shows the arena as it stood at 00:00 (arena/seal.py). The suite's tests build their worlds
"now" and read them back through the public pages and API: run in that hour, they would read
a sealed arena and fail for it, and a run started shortly before would walk into it. So a run
starting within MARGIN of a seal, or inside one, runs on a clock moved to MARGIN past the
seal's end, running on from there (time-machine, in this process and in the worker processes
it starts: tests/workers.py passes SUITE_NOW and SUITE_NOW_SET_AT on). The seal's own tests
set their moments themselves.

SUITE_NOW (an ISO 8601 moment) starts the suite's clock there instead of now, to see what a
run at that moment does: `SUITE_NOW=2026-11-29T00:20Z make test-fast` runs as a Sunday
20 minutes into the seal would, moved past it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

# Longer than a run of the suite takes: a run started this long before a seal ends before it.
MARGIN = timedelta(minutes=30)


def seal_windows(now: datetime) -> list[tuple[datetime, datetime]]:
    """The seals of the week `now` is in and of the next: (Sunday 00:00, the outside window's
    close), by the arena's own week arithmetic."""
    from arena.weeks import cohort_week_start, outside_window, week_opens

    week = cohort_week_start(now)
    return [
        (week_opens(start), outside_window(start)[1]) for start in (week, week + timedelta(weeks=1))
    ]


def suite_start(now: datetime) -> datetime | None:
    """Where the suite's clock starts when the run begins at `now`: None for the real clock,
    or MARGIN past the end of a seal that `now` is in or within MARGIN of."""
    for opens, closes in seal_windows(now):
        if opens - MARGIN <= now < closes:
            return closes + MARGIN
    return None


def suite_clock(environ: Mapping[str, str], real: float) -> tuple[datetime | None, dict[str, str]]:
    """Where the suite's clock starts, at Unix time `real`, and what a process it starts needs
    to keep the same clock: (None, {}) for the real clock. SUITE_NOW in `environ` starts it
    there (and SUITE_NOW_SET_AT, a process started by a moved run, runs on from then)."""
    asked = environ.get("SUITE_NOW")
    now = datetime.fromisoformat(asked) if asked else datetime.fromtimestamp(real, UTC)
    if asked and environ.get("SUITE_NOW_SET_AT"):
        now += timedelta(seconds=real - float(environ["SUITE_NOW_SET_AT"]))
    start = suite_start(now) or (now if asked else None)
    if start is None:
        return None, {}
    return start, {"SUITE_NOW": start.isoformat(), "SUITE_NOW_SET_AT": repr(real)}


def start_suite_clock() -> dict[str, str]:
    """Move this process's clock where `suite_clock` says, running on; return what a process
    this one starts needs to keep the same clock (empty when the clock is the real one)."""
    import time_machine

    start, inherited = suite_clock(os.environ, time.time())
    if start is not None:
        time_machine.travel(start, tick=True).start()
    return inherited
