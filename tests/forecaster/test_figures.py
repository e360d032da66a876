"""Every page writes figures through one set of filters, so a figure of each kind reads the
same on every page."""

from decimal import Decimal

import pytest
from django.template import Context, Template

from forecaster.templatetags import figures


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Decimal("15429.53"), "$15,429.53"),
        (Decimal("15429.535"), "$15,429.54"),
        (Decimal("-120"), "−$120.00"),
        (Decimal("0"), "$0.00"),
        (10000, "$10,000.00"),
        (None, "—"),
        ("not a number", "—"),
        (float("nan"), "—"),
    ],
)
def test_money_is_dollars_and_cents_with_thousands(value: object, text: str) -> None:
    assert figures.money(value) == text


def test_signed_money_marks_gains_and_losses() -> None:
    assert figures.signed_money(Decimal("12.3")) == "+$12.30"
    assert figures.signed_money(Decimal("-0.5")) == "−$0.50"
    assert figures.signed_money(Decimal("0")) == "$0.00"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Decimal("50.0000"), "50%"),
        (Decimal("12.5"), "12.5%"),
        (Decimal("3.14159"), "3.14%"),
        (Decimal("-3.14159"), "−3.14%"),
        (Decimal("0.001"), "0%"),
        (Decimal("1234.5"), "1,234.5%"),
        (None, "—"),
    ],
)
def test_percent_has_at_most_two_places_and_no_trailing_zeros(value: object, text: str) -> None:
    assert figures.percent(value) == text


def test_signed_percent_and_ratio_percent_follow_the_same_rule() -> None:
    assert figures.signed_percent(Decimal("4.20")) == "+4.2%"
    assert figures.signed_percent(Decimal("-4.2")) == "−4.2%"
    assert figures.ratio_percent(0.531) == "53.1%"
    assert figures.ratio_percent(1) == "100%"
    assert figures.ratio_percent(None) == "—"


def test_scores_prices_shares_and_costs() -> None:
    assert figures.brier(0.21254) == "0.2125"
    # A price reads as the prompts write it, a percentage, to its stored four places.
    assert figures.price(Decimal("0.635")) == "63.50%"
    assert figures.price(Decimal("0.0043")) == "0.43%"
    assert figures.price(None) == "—"
    assert figures.four_places(0.012345) == "0.0123"
    assert figures.shares(Decimal("1234.5678")) == "1,234.57"
    assert figures.usd_cost(Decimal("0.004213")) == "$0.0042"
    assert figures.usd_cost(Decimal("12.5")) == "$12.50"
    assert figures.brier(None) == "—"


def test_filters_load_in_templates() -> None:
    rendered = Template("{% load figures %}{{ v|money }} {{ p|percent }}").render(
        Context({"v": Decimal("15429.53"), "p": Decimal("50")})
    )
    assert rendered == "$15,429.53 50%"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.01234, "+0.0123"),
        (-0.004, "−0.0040"),
        (0.0, "0.0000"),
        (-0.0000123, "−0.000012"),  # four places would hide it as 0: two significant figures
        (2.5e-9, "0.00000000"),  # past eight places it is written as 0
        (None, "—"),
    ],
)
def test_an_edge_against_a_reference_is_signed_and_never_hidden_as_zero(
    value: object, text: str
) -> None:
    assert figures.edge(value) == text


def test_skill_scores_and_whole_percents() -> None:
    assert figures.skill(0.7904) == "+0.790"
    assert figures.skill(-0.2991) == "−0.299"
    assert figures.skill(0.0) == "0.000"
    assert figures.skill(None) == "—"
    assert figures.whole_percent(0.2857) == "29%"
    assert figures.whole_percent(1) == "100%"
    assert figures.whole_percent(None) == "—"
