"""Print how fast this machine runs now against the reference machine the suite's time budget
is calibrated on: the median seconds of tests/budget.py's probe, a fixed piece of pure Python,
in CPU time and in wall time, and their ratios to REFERENCE_PROBE_SECONDS. CPU time says how
fast the machine's cores are; wall time, against it, whether something else had them too.

    python .ci/speed.py

`make test` prints it before its parts start, so that its wall time and CPU seconds can be
read against the machine they ran on: the machines of one kind differ, and so does one machine
from hour to hour (the same commit's suite was seen taking 313 s on one session's machine and
797 s on the next one's two hours later, where the probe took four times the reference's
seconds).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests import budget  # noqa: E402
from tests.budget import REFERENCE_PROBE_SECONDS  # noqa: E402

RUNS = 15


@dataclass(frozen=True)
class ProbeSeconds:
    cpu: float
    wall: float

    def describe(self) -> str:
        reference = REFERENCE_PROBE_SECONDS
        return (
            f"the speed probe takes {self.cpu:.3f} s of CPU, {self.cpu / reference:.1f} times"
            f" the reference machine's {reference} s, and {self.wall:.3f} s of wall time,"
            f" {self.wall / reference:.1f} times"
        )


def probe_seconds(runs: int = RUNS) -> ProbeSeconds:
    """The median CPU and wall seconds of `runs` probes."""
    cpu, wall = budget.probe_seconds(runs)
    return ProbeSeconds(cpu=cpu, wall=wall)


if __name__ == "__main__":
    print(probe_seconds().describe())
