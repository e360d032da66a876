"""Row codes: grouping rows of integer columns by one sort of integers, with the groups, their
order and their first rows those of `np.unique(..., axis=0)`."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring.codes import dense_codes, row_codes


@given(
    st.lists(
        st.tuples(st.integers(-3, 40), st.integers(0, 5), st.integers(-1, 2)),
        min_size=1,
        max_size=60,
    )
)
def test_row_codes_group_and_order_rows_as_a_unique_of_the_rows_does(
    rows: list[tuple[int, int, int]],
) -> None:
    columns = [np.array(c, dtype=np.int64) for c in zip(*rows, strict=True)]
    by_rows = np.unique(np.stack(columns, axis=1), axis=0, return_index=True, return_inverse=True)
    by_codes = np.unique(row_codes(*columns), return_index=True, return_inverse=True)
    assert by_codes[1].tolist() == by_rows[1].tolist()  # the first row of each group
    assert by_codes[2].reshape(-1).tolist() == by_rows[2].reshape(-1).tolist()


def test_row_codes_refuse_what_they_cannot_code() -> None:
    with pytest.raises(ValueError, match="at least one column"):
        row_codes()
    with pytest.raises(ValueError, match="one length"):
        row_codes([1, 2], [1])
    with pytest.raises(ValueError, match="integers"):
        row_codes([0.5, 1.0])
    many = np.arange(2**16, dtype=np.int64)  # 65,536 distinct values, four columns: 2^64
    with pytest.raises(ValueError, match="63 bits"):
        row_codes(many, many, many, many)
    assert row_codes([], []).tolist() == []


def test_ids_far_apart_are_ranked_first_and_group_as_the_rows_do() -> None:
    wide = np.array([2**40, 0, 2**40, 7, 0], dtype=np.int64)
    far = np.array([2**62, -(2**62), 2**62, 5, -(2**62)], dtype=np.int64)
    codes = row_codes(wide, far, wide)
    by_rows = np.unique(np.stack([wide, far, wide], axis=1), axis=0, return_inverse=True)
    by_codes = np.unique(codes, return_inverse=True)
    assert by_codes[1].reshape(-1).tolist() == by_rows[1].reshape(-1).tolist()
    # Each column's three values ranked 0, 1, 2 and read as the digits of base 3.
    assert codes.tolist() == [26, 0, 26, 13, 0]


@given(
    st.lists(st.integers(-(2**40), 2**40), max_size=60)
    | st.lists(st.integers(-5, 50), max_size=60)
    | st.lists(st.sampled_from([10**6, 3 * 10**6, 5 * 10**6 + 1]), max_size=60)
)
def test_dense_codes_are_the_inverse_of_a_unique_however_wide_the_span(labels: list[int]) -> None:
    array = np.array(labels, dtype=np.int64)
    assert dense_codes(array).tolist() == np.unique(array, return_inverse=True)[1].tolist()


def test_dense_codes_take_any_sortable_labels_and_refuse_a_table() -> None:
    assert dense_codes(["b", "a", "b", "c"]).tolist() == [1, 0, 1, 2]
    assert dense_codes([0.5, -1.0, 0.5]).tolist() == [1, 0, 1]
    assert dense_codes(np.zeros(0, dtype=np.int64)).tolist() == []
    with pytest.raises(ValueError, match="1-d"):
        dense_codes(np.zeros((2, 2), dtype=np.int64))
