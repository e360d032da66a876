"""Update .ci/test_weights.json, the seconds each test file takes in a pass, which
tests/shards.py uses to balance a pass's shards.

    python .ci/weights.py --last-run    (from the pytest caches the last `make test` left)

Each pytest run leaves its files' seconds in its cache (tests/shards.py, FileSeconds); the
shards of a pass are added together. Run it after a `make test` on an otherwise idle machine.
The figures only balance the shards: stale ones cost wall time, never a test.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WEIGHTS = ROOT / ".ci" / "test_weights.json"
CACHES = ROOT / ".pytest_cache"
KEY = Path("v") / "forecaster" / "file-seconds"


def last_run(database_pass: str) -> dict[str, float]:
    """The seconds per file of the pass's last run, its shards added together."""
    seconds: dict[str, float] = {}
    for cache in sorted(CACHES.glob(f"{database_pass}-*")):
        path = cache / KEY
        if path.exists():
            for name, s in json.loads(path.read_text()).items():
                seconds[name] = seconds.get(name, 0.0) + s
    return seconds


def main() -> None:
    if sys.argv[1:] != ["--last-run"]:
        sys.exit(__doc__)
    table = json.loads(WEIGHTS.read_text()) if WEIGHTS.exists() else {}
    for database_pass in ("sqlite", "postgres"):
        seconds = last_run(database_pass)
        if not seconds:
            sys.exit(f"no shard of the {database_pass} pass left its seconds in {CACHES}")
        table[database_pass] = {name: round(s, 1) for name, s in sorted(seconds.items())}
        print(f"{database_pass}: {len(seconds)} files, {sum(seconds.values()):.0f} s in all")
    WEIGHTS.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
