"""The Pareto set of forecasters on two costs, both lower-is-better (a Brier score and USD per
decision): the ones no other forecaster beats on one without losing on the other."""

from __future__ import annotations

import math
from collections.abc import Sequence


def pareto_set(points: Sequence[tuple[float, float]]) -> list[bool]:
    """Return, for each (x, y) point with both lower-is-better, whether it is on the Pareto set:
    no other point has x′ ≤ x and y′ ≤ y with one of them strictly lower. Equal points are
    both on it (neither beats the other). Raise ValueError for a value that is not finite."""
    for x, y in points:
        if not (math.isfinite(x) and math.isfinite(y)):
            raise ValueError(f"points must be finite, got {(x, y)!r}")
    return [
        not any(
            (ox <= x and oy <= y) and (ox < x or oy < y)
            for index, (ox, oy) in enumerate(points)
            if index != own
        )
        for own, (x, y) in enumerate(points)
    ]
