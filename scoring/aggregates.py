"""Leaderboard aggregates over resolved bets (001 §1.4, §1.5, §3)."""

from __future__ import annotations

import math
from collections.abc import Sequence

RANDOM_BRIER = 0.25  # Brier score of always forecasting 50% on a binary outcome


def mean_brier(*, scores: Sequence[float]) -> float | None:
    """Return the pooled mean of the Brier scores, or None when there are none.

    Every score is one resolved bet, in [0, 1]; pooling across cohorts is the mean of
    all a model's bets, not a mean of cohort means (001 §1.4). The result is in [0, 1].
    Raise ValueError for a score outside [0, 1].
    """
    if not scores:
        return None
    for score in scores:
        if not 0.0 <= score <= 1.0:  # also rejects NaN
            raise ValueError(f"Brier scores must be in [0, 1], got {score!r}")
    return math.fsum(scores) / len(scores)


def win_rate(*, wins: int, resolved: int) -> float | None:
    """Return winning bets / resolved bets, in [0, 1], or None when none have resolved.

    Raise ValueError when either count is negative or wins exceed resolved bets.
    """
    if resolved < 0 or wins < 0:
        raise ValueError(f"counts must not be negative, got wins={wins}, resolved={resolved}")
    if wins > resolved:
        raise ValueError(f"wins ({wins}) cannot exceed resolved bets ({resolved})")
    if resolved == 0:
        return None
    return wins / resolved


def brier_skill_score(*, brier: float, reference: float = RANDOM_BRIER) -> float:
    """Return the Brier skill score 1 - brier / reference; above 0 beats the reference.

    `brier` is in [0, 1]; `reference` (default: the 50/50 guesser's 0.25) is in (0, 1].
    The result is at most 1. Raise ValueError for values outside those ranges.
    """
    if not 0.0 <= brier <= 1.0:
        raise ValueError(f"brier must be in [0, 1], got {brier!r}")
    if not 0.0 < reference <= 1.0:
        raise ValueError(f"reference must be in (0, 1], got {reference!r}")
    return 1.0 - brier / reference
