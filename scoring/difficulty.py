"""Brier scores adjusted for question difficulty: a two-way fixed-effects model of our own.

Agents choose their own markets, so a raw mean Brier rewards picking easy questions. Each
bet's score is modelled as score = a_f + d_q, a forecaster effect plus a question effect,
fitted over every forecaster's bets together so that the questions several forecasters share
tie the effects to one scale. A forecaster's adjusted Brier is its mean of score − d_q: its
Brier on a question set of average difficulty. (004, ForecastBench's paper, describes no such
adjustment; the model is the textbook additive two-way fixed effects, solved exactly on a
linked design, by backfitting otherwise.)

The fit means something only where the forecasters are tied together by shared questions:
`design_support` says, for each forecaster, how many of its questions another forecaster
answered too, and which connected part of the design (forecasters linked through shared
questions) it falls in.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray


def _codes(name: str, values: ArrayLike) -> NDArray[np.intp]:
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-d, got shape {array.shape}")
    if len(array) == 0:
        return np.zeros(0, dtype=np.intp)
    if not np.issubdtype(array.dtype, np.integer):
        as_float = array.astype(np.float64)
        if not bool(np.all(np.isfinite(as_float) & (as_float == np.floor(as_float)))):
            raise ValueError(f"{name} must be integer codes")
    codes = array.astype(np.intp)
    if int(codes.min()) < 0:
        raise ValueError(f"{name} must be non-negative codes")
    return codes


def difficulty_adjusted_brier(
    scores: ArrayLike,
    forecasters: ArrayLike,
    questions: ArrayLike,
    *,
    max_iterations: int = 500,
    tolerance: float = 1e-12,
    forecaster_count: int | None = None,
) -> NDArray[np.float64]:
    """Return each forecaster's Brier score adjusted for the difficulty of its questions.

    One entry per bet in each input: `scores` (Brier, in [0, 1] but any finite value is
    accepted), `forecasters` codes 0..F−1 and `questions` codes 0..Q−1. The fit
    score ≈ a_f + d_q is least squares: solved exactly where the forecasters with bets are
    linked into one part (`difficulty_fit`), else by alternating group means (Gauss–Seidel
    backfitting) until no effect moves by `tolerance` or `max_iterations` passes; d is then
    centred so its bet-weighted mean is 0. Entry f of the result (length F, by default the
    largest code + 1, or `forecaster_count`) is the mean over f's bets of score − d_q, NaN
    for a forecaster with no bets. The bet-weighted mean of the result equals the raw mean
    score; with one forecaster the result is its raw mean. Where groups of forecasters share
    no question, each group is adjusted on its own scale. Raise ValueError for unequal
    lengths, non-finite scores, negative or non-integer codes, a forecaster_count not above
    every code, max_iterations < 1 or a negative tolerance.
    """
    adjusted, _ = difficulty_fit(
        scores,
        forecasters,
        questions,
        max_iterations=max_iterations,
        tolerance=tolerance,
        forecaster_count=forecaster_count,
    )
    return adjusted


def difficulty_fit(
    scores: ArrayLike,
    forecasters: ArrayLike,
    questions: ArrayLike,
    *,
    max_iterations: int = 500,
    tolerance: float = 1e-12,
    forecaster_count: int | None = None,
    component: ArrayLike | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Return `difficulty_adjusted_brier`'s figures and each bet's residual: its score less
    its forecaster's and its question's fitted effects. Arguments and errors as there.

    Where the forecasters with bets are linked by shared questions into one part (`component`,
    as `design_support` gives it, or worked out here), the least-squares effects are solved
    exactly (`_Design`), however thinly the part is linked: backfitting there can stop far
    from them within its passes. Otherwise (or where that solve is numerically singular) each
    part is backfitted as the docstring of `difficulty_adjusted_brier` says."""
    y = np.asarray(scores, dtype=np.float64)
    if y.ndim != 1 or not bool(np.all(np.isfinite(y))):
        raise ValueError("scores must be 1-d and finite")
    f = _codes("forecasters", forecasters)
    q = _codes("questions", questions)
    if not len(y) == len(f) == len(q):
        raise ValueError(
            f"scores, forecasters and questions differ in length: {len(y)}, {len(f)}, {len(q)}"
        )
    if max_iterations < 1:
        raise ValueError(f"max_iterations must be at least 1, got {max_iterations!r}")
    if not tolerance >= 0.0:
        raise ValueError(f"tolerance must not be negative, got {tolerance!r}")
    needed = int(f.max()) + 1 if len(f) else 0
    count = needed if forecaster_count is None else forecaster_count
    if count < needed:
        raise ValueError(f"forecaster_count {count} is not above every code (max {needed - 1})")
    if len(y) == 0:
        return np.full(count, np.nan), y

    question_count = int(q.max()) + 1
    bets_f = np.bincount(f, minlength=count).astype(np.float64)
    bets_q = np.bincount(q, minlength=question_count).astype(np.float64)
    has_f = bets_f > 0
    has_q = bets_q > 0

    def group_mean(
        codes: NDArray[np.intp], values: NDArray[np.float64], bets: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        sums = np.bincount(codes, weights=values, minlength=len(bets))
        return np.divide(sums, bets, out=np.zeros(len(bets)), where=bets > 0)

    d = _exact_question_effects(y, f, q, count, component)
    if d is None:
        a = np.zeros(count)
        d = np.zeros(question_count)
        for _ in range(max_iterations):
            new_a = group_mean(f, y - d[q], bets_f)
            new_d = group_mean(q, y - new_a[f], bets_q)
            change = max(
                float(np.max(np.abs(new_a - a)[has_f])), float(np.max(np.abs(new_d - d)[has_q]))
            )
            a, d = new_a, new_d
            if change < tolerance:
                break
    d = d - float(np.mean(d[q]))
    adjusted = group_mean(f, y - d[q], bets_f)
    adjusted[~has_f] = np.nan
    # The residuals: with d centred, a forecaster's effect is its adjusted figure.
    return adjusted, y - np.nan_to_num(adjusted)[f] - d[q]


# Past this condition number of the grounded equations, a solve is not trusted (ArithmeticError).
MOST_CONDITION = 1e12


@dataclass(frozen=True)
class _Design:
    """A design's normal equations with its question effects eliminated: the question
    equations give d = (s_q − T a) / n_q (T the questions × forecasters table of bets, n_q each
    question's bets, s_q a right-hand side's sum over each question's bets), which leaves
    L a = r for the forecasters with bets, L = diag(n_f) − Tᵀ diag(1/n_q) T: the Laplacian of
    the forecasters linked by their shared questions, singular only along an equal shift of
    every a (which moves no a_f + d_q) on a connected design. With the first forecaster's a
    held at 0, one small solve gives a for any number of right-hand sides at once."""

    active: NDArray[np.intp]  # the forecasters with bets
    own: NDArray[np.intp]  # each bet's forecaster's place among them
    table: NDArray[np.float64]  # T, questions × active forecasters
    safe_q: NDArray[np.float64]  # n_q, 1 where a question has no bet
    laplacian: NDArray[np.float64]

    @classmethod
    def of(cls, f: NDArray[np.intp], q: NDArray[np.intp], count: int) -> _Design:
        bets_f = np.bincount(f, minlength=count).astype(np.float64)
        bets_q = np.bincount(q, minlength=int(q.max()) + 1).astype(np.float64)
        active = np.flatnonzero(bets_f > 0)
        where = np.full(count, -1, dtype=np.intp)
        where[active] = np.arange(len(active))
        own = where[f]
        counts = np.bincount(q * len(active) + own, minlength=len(bets_q) * len(active))
        table = counts.astype(np.float64).reshape(len(bets_q), len(active))
        safe_q = np.where(bets_q > 0, bets_q, 1.0)
        laplacian = np.diag(bets_f[active]) - table.T @ (table / safe_q[:, None])
        return cls(active, own, table, safe_q, laplacian)

    def solve(self, right: NDArray[np.float64]) -> NDArray[np.float64]:
        """a (active forecasters × columns) with L a = `right` (same shape; each column sums
        to 0), the first forecaster's a held at 0. Raise ArithmeticError where the grounded
        equations are numerically singular."""
        a = np.zeros_like(right)
        grounded = self.laplacian[1:, 1:]
        if len(grounded):
            if not float(np.linalg.cond(grounded)) <= MOST_CONDITION:
                raise ArithmeticError("the design's equations are numerically singular")
            a[1:] = np.linalg.solve(grounded, right[1:])
        return a


def _one_part(parts: NDArray[np.int64], f: NDArray[np.intp]) -> bool:
    """Whether the forecasters with bets (`f`) all fall in one part of `parts` (each
    forecaster's, as `design_support` gives them)."""
    return len(set(parts[np.bincount(f, minlength=len(parts)) > 0].tolist())) == 1


def _exact_question_effects(
    y: NDArray[np.float64],
    f: NDArray[np.intp],
    q: NDArray[np.intp],
    count: int,
    component: ArrayLike | None,
) -> NDArray[np.float64] | None:
    """The fit's question effects d (one per question code, uncentred), solved exactly on a
    design whose forecasters with bets are one linked part; None on any other design, or
    where the solve is numerically singular (the caller backfits)."""
    parts = design_support(f, q, forecaster_count=count)[1] if component is None else component
    if not _one_part(np.asarray(parts), f):
        return None
    design = _Design.of(f, q, count)
    s_f = np.bincount(design.own, weights=y, minlength=len(design.active))
    s_q = np.bincount(q, weights=y, minlength=len(design.safe_q))
    right = s_f - design.table.T @ (s_q / design.safe_q)
    try:
        a = design.solve(right[:, None])[:, 0]
    except ArithmeticError:
        return None
    d: NDArray[np.float64] = (s_q - design.table @ a) / design.safe_q
    return d


def design_support(
    forecasters: ArrayLike, questions: ArrayLike, *, forecaster_count: int | None = None
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Return, for each forecaster code 0..F−1, (the number of its distinct questions that
    some other forecaster answered too, the label of its connected component), over the
    bipartite design of forecasters and the questions they answered: two forecasters are
    connected when a chain of shared questions links them. A forecaster with no bets has 0
    shared questions and the component −1. Raise ValueError as `difficulty_adjusted_brier`
    does for its codes."""
    f = _codes("forecasters", forecasters)
    q = _codes("questions", questions)
    if len(f) != len(q):
        raise ValueError(f"forecasters and questions differ in length: {len(f)}, {len(q)}")
    needed = int(f.max()) + 1 if len(f) else 0
    count = needed if forecaster_count is None else forecaster_count
    if count < needed:
        raise ValueError(f"forecaster_count {count} is not above every code (max {needed - 1})")
    # The distinct (forecaster, question) pairs: one sort of f × Q + q.
    questions_count = int(q.max()) + 1 if len(q) else 1
    pair = np.unique(f.astype(np.int64) * questions_count + q)
    pf, pq = pair // questions_count, pair % questions_count
    answered_by = np.bincount(pq) if len(pair) else np.zeros(0, np.int64)
    shared = np.bincount(pf, weights=answered_by[pq] > 1, minlength=count).astype(np.int64)
    # Connected parts: each forecaster takes the lowest label among the forecasters of its
    # questions, until none moves (at most as many passes as the part is wide); a part's
    # label is its lowest forecaster.
    label = np.arange(count, dtype=np.int64)
    while len(pair):
        lowest = np.full(questions_count, count, dtype=np.int64)
        np.minimum.at(lowest, pq, label[pf])
        moved = label.copy()
        np.minimum.at(moved, pf, lowest[pq])
        if np.array_equal(moved, label):
            break
        label = moved
    has = np.zeros(count, dtype=np.bool_)
    has[pf] = True
    component = np.where(has, label, -1).astype(np.int64)
    return shared, component


def difficulty_influence(
    forecasters: ArrayLike,
    questions: ArrayLike,
    *,
    forecaster_count: int | None = None,
    component: ArrayLike | None = None,
) -> NDArray[np.float64]:
    """Return the F × N matrix B with `difficulty_adjusted_brier(scores, …)` = B @ scores for
    every score vector, on a design whose forecasters are all linked by shared questions (one
    connected part): each adjusted Brier is linear in the scores, and row f of B is how much
    each bet moves forecaster f's figure. With the fit's residuals e, the bets' influences on
    f are B[f] · e, which a clustered variance takes (the sandwich of a linear estimator).

    Why it has this form: the fit's normal equations make forecaster f's mean of score − d_q
    equal its effect a_f, and centring d adds the mean score less the bet-weighted mean of a;
    so the figure is w · (a, d) + mean score, w = e_f − n/N on the a's (n the forecasters'
    bets) and 0 on the d's. w sums to zero over a connected design, the one direction the
    effects are not identified in, so u = (XᵀX)⁺w solves the normal equations and the row is
    B[f] = X u + 1/N, X the design (bet i's row picks a_f and d_q). u is solved exactly, every
    forecaster's at once (`_Design`: the question effects eliminated, d = −T a / n_q).

    Rows of forecasters without bets are 0. `component`, each forecaster's linked part as
    `design_support` gives it, spares working it out again. Raise ValueError as
    `design_support` does, or when the forecasters with bets are not one connected part;
    ArithmeticError where the equations are numerically singular (condition number past
    MOST_CONDITION)."""
    f = _codes("forecasters", forecasters)
    q = _codes("questions", questions)
    if len(f) != len(q):
        raise ValueError(f"forecasters and questions differ in length: {len(f)}, {len(q)}")
    parts = (
        design_support(f, q, forecaster_count=forecaster_count)[1]
        if component is None
        else np.asarray(component)
    )
    count = len(parts)
    if len(f) and not _one_part(parts, f):
        raise ValueError("the forecasters must be linked by shared questions into one part")
    influence = np.zeros((count, len(f)))
    if len(f) == 0:
        return influence
    n = len(f)
    design = _Design.of(f, q, count)
    k = len(design.active)
    # Column j: forecaster active[j]'s w, on the forecasters with bets (the rest are 0).
    bets_active = np.bincount(design.own, minlength=k).astype(np.float64)
    a = design.solve(np.eye(k) - (bets_active / n)[:, None])
    # Row by row (each forecaster's a and d as contiguous rows): B[f] = a[f_i] + d[q_i] + 1/N.
    d = np.ascontiguousarray((-(design.table @ a) / design.safe_q[:, None]).T)
    a_rows = np.ascontiguousarray(a.T)
    for j, forecaster in enumerate(design.active.tolist()):
        influence[forecaster] = a_rows[j][design.own] + d[j][q] + 1.0 / n
    return influence
