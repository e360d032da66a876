"""What a model says and what it does (scoring/say_do.py), on worked examples."""

from __future__ import annotations

import pytest

from scoring.say_do import StatedBet, kelly_fraction, reliability, say_do


def test_the_kelly_fraction_of_a_binary_contract() -> None:
    # q = 0.6 at c = 0.5: f* = 0.1 / 0.5 = 0.2 of cash.
    assert kelly_fraction(probability=0.6, price=0.5) == pytest.approx(0.2)
    assert kelly_fraction(probability=0.4, price=0.5) == 0.0  # no edge: stake nothing
    with pytest.raises(ValueError, match="strictly between"):
        kelly_fraction(probability=1.0, price=0.5)


def test_say_and_do_on_three_bets() -> None:
    bets = [
        # q > c, staked half Kelly (f* = 0.2), won: r = 1/0.5 − 1 = 1.
        StatedBet(probability=0.6, price=0.5, stake=0.1, won=True),
        # q < c: contradicts its own probability, lost: r = −1.
        StatedBet(probability=0.3, price=0.4, stake=0.05, won=False),
        # q > c (f* = 0.1/0.2 = 0.5), staked 0.25: a Kelly ratio of 0.5; unresolved.
        StatedBet(probability=0.9, price=0.8, stake=0.25),
    ]
    figures = say_do(bets)
    assert figures is not None
    assert (figures.bets, figures.consistent, figures.contradicting) == (3, 2, 1)
    assert figures.consistent_share == pytest.approx(2 / 3)
    assert figures.mean_edge == pytest.approx((0.1 - 0.1 + 0.1) / 3)
    assert figures.median_kelly_ratio == pytest.approx(0.5)  # ratios 0.5 and 0.5
    assert figures.resolved == 2
    assert figures.stated_brier == pytest.approx(((0.6 - 1) ** 2 + (0.3 - 0) ** 2) / 2)
    # Realised: (0.1·1 + 0.05·(−1)) / 0.15; flat: (1 − 1) / 2; Kelly: only the first has f*.
    assert figures.realised_return == pytest.approx(0.05 / 0.15)
    assert figures.flat_return == pytest.approx(0.0)
    assert figures.kelly_return == pytest.approx(1.0)


def test_no_bets_have_no_figures() -> None:
    assert say_do([]) is None


def test_a_reliability_table_counts_each_bin() -> None:
    table = reliability([0.05, 0.15, 0.12, 1.0, 0.95], [0, 1, 0, 1, 1], bins=10)
    assert [b.count for b in table] == [1, 2, 0, 0, 0, 0, 0, 0, 0, 2]
    assert table[1].mean_forecast == pytest.approx(0.135)
    assert table[1].frequency == pytest.approx(0.5)
    assert table[2].frequency is None
    assert table[9].frequency == 1.0  # 1.0 falls in the last, closed bin
    with pytest.raises(ValueError, match="same length"):
        reliability([0.5], [])
