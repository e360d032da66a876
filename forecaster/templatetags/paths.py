"""`{% path %}`: `{% url %}` for the rows of the big tables, whose ids are whole numbers.

A model's page links ~400 rows (its cohorts, agents, decisions, markets); `reverse` costs
~60 µs each, a quarter of the template. A route's path with whole-number arguments is the same
text whatever the numbers, so it is reversed once per route (with stand-in numbers) and the
row's numbers are put in its place. Any other argument (a slug, a negative number, text) goes
through `reverse` as `{% url %}` does, with its checks and quoting.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from django import template
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.urls import get_script_prefix, reverse

register = template.Library()

# Stand-ins no route's own text holds: each appears once in a reversed path, in its place.
STAND_INS = (918_273_645_001, 918_273_645_002, 918_273_645_003)


def _whole(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value >= 0
    return isinstance(value, str) and value.isascii() and value.isdigit()


@lru_cache(maxsize=128)
def _shape(script_prefix: str, name: str, arity: int) -> str:
    return reverse(name, args=STAND_INS[:arity])


@receiver(setting_changed)
def _forget_shapes(*, setting: str, **kwargs: Any) -> None:
    """A test that swaps the URLconf gets its own routes' shapes."""
    if setting == "ROOT_URLCONF":
        _shape.cache_clear()


def route_path(name: str, *args: Any) -> str:
    """The path `reverse(name, args=args)` gives, reversed once per route when every argument
    is a whole number."""
    if not args or len(args) > len(STAND_INS) or not all(_whole(a) for a in args):
        return reverse(name, args=args)
    shape = _shape(get_script_prefix(), name, len(args))
    for stand_in, value in zip(STAND_INS, args, strict=False):
        shape = shape.replace(str(stand_in), str(value), 1)
    return shape


@register.simple_tag
def path(name: str, *args: Any) -> str:
    """`{% path 'arena:agent' number agent_id %}`: as `{% url %}` (see the module docstring)."""
    return route_path(name, *args)
