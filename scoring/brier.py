"""Brier scores of bets, with the forecast read off the bet's size (001 §1, 002 "Brier score").

A bet's implied confidence is its amount over the maximum bet (25% of cash before
it). 002 scores a resolved bet as (confidence - [the traded side won])^2; for a
binary market this equals 001's (f_YES - [YES won])^2 with f_YES = 1 - confidence
for a NO bet, so both readings give the same numbers.
"""

from __future__ import annotations

import math
from decimal import Decimal

from scoring.portfolio import NO, YES, max_bet


def implied_confidence(*, amount: float, cash_before: float) -> float:
    """Return the confidence a bet implies: min(amount / max_bet(cash before it), 1).

    Both in USD. The maximum bet is 25% of the cash floored to the cent (`max_bet`, the
    rule the prompt shows and execution enforces), so a bet of exactly the maximum the
    prompt showed means full confidence. The result is in (0, 1]; a bet over the maximum
    is capped at 1 (001 Appendix A) rather than refused here. Raise ValueError when the
    amount or the cash before the bet is not positive and finite, or the cash allows no bet.
    """
    if not (math.isfinite(amount) and amount > 0.0):
        raise ValueError(f"amount must be positive and finite, got {amount!r}")
    if not (math.isfinite(cash_before) and cash_before > 0.0):
        raise ValueError(f"cash_before must be positive and finite, got {cash_before!r}")
    # repr gives the shortest decimal that round-trips: a cash figure in cents stays exact.
    maximum = float(max_bet(Decimal(repr(cash_before))))
    if maximum <= 0.0:
        raise ValueError(f"cash_before {cash_before!r} allows no bet")
    return min(amount / maximum, 1.0)


def _check_probability(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:  # also rejects NaN
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")


def brier_score(*, forecast: float, outcome: int) -> float:
    """Return the Brier score (forecast - outcome)^2, in [0, 1]; lower is better.

    `forecast` is a probability in [0, 1]; `outcome` is 1 if the event happened, else 0.
    Raise ValueError for a forecast outside [0, 1] or an outcome other than 0 or 1.
    """
    _check_probability("forecast", forecast)
    if outcome not in (0, 1):
        raise ValueError(f"outcome must be 0 or 1, got {outcome!r}")
    return (forecast - outcome) ** 2


def forecast_yes_probability(*, side: str, confidence: float) -> float:
    """Return the YES probability a binary bet states: c for YES, 1 - c for NO.

    `side` is "YES" or "NO"; `confidence` is the implied confidence in [0, 1].
    Raise ValueError for any other side or a confidence outside [0, 1].
    """
    _check_probability("confidence", confidence)
    if side == YES:
        return confidence
    if side == NO:
        return 1.0 - confidence
    raise ValueError(f"side must be {YES!r} or {NO!r}, got {side!r}")


def bet_brier_for_outcome(*, confidence: float, side_won: bool) -> float:
    """Return the Brier score of a resolved bet: (confidence - [the traded side won])^2.

    Fits binary and multi-outcome markets alike: the bet forecasts that its own
    side (or named outcome) wins with probability `confidence`, in [0, 1].
    Raise ValueError for a confidence outside [0, 1].
    """
    _check_probability("confidence", confidence)
    return brier_score(forecast=confidence, outcome=1 if side_won else 0)


def bet_brier(*, side: str, confidence: float, yes_won: bool) -> float:
    """Return the Brier score of a resolved binary bet on `side` ("YES" or "NO").

    `confidence` is the implied confidence in [0, 1]; `yes_won` tells how the market
    resolved. Raise ValueError for any other side or a confidence outside [0, 1].
    """
    forecast = forecast_yes_probability(side=side, confidence=confidence)
    return brier_score(forecast=forecast, outcome=1 if yes_won else 0)
