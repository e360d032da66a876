"""The shards of a pass (tests/shards.py) split its test files exactly: each file runs in one
shard and only one, whatever the number of shards, the drills in their own, and the shards
carry like loads."""

from __future__ import annotations

import json

import pytest

from tests.shards import (
    ROOT,
    WEIGHTS,
    Shard,
    ShardChoice,
    is_drill,
    shard_files,
    shard_option,
    suite_files,
)


def files_of(choice: ShardChoice, database_pass: str) -> frozenset[str]:
    """The test files the shard collects: those its plugin does not tell pytest to ignore."""
    shard = Shard(choice, database_pass)
    return frozenset(f for f in suite_files() if shard.pytest_ignore_collect(ROOT / f) is None)


@pytest.mark.parametrize("database_pass", ["sqlite", "postgres"])
@pytest.mark.parametrize("count", [1, 2, 3, 4])
def test_the_shards_of_a_pass_and_its_drills_hold_every_test_file_once(
    database_pass: str, count: int
) -> None:
    shards = [files_of(ShardChoice(k, count), database_pass) for k in range(1, count + 1)]
    shards.append(files_of(shard_option("drills"), database_pass))
    assert sum(len(files) for files in shards) == len(suite_files())
    assert frozenset().union(*shards) == frozenset(suite_files())


def test_the_drills_are_the_files_that_wait_on_real_processes() -> None:
    drills = {f for f in suite_files() if is_drill(f)}
    assert {
        "tests/test_web_drills.py",
        "tests/arena/test_worker_drills.py",
        "tests/arena/test_schedule_drills.py",
        "tests/arena/test_fault_drills.py",
    } <= drills
    assert files_of(shard_option("drills"), "postgres") == drills
    for shard in shard_files(3, "postgres"):
        assert not shard & drills


@pytest.mark.parametrize("database_pass", ["sqlite", "postgres"])
def test_no_shard_carries_much_more_than_its_share(database_pass: str) -> None:
    weights: dict[str, float] = json.loads(WEIGHTS.read_text())[database_pass]

    def load(files: frozenset[str]) -> float:  # the measured files' seconds
        return sum(weights.get(f, 0.0) for f in files)

    loads = [load(files) for files in shard_files(3, database_pass)]
    heaviest_file = max(w for f, w in weights.items() if not is_drill(f))
    assert max(loads) <= max(heaviest_file, sum(loads) / 3) * 1.1, loads


@pytest.mark.parametrize("value", ["0/2", "3/2", "1", "a/b", "1/2/3", "drill", ""])
def test_a_shard_that_is_not_k_of_n_is_refused(value: str) -> None:
    with pytest.raises(pytest.UsageError, match="--shard"):
        shard_option(value)


def test_a_shard_is_k_of_n_or_the_drills() -> None:
    assert shard_option("2/3") == ShardChoice(2, 3)
    assert shard_option("2/3").tag == "2"
    assert shard_option("drills") == ShardChoice(drills=True)
    assert shard_option("drills").tag == "drills"


@pytest.mark.parametrize(
    ("k", "n", "drills"), [(0, 0, False), (1, 0, False), (1, 2, True), (3, 2, False)]
)
def test_a_shard_is_either_k_of_n_or_the_drills_never_both_nor_neither(
    k: int, n: int, drills: bool
) -> None:
    with pytest.raises(ValueError, match="not a shard"):
        ShardChoice(k, n, drills)


def test_the_shards_deal_out_the_files_pytest_collects(pytestconfig: pytest.Config) -> None:
    # suite_files() lists test_*.py: a file collected by another pattern would be in no shard's
    # list, so no shard would leave it out, and every shard would run it.
    assert pytestconfig.getini("python_files") == ["test_*.py"]
