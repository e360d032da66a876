"""Student t, intervals and tests across cohorts (000 §5.2, with t in place of 1.96)."""

from __future__ import annotations

import math
from statistics import NormalDist, mean, stdev

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring.statistics import (
    Interval,
    bootstrap_pooled_interval,
    paired_difference_test,
    pooled_mean_interval,
    pooled_mean_test,
    regularized_incomplete_beta,
    share_positive,
    student_t_cdf,
    student_t_quantile,
)


@pytest.mark.parametrize(
    ("df", "table"), [(1, 12.706), (2, 4.303), (4, 2.776), (10, 2.228), (30, 2.042)]
)
def test_t_quantiles_match_the_printed_table(df: int, table: float) -> None:
    assert student_t_quantile(0.975, df) == pytest.approx(table, abs=0.0005)
    assert student_t_quantile(0.025, df) == pytest.approx(-table, abs=0.0005)


def test_t_quantiles_match_closed_forms() -> None:
    # df = 1 is Cauchy, df = 2 has t = (2p − 1) √(2 / (4p(1 − p))).
    for p in (0.6, 0.9, 0.975, 0.999):
        assert student_t_quantile(p, 1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-10)
        closed = (2 * p - 1) * math.sqrt(2 / (4 * p * (1 - p)))
        assert student_t_quantile(p, 2) == pytest.approx(closed, rel=1e-10)


def test_t_approaches_the_normal_as_df_grows() -> None:
    z = NormalDist().inv_cdf(0.975)
    gaps = [student_t_quantile(0.975, df) - z for df in (10, 100, 1_000, 100_000)]
    assert all(gap > 0 for gap in gaps)
    assert gaps == sorted(gaps, reverse=True)
    assert gaps[-1] < 1e-4


@given(
    st.floats(min_value=1e-6, max_value=1 - 1e-6),
    st.sampled_from([1, 2, 3, 5, 9, 29, 200]),
)
def test_cdf_inverts_the_quantile(p: float, df: int) -> None:
    assert student_t_cdf(student_t_quantile(p, df), df) == pytest.approx(p, abs=1e-10)


def test_t_cdf_matches_closed_form_for_three_degrees_of_freedom() -> None:
    for t in (-3.0, -0.5, 0.0, 1.0, 4.898979485566356):
        theta = math.atan(t / math.sqrt(3))
        closed = 0.5 + (theta + math.sin(theta) * math.cos(theta)) / math.pi
        assert student_t_cdf(t, 3) == pytest.approx(closed, abs=1e-13)
    assert student_t_cdf(math.inf, 3) == 1.0
    assert student_t_cdf(-math.inf, 3) == 0.0


def test_incomplete_beta_special_cases() -> None:
    assert regularized_incomplete_beta(1.0, 1.0, 0.3) == pytest.approx(0.3)
    assert regularized_incomplete_beta(2.0, 3.0, 0.0) == 0.0
    assert regularized_incomplete_beta(2.0, 3.0, 1.0) == 1.0
    assert regularized_incomplete_beta(2.0, 1.0, 0.4) == pytest.approx(0.16)


def test_t_functions_refuse_bad_input() -> None:
    with pytest.raises(ValueError, match="df"):
        student_t_cdf(1.0, 0)
    with pytest.raises(ValueError, match="p must be"):
        student_t_quantile(1.5, 3)


COHORT_MEANS = [0.21, 0.18, 0.25, 0.19, 0.23]


def test_equal_counts_give_the_classic_t_interval_of_cohort_means() -> None:
    bets = 7
    interval = pooled_mean_interval([m * bets for m in COHORT_MEANS], [bets] * 5)
    assert interval is not None
    half = 2.7764451051977987 * stdev(COHORT_MEANS) / math.sqrt(5)
    assert interval.estimate == pytest.approx(mean(COHORT_MEANS), abs=1e-15)
    assert interval.standard_error == pytest.approx(stdev(COHORT_MEANS) / math.sqrt(5), rel=1e-12)
    assert interval.low == pytest.approx(mean(COHORT_MEANS) - half, rel=1e-10)
    assert interval.high == pytest.approx(mean(COHORT_MEANS) + half, rel=1e-10)
    assert (interval.clusters, interval.count) == (5, 35)


def test_the_pooled_mean_weights_cohorts_by_their_bets() -> None:
    # Cohort with no bets is ignored; the estimate is Σ sums / Σ counts, not a mean of means.
    interval = pooled_mean_interval([1.0, 3.0, 0.0], [2, 6, 0], level=0.9)
    assert interval is not None
    assert interval.estimate == pytest.approx(0.5)
    assert interval.clusters == 2
    assert interval.count == 8
    # s − m·n = 0 in both cohorts: no spread between them.
    assert interval.standard_error == 0.0
    assert interval.low == interval.high == pytest.approx(0.5)


def test_one_cohort_has_an_estimate_but_no_interval_and_none_has_nothing() -> None:
    assert pooled_mean_interval([1.2], [4]) == Interval(0.3, None, None, None, 1, 4)
    assert pooled_mean_interval([], []) is None
    assert pooled_mean_interval([0.0], [0]) is None
    assert bootstrap_pooled_interval([1.2], [4]) == Interval(0.3, None, None, None, 1, 4)
    assert bootstrap_pooled_interval([], []) is None


def test_interval_inputs_are_checked() -> None:
    with pytest.raises(ValueError, match="equal length"):
        pooled_mean_interval([1.0, 2.0], [3])
    with pytest.raises(ValueError, match="whole numbers"):
        pooled_mean_interval([1.0], [-1])
    with pytest.raises(ValueError, match="no bets"):
        pooled_mean_interval([1.0], [0])
    with pytest.raises(ValueError, match="level"):
        pooled_mean_interval([1.0], [1], level=1.0)


SUMS = [1.4, 0.9, 2.2, 1.1, 1.9, 0.6]
COUNTS = [7, 5, 9, 6, 8, 4]


def test_bootstrap_is_deterministic_for_a_seed_and_brackets_the_estimate() -> None:
    first = bootstrap_pooled_interval(SUMS, COUNTS, seed=11)
    again = bootstrap_pooled_interval(SUMS, COUNTS, seed=11)
    other = bootstrap_pooled_interval(SUMS, COUNTS, seed=12)
    assert first is not None
    assert other is not None
    assert first == again
    assert (first.low, first.high) != (other.low, other.high)
    assert first.low is not None
    assert first.high is not None
    assert first.low < first.estimate < first.high
    assert first.estimate == pytest.approx(sum(SUMS) / sum(COUNTS))
    assert isinstance(first.low, float)


def test_bootstrap_agrees_roughly_with_the_t_interval() -> None:
    boot = bootstrap_pooled_interval(SUMS, COUNTS, resamples=20_000)
    t = pooled_mean_interval(SUMS, COUNTS)
    assert boot is not None
    assert t is not None
    assert boot.standard_error is not None
    assert t.standard_error is not None
    # The bootstrap SE lacks the C/(C − 1) correction: compare on the same footing.
    assert boot.standard_error == pytest.approx(t.standard_error * math.sqrt(5 / 6), rel=0.1)


def test_pooled_mean_test_equals_a_one_sample_t_test_with_equal_counts() -> None:
    test = pooled_mean_test([m * 7 for m in COHORT_MEANS], [7] * 5, null=0.2)
    assert test is not None
    t = (mean(COHORT_MEANS) - 0.2) / (stdev(COHORT_MEANS) / math.sqrt(5))
    assert test.t == pytest.approx(t, rel=1e-12)
    assert test.df == 4
    assert test.p_value == pytest.approx(2 * (1 - student_t_cdf(abs(t), 4)), abs=1e-13)


def test_pooled_mean_test_p_values_are_symmetric_and_shrink_with_t() -> None:
    up = pooled_mean_test(SUMS, COUNTS)
    down = pooled_mean_test([-s for s in SUMS], COUNTS)
    assert up is not None
    assert down is not None
    assert down.t == pytest.approx(-up.t)
    assert down.p_value == pytest.approx(up.p_value)
    assert up.p_value < 1e-4  # every cohort's mean is far above 0
    near = pooled_mean_test(SUMS, COUNTS, null=up.mean + 0.1 * up.standard_error)
    assert near is not None
    assert near.p_value > 0.9


def test_pooled_mean_test_with_no_spread() -> None:
    above = pooled_mean_test([1.0, 2.0], [2, 4], null=0.0)
    at = pooled_mean_test([1.0, 2.0], [2, 4], null=0.5)
    assert above is not None
    assert at is not None
    assert (above.t, above.p_value) == (math.inf, 0.0)
    assert (at.t, at.p_value) == (0.0, 1.0)
    assert pooled_mean_test([1.0], [2]) is None


def test_paired_difference_on_known_data() -> None:
    # Differences 1, 2, 2, 3: mean 2, sd √(2/3), SE √(2/3)/2, t = 2/SE = √24, df 3.
    result = paired_difference_test([1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 1.0, 1.0])
    assert result is not None
    assert result.mean_difference == pytest.approx(2.0)
    assert result.standard_error == pytest.approx(math.sqrt(2 / 3) / 2)
    assert result.t == pytest.approx(math.sqrt(24))
    assert (result.df, result.pairs) == (3, 4)
    theta = math.atan(math.sqrt(24) / math.sqrt(3))
    upper_tail = 0.5 - (theta + math.sin(theta) * math.cos(theta)) / math.pi
    assert result.p_value == pytest.approx(2 * upper_tail, rel=1e-10)


def test_paired_difference_edge_cases() -> None:
    assert paired_difference_test([1.0], [0.0]) is None
    same = paired_difference_test([1.0, 2.0], [0.5, 1.5])
    assert same is not None
    assert same.t == math.inf
    assert same.p_value == 0.0
    with pytest.raises(ValueError, match="differ in length"):
        paired_difference_test([1.0, 2.0], [1.0])


def test_share_positive_is_beat_percent() -> None:
    assert share_positive([0.02, -0.01, 0.0, 0.05]) == 0.5
    assert share_positive([]) is None
    with pytest.raises(ValueError, match="NaN"):
        share_positive([math.nan])
