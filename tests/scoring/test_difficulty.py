"""Difficulty-adjusted Brier: question fixed effects fitted over all forecasters (004)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring.difficulty import (
    design_support,
    difficulty_adjusted_brier,
    difficulty_fit,
    difficulty_influence,
)


def test_exact_additive_scores_recover_the_forecaster_effects() -> None:
    skill = np.array([0.10, 0.20, 0.30])
    difficulty = np.array([-0.05, 0.00, 0.08, 0.10])
    forecasters = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    questions = np.array([0, 1, 2, 1, 3, 0, 1, 2, 3])
    scores = skill[forecasters] + difficulty[questions]
    adjusted = difficulty_adjusted_brier(scores, forecasters, questions)
    # Effects are identified up to a constant: the question set of average difficulty
    # adds the bet-weighted mean difficulty to every forecaster alike.
    average = float(np.mean(difficulty[questions]))
    np.testing.assert_allclose(adjusted, skill + average, atol=1e-10)


def _easy_and_hard_bets() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # Forecaster 0 (skill 0.10) bets easy questions 0–5 (difficulty −0.05); forecaster 1
    # (skill 0.05, the better one) bets hard questions 6–11 (+0.15); both bet 12–14 (0.0).
    rng = np.random.default_rng(3)
    difficulty = np.array([-0.05] * 6 + [0.15] * 6 + [0.0] * 3)
    forecasters = np.array([0] * 6 + [1] * 6 + [0, 1] * 3)
    questions = np.array(list(range(12)) + [12, 12, 13, 13, 14, 14])
    skill = np.array([0.10, 0.05])
    noise = rng.normal(0.0, 0.002, size=len(questions))
    return skill[forecasters] + difficulty[questions] + noise, forecasters, questions


def test_adjustment_reverses_a_ranking_bought_by_easy_questions() -> None:
    scores, forecasters, questions = _easy_and_hard_bets()
    raw = np.bincount(forecasters, weights=scores) / np.bincount(forecasters)
    assert raw[0] < raw[1]  # raw Brier prefers the easy-question forecaster
    adjusted = difficulty_adjusted_brier(scores, forecasters, questions)
    assert adjusted[1] < adjusted[0]
    assert adjusted[0] - adjusted[1] == pytest.approx(0.05, abs=0.005)


def test_centering_keeps_the_mean_over_all_bets() -> None:
    rng = np.random.default_rng(5)
    forecasters = rng.integers(0, 6, size=300)
    questions = rng.integers(0, 40, size=300)
    scores = rng.uniform(0.0, 1.0, size=300)
    adjusted = difficulty_adjusted_brier(scores, forecasters, questions)
    bets = np.bincount(forecasters, minlength=6)
    assert float(np.sum(adjusted * bets) / bets.sum()) == pytest.approx(
        float(scores.mean()), abs=1e-12
    )


def test_one_forecaster_alone_keeps_its_raw_mean() -> None:
    adjusted = difficulty_adjusted_brier([0.1, 0.4, 0.25], [0, 0, 0], [0, 1, 2])
    assert adjusted.tolist() == pytest.approx([0.25], abs=1e-12)


def test_a_forecaster_with_no_bets_is_nan() -> None:
    adjusted = difficulty_adjusted_brier([0.1, 0.3], [0, 2], [0, 0], forecaster_count=4)
    assert len(adjusted) == 4
    assert adjusted[0] == pytest.approx(0.1)
    assert adjusted[2] == pytest.approx(0.3)
    assert math.isnan(adjusted[1])
    assert math.isnan(adjusted[3])
    assert difficulty_adjusted_brier([], [], []).shape == (0,)


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        difficulty_adjusted_brier([0.1, 0.2], [0], [0, 1])
    with pytest.raises(ValueError, match="non-negative"):
        difficulty_adjusted_brier([0.1], [-1], [0])
    with pytest.raises(ValueError, match="integer codes"):
        difficulty_adjusted_brier([0.1], [0.5], [0])
    with pytest.raises(ValueError, match="finite"):
        difficulty_adjusted_brier([math.nan], [0], [0])
    with pytest.raises(ValueError, match="forecaster_count"):
        difficulty_adjusted_brier([0.1], [3], [0], forecaster_count=2)


def test_design_support_counts_shared_questions_and_links_forecasters() -> None:
    # Forecasters 0 and 1 share questions 0 and 1; 1 and 2 share question 2; forecaster 3
    # answers question 5 alone; forecaster 4 never bets.
    forecasters = [0, 0, 0, 1, 1, 1, 2, 2, 3, 0]
    questions = [0, 1, 3, 0, 1, 2, 2, 4, 5, 0]  # 0 answers question 0 twice: counted once
    shared, component = design_support(forecasters, questions, forecaster_count=5)
    assert shared.tolist() == [2, 3, 1, 0, 0]
    assert component[0] == component[1] == component[2]  # linked through 1
    assert component[3] not in (component[0], -1)
    assert component[4] == -1
    with pytest.raises(ValueError, match="differ in length"):
        design_support([0, 1], [0])


def _by_unit_scores(forecasters: list[int], questions: list[int]) -> np.ndarray:
    """The adjusted figures' matrix found the long way: the fit of each bet's unit score."""
    n = len(forecasters)
    columns = [difficulty_adjusted_brier(np.eye(n)[i], forecasters, questions) for i in range(n)]
    return np.stack(columns, axis=1)


def test_each_bets_influence_is_the_fit_of_its_unit_score() -> None:
    rng = np.random.default_rng(7)
    forecasters = rng.integers(0, 4, 60).tolist()
    questions = rng.integers(0, 12, 60).tolist()

    influence = difficulty_influence(forecasters, questions)

    assert influence == pytest.approx(_by_unit_scores(forecasters, questions), abs=1e-9)
    # so every score vector's figures are the influences' weighted sums
    scores = rng.random(60)
    assert influence @ scores == pytest.approx(
        difficulty_adjusted_brier(scores, forecasters, questions), abs=1e-9
    )


def test_the_fits_residuals_sum_to_zero_over_each_forecaster_and_question() -> None:
    rng = np.random.default_rng(8)
    forecasters, questions = rng.integers(0, 3, 40), rng.integers(0, 9, 40)
    scores = rng.random(40)

    adjusted, residuals = difficulty_fit(scores, forecasters, questions)

    assert adjusted == pytest.approx(difficulty_adjusted_brier(scores, forecasters, questions))
    assert np.bincount(forecasters, weights=residuals) == pytest.approx(0.0, abs=1e-9)
    assert np.bincount(questions, weights=residuals) == pytest.approx(0.0, abs=1e-9)


def test_influence_needs_one_linked_part() -> None:
    # forecasters 0 and 1 share question 0; forecaster 2 answers question 1 alone
    with pytest.raises(ValueError, match="one part"):
        difficulty_influence([0, 1, 2], [0, 0, 1])


def _parts_the_long_way(forecasters: list[int], questions: list[int], count: int) -> list[int]:
    """Each forecaster's part: the lowest forecaster reachable through shared questions, by
    a walk over the design; −1 for a forecaster with no bets."""
    answered: dict[int, set[int]] = {}
    for f, q in zip(forecasters, questions, strict=True):
        answered.setdefault(q, set()).add(f)
    parts = []
    for start in range(count):
        if start not in forecasters:
            parts.append(-1)
            continue
        seen, frontier = {start}, [start]
        while frontier:
            f = frontier.pop()
            for members in answered.values():
                if f in members:
                    frontier += [g for g in members - seen]
                    seen |= members
        parts.append(min(seen))
    return parts


@given(
    st.lists(st.tuples(st.integers(0, 7), st.integers(0, 12)), max_size=40),
)
def test_design_support_agrees_with_a_walk_over_the_design(bets: list[tuple[int, int]]) -> None:
    forecasters, questions = [f for f, _ in bets], [q for _, q in bets]
    shared, component = design_support(forecasters, questions, forecaster_count=9)
    assert component.tolist() == _parts_the_long_way(forecasters, questions, 9)
    for f in range(9):
        own = {q for g, q in bets if g == f}
        others = {q for g, q in bets if g != f}
        assert shared[f] == len(own & others)


def _least_squares_the_long_way(
    scores: np.ndarray, forecasters: list[int], questions: list[int]
) -> np.ndarray:
    """The adjusted figures from a least-squares solve of score = a_f + d_q over the whole
    design matrix (numpy's lstsq), d then centred on its bet-weighted mean."""
    f, q, y = np.asarray(forecasters), np.asarray(questions), np.asarray(scores)
    design = np.zeros((len(y), f.max() + 1 + q.max() + 1))
    design[np.arange(len(y)), f] = 1.0
    design[np.arange(len(y)), f.max() + 1 + q] = 1.0
    effects = np.linalg.lstsq(design, y, rcond=None)[0]
    d = effects[f.max() + 1 :]
    d = d - d[q].mean()
    return np.bincount(f, weights=y - d[q]) / np.bincount(f)


def test_a_design_linked_by_one_question_is_fitted_exactly() -> None:
    # Two groups of three forecasters, each group sharing its own twenty questions, and the
    # groups linked by a single question: backfitting crawls along that link (it stopped
    # 0.15 away after its 500 passes); the fit solves the equations instead.
    rng = np.random.default_rng(21)
    forecasters, questions = [], []
    for group in (0, 1):
        for forecaster in range(3 * group, 3 * group + 3):
            for question in range(20 * group, 20 * group + 20):
                forecasters.append(forecaster)
                questions.append(question)
    forecasters += [0, 3]
    questions += [40, 40]  # the link
    scores = rng.random(len(forecasters)) + np.repeat([0.0, 0.5], [60, len(forecasters) - 60])

    adjusted = difficulty_adjusted_brier(scores, forecasters, questions)

    expected = _least_squares_the_long_way(scores, forecasters, questions)
    assert adjusted == pytest.approx(expected, abs=1e-9)
    influence = difficulty_influence(forecasters, questions)
    assert influence @ scores == pytest.approx(adjusted, abs=1e-9)
