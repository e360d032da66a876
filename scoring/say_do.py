"""What a model says and what it does (methodology v2): its bets' stated probabilities set
against the prices it paid and the stakes it chose, and reliability tables of its forecasts.

For a bet with stated probability q that its side wins, bought at side-correct price c, staking
a fraction s of its cash, whose side won (x = 1) or lost (x = 0):

- **consistent**: q > c. Buying at c is worth it only to a buyer who believes more than c; a
  bet with q < c contradicts its own probability, and q = c is indifferent.
- **edge**: q − c.
- **Kelly fraction** (Kelly 1956, for a binary contract paying 1 at price c): f* = (q − c) /
  (1 − c) of cash when q > c, else 0. The stake's **Kelly ratio** is s / f*, over the bets with
  f* > 0: 1 stakes exactly Kelly, under 1 less.
- **Return split** (forecasting against sizing), over resolved bets: each bet's return on its
  stake is r = x / c − 1. The **realised** return is Σ stake·r / Σ stake, with the stakes the
  model chose; the **flat** return the plain mean of r (the same bets at one stake each: what
  the forecasts alone earn); the **fractional-Kelly** return Σ f*·r / Σ f* over the consistent
  bets (the stakes the stated probabilities call for, at any fixed fraction of Kelly: the
  fraction cancels).
- **Brier of the stated probability**: (q − x)², in the bet's own side's frame.

A reliability table puts forecasts into equal-width bins of [0, 1] and gives each bin's count,
mean forecast and observed frequency of the event.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class StatedBet:
    probability: float  # q: the stated probability that the bet's side wins
    price: float  # c: the side-correct price paid, in (0, 1)
    stake: float  # s: the share of cash staked, in (0, 1]
    won: bool | None = None  # None while unresolved (or cancelled)


@dataclass(frozen=True)
class SayDo:
    bets: int
    consistent: int  # q > c
    contradicting: int  # q < c
    mean_edge: float
    median_kelly_ratio: float | None  # over the bets with f* > 0
    resolved: int
    stated_brier: float | None  # mean (q − x)² over the resolved bets
    realised_return: float | None
    flat_return: float | None
    kelly_return: float | None  # None when no resolved bet was consistent

    @property
    def consistent_share(self) -> float:
        return self.consistent / self.bets if self.bets else 0.0


def kelly_fraction(*, probability: float, price: float) -> float:
    """f* = (q − c) / (1 − c) when q > c, else 0."""
    if not (0 < price < 1 and 0 < probability < 1):
        raise ValueError("probability and price must be strictly between 0 and 1")
    return (probability - price) / (1 - price) if probability > price else 0.0


def say_do(bets: Sequence[StatedBet]) -> SayDo | None:
    """The say-and-do figures of `bets`; None when there is none."""
    if not bets:
        return None
    kelly = [kelly_fraction(probability=b.probability, price=b.price) for b in bets]
    ratios = sorted(b.stake / f for b, f in zip(bets, kelly, strict=True) if f > 0)
    resolved = [(b, f) for b, f in zip(bets, kelly, strict=True) if b.won is not None]
    returns = [(1.0 if b.won else 0.0) / b.price - 1 for b, _ in resolved]
    staked = sum(b.stake for b, _ in resolved)
    kelly_staked = sum(f for _, f in resolved)
    return SayDo(
        bets=len(bets),
        consistent=sum(b.probability > b.price for b in bets),
        contradicting=sum(b.probability < b.price for b in bets),
        mean_edge=math.fsum(b.probability - b.price for b in bets) / len(bets),
        median_kelly_ratio=_median(ratios),
        resolved=len(resolved),
        stated_brier=(
            math.fsum((b.probability - (1.0 if b.won else 0.0)) ** 2 for b, _ in resolved)
            / len(resolved)
            if resolved
            else None
        ),
        realised_return=(
            math.fsum(b.stake * r for (b, _), r in zip(resolved, returns, strict=True)) / staked
            if staked
            else None
        ),
        flat_return=math.fsum(returns) / len(returns) if returns else None,
        kelly_return=(
            math.fsum(f * r for (_, f), r in zip(resolved, returns, strict=True)) / kelly_staked
            if kelly_staked
            else None
        ),
    )


def _median(values: Sequence[float]) -> float | None:
    if not values:
        return None
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


@dataclass(frozen=True)
class ReliabilityBin:
    low: float
    high: float
    count: int
    mean_forecast: float | None
    frequency: float | None  # the share of the bin's forecasts whose event happened


def reliability(
    forecasts: Sequence[float], outcomes: Sequence[int], *, bins: int = 10
) -> list[ReliabilityBin]:
    """The reliability table of `forecasts` against `outcomes` (1: the event happened), in
    `bins` equal-width bins of [0, 1] (the last one closed)."""
    if len(forecasts) != len(outcomes):
        raise ValueError("forecasts and outcomes must be the same length")
    if bins < 1:
        raise ValueError("bins must be at least 1")
    members: list[list[tuple[float, int]]] = [[] for _ in range(bins)]
    for forecast, outcome in zip(forecasts, outcomes, strict=True):
        if not 0 <= forecast <= 1 or outcome not in (0, 1):
            raise ValueError("a forecast is in [0, 1] and an outcome 0 or 1")
        members[min(int(forecast * bins), bins - 1)].append((forecast, outcome))
    table = []
    for index, group in enumerate(members):
        n = len(group)
        table.append(
            ReliabilityBin(
                low=index / bins,
                high=(index + 1) / bins,
                count=n,
                mean_forecast=math.fsum(f for f, _ in group) / n if n else None,
                frequency=sum(o for _, o in group) / n if n else None,
            )
        )
    return table
