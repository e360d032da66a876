"""Methodology v2's panel scores: a row's stated forecasts of the weekly panel's questions
(the probability of each market's first outcome, YES), scored on resolution by proper rules.

Per question i, with p_i the row's forecast, b_i the reference price (the market's price when
the row's prompt was frozen) and x_i the outcome (1 when YES happened):

- Brier: (p_i - x_i)^2 (001, 003), lower is better;
- log score: -ln(p_i) when x_i = 1, -ln(1 - p_i) when x_i = 0 (the negative log-likelihood),
  lower is better, as Brier;
- Alpha: (b_i - x_i)^2 - (p_i - x_i)^2 (003, Definition 2, per market): above 0 beats the market.

A row is a model (or a reference). A model has an agent in each active cohort, and each states
its forecast: the row's forecast of the question is their mean (`question_forecast`), so a
model counts once per question however many cohorts it plays in; how far its agents' forecasts
lie apart (max - min) is its consistency. A question its agents all left without a valid
forecast is imputed with b (as 004 does for missing forecasts): its Alpha is then 0, so a row
cannot gain by leaving questions out, and its coverage (the share of questions it stated) is
shown beside every figure; below MIN_COVERAGE a row is shown but not ranked.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

MIN_COVERAGE = 0.8


def _check_forecast(name: str, value: float) -> None:
    if not (math.isfinite(value) and 0 < value < 1):
        raise ValueError(f"{name} must be strictly between 0 and 1, got {value!r}")


def _check_outcome(outcome: int) -> None:
    if outcome not in (0, 1):
        raise ValueError(f"outcome must be 0 or 1, got {outcome!r}")


def log_score(*, forecast: float, outcome: int) -> float:
    """The negative log-likelihood of the outcome under the forecast (lower is better)."""
    _check_forecast("forecast", forecast)
    _check_outcome(outcome)
    return -math.log(forecast if outcome == 1 else 1 - forecast)


def question_forecast(stated: Sequence[float | None]) -> float | None:
    """A model's forecast of one question: the mean of its agents' stated forecasts (None
    where an agent stated none); None when no agent stated one."""
    values = [value for value in stated if value is not None]
    for value in values:
        _check_forecast("a stated forecast", value)
    return sum(values) / len(values) if values else None


def question_spread(stated: Sequence[float | None]) -> float | None:
    """How far a model's agents' forecasts of one question lie apart (max - min); None when
    fewer than two stated one."""
    values = [value for value in stated if value is not None]
    return max(values) - min(values) if len(values) >= 2 else None


@dataclass(frozen=True)
class PanelScores:
    """A row's scores over the resolved panel questions it was asked."""

    questions: int  # resolved questions (a cancelled market is not scored)
    stated: int  # of those, the ones the row forecast
    brier: float  # mean, imputed questions included
    log_score: float  # mean, imputed questions included
    alpha: float  # mean; an imputed question adds 0
    consistency: float | None  # mean spread over the questions two or more agents stated

    @property
    def coverage(self) -> float:
        return self.stated / self.questions if self.questions else 0.0

    @property
    def ranked(self) -> bool:
        """Whether the row is ranked on the panel's figures (coverage at least MIN_COVERAGE)."""
        return self.questions > 0 and self.coverage >= MIN_COVERAGE


def panel_scores(
    forecasts: Sequence[Sequence[float | None]],
    *,
    prices: Sequence[float],
    outcomes: Sequence[int],
) -> PanelScores | None:
    """Score a row over resolved questions: `forecasts[i]` are its agents' stated forecasts of
    question i (None for an agent that stated none), `prices[i]` the reference price b_i and
    `outcomes[i]` x_i. None when there is no question."""
    if not len(forecasts) == len(prices) == len(outcomes):
        raise ValueError("forecasts, prices and outcomes must be the same length")
    if not forecasts:
        return None
    brier = log = alpha = 0.0
    stated = 0
    spreads: list[float] = []
    for agents, price, outcome in zip(forecasts, prices, outcomes, strict=True):
        _check_forecast("a reference price", price)
        _check_outcome(outcome)
        own = question_forecast(agents)
        if own is not None:
            stated += 1
        p = price if own is None else own
        brier += (p - outcome) ** 2
        log += log_score(forecast=p, outcome=outcome)
        alpha += (price - outcome) ** 2 - (p - outcome) ** 2
        spread = question_spread(agents)
        if spread is not None:
            spreads.append(spread)
    n = len(forecasts)
    return PanelScores(
        questions=n,
        stated=stated,
        brier=brier / n,
        log_score=log / n,
        alpha=alpha / n,
        consistency=sum(spreads) / len(spreads) if spreads else None,
    )
