"""The pigeonhole bootstrap of pooled per-bet figures, clustered by week and market (Owen's
bootstrap for crossed clusters, with Poisson(1) weights): intervals of each group's pooled
mean, and the range of ranks of groups compared in the same resampled worlds."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from scoring.statistics import (
    MIN_BOOTSTRAP_WEEKS,
    Interval,
    _bets,
    _check_level,
    _codes,
    _finite_values,
    _groups_of,
    quantile_mc_error,
)


def _poisson_one_table(levels: int = 1 << 16) -> NDArray[np.float32]:
    """Poisson(1) at the midpoints of `levels` equal steps of its CDF: a draw of a uniform
    16-bit integer looked up here is a Poisson(1) draw to within 1/65,536 of probability,
    several times faster than numpy's own sampler."""
    table = np.empty(levels, dtype=np.float32)
    k, pmf, cdf = 0, math.exp(-1.0), math.exp(-1.0)
    for index in range(levels):
        while (index + 0.5) / levels > cdf:
            k += 1
            pmf /= k
            cdf += pmf
        table[index] = k
    return table


_POISSON_ONE = _poisson_one_table()


class ResampledWorlds:
    """The pigeonhole bootstrap's resampled worlds of grouped bets, computed once and read as
    intervals and as rank ranges.

    `columns` are per-bet values (finite), `groups` each bet's group (non-negative integers: a
    leaderboard row). A resampled world weights every week and every market by an independent
    Poisson(1) draw (the large-sample form of drawing them with replacement: Owen's pigeonhole
    bootstrap for crossed clusters, with Poisson weights), and a bet by its week's weight
    times its market's; each group's pooled means are recomputed with those weights. Every
    group is resampled in the same worlds, drawn from `seed`: one set of draws for them all.
    Raise ValueError for unequal lengths, non-finite values, negative groups or fewer than
    2 resamples.
    """

    def __init__(
        self,
        columns: list[ArrayLike],
        groups: ArrayLike,
        weeks: ArrayLike,
        markets: ArrayLike,
        *,
        resamples: int = 1000,
        seed: int = 0,
    ) -> None:
        if resamples < 2:
            raise ValueError(f"resamples must be at least 2, got {resamples!r}")
        self.values = [_finite_values("values", column) for column in columns]
        length = len(self.values[0]) if self.values else 0
        if any(len(v) != length for v in self.values):
            raise ValueError("every column must have one value per bet")
        group = np.asarray(groups, dtype=np.int64)
        if group.shape != (length,) or (length and int(group.min()) < 0):
            raise ValueError("groups must be non-negative integers, one per bet")
        self.weeks = _codes("weeks", weeks, length)
        self.markets = _codes("markets", markets, length)
        # Each group's bets (their indexes), by group.
        self.bets_of = {int(g): np.flatnonzero(group == g) for g in np.unique(group).tolist()}
        self.means = _resampled_means(
            self.values, self.bets_of, self.weeks, self.markets, resamples=resamples, seed=seed
        )

    def intervals(self, *, level: float = 0.95) -> dict[int, list[Interval | None]]:
        """Each group's pooled mean of each column with its percentile interval: low and high
        the (1 − level)/2 and (1 + level)/2 quantiles of its means in the worlds that weight
        any of its bets, standard_error their spread. low, high and standard_error are None
        for a group of fewer than `MIN_BOOTSTRAP_WEEKS` weeks or two markets."""
        _check_level(level)
        results: dict[int, list[Interval | None]] = {}
        for g, index in self.bets_of.items():
            week_count = len(np.unique(self.weeks[index]))
            market_count = len(np.unique(self.markets[index]))
            if week_count < MIN_BOOTSTRAP_WEEKS or market_count < 2:
                results[g] = [
                    Interval(
                        math.fsum(v[index].tolist()) / len(index),
                        None,
                        None,
                        None,
                        week_count,
                        len(index),
                        market_count,
                    )
                    for v in self.values
                ]
                continue
            means = self.means[g]
            drawn = means[:, np.isfinite(means[0])]
            results[g] = _percentile_intervals(
                self.values, drawn, index, week_count, market_count, level=level
            )
        return results

    def rank_ranges(
        self, groups: Sequence[int], *, column: int, level: float = 0.95
    ) -> dict[int, RankRange]:
        """Each of the `groups`' range of ranks by its pooled mean of `column` (the
        lowest mean ranks 1: a Brier), all of them ranked in each world that weights some of
        every one's bets (a world that weights none of a group's bets cannot rank it and is
        left out). A rank range is the (1 − level)/2 and (1 + level)/2 quantiles of the
        group's ranks (the lower rounded down, the upper up, so the range holds at least
        `level` of them); ties take the best of their ranks, and k groups tied for first share
        that world's P(rank 1) equally. {} with fewer than two groups present."""
        _check_level(level)
        present = [g for g in groups if g in self.means]
        if len(present) < 2:
            return {}
        means = np.stack([self.means[g][column] for g in present])  # groups × worlds
        means = means[:, np.all(np.isfinite(means), axis=0)]
        drawn = means.shape[1]
        if drawn == 0:
            return {}
        # A group's rank: 1 + the groups with a strictly lower mean (ties share the best).
        ranks = (means[None, :, :] < means[:, None, :]).sum(axis=1) + 1
        firsts = np.maximum((ranks == 1).sum(axis=0), 1)  # the groups ranked first, per world
        lower, upper = (1.0 - level) / 2.0, (1.0 + level) / 2.0
        result = {}
        for index, g in enumerate(present):
            row = ranks[index]
            result[g] = RankRange(
                low=int(np.floor(np.quantile(row, lower))),
                high=int(np.ceil(np.quantile(row, upper))),
                # A world where k groups tie for first credits each with 1/k, so the shares of
                # all groups add up to 1.
                p_first=float(np.sum((row == 1) / firsts)) / drawn,
                worlds=drawn,
            )
        return result


_WORLDS_A_BLOCK = 64


def _worlds(
    c: NDArray[np.intp], m: NDArray[np.intp], *, resamples: int, seed: int
) -> Iterator[tuple[NDArray[np.float32], NDArray[np.float32]]]:
    """The pigeonhole bootstrap's resampled worlds, drawn from `seed` in chunks of up to 250:
    each chunk's Poisson(1) weight of every week (rows of the first array) and every market
    (of the second), one column per world. Worlds as columns: a cluster's weights are one
    contiguous row, cheap to gather."""
    generator = np.random.Generator(np.random.PCG64(seed))
    chunk = 250
    for start in range(0, resamples, chunk):
        size = min(chunk, resamples - start)
        week_weights = _POISSON_ONE[
            generator.integers(0, 1 << 16, size=(_groups_of(c), size), dtype=np.uint16)
        ]
        market_weights = _POISSON_ONE[
            generator.integers(0, 1 << 16, size=(_groups_of(m), size), dtype=np.uint16)
        ]
        yield week_weights, market_weights


def _cells(
    values: list[NDArray[np.float64]],
    index: NDArray[np.intp],
    c: NDArray[np.intp],
    m: NDArray[np.intp],
) -> tuple[NDArray[np.float32], NDArray[np.intp], NDArray[np.intp]]:
    """A group's bets summed per cell (week × market), whose bets share every world's weight:
    (columns + 1) × cells of sums (the last the bets counted), and each cell's week and market."""
    market_count = _groups_of(m)
    cell, first, inverse = np.unique(
        c[index] * market_count + m[index], return_index=True, return_inverse=True
    )
    inverse = inverse.reshape(-1)
    sums = [np.bincount(inverse, weights=v[index], minlength=len(cell)) for v in values]
    sums.append(np.bincount(inverse, minlength=len(cell)).astype(np.float64))
    at = index[first]
    return np.stack(sums, axis=0).astype(np.float32), c[at], m[at]


def _resampled_means(
    values: list[NDArray[np.float64]],
    bets_of: dict[int, NDArray[np.intp]],
    c: NDArray[np.intp],
    m: NDArray[np.intp],
    *,
    resamples: int,
    seed: int,
) -> dict[int, NDArray[np.float64]]:
    """Each group's pooled mean of every column in each resampled world (columns × worlds),
    the worlds drawn from `seed` in chunks; NaN in a world that weights none of its bets."""
    cells = {g: _cells(values, index, c, m) for g, index in bets_of.items()}
    resampled: dict[int, list[NDArray[np.float64]]] = {g: [] for g in bets_of}
    for week_weights, market_weights in _worlds(c, m, resamples=resamples, seed=seed):
        # The worlds a few dozen at a time: each group's cells × worlds of weights then stay in
        # the processor's cache, which halves the time on a year of bets.
        for start in range(0, week_weights.shape[1], _WORLDS_A_BLOCK):
            block = slice(start, start + _WORLDS_A_BLOCK)
            week_block = np.ascontiguousarray(week_weights[:, block])
            market_block = np.ascontiguousarray(market_weights[:, block])
            for g, (sums, weeks, markets) in cells.items():
                weights = week_block[weeks] * market_block[markets]  # cells × worlds
                # einsum, not BLAS: a threaded BLAS on matrices this small, on a busy machine,
                # spends more time handing work between threads than multiplying.
                totals = np.einsum("kn,nw->kw", sums, weights).astype(np.float64)
                with np.errstate(invalid="ignore", divide="ignore"):
                    # A world can miss every bet (0 / 0): it says nothing of the mean.
                    means = totals[:-1] / np.where(totals[-1] > 0.0, totals[-1], np.nan)
                resampled[g].append(means)
    return {g: np.concatenate(parts, axis=1) for g, parts in resampled.items()}


def _percentile_intervals(
    values: list[NDArray[np.float64]],
    means: NDArray[np.float64],
    index: NDArray[np.intp],
    week_count: int,
    market_count: int,
    *,
    level: float,
) -> list[Interval | None]:
    """One group's interval of each column: its pooled mean over the bets `index`, and the
    percentiles and spread of its resampled means (a row of `means` per column)."""
    intervals: list[Interval | None] = []
    for column, v in enumerate(values):
        estimate = math.fsum(v[index].tolist()) / len(index)
        tails = ((1.0 - level) / 2.0, (1.0 + level) / 2.0)
        low, high = np.quantile(means[column], tails)
        error = float(np.std(means[column], ddof=1))
        mc = max(quantile_mc_error(means[column], p) for p in tails)
        intervals.append(
            Interval(
                estimate, float(low), float(high), error, week_count, len(index), market_count, mc
            )
        )
    return intervals


@dataclass(frozen=True)
class RankRange:
    """A group's rank among the groups compared (1 the best), over resampled worlds: the
    central `level` range of its ranks, and the share of worlds in which it ranked first."""

    low: int
    high: int
    p_first: float
    worlds: int  # the resampled worlds every group's bets were drawn in


def bootstrap_ranks(
    values: ArrayLike,
    groups: ArrayLike,
    weeks: ArrayLike,
    markets: ArrayLike,
    *,
    level: float = 0.95,
    resamples: int = 1000,
    seed: int = 0,
) -> dict[int, RankRange]:
    """Return each group's range of ranks by pooled mean (the lowest mean ranks 1: a Brier)
    over the pigeonhole bootstrap's resampled worlds, all groups ranked in the same worlds
    (`ResampledWorlds.rank_ranges`). Return {} with fewer than two groups. Raise ValueError
    for unequal lengths, non-finite values, negative groups, level outside (0, 1) or fewer
    than 2 resamples.
    """
    _check_level(level)
    v, c, m = _bets(values, weeks, markets)
    resampled = ResampledWorlds([v], groups, c, m, resamples=resamples, seed=seed)
    return resampled.rank_ranges(sorted(resampled.bets_of), column=0, level=level)


def bootstrap_pooled_interval(
    values: ArrayLike,
    weeks: ArrayLike,
    markets: ArrayLike,
    *,
    level: float = 0.95,
    resamples: int = 1000,
    seed: int = 0,
) -> Interval | None:
    """Return the pooled mean with a pigeonhole bootstrap interval (weeks × markets).

    Inputs and estimate as `pooled_mean_interval`. Each resample weights every week and,
    independently, every market by a Poisson(1) draw (Owen's pigeonhole bootstrap for crossed
    clusters, with the large-sample form of drawing with replacement); a bet counts its
    week's weight times its market's, and the pooled mean is recomputed with those weights.
    low and high are the (1 − level)/2 and (1 + level)/2 quantiles and standard_error the
    spread of the resampled means. It is conservative: with no cluster effects at all it
    counts the bets' own noise about twice (Owen 2007), so it is shown beside the t interval,
    not instead of it. Deterministic for a `seed` (numpy PCG64). Return None when there are
    no bets; low, high and standard_error are None with fewer than `MIN_BOOTSTRAP_WEEKS`
    weeks or two markets. Raise ValueError as `pooled_mean_interval` does, or for
    resamples < 2.
    """
    v = _finite_values("values", values)
    if len(v) == 0:
        _check_level(level)
        _codes("weeks", weeks, 0)
        return None
    _check_level(level)
    resampled = ResampledWorlds(
        [v], np.zeros(len(v), dtype=np.int64), weeks, markets, resamples=resamples, seed=seed
    )
    (interval,) = resampled.intervals(level=level)[0]
    return interval
