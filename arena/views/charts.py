"""What a chart needs to be drawn: the range links, the series as JSON for
`static/js/charts.js` (uPlot, vendored under static/vendor/uplot/) and a text summary.

Templates include `arena/_chart.html` with `chart=…`; the data goes out through `json_script`,
so labels from the database are escaped there and set as text by the script.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from arena.models import STARTING_BALANCE
from arena.selectors.curves import RANGES, Series, range_from


@dataclass(frozen=True)
class RangeLink:
    key: str
    label: str  # the spoken name ("1 week"); the link text is the key
    active: bool


@dataclass(frozen=True)
class LastValue:
    label: str
    colour: str
    dashed: bool
    at: datetime
    value: Decimal


@dataclass
class Chart:
    element_id: str
    kind: str  # "money" or "price": how the axis, tooltip and summary write values
    range_key: str | None
    ranges: list[RangeLink] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    last_values: list[LastValue] = field(default_factory=list)

    @property
    def data_id(self) -> str:
        return f"{self.element_id}-data"

    @property
    def empty(self) -> bool:
        return not self.last_values

    @property
    def last_at(self) -> datetime | None:
        """The time of every series' last point when they share it (the summary says it once)."""
        times = {v.at for v in self.last_values}
        return times.pop() if len(times) == 1 else None

    @property
    def range_label(self) -> str:
        return RANGES[self.range_key].label if self.range_key else ""


# From this many lines a value chart opens on its return axis, on a log scale: every agent
# starts at the same $10,000, so one agent that doubled would otherwise flatten the rest into a
# band, and on a log scale a doubling and a halving are the same height.
RETURN_AXIS_FROM = 3


def value_chart(
    series: list[Series],
    *,
    range_key: str,
    element_id: str = "value-chart",
    not_before: datetime | None = None,
) -> Chart:
    """Return the chart of total value over the range: a dashed $10,000 start line, range links
    with `range_key` active. `not_before` (the cohort's start) clips the window: nothing was
    marked before it, so a 3-month window of a 5-week cohort shows its 5 weeks."""
    key = range_from(range_key)
    return _chart(
        series,
        kind="money",
        range_key=key,
        element_id=element_id,
        baseline=STARTING_BALANCE,
        not_before=not_before,
    )


def price_chart(
    series: list[Series], *, range_key: str | None = None, element_id: str = "price-chart"
) -> Chart:
    """Return a chart of prices (0 to 1) over time; range links only with a `range_key`."""
    key = range_from(range_key) if range_key is not None else None
    return _chart(series, kind="price", range_key=key, element_id=element_id, baseline=None)


def _chart(
    series: list[Series],
    *,
    kind: str,
    range_key: str | None,
    element_id: str,
    baseline: Decimal | None,
    not_before: datetime | None = None,
) -> Chart:
    drawn = [s for s in series if s.points]
    # One x axis for every series (uPlot's aligned data): the union of their times, with
    # null where a series has no point (the line spans the gap).
    times = sorted({int(ts.timestamp()) for s in drawn for ts, _ in s.points})
    column = {t: i for i, t in enumerate(times)}
    columns: list[list[float | None]] = []
    for s in drawn:
        values: list[float | None] = [None] * len(times)
        for ts, value in s.points:
            values[column[int(ts.timestamp())]] = float(value)
        columns.append(values)
    # The window the range shows, [its end − its span, its end], its end the latest point
    # (where the window ends): the axis spans it whatever the points inside.
    span = RANGES[range_key].span if range_key is not None else None
    window = (times[-1] - int(span.total_seconds()), times[-1]) if span and times else None
    if window and not_before is not None:
        window = (max(window[0], min(int(not_before.timestamp()), times[0])), window[1])
    data = {
        "kind": kind,
        # The axis the chart opens on: "linear" (USD, or a price), or "return" (a log scale); a
        # money chart switches between them.
        "scale": "return" if kind == "money" and len(drawn) >= RETURN_AXIS_FROM else "linear",
        "baseline": None if baseline is None else float(baseline),
        "from": window[0] if window else None,
        "to": window[1] if window else None,
        "x": times,
        "series": [
            {"label": s.label, "colour": s.colour, "dashed": s.dashed, "y": values}
            for s, values in zip(drawn, columns, strict=True)
        ],
    }
    ranges = (
        [RangeLink(r.key, r.label, r.key == range_key) for r in RANGES.values()]
        if range_key is not None
        else []
    )
    last_values = [
        LastValue(s.label, s.colour, s.dashed, s.points[-1][0], s.points[-1][1]) for s in drawn
    ]
    return Chart(element_id, kind, range_key, ranges, data, last_values)
