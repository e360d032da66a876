"""The shards of a pass (tests/shards.py) split its test files exactly: each file runs in one
shard and only one, whatever the number of shards, and the shards carry like loads."""

from __future__ import annotations

import json

import pytest

from tests.shards import PASSES, WEIGHTS, lane_files, shard_files, shard_option, suite_files


@pytest.mark.parametrize("database_pass", ["sqlite", "postgres"])
@pytest.mark.parametrize("count", [1, 2, 3, 4])
def test_the_shards_of_a_pass_hold_every_test_file_once(database_pass: str, count: int) -> None:
    shards = shard_files(count, database_pass)
    assert len(shards) == count
    assert sum(len(files) for files in shards) == len(suite_files())
    assert frozenset().union(*shards) == frozenset(suite_files())


@pytest.mark.parametrize("count", [2, 3])
def test_no_lane_carries_much_more_than_its_share(count: int) -> None:
    table: dict[str, dict[str, float]] = json.loads(WEIGHTS.read_text())

    def load(lane: int) -> float:  # the measured seconds of the lane's shard of each pass
        return sum(table[p].get(f, 0.0) for p in PASSES for f in lane_files(count)[p][lane])

    loads = [load(lane) for lane in range(count)]
    heaviest_file = max(s for weights in table.values() for s in weights.values())
    assert max(loads) <= max(heaviest_file, sum(loads) / count) * 1.05, loads


def test_the_k_th_shard_of_each_pass_is_lane_k() -> None:
    for database_pass in PASSES:
        assert shard_files(3, database_pass) == lane_files(3)[database_pass]


@pytest.mark.parametrize("value", ["0/2", "3/2", "1", "a/b", "1/2/3"])
def test_a_shard_that_is_not_k_of_n_is_refused(value: str) -> None:
    with pytest.raises(pytest.UsageError, match="--shard"):
        shard_option(value)


def test_a_shard_is_k_of_n() -> None:
    assert shard_option("2/3") == (2, 3)
