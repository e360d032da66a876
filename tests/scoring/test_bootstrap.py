"""The pigeonhole bootstrap's resampled worlds (scoring/bootstrap.py): a bet is weighted by its
week's Poisson(1) draw times its market's, every group is resampled in the same worlds, and
the intervals and the rank ranges are read from those same worlds."""

from __future__ import annotations

import numpy as np

from scoring.bootstrap import ResampledWorlds, _worlds, bootstrap_ranks
from scoring.statistics import _codes


def _bets(seed: int = 5) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Three groups over 12 weeks and 40 markets, with bets repeated on a cell (a model's
    agents in concurrent cohorts betting on one market in one week)."""
    rng = np.random.default_rng(seed)
    n = 600
    groups = rng.integers(0, 3, n)
    weeks = rng.integers(0, 12, n) * 7 + 738000  # week ordinals
    markets = rng.integers(0, 40, n) * 13 + 5000  # market ids
    values = rng.random(n) * 0.5 + 0.1 * groups
    return values, groups, weeks, markets


def test_each_groups_resampled_mean_weights_every_bet_by_its_weeks_draw_times_its_markets() -> None:
    values, groups, weeks, markets = _bets()
    worlds = ResampledWorlds([values], groups, weeks, markets, resamples=300, seed=11)
    c, m = _codes("weeks", weeks, len(values)), _codes("markets", markets, len(values))
    drawn = list(_worlds(c, m, resamples=300, seed=11))
    week_weights = np.concatenate([w for w, _ in drawn], axis=1).astype(np.float64)
    market_weights = np.concatenate([w for _, w in drawn], axis=1).astype(np.float64)
    for g in range(3):
        own = groups == g
        weights = week_weights[c[own]] * market_weights[m[own]]  # bets × worlds
        with np.errstate(invalid="ignore", divide="ignore"):
            expected = (values[own] @ weights) / weights.sum(axis=0)
        np.testing.assert_allclose(worlds.means[g][0], expected, rtol=1e-5, equal_nan=True)


def test_a_world_that_weights_none_of_a_groups_bets_says_nothing_of_its_mean() -> None:
    # Group 0 has one bet: a world weights it 0 when its week's or its market's draw is 0,
    # P = 1 − (1 − e⁻¹)² ≈ 0.60.
    values = np.array([0.2, 0.3, 0.4, 0.5])
    worlds = ResampledWorlds(
        [values], [0, 1, 1, 1], [1, 2, 3, 4], [10, 11, 12, 13], resamples=400, seed=2
    )
    missing = ~np.isfinite(worlds.means[0][0])
    assert 200 < missing.sum() < 280
    np.testing.assert_allclose(worlds.means[0][0][~missing], 0.2, rtol=1e-6)
    ranges = worlds.rank_ranges([0, 1], column=0)
    assert ranges[0].worlds == ranges[1].worlds <= 400 - missing.sum()


def test_the_rank_ranges_of_the_rows_worlds_are_the_rank_bootstraps_of_the_same_bets() -> None:
    values, groups, weeks, markets = _bets(seed=8)
    worlds = ResampledWorlds(
        [values * 0 + 1.0, values], groups, weeks, markets, resamples=500, seed=4
    )
    alone = bootstrap_ranks(values, groups, weeks, markets, resamples=500, seed=4)
    assert worlds.rank_ranges([0, 1, 2], column=1) == alone
    assert alone[0].low == 1
    assert alone[0].p_first > 0.9


def test_intervals_and_ranks_come_from_one_set_of_draws_whatever_the_groups_ranked() -> None:
    values, groups, weeks, markets = _bets(seed=9)
    worlds = ResampledWorlds([values], groups, weeks, markets, resamples=400, seed=3)
    pair = worlds.rank_ranges([1, 2], column=0)
    all_three = worlds.rank_ranges([0, 1, 2], column=0)
    assert pair[1].worlds == all_three[1].worlds  # every group drawn in every world here
    intervals = worlds.intervals()
    for g in range(3):
        (interval,) = intervals[g]
        assert interval is not None
        assert interval.low is not None
        assert interval.high is not None
        low, high = np.quantile(worlds.means[g][0], [0.025, 0.975])
        assert (interval.low, interval.high) == (float(low), float(high))
