"""Accuracy against cost on the models page: each LLM row's Brier against its USD per decision,
drawn on the server as inline SVG with the pieces of arena/views/diagrams.py (escaped labels,
an accessible name, a `viewBox` that scales down to a phone)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.safestring import SafeString

from arena.views.diagrams import esc, fixed, num, svg_figure, svg_text

COST_WIDTH, COST_HEIGHT = 640, 300
COST_LEFT, COST_RIGHT, COST_TOP, COST_BOTTOM = 64.0, 600.0, 14.0, 236.0
COST_FREE_WIDTH = 44.0  # the free models' column, left of the log axis


@dataclass(frozen=True)
class CostPoint:
    """A row's USD per decision and Brier (with its 95% interval, when it has one), and
    whether it is on the Pareto set (nobody both cheaper and more accurate)."""

    label: str
    usd: float
    brier: float
    low: float | None
    high: float | None
    on_front: bool


@dataclass(frozen=True)
class _CostScale:
    """Where a cost and a Brier go: USD on a log axis; a free model (USD 0), which a log axis
    cannot place, in a column of its own at the left, apart from the axis."""

    lo_x: float
    hi_x: float
    hi_y: float
    free: bool
    paid: bool

    @classmethod
    def of(cls, points: Sequence[CostPoint]) -> _CostScale:
        costs = [p.usd for p in points if p.usd > 0] or [0.001, 0.01]
        briers = [v for p in points for v in (p.brier, p.low, p.high) if v is not None] or [0.25]
        return cls(
            lo_x=math.log10(min(costs)) - 0.15,
            hi_x=math.log10(max(costs)) + 0.15,
            hi_y=max(0.25, *briers) * 1.05,
            free=any(p.usd <= 0 for p in points),
            paid=any(p.usd > 0 for p in points),
        )

    @property
    def axis_left(self) -> float:
        return COST_LEFT + (COST_FREE_WIDTH if self.free else 0.0)

    def x(self, usd: float) -> float:
        if usd <= 0:
            return COST_LEFT + COST_FREE_WIDTH / 2 - 4
        share = (math.log10(max(usd, 10**self.lo_x)) - self.lo_x) / (self.hi_x - self.lo_x)
        return self.axis_left + share * (COST_RIGHT - self.axis_left)

    def y(self, brier: float) -> float:
        return COST_BOTTOM - brier / self.hi_y * (COST_BOTTOM - COST_TOP)


def _cost_axes(scale: _CostScale) -> list[str]:
    body: list[str] = []
    hi_y = scale.hi_y
    for value in (0.0, 0.125, 0.25) + ((hi_y / 1.05,) if hi_y / 1.05 > 0.25 else ()):
        y = scale.y(value)
        body.append(
            f'<line class="grid" x1="{num(COST_LEFT)}" y1="{num(y)}" x2="{num(COST_RIGHT)}" '
            f'y2="{num(y)}"/>'
            + svg_text(COST_LEFT - 6, y + 4, fixed(value, 3), anchor="end", css="tick")
        )
    # With no paid model the log axis has nothing to place: no dollar ticks.
    powers = range(math.ceil(scale.lo_x), math.floor(scale.hi_x) + 1) if scale.paid else ()
    for power in powers:
        usd = 10.0**power
        body.append(
            svg_text(scale.x(usd), COST_BOTTOM + 16, f"${usd:g}", anchor="middle", css="tick")
        )
    if scale.free:
        split = scale.axis_left - 8
        body.append(
            f'<line class="axis-break" x1="{num(split)}" y1="{num(COST_TOP)}" x2="{num(split)}" '
            f'y2="{num(COST_BOTTOM)}"/>'
            + svg_text(scale.x(0), COST_BOTTOM + 16, "free", anchor="middle", css="tick")
        )
    body.append(
        svg_text((COST_LEFT + COST_RIGHT) / 2, COST_BOTTOM + 34, "USD per decision (log scale)",
              anchor="middle")
    )  # fmt: skip
    body.append(svg_text(8, COST_TOP + 4, "Brier", css="tick"))
    return body


def _point_label(p: CostPoint, cx: float, cy: float) -> str:
    """A point's name beside it: leftwards near the right edge, inside the frame; above a free
    model's dot, centred on its column rather than running across the axis break."""
    if p.usd <= 0:
        return svg_text(cx, cy - 9, p.label, anchor="middle", css="point-label")
    if cx > COST_RIGHT - 90:
        return svg_text(cx - 7, cy - 6, p.label, anchor="end", css="point-label")
    return svg_text(cx + 7, cy - 6, p.label, css="point-label")


def cost_accuracy(points: Sequence[CostPoint]) -> SafeString:
    """Return Brier (lower is better, up the page is worse) against USD per decision on a
    log scale: each row a dot labelled by name with its interval as a whisker, the Pareto set
    filled and joined by a step line, the rest hollow; a free model in a column of its own
    left of the axis. Raises nothing; no points draws the frame only."""
    scale = _CostScale.of(points)
    x, y = scale.x, scale.y
    body = _cost_axes(scale)
    front = sorted((p for p in points if p.on_front), key=lambda p: p.usd)
    if len(front) > 1:
        steps = [f"{num(x(front[0].usd))},{num(y(front[0].brier))}"]
        for before, after in zip(front, front[1:], strict=False):
            steps += [f"{num(x(after.usd))},{num(y(before.brier))}",
                      f"{num(x(after.usd))},{num(y(after.brier))}"]  # fmt: skip
        body.append(f'<polyline class="line front" points="{" ".join(steps)}"/>')
    for p in points:
        cx, cy = x(p.usd), y(p.brier)
        if p.low is not None and p.high is not None:
            body.append(
                f'<line class="whisker" x1="{num(cx)}" y1="{num(y(p.low))}" x2="{num(cx)}" '
                f'y2="{num(y(p.high))}"/>'
            )
        where = (
            "on the Pareto set"
            if p.on_front
            else "dominated: another is no dearer and more accurate, or cheaper and as accurate"
        )
        title = f"{p.label}: Brier {p.brier:.4f} at ${p.usd:.4f} per decision, {where}"
        body.append(
            f'<circle class="pt {"front" if p.on_front else "off"}" cx="{num(cx)}" cy="{num(cy)}" '
            f'r="4.5"><title>{esc(title)}</title></circle>' + _point_label(p, cx, cy)
        )
    legend = COST_HEIGHT - 10
    body.append(
        f'<g class="legend"><circle class="front" cx="10" cy="{legend - 4}" r="4.5"/>'
        f"{svg_text(19, legend, 'on the Pareto set: none both cheaper and more accurate')}"
        f'<circle class="off" cx="360" cy="{legend - 4}" r="4.5"/>'
        f"{svg_text(369, legend, 'dominated')}"
        f'<line class="whisker" x1="470" y1="{legend - 10}" x2="470" y2="{legend + 2}"/>'
        f"{svg_text(477, legend, '95% interval')}</g>"
    )
    label = (
        f"Brier against USD per decision of {len(points)} models; on the Pareto set: "
        + ", ".join(p.label for p in front)
        if points
        else "Brier against USD per decision: no model with a known cost and a Brier yet"
    )
    return svg_figure(width=COST_WIDTH, height=COST_HEIGHT, label=label, css_class="cost-accuracy",
                body=body)  # fmt: skip
