"""The shards of a pass (tests/shards.py) split its test files exactly: each file runs in one
shard and only one, whatever the number of shards, and the shards carry like loads."""

from __future__ import annotations

import json

import pytest

from tests.shards import WEIGHTS, shard_files, shard_option, suite_files


@pytest.mark.parametrize("database_pass", ["sqlite", "postgres"])
@pytest.mark.parametrize("count", [1, 2, 3, 4])
def test_the_shards_of_a_pass_hold_every_test_file_once(database_pass: str, count: int) -> None:
    shards = shard_files(count, database_pass)
    assert len(shards) == count
    assert sum(len(files) for files in shards) == len(suite_files())
    assert frozenset().union(*shards) == frozenset(suite_files())


@pytest.mark.parametrize("database_pass", ["sqlite", "postgres"])
def test_no_shard_carries_much_more_than_its_share(database_pass: str) -> None:
    weights: dict[str, float] = json.loads(WEIGHTS.read_text())[database_pass]

    def load(files: frozenset[str]) -> float:  # the measured files' seconds
        return sum(weights.get(f, 0.0) for f in files)

    loads = [load(files) for files in shard_files(3, database_pass)]
    heaviest_file = max(weights.values())
    assert max(loads) <= max(heaviest_file, sum(loads) / 3) * 1.1, loads


@pytest.mark.parametrize("value", ["0/2", "3/2", "1", "a/b", "1/2/3"])
def test_a_shard_that_is_not_k_of_n_is_refused(value: str) -> None:
    with pytest.raises(pytest.UsageError, match="--shard"):
        shard_option(value)


def test_a_shard_is_k_of_n() -> None:
    assert shard_option("2/3") == (2, 3)
