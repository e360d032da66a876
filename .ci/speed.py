"""Print how fast this machine runs now against the reference machine the suite's time budget
is calibrated on: the median seconds of tests/budget.py's probe, a fixed piece of pure Python,
in CPU time and in wall time, and their ratios to REFERENCE_PROBE_SECONDS. CPU time says how
fast the machine's cores are; wall time, against it, whether something else had them too.

    python .ci/speed.py

`make test` prints it before its parts start, so that its wall time and CPU seconds can be
read against the machine they ran on: the machines of one kind differ, and so does one machine
from hour to hour (the same commit's suite was seen taking 313 s on one session's machine and
797 s on the next one's two hours later, where the probe took four times the reference's
seconds). It times the interpreter as much as the machine: on one machine the probe read 1.4
times the reference on a pyenv build of Python 3.11 and 1.0 on Debian's optimised build, which
ran the suite's tests in about an eighth less CPU time: the probe's 1.4 → 1.0 overstates
what the suite gains.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.budget import REFERENCE_PROBE_SECONDS, probe_seconds  # noqa: E402

RUNS = 15


def describe(cpu: float, wall: float) -> str:
    """The probe's median seconds, in CPU and wall time, against the reference machine's."""
    reference = REFERENCE_PROBE_SECONDS
    return (
        f"the speed probe takes {cpu:.3f} s of CPU, {cpu / reference:.1f} times"
        f" the reference machine's {reference} s, and {wall:.3f} s of wall time,"
        f" {wall / reference:.1f} times"
    )


if __name__ == "__main__":
    print(describe(*probe_seconds(RUNS)))
