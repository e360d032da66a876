"""Student t, and intervals and tests of pooled per-bet figures clustered by week (the weekly
run) and market (000 §5.2, with t in place of 1.96)."""

from __future__ import annotations

import math
from statistics import NormalDist, mean, stdev

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring.bootstrap import bootstrap_pooled_interval, bootstrap_ranks
from scoring.statistics import (
    MIN_BOOTSTRAP_WEEKS,
    Interval,
    cell_mean_interval,
    clustered_variance,
    holm_adjusted,
    paired_difference_test,
    paired_difference_tests,
    pooled_mean_interval,
    pooled_mean_test,
    quantile_mc_error,
    ratio_interval,
    regularized_incomplete_beta,
    share_positive,
    student_t_cdf,
    student_t_quantile,
    two_way_variance,
    two_way_variances,
    within_range,
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


COHORT_VALUES = [0.21, 0.18, 0.25, 0.19, 0.23]


def one_bet_each(values: list[float]) -> tuple[list[float], list[int], list[int]]:
    """One bet per cohort, each on a market of its own: the clusters are the bets."""
    return values, list(range(len(values))), [100 + i for i in range(len(values))]


def test_one_bet_per_cohort_on_distinct_markets_gives_the_classic_t_interval() -> None:
    interval = pooled_mean_interval(*one_bet_each(COHORT_VALUES))
    assert interval is not None
    assert interval.low is not None
    assert interval.high is not None
    centre, spread = mean(COHORT_VALUES), stdev(COHORT_VALUES) / math.sqrt(5)
    half = student_t_quantile(0.975, 4) * spread
    assert interval.estimate == pytest.approx(centre, abs=1e-15)
    assert interval.standard_error == pytest.approx(spread, rel=1e-12)
    assert (interval.low, interval.high) == pytest.approx((centre - half, centre + half))
    assert (interval.clusters, interval.count, interval.markets) == (5, 5, 5)


def test_the_estimate_is_the_pooled_mean_of_every_bet() -> None:
    values = [0.1, 0.3, 0.5, 0.5, 0.9, 0.2]
    interval = pooled_mean_interval(values, [1, 1, 2, 2, 2, 3], [7, 8, 7, 9, 10, 8])
    assert interval is not None
    assert interval.estimate == pytest.approx(sum(values) / 6)


def test_bets_on_shared_markets_widen_an_interval_weeks_alone_would_close() -> None:
    # Three weeks' bets on the same two markets: +1 on one, −1 on the other, so every week's
    # mean is 0. Clustering by week alone would claim certainty; the markets' outcomes were
    # drawn once, and the two-way standard error says so.
    values = [1.0, -1.0] * 3
    weeks = [1, 1, 2, 2, 3, 3]
    markets = [10, 20] * 3
    interval = pooled_mean_interval(values, weeks, markets)
    assert interval is not None
    # ψ = v/6; by market: sums ±1/2, 2/1 × (1/4 + 1/4) = 1; by week: 0; by cell: 6/5 × 6/36.
    # Cameron, Gelbach and Miller's 0 + 1 − 0.2 is below the market's one-way variance:
    # floored there, as a second way of clustering must not narrow the interval.
    assert 0 + 1.0 - 0.2 < 1.0
    error = 1.0
    assert interval.standard_error == pytest.approx(error)
    assert interval.low is not None
    assert interval.high is not None
    half = student_t_quantile(0.975, 1) * error  # df: two markets − 1
    assert (interval.low, interval.high) == pytest.approx((-half, half))


def test_the_two_way_variance_is_never_below_either_one_way_variance() -> None:
    # Few clusters: the two-way estimate V_week + V_market − V_cell is smaller than V_week.
    psi = [0.3, -0.1, 0.2, -0.4, 0.1, 0.05]
    weeks = [1, 1, 2, 2, 3, 3]
    markets = [7, 8, 8, 7, 9, 9]
    by_week = clustered_variance(psi, weeks)
    by_market = clustered_variance(psi, markets)
    by_cell = clustered_variance(psi, [w * 100 + m for w, m in zip(weeks, markets, strict=True)])
    assert by_week + by_market - by_cell < max(by_week, by_market)
    assert two_way_variance(psi, weeks, markets) == pytest.approx(max(by_week, by_market))


def test_two_way_variances_of_several_statistics_are_each_ones_two_way_variance() -> None:
    rng = np.random.default_rng(11)
    weeks = rng.integers(738_000, 738_040, 300)  # week ordinals
    markets = rng.integers(0, 10**6, 300)  # a sparse week × market table
    influences = rng.normal(size=(4, 300))

    variances = two_way_variances(influences, weeks, markets)

    assert variances.tolist() == [two_way_variance(row, weeks, markets) for row in influences]
    with pytest.raises(ValueError, match="2-d"):
        two_way_variances(influences[0], weeks, markets)
    with pytest.raises(ValueError, match="finite"):
        two_way_variances(np.array([[math.nan] * 300]), weeks, markets)


def test_cluster_variances_by_hand() -> None:
    psi = [0.1, -0.3, 0.2, 0.0]
    assert clustered_variance(psi, ["a", "a", "b", "b"]) == pytest.approx(2 * (0.04 + 0.04))
    assert clustered_variance(psi, [1, 1, 1, 1]) == 0.0
    # Every bet its own cluster in both ways: the two-way variance is the one-way one.
    assert two_way_variance(psi, [1, 2, 3, 4], [5, 6, 7, 8]) == pytest.approx(
        clustered_variance(psi, [1, 2, 3, 4])
    )


def test_one_cohort_has_an_estimate_but_no_interval_and_none_has_nothing() -> None:
    one = pooled_mean_interval([0.25, 0.75], [3, 3], [1, 2])
    assert one == Interval(0.5, None, None, None, clusters=1, count=2, markets=2)
    assert pooled_mean_interval([], [], []) is None
    assert bootstrap_pooled_interval([], [], []) is None
    few = bootstrap_pooled_interval(*one_bet_each(COHORT_VALUES[:4]))
    assert few is not None
    assert few.low is None  # fewer than MIN_BOOTSTRAP_WEEKS
    assert MIN_BOOTSTRAP_WEEKS == 5


def test_interval_inputs_are_checked() -> None:
    with pytest.raises(ValueError, match="one entry per bet"):
        pooled_mean_interval([1.0, 2.0], [3], [1, 2])
    with pytest.raises(ValueError, match="finite"):
        pooled_mean_interval([math.nan], [1], [1])
    with pytest.raises(ValueError, match="level"):
        pooled_mean_interval([1.0], [1], [1], level=1.0)
    with pytest.raises(ValueError, match="resamples"):
        bootstrap_pooled_interval([1.0], [1], [1], resamples=1)


def many_cohorts(seed: int = 3) -> tuple[list[float], list[int], list[int]]:
    """Twelve cohorts of twenty bets on forty markets, values independent draws."""
    import random

    rng = random.Random(seed)
    values, cohorts, markets = [], [], []
    for cohort in range(12):
        for _ in range(20):
            values.append(rng.gauss(0.02, 0.2))
            cohorts.append(cohort)
            markets.append(rng.randrange(40))
    return values, cohorts, markets


def test_bootstrap_is_deterministic_for_a_seed_and_brackets_the_estimate() -> None:
    data = many_cohorts()
    first = bootstrap_pooled_interval(*data, seed=11)
    again = bootstrap_pooled_interval(*data, seed=11)
    other = bootstrap_pooled_interval(*data, seed=12)
    assert first == again
    assert first != other
    assert first is not None
    assert first.low is not None
    assert first.high is not None
    assert first.low < first.estimate < first.high


def test_bootstrap_is_wider_than_the_t_interval_on_independent_bets() -> None:
    # Owen's pigeonhole bootstrap is conservative: with no cluster effects at all, drawing
    # both cohorts and markets counts the bets' own noise about twice (SE about √2 times).
    data = many_cohorts()
    boot = bootstrap_pooled_interval(*data, resamples=4000)
    t = pooled_mean_interval(*data)
    assert boot is not None
    assert t is not None
    assert boot.standard_error is not None
    assert t.standard_error is not None
    assert t.standard_error < boot.standard_error < 2 * t.standard_error


def test_pooled_mean_test_with_one_bet_per_cohort_is_the_one_sample_t_test() -> None:
    test = pooled_mean_test(*one_bet_each(COHORT_VALUES), null=0.2)
    assert test is not None
    spread = stdev(COHORT_VALUES) / math.sqrt(5)
    t = (mean(COHORT_VALUES) - 0.2) / spread
    assert test.t == pytest.approx(t)
    assert test.df == 4
    assert test.p_value == pytest.approx(2 * (1 - student_t_cdf(abs(t), 4)))


def test_pooled_mean_test_p_values_are_symmetric_and_shrink_with_t() -> None:
    values, cohorts, markets = many_cohorts()
    up = pooled_mean_test(values, cohorts, markets)
    down = pooled_mean_test([-v for v in values], cohorts, markets)
    assert up is not None
    assert down is not None
    assert up.t is not None
    assert down.t == pytest.approx(-up.t)
    assert down.p_value == pytest.approx(up.p_value)
    shifted = pooled_mean_test([v + 1.0 for v in values], cohorts, markets)
    assert shifted is not None
    assert shifted.p_value is not None
    assert shifted.p_value < 1e-6


def test_no_spread_is_no_evidence() -> None:
    flat = pooled_mean_test([0.5, 0.5, 0.5], [1, 2, 3], [4, 5, 6])
    assert flat is not None
    assert flat.standard_error == 0.0
    assert flat.t is None
    assert flat.p_value is None
    assert pooled_mean_test([1.0, 2.0], [1, 1], [4, 5]) is None  # one cohort


def test_paired_difference_with_one_bet_each_per_week_is_at_least_the_paired_t_test() -> None:
    a, b = [1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 1.0, 1.0]
    values = a + b
    weeks = [1, 2, 3, 4] * 2
    markets = list(range(8))  # every bet on a market of its own
    result = paired_difference_test(values, weeks, markets, [True] * 4 + [False] * 4)
    assert result is not None
    differences = [x - y for x, y in zip(a, b, strict=True)]
    paired = stdev(differences) / 2  # by week: the paired t test's standard error
    # By market, every bet alone: the two forecasters' bets as if independent.
    psi = [(x - mean(a)) / 4 for x in a] + [-(y - mean(b)) / 4 for y in b]
    unpaired = math.sqrt(clustered_variance(psi, markets))
    assert result.mean_difference == pytest.approx(mean(differences))
    assert result.standard_error == pytest.approx(max(paired, unpaired))
    assert result.standard_error >= paired
    assert result.df == 3
    assert result.pairs == 4
    assert result.t == pytest.approx(mean(differences) / result.standard_error)


def test_paired_difference_keeps_only_shared_weeks_and_weights_bets() -> None:
    # The first forecaster's week 9 has no partner: it is left out.
    values = [0.2, 0.4, 0.6, 9.0, 0.1, 0.3]
    cohorts = [1, 1, 2, 9, 1, 2]
    markets = [5, 6, 7, 8, 5, 7]
    first = [True, True, True, True, False, False]
    result = paired_difference_test(values, cohorts, markets, first)
    assert result is not None
    assert result.pairs == 2
    assert result.mean_difference == pytest.approx((0.2 + 0.4 + 0.6) / 3 - (0.1 + 0.3) / 2)
    assert paired_difference_test([1.0, 0.5], [1, 1], [2, 3], [True, False]) is None
    with pytest.raises(ValueError, match="one entry per bet"):
        paired_difference_test([1.0, 2.0], [1, 2], [1, 2], [True])


def test_paired_tests_of_several_columns_are_each_columns_paired_test() -> None:
    rng = np.random.default_rng(12)
    weeks, markets = rng.integers(0, 12, 200), rng.integers(0, 40, 200)
    first = rng.random(200) < 0.5
    columns = [rng.random(200), rng.normal(size=200)]

    tests = paired_difference_tests(columns, weeks, markets, first)

    assert tests == [paired_difference_test(c, weeks, markets, first) for c in columns]
    assert all(test is not None for test in tests)
    assert paired_difference_tests(columns, [1] * 200, markets, first) == [None, None]
    with pytest.raises(ValueError, match="one entry per bet"):
        paired_difference_tests([columns[0], columns[1][:10]], weeks, markets, first)


def test_share_positive_is_beat_percent() -> None:
    assert share_positive([0.02, -0.01, 0.0, 0.05]) == 0.5
    assert share_positive([]) is None
    with pytest.raises(ValueError, match="NaN"):
        share_positive([math.nan])


def test_a_ratio_interval_with_equal_denominators_is_the_mean_interval() -> None:
    # Each bet's denominator 1: the ratio is the pooled mean, with the same interval.
    values, cohorts, markets = many_cohorts()
    ratio = ratio_interval(values, [1.0] * len(values), cohorts, markets)
    mean_interval = pooled_mean_interval(values, cohorts, markets)
    assert ratio is not None
    assert mean_interval is not None
    assert ratio.estimate == pytest.approx(mean_interval.estimate)
    assert ratio.low == pytest.approx(mean_interval.low)
    assert ratio.high == pytest.approx(mean_interval.high)


def test_a_ratio_interval_by_hand() -> None:
    # Two cohorts, one bet each on its own market: R = (1 + 3) / (2 + 2) = 1; ψ = (n − d)/4 =
    # (−0.25, +0.25); every grouping gives 2/1 × (1/16 + 1/16) = 1/4, so SE = 1/2, df = 1.
    ratio = ratio_interval([1.0, 3.0], [2.0, 2.0], [1, 2], [5, 6])
    assert ratio is not None
    assert ratio.estimate == pytest.approx(1.0)
    assert ratio.standard_error == pytest.approx(0.5)
    half = student_t_quantile(0.975, 1) * 0.5
    assert (ratio.low, ratio.high) == pytest.approx((1.0 - half, 1.0 + half))
    assert ratio_interval([1.0], [0.0], [1], [1]) is None
    assert ratio_interval([], [], [], []) is None


def test_cells_give_the_interval_of_the_values_they_hold() -> None:
    # The values written out one by one, zeros included, and the same values summed per cell
    # (cohort × market) with a count: one figure and one interval.
    values = [0.3, 0.0, 0.0, -0.1, 0.0, 0.2, 0.0, 0.0, 0.1, 0.0]
    cohorts = [1, 1, 1, 2, 2, 2, 3, 3, 3, 3]
    markets = [7, 7, 8, 7, 8, 9, 8, 9, 9, 7]
    every = pooled_mean_interval(values, cohorts, markets)
    cells: dict[tuple[int, int], list[float]] = {}
    for value, cohort, market in zip(values, cohorts, markets, strict=True):
        cells.setdefault((cohort, market), []).append(value)
    keys = sorted(cells)
    summed = cell_mean_interval(
        [sum(cells[k]) for k in keys],
        [len(cells[k]) for k in keys],
        [k[0] for k in keys],
        [k[1] for k in keys],
    )
    assert every is not None
    assert summed is not None
    assert summed.estimate == pytest.approx(every.estimate)
    assert summed.standard_error == pytest.approx(every.standard_error)
    assert (summed.low, summed.high) == pytest.approx((every.low, every.high))
    assert summed.count == 10
    assert cell_mean_interval([], [], [], []) is None
    with pytest.raises(ValueError, match="whole"):
        cell_mean_interval([0.1], [0.5], [1], [1])


def test_holms_adjustment_on_a_worked_example() -> None:
    # m = 4: sorted 0.01, 0.02, 0.03, 0.04 → 0.04, 0.06, 0.06 (kept at least 0.06), 0.06;
    # then back in the order given; an untested pair stays None and is not counted.
    adjusted = holm_adjusted([0.03, None, 0.01, 0.04, 0.02])
    assert adjusted == pytest.approx([0.06, None, 0.04, 0.06, 0.06])
    assert holm_adjusted([0.5, 0.9]) == [1.0, 1.0]
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm_adjusted([1.5])


def test_bootstrap_ranks_separate_clearly_different_forecasters() -> None:
    # Three forecasters on the same 20 weeks × 3 markets a week, their Briers far apart.
    weeks, markets, values, groups = [], [], [], []
    for week in range(20):
        for market in range(3):
            for group, brier in enumerate((0.10, 0.20, 0.30)):
                weeks.append(week)
                markets.append(week * 3 + market)
                values.append(brier + 0.01 * ((week + market) % 3))
                groups.append(group)
    ranks = bootstrap_ranks(values, groups, weeks, markets, resamples=200, seed=7)
    assert ranks == bootstrap_ranks(values, groups, weeks, markets, resamples=200, seed=7)
    assert [(r.low, r.high) for r in (ranks[0], ranks[1], ranks[2])] == [(1, 1), (2, 2), (3, 3)]
    assert ranks[0].p_first == 1.0
    assert ranks[2].p_first == 0.0
    assert ranks[0].worlds == 200


def test_bootstrap_ranks_of_indistinguishable_forecasters_overlap() -> None:
    # Two forecasters whose Briers swap from week to week: neither is established as first.
    weeks, markets, values, groups = [], [], [], []
    for week in range(12):
        for group in (0, 1):
            weeks.append(week)
            markets.append(week)
            values.append(0.1 if (week + group) % 2 else 0.3)
            groups.append(group)
    ranks = bootstrap_ranks(values, groups, weeks, markets, resamples=400, seed=3)
    assert (ranks[0].low, ranks[0].high) == (1, 2)
    assert (ranks[1].low, ranks[1].high) == (1, 2)
    assert 0.2 < ranks[0].p_first < 0.8
    # Ties rank both first and share that world's first place: the shares add up to 1.
    assert ranks[0].p_first + ranks[1].p_first == pytest.approx(1.0)
    twins = bootstrap_ranks([0.2, 0.2, 0.3], [0, 1, 2], [1, 1, 1], [1, 1, 1], resamples=10)
    assert (twins[0].p_first, twins[1].p_first, twins[2].p_first) == (0.5, 0.5, 0.0)
    assert bootstrap_ranks([0.1, 0.2], [0, 0], [1, 2], [1, 2]) == {}
    with pytest.raises(ValueError, match="groups"):
        bootstrap_ranks([0.1, 0.2], [0, -1], [1, 2], [1, 2])


def test_an_interval_near_the_end_of_its_range_is_kept_inside_it() -> None:
    # Four weeks of Brier scores near 0: the symmetric t interval passes below 0.
    interval = pooled_mean_interval([0.0, 0.0, 0.01, 0.3], [1, 2, 3, 4], ["a", "b", "c", "d"])
    assert interval is not None
    assert interval.low is not None
    assert interval.low < 0.0

    kept = within_range(interval, 0.0, 1.0)

    assert kept is not None
    assert kept.low == 0.0
    assert kept.high == interval.high
    assert (kept.estimate, kept.standard_error) == (interval.estimate, interval.standard_error)
    assert within_range(None, 0.0, 1.0) is None


def test_a_quantiles_monte_carlo_error_is_the_binomial_spread_of_its_rank() -> None:
    # 1,000 evenly spread draws on [0, 1): the median's rank moves by 1.96·√250 ≈ 31 draws
    # either way, so its half-width is about 31/1000.
    draws = np.arange(1000) / 1000
    assert quantile_mc_error(draws, 0.5) == pytest.approx(1.96 * math.sqrt(250) / 1000, abs=0.002)
    with pytest.raises(ValueError, match="two draws"):
        quantile_mc_error([0.3], 0.5)


def test_the_monte_carlo_error_covers_the_bounds_spread_over_fresh_resamples() -> None:
    # 300 independent sets of 1,000 normal draws: their 97.5th percentiles spread as the
    # error from one set says (95% of them within it of the true quantile, 1.96).
    rng = np.random.default_rng(5)
    sets = rng.standard_normal((300, 1000))
    quantiles = np.quantile(sets, 0.975, axis=1)
    errors = [quantile_mc_error(draws, 0.975) for draws in sets[:20]]
    within = np.mean(np.abs(quantiles - 1.959963984540054) <= np.median(errors))
    assert 0.88 <= within <= 0.99
