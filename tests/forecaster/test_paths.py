"""`{% path %}` gives what `{% url %}` gives: for whole numbers from a route reversed once, for
anything else through `reverse` itself, with its checks."""

from __future__ import annotations

from typing import Any

import pytest
from django.template import Context, Template
from django.urls import NoReverseMatch, reverse, set_script_prefix

from forecaster.templatetags.paths import route_path


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("arena:cohort", (7,)),
        ("arena:cohort", ("12",)),
        ("arena:agent", (3, 1234567)),
        ("arena:decision", (0,)),
        ("arena:market", ("540816",)),
        ("arena:market", ("0xabc-def",)),  # not a number: reversed as it is
        ("arena:model", ("openai/gpt-5.1:free",)),
        ("arena:release", ("cohort-3-v2",)),
    ],
)
def test_a_path_is_the_one_url_reverses(name: str, args: tuple[Any, ...]) -> None:
    assert route_path(name, *args) == reverse(name, args=args)


def test_the_numbers_land_in_their_places_however_many_times_a_route_is_asked() -> None:
    assert route_path("arena:agent", 5, 9) == "/cohorts/5/agents/9/"
    assert route_path("arena:agent", 9, 5) == "/cohorts/9/agents/5/"
    assert route_path("arena:agent", 918, 273) == reverse("arena:agent", args=[918, 273])


def test_what_url_refuses_is_refused() -> None:
    with pytest.raises(NoReverseMatch):
        route_path("arena:cohort", -1)  # the route takes whole numbers only
    with pytest.raises(NoReverseMatch):
        route_path("arena:cohort", True)
    with pytest.raises(NoReverseMatch):
        route_path("arena:cohort", 1, 2)


def test_a_script_prefix_is_kept_per_prefix() -> None:
    try:
        set_script_prefix("/arena/")
        assert route_path("arena:cohort", 4) == "/arena/cohorts/4/"
    finally:
        set_script_prefix("/")
    assert route_path("arena:cohort", 4) == "/cohorts/4/"


def test_the_tag_writes_the_path() -> None:
    template = Template("{% load paths %}<a href=\"{% path 'arena:agent' n a %}\">")
    assert template.render(Context({"n": 2, "a": 40})) == '<a href="/cohorts/2/agents/40/">'
