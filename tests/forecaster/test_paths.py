"""`{% path %}` gives what `{% url %}` gives: for whole numbers from a route reversed once, for
anything else through `reverse` itself, with its checks. `{% model_label %}` writes what the
template it replaced wrote."""

from __future__ import annotations

from types import SimpleNamespace
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


# The include the tag replaced, as it was: the tag writes the same bytes.
INCLUDED = (
    "{% if nolink %}{{ agent.model.display_name }}"
    "{% else %}<a href=\"{% url 'arena:model' agent.model.internal_id %}\">"
    "{{ agent.model.display_name }}</a>{% endif %}"
    '{% if agent.model.is_baseline %} <span class="badge baseline">baseline</span>'
    '{% elif agent.model.is_outside %} <span class="badge outside" title="an outside team\'s'
    ' agent, deciding through the API">outside</span>'
    '{% elif offline %} <span class="badge offline">offline</span>{% endif %}'
    '{% if agent.status == "bankrupt" and not nostatus %}'
    ' <span class="badge bankrupt">bankrupt</span>{% endif %}'
)


@pytest.mark.parametrize("kind", ["llm", "baseline", "outside"])
@pytest.mark.parametrize("offline", [False, True])
@pytest.mark.parametrize("status", ["active", "bankrupt"])
@pytest.mark.parametrize("flags", ["", "nolink=True", "nostatus=True", "nolink=True nostatus=True"])
def test_model_label_writes_what_its_template_did(
    kind: str, offline: bool, status: str, flags: str
) -> None:
    model = SimpleNamespace(
        display_name='<b>"Model" & co</b>',
        internal_id="openai/gpt-5.1",
        is_baseline=kind == "baseline",
        is_outside=kind == "outside",
    )
    agent = SimpleNamespace(model=model, status=status)
    with_flags = " ".join(f"{f.split('=')[0]}=True" for f in flags.split())
    included = Template("{% load paths %}" + INCLUDED).render(
        Context(
            {"agent": agent, "offline": offline, **{f.split("=")[0]: True for f in flags.split()}}
        )
    )
    tag = Template(f"{{% load labels %}}{{% model_label agent offline {with_flags} %}}").render(
        Context({"agent": agent, "offline": offline})
    )
    assert tag == included
