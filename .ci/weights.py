"""Update .ci/test_weights.json, the seconds each test file takes in a pass, which
tests/shards.py uses to balance a pass's shards.

    .venv/bin/python -m pytest --durations=0 -q ... > run.log   (one whole pass, unsharded)
    python .ci/weights.py sqlite run.log          (or: postgres run.log)

The figures only balance the shards: stale ones cost wall time, never a test.
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

WEIGHTS = Path(__file__).resolve().parent / "test_weights.json"
LINE = re.compile(r"\s*([\d.]+)s (?:setup|call|teardown)\s+(\S+?)::")


def main(database_pass: str, log: Path) -> None:
    if database_pass not in ("sqlite", "postgres"):
        sys.exit("the pass is sqlite or postgres")
    seconds: dict[str, float] = defaultdict(float)
    for line in log.read_text().splitlines():
        match = LINE.match(line)
        if match:
            seconds[match[2]] += float(match[1])
    if not seconds:
        sys.exit(f"{log}: no --durations=0 lines")
    table = json.loads(WEIGHTS.read_text()) if WEIGHTS.exists() else {}
    table[database_pass] = {name: round(s, 1) for name, s in sorted(seconds.items())}
    WEIGHTS.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    print(f"{database_pass}: {len(seconds)} files, {sum(seconds.values()):.0f} s in all")


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
