"""Portfolio arithmetic, table-tested against 001 §2 and the sell rules of 002."""

from __future__ import annotations

import math

import pytest

from scoring.portfolio import (
    MAX_BET_FRACTION,
    MIN_BET,
    STARTING_BALANCE,
    position_value,
    realized_pnl,
    return_percent,
    sell_fraction,
    settlement_value,
    shares_for,
    side_price,
    total_pnl,
    total_value,
    unrealized_pnl,
)


def test_bet_constraints_match_the_protocol() -> None:
    assert (STARTING_BALANCE, MIN_BET, MAX_BET_FRACTION) == (10_000.0, 50.0, 0.25)


def test_bet_500_on_yes_at_040_buys_1250_shares() -> None:
    assert shares_for(amount=500.0, price=0.40) == pytest.approx(1_250.0)


def test_shares_at_a_price_of_one_equal_the_amount() -> None:
    assert shares_for(amount=500.0, price=1.0) == pytest.approx(500.0)


@pytest.mark.parametrize("price", [0.0, -0.1, 1.01, math.nan])
def test_shares_for_rejects_price_outside_zero_to_one(price: float) -> None:
    with pytest.raises(ValueError, match="price"):
        shares_for(amount=500.0, price=price)


@pytest.mark.parametrize("amount", [0.0, -500.0, math.inf])
def test_shares_for_rejects_non_positive_amount(amount: float) -> None:
    with pytest.raises(ValueError, match="amount"):
        shares_for(amount=amount, price=0.4)


@pytest.mark.parametrize(
    ("side", "expected"),
    [("YES", 0.40), ("NO", 0.60)],
)
def test_no_trades_use_one_minus_the_yes_price(side: str, expected: float) -> None:
    assert side_price(yes_price=0.40, side=side) == pytest.approx(expected)


def test_side_price_rejects_unknown_side() -> None:
    with pytest.raises(ValueError, match="side"):
        side_price(yes_price=0.4, side="yes")


@pytest.mark.parametrize("yes_price", [-0.01, 1.01])
def test_side_price_rejects_yes_price_outside_unit_interval(yes_price: float) -> None:
    with pytest.raises(ValueError, match="yes_price"):
        side_price(yes_price=yes_price, side="YES")


@pytest.mark.parametrize(
    ("side", "yes_price", "expected"),
    [("YES", 0.55, 687.5), ("NO", 0.55, 562.5)],
)
def test_position_value_is_shares_times_side_correct_price(
    side: str, yes_price: float, expected: float
) -> None:
    price = side_price(yes_price=yes_price, side=side)
    assert position_value(shares=1_250.0, price=price) == pytest.approx(expected)


def test_unrealized_pnl_is_value_minus_cost_basis() -> None:
    assert unrealized_pnl(value=687.5, cost_basis=500.0) == pytest.approx(187.5)


@pytest.mark.parametrize(("shares", "price"), [(-1.0, 0.5), (10.0, 1.5), (math.nan, 0.5)])
def test_position_value_rejects_negative_shares_or_bad_price(shares: float, price: float) -> None:
    with pytest.raises(ValueError, match="shares|price"):
        position_value(shares=shares, price=price)


def test_1250_shares_bought_for_500_settle_at_1250_for_a_750_profit() -> None:
    settlement = settlement_value(shares=1_250.0, won=True)
    assert settlement == pytest.approx(1_250.0)
    assert realized_pnl(proceeds=settlement, cost_basis=500.0) == pytest.approx(750.0)


def test_losing_position_settles_at_zero_and_loses_its_cost_basis() -> None:
    settlement = settlement_value(shares=1_250.0, won=False)
    assert settlement == 0.0
    assert realized_pnl(proceeds=settlement, cost_basis=500.0) == pytest.approx(-500.0)


def test_settlement_rejects_negative_shares() -> None:
    with pytest.raises(ValueError, match="shares"):
        settlement_value(shares=-1.0, won=True)


def test_realized_pnl_rejects_negative_cost_basis() -> None:
    with pytest.raises(ValueError, match="cost_basis"):
        realized_pnl(proceeds=100.0, cost_basis=-1.0)


def test_cash_7500_and_positions_3200_make_10700_a_700_gain_of_7_percent() -> None:
    value = total_value(cash=7_500.0, position_values=[1_200.0, 2_000.0])
    assert value == pytest.approx(10_700.0)
    assert total_pnl(total_value=value) == pytest.approx(700.0)
    assert return_percent(total_value=value) == pytest.approx(7.0)


def test_total_value_with_no_positions_is_cash() -> None:
    assert total_value(cash=10_000.0, position_values=[]) == 10_000.0


def test_total_value_rejects_negative_cash_or_position_value() -> None:
    with pytest.raises(ValueError, match="cash"):
        total_value(cash=-1.0, position_values=[])
    with pytest.raises(ValueError, match="position value"):
        total_value(cash=1.0, position_values=[100.0, -1.0])


def test_return_percent_rejects_non_positive_initial_balance() -> None:
    with pytest.raises(ValueError, match="initial"):
        return_percent(total_value=10_700.0, initial=0.0)


@pytest.mark.parametrize(
    ("percentage", "shares_sold", "proceeds", "cost_released", "realized"),
    [
        (100, 1_250.0, 750.0, 500.0, 250.0),
        (50, 625.0, 375.0, 250.0, 125.0),
        (20, 250.0, 150.0, 100.0, 50.0),
        (1, 12.5, 7.5, 5.0, 2.5),
    ],
)
def test_sell_reduces_cost_basis_in_proportion(
    percentage: float, shares_sold: float, proceeds: float, cost_released: float, realized: float
) -> None:
    split = sell_fraction(shares=1_250.0, cost_basis=500.0, percentage=percentage, price=0.60)
    assert split.shares_sold == pytest.approx(shares_sold)
    assert split.proceeds == pytest.approx(proceeds)
    assert split.cost_released == pytest.approx(cost_released)
    assert split.realized_pnl == pytest.approx(realized)


def test_selling_100_percent_releases_exactly_the_whole_position() -> None:
    split = sell_fraction(shares=1_234.567891, cost_basis=333.33, percentage=100, price=0.3)
    assert split.shares_sold == 1_234.567891
    assert split.cost_released == 333.33


@pytest.mark.parametrize("percentage", [0, 0.5, 100.5, -10, math.nan])
def test_sell_percentage_outside_1_to_100_is_rejected(percentage: float) -> None:
    with pytest.raises(ValueError, match="percentage"):
        sell_fraction(shares=100.0, cost_basis=50.0, percentage=percentage, price=0.5)


@pytest.mark.parametrize(
    ("shares", "cost_basis", "price", "match"),
    [(0.0, 50.0, 0.5, "shares"), (100.0, -1.0, 0.5, "cost_basis"), (100.0, 50.0, 1.5, "price")],
)
def test_sell_rejects_empty_position_negative_basis_or_bad_price(
    shares: float, cost_basis: float, price: float, match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        sell_fraction(shares=shares, cost_basis=cost_basis, percentage=50, price=price)
