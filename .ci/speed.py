"""Print how fast this machine runs now against the reference machine the suite's time budget
is calibrated on: the median CPU seconds of tests/budget.py's probe, a fixed piece of pure
Python, and their ratio to REFERENCE_PROBE_SECONDS.

    python .ci/speed.py

`make test` prints it before its parts start, on an idle machine, so that its wall time and
CPU seconds can be read against the machine they ran on: the machines of one kind differ, and
one machine differs from hour to hour (the same commit's suite was seen taking 313 s on one
afternoon and 797 s the next, with the probe at about three times the reference's seconds).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.budget import REFERENCE_PROBE_SECONDS, probe  # noqa: E402

RUNS = 15


def probe_seconds(runs: int = RUNS) -> float:
    """The median CPU seconds of `runs` probes, on this thread."""
    seconds = []
    for _ in range(runs):
        began = time.thread_time()
        probe()
        seconds.append(time.thread_time() - began)
    return statistics.median(seconds)


def describe(seconds: float) -> str:
    ratio = seconds / REFERENCE_PROBE_SECONDS
    return (
        f"the speed probe takes {seconds:.3f} s of CPU, {ratio:.1f} times the reference "
        f"machine's {REFERENCE_PROBE_SECONDS} s"
    )


if __name__ == "__main__":
    print(describe(probe_seconds()))
