"""Shards: one pass of the suite split by test file over several pytest processes.

`make test` splits each database's pass into N shards of the files that are not drills
(`--shard K/N`) and the drills' shard (`--shard drills`), and runs them in N + 1 lanes at once,
lane K running the K-th shard of each pass one after the other and the last lane the drills of
each (.ci/suite), so that the machine's cores stay busy to the end instead of waiting on the
longest pass. A shard collects only its own files, so no test module is imported, and no module
fixture built, twice.

Files are dealt out by weight: `.ci/test_weights.json` holds each file's seconds per pass, as
a run of the suite measured them (`.ci/weights.py` updates it), and each file goes to the
lightest shard so far, heaviest first. A file the table knows only from the other pass has no
test for this one (it weighs its collection, NO_TESTS_WEIGHT); a file it does not know at all
weighs DEFAULT_WEIGHT.

The drills (the test files named `test_*drills.py`) are a shard of their own, `--shard drills`,
outside the K-of-N deal: they mostly wait, on the real servers, workers and beats they start
and kill, on a client reading slowly, on faults they inject, so `make test` runs them in a
lane beside the others, where their waits cost the busy lanes nothing, instead of inside a
shard that waits with them. (The `drill` marker is another thing: any test that starts a
real process, which `make test-fast` leaves out.) So `--shard 1/1` is every file but the
drills; a pass without `--shard` is every file.

Every shard reads the same files and the same table, so the shards of one pass always split
the files exactly: each test runs in one shard and only one (the K of N and the drills).
Weights only balance the shards; stale ones cost time, never a test. Each run leaves what its
files took in its pytest cache (FILE_SECONDS), and `.ci/weights.py --last-run` puts those of
the last `make test` in the table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
WEIGHTS = ROOT / ".ci" / "test_weights.json"
FILE_SECONDS = "forecaster/file-seconds"  # the pytest cache's key
DEFAULT_WEIGHT = 2.0  # seconds: a new file, until the table is measured again
NO_TESTS_WEIGHT = 0.1


DRILLS = "drills"


@dataclass(frozen=True)
class ShardChoice:
    """A shard of a pass: the K-th of N of the files that are not drills, or the drills."""

    k: int = 0
    n: int = 0
    drills: bool = False

    def __post_init__(self) -> None:
        if self.drills != (self.k == self.n == 0) or not (self.drills or 1 <= self.k <= self.n):
            raise ValueError(f"not a shard: {self}")

    @property
    def tag(self) -> str:
        """What names the shard's own test database, cache and queue: K, or "drills"."""
        return DRILLS if self.drills else str(self.k)


def is_drill(name: str) -> bool:
    """Whether the test file (relative to the project) is one of the drills'."""
    return name.endswith("drills.py")


def shard_option(value: str) -> ShardChoice:
    """`K/N`, the K-th of N shards (1 ≤ K ≤ N) of the files that are not drills, or `drills`."""
    if value == DRILLS:
        return ShardChoice(drills=True)
    try:
        k, n = (int(part) for part in value.split("/"))
    except ValueError:
        raise pytest.UsageError(
            f"--shard takes K/N, such as 1/2, or drills, not {value!r}"
        ) from None
    if not 1 <= k <= n:
        raise pytest.UsageError(f"--shard {value}: K must be between 1 and N")
    return ShardChoice(k, n)


def suite_files() -> list[str]:
    """Every test file of the suite, relative to the project, in a fixed order."""
    return sorted(path.relative_to(ROOT).as_posix() for path in TESTS.rglob("test_*.py"))


@cache
def shard_files(count: int, database_pass: str) -> tuple[frozenset[str], ...]:
    """The files of each of `count` shards of `database_pass` ("sqlite" or "postgres"): every
    test file but the drills'."""
    table: dict[str, dict[str, float]] = {}
    if WEIGHTS.exists():
        table = json.loads(WEIGHTS.read_text())
    known = {name for weights in table.values() for name in weights}
    own = table.get(database_pass, {})

    def weight(name: str) -> float:
        if name in own:
            return own[name]
        return NO_TESTS_WEIGHT if name in known else DEFAULT_WEIGHT

    loads = [0.0] * count
    shards: list[set[str]] = [set() for _ in range(count)]
    # Heaviest first, each to the lightest shard so far (ties: the lower shard, then the name).
    dealt = [name for name in suite_files() if not is_drill(name)]
    for name in sorted(dealt, key=lambda f: (-weight(f), f)):
        lightest = min(range(count), key=lambda i: (loads[i], i))
        shards[lightest].add(name)
        loads[lightest] += weight(name)
    return tuple(frozenset(files) for files in shards)


class Shard:
    """Skips collecting the test files of the other shards (registered by conftest.py)."""

    def __init__(self, choice: ShardChoice, database_pass: str) -> None:
        if choice.drills:
            self.mine = frozenset(name for name in suite_files() if is_drill(name))
        else:
            self.mine = shard_files(choice.n, database_pass)[choice.k - 1]

    def pytest_ignore_collect(self, collection_path: Path) -> bool | None:
        if collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
            return None
        try:
            name = collection_path.resolve().relative_to(ROOT).as_posix()
        except ValueError:
            return None
        return True if name not in self.mine else None


class FileSeconds:
    """Adds up the seconds each test file took (setup, call and teardown) and leaves them in
    the pytest cache at the end of the run (registered by conftest.py)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        name = report.nodeid.split("::", 1)[0]
        self.seconds[name] = self.seconds.get(name, 0.0) + report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        cache = getattr(session.config, "cache", None)  # None under -p no:cacheprovider
        if cache is not None and self.seconds:
            cache.set(FILE_SECONDS, {k: round(v, 2) for k, v in sorted(self.seconds.items())})
