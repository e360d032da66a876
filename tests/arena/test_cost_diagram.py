"""The models page's accuracy-against-cost chart: Brier against USD per decision on a log scale,
the Pareto set filled and joined by a step line, the rest hollow, each row's interval a whisker;
a free model (USD 0), which a log axis cannot place, in a column of its own left of the axis."""

from __future__ import annotations

import re

import pytest

from arena.views.cost_diagram import COST_LEFT, COST_RIGHT, CostPoint, cost_accuracy


def point(label: str, usd: float, brier: float, *, front: bool) -> CostPoint:
    return CostPoint(label, usd, brier, brier - 0.05, brier + 0.05, front)


def circles(svg: str) -> dict[str, tuple[str, float, float]]:
    """Each point's class and centre, by the label its title starts with."""
    found = {}
    for klass, cx, cy, title in re.findall(
        r'<circle class="pt (\w+)" cx="([\d.]+)" cy="([\d.]+)" r="4.5"><title>([^:<]+):', svg
    ):
        found[title] = (klass, float(cx), float(cy))
    return found


PAID = [
    point("Cheap", 0.001, 0.30, front=True),
    point("Dear", 0.1, 0.18, front=True),
    point("Dominated", 0.05, 0.32, front=False),
]


def test_cost_runs_left_to_right_on_a_log_scale_and_brier_up_the_page() -> None:
    svg = str(cost_accuracy(PAID))
    drawn = circles(svg)
    assert {label: klass for label, (klass, _, _) in drawn.items()} == {
        "Cheap": "front", "Dear": "front", "Dominated": "off"
    }  # fmt: skip
    cheap, dear, dominated = (drawn[k] for k in ("Cheap", "Dear", "Dominated"))
    assert cheap[1] < dominated[1] < dear[1]
    # log scale: $0.001 → $0.05 is 1.7 decades, $0.05 → $0.1 is 0.3 of one
    spread = (dominated[1] - cheap[1]) / (dear[1] - dominated[1])
    assert spread == pytest.approx(1.69897 / 0.30103, rel=1e-3)
    assert dear[2] > cheap[2]  # a lower Brier sits lower on the page (svg y grows downward)
    assert "$0.01" in svg
    assert "free" not in re.sub(r"<title>.*?</title>", "", svg)  # no free model: no column
    assert svg.count('class="whisker"') == 3 + 1  # each point's, and the legend's


def test_a_free_model_stands_in_its_own_column_not_on_the_log_axis() -> None:
    svg = str(cost_accuracy([*PAID, point("Free", 0.0, 0.25, front=True)]))
    drawn = circles(svg)
    free_x = drawn["Free"][1]
    assert COST_LEFT < free_x < min(x for label, (_, x, _) in drawn.items() if label != "Free")
    (split,) = re.findall(r'<line class="axis-break" x1="([\d.]+)"', svg)
    assert free_x < float(split) < drawn["Cheap"][1]
    assert re.search(r'text-anchor="middle" class="tick">free</text>', svg)
    assert max(x for _, x, _ in drawn.values()) < COST_RIGHT


def test_labels_are_text_not_markup() -> None:
    svg = str(cost_accuracy([point("<script>x</script>", 0.01, 0.2, front=True)]))
    assert "<script>" not in svg
    assert "&lt;script&gt;x&lt;/script&gt;" in svg


def test_a_free_models_name_sits_above_its_dot_and_all_free_draws_no_dollar_ticks() -> None:
    svg = str(cost_accuracy([*PAID, point("Free", 0.0, 0.25, front=True)]))
    free_x = circles(svg)["Free"][1]
    assert re.search(rf'<text x="{free_x:g}" y="[\d.]+" text-anchor="middle" class="point-label">'
                     r"Free</text>", svg)  # fmt: skip
    only_free = str(cost_accuracy([point("Free", 0.0, 0.25, front=True)]))
    ticks = re.findall(r'class="tick">([^<]+)</text>', only_free)
    assert "free" in ticks
    assert not [t for t in ticks if t.startswith("$")]  # nothing on the log axis to place
