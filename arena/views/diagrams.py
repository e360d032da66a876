"""Small diagrams drawn on the server as inline SVG: no script, readable without one.

Each builder is a pure function of numbers (and a few labels) that returns SVG markup. Every
label is escaped here, so the markup is safe to put in a page as it is (`SafeString`). The SVG
has a `viewBox` and `width="100%"`: it scales with its box, down to a 390 px phone, and the
text scales with it. Each one is an image to assistive technology (`role="img"`, a `<title>`
and an `aria-label` saying what it shows); each point carries a `<title>` with its figures.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date

from django.utils.safestring import SafeString, mark_safe

MINUS = "−"  # the site writes negatives with a true minus sign (forecaster/templatetags/figures)
MODEL_COLOUR = "#2a5bd7"
MARKET_COLOUR = "#c2410c"
GRID_COLOUR = "#e3e6ec"
AXIS_COLOUR = "#677084"


def signed(value: float, places: int = 4) -> str:
    """Return `value` with `places` decimals, a + on a positive figure and a true minus sign
    on a negative one (`+0.0123`, `−0.0040`, `0.0000`)."""
    text = f"{abs(value):.{places}f}"
    if float(text) == 0.0:
        return text
    return ("+" if value > 0 else MINUS) + text


def signed_precise(value: float, places: int = 4) -> str:
    """Return `signed(value, places)`, or with two significant figures when that would hide a
    non-zero value as 0 (`−0.000012`): for a figure quoted on its own, such as an edge."""
    if value == 0.0 or abs(value) >= 0.5 * 10**-places:
        return signed(value, places)
    return signed(value, _places_for(abs(value)))


def _places_for(span: float) -> int:
    """The decimals that show a difference of `span` (at least 3, at most 8)."""
    if span <= 0.0:
        return 3
    return max(3, min(8, 1 - math.floor(math.log10(span))))


def fixed(value: float, places: int = 4) -> str:
    """Return `value` with `places` decimals and a true minus sign when negative."""
    text = f"{abs(value):.{places}f}"
    return (MINUS if value < 0 and float(text) != 0.0 else "") + text


def esc(text: str) -> str:
    """The text escaped for an SVG element or attribute."""
    return html.escape(text, quote=True)


def num(value: float) -> str:
    """A coordinate: two decimals at most, trailing zeros dropped."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def svg_figure(
    *, width: int, height: int, label: str, css_class: str, body: list[str]
) -> SafeString:
    return mark_safe(  # noqa: S308 — every label was escaped by esc() above  # nosec B308 B703
        f'<svg class="diagram {css_class}" viewBox="0 0 {width} {height}" width="100%" '
        f'role="img" aria-label="{esc(label)}" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{esc(label)}</title>" + "".join(body) + "</svg>"
    )


def svg_text(x: float, y: float, text: str, *, anchor: str = "start", css: str = "") -> str:
    klass = f' class="{css}"' if css else ""
    return f'<text x="{num(x)}" y="{num(y)}" text-anchor="{anchor}"{klass}>{esc(text)}</text>'


# ---------------------------------------------------------------------------------------------
# Reliability diagram


@dataclass(frozen=True)
class Square:
    """A square plot area of the unit square [0, 1]²: where a probability pair is drawn."""

    left: float
    top: float
    size: float

    def x(self, value: float) -> float:
        return self.left + value * self.size

    def y(self, value: float) -> float:
        return self.top + (1.0 - value) * self.size


RELIABILITY_WIDTH, RELIABILITY_HEIGHT = 360, 380
RELIABILITY_PLOT = Square(left=48.0, top=12.0, size=296.0)
TICKS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
MIN_RADIUS, MAX_RADIUS = 3.0, 10.0


def _radius(count: int, most: int) -> float:
    # The area, not the radius, grows with the count, so a bin of 4× the bets looks 4× as big.
    return MIN_RADIUS + (MAX_RADIUS - MIN_RADIUS) * math.sqrt(count / most) if most else MIN_RADIUS


def _bin_title(who: str, forecast: float, observed: float, count: int, unit: str) -> str:
    counted = f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{who}: mean forecast {forecast:.3f}, observed {observed:.3f}, {counted}"


def reliability_diagram(
    forecaster: Sequence[tuple[float, float, int]],
    market: Sequence[tuple[float, float, int]],
    *,
    forecaster_label: str = "Model",
    market_label: str = "Market, same bets",
    unit: str = "bet",
) -> SafeString:
    """Return the reliability diagram: each bin's mean forecast (x) against its observed
    frequency (y), both 0–1, over the diagonal of perfect calibration. `forecaster` and
    `market` are (mean forecast, observed frequency, bets) per non-empty bin
    (`arena.views.analytics.reliability_points`), each bin counting `unit`s (bets, or
    forecasts); a point's area grows with its count, on
    one scale for both series. The forecaster's bins are filled circles (class `pt model`),
    the market's hollow diamonds (`pt market`). Raises nothing: no bins draws the frame only."""
    plot = RELIABILITY_PLOT
    right, bottom = plot.x(1.0), plot.y(0.0)
    body: list[str] = []
    for tick in TICKS:
        x, y = plot.x(tick), plot.y(tick)
        body.append(
            f'<line class="grid" x1="{num(x)}" y1="{num(plot.top)}" x2="{num(x)}" '
            f'y2="{num(bottom)}"/><line class="grid" x1="{num(plot.left)}" y1="{num(y)}" '
            f'x2="{num(right)}" y2="{num(y)}"/>'
        )
        body.append(svg_text(x, bottom + 16, f"{tick:g}", anchor="middle", css="tick"))
        body.append(svg_text(plot.left - 6, y + 4, f"{tick:g}", anchor="end", css="tick"))
    body.append(
        f'<rect class="frame" x="{num(plot.left)}" y="{num(plot.top)}" width="{num(plot.size)}" '
        f'height="{num(plot.size)}"/>'
    )
    body.append(
        f'<line class="diagonal" x1="{num(plot.x(0))}" y1="{num(plot.y(0))}" '
        f'x2="{num(plot.x(1))}" y2="{num(plot.y(1))}"/>'
    )
    body.append(svg_text((plot.left + right) / 2, bottom + 34, "mean forecast", anchor="middle"))
    middle = (plot.top + bottom) / 2
    body.append(
        f'<text x="14" y="{num(middle)}" text-anchor="middle" '
        f'transform="rotate(-90 14 {num(middle)})">observed frequency</text>'
    )
    most = max((count for _, _, count in (*forecaster, *market)), default=0)
    for forecast, observed, count in forecaster:
        body.append(
            f'<circle class="pt model" cx="{num(plot.x(forecast))}" cy="{num(plot.y(observed))}" '
            f'r="{num(_radius(count, most))}">'
            f"<title>{esc(_bin_title(forecaster_label, forecast, observed, count, unit))}</title>"
            "</circle>"
        )
    for forecast, observed, count in market:
        x, y, r = plot.x(forecast), plot.y(observed), _radius(count, most)
        title = _bin_title(market_label, forecast, observed, count, unit)
        body.append(
            f'<path class="pt market" d="M{num(x)} {num(y - r)}L{num(x + r)} {num(y)}'
            f'L{num(x)} {num(y + r)}L{num(x - r)} {num(y)}Z"><title>{esc(title)}</title></path>'
        )
    legend_y = RELIABILITY_HEIGHT - 8
    body.append(
        f'<g class="legend"><line class="diagonal" x1="4" y1="{legend_y - 4}" x2="22" '
        f'y2="{legend_y - 4}"/>{svg_text(26, legend_y, "perfect calibration")}'
        f'<circle class="model" cx="148" cy="{legend_y - 4}" r="5"/>'
        f"{svg_text(157, legend_y, forecaster_label)}"
        f'<path class="market" d="M246 {legend_y - 10}L252 {legend_y - 4}L246 {legend_y + 2}'
        f'L240 {legend_y - 4}Z"/>{svg_text(257, legend_y, market_label)}</g>'
    )
    label = (
        f"Reliability diagram: {forecaster_label} in {len(forecaster)} forecast "
        f"bin{'s' if len(forecaster) != 1 else ''}, the market in {len(market)}, "
        "against the diagonal of perfect calibration"
    )
    return svg_figure(
        width=RELIABILITY_WIDTH,
        height=RELIABILITY_HEIGHT,
        label=label,
        css_class="reliability",
        body=body,
    )


# ---------------------------------------------------------------------------------------------
# Murphy bars


MURPHY_WIDTH = 360
MURPHY_LEFT, MURPHY_BAR_WIDTH = 44.0, 232.0
MURPHY_ROW, MURPHY_BAR = 36.0, 12.0
MURPHY_TERMS = (
    ("UNC", "uncertainty: the outcomes' variance, the same for both on the same bets"),
    ("REL", "reliability: calibration error, lower is better"),
    ("RES", "resolution: discrimination, higher is better"),
)


def murphy_bars(
    forecaster: tuple[float, float, float],
    market: tuple[float, float, float],
    *,
    forecaster_label: str = "Model",
    market_label: str = "Market, same bets",
) -> SafeString:
    """Return horizontal bars of the Murphy terms (UNC, REL, RES) of the forecaster beside the
    market's on the same bets; each argument is (UNC, REL, RES), each in [0, 1]. The bars share
    one scale, the larger of 0.25 (UNC's ceiling) and the largest term. Raises nothing."""
    top = max(0.25, *forecaster, *market)
    body: list[str] = []
    for row, (name, meaning) in enumerate(MURPHY_TERMS):
        y0 = 6 + row * MURPHY_ROW
        body.append(
            f"<g><title>{esc(f'{name}, {meaning}')}</title>"
            + svg_text(0, y0 + MURPHY_BAR + 4, name, css="term")
            + "</g>"
        )
        for offset, (who, values, css) in enumerate(
            ((forecaster_label, forecaster, "model"), (market_label, market, "market"))
        ):
            value = values[row]
            y = y0 + offset * (MURPHY_BAR + 2)
            width = MURPHY_BAR_WIDTH * max(0.0, value) / top
            body.append(
                f'<rect class="bar {css}" x="{num(MURPHY_LEFT)}" y="{num(y)}" '
                f'width="{num(width)}" height="{num(MURPHY_BAR)}">'
                f"<title>{esc(f'{who}: {name} {value:.4f}')}</title></rect>"
                + svg_text(MURPHY_LEFT + width + 4, y + MURPHY_BAR - 2, f"{value:.4f}", css="value")
            )
    legend_y = 6 + len(MURPHY_TERMS) * MURPHY_ROW + 10
    body.append(
        f'<g class="legend"><rect class="model" x="{num(MURPHY_LEFT)}" y="{legend_y - 9}" '
        f'width="12" height="10"/>{svg_text(MURPHY_LEFT + 16, legend_y, forecaster_label)}'
        f'<rect class="market" x="{num(MURPHY_LEFT + 130)}" y="{legend_y - 9}" width="12" '
        f'height="10"/>{svg_text(MURPHY_LEFT + 146, legend_y, market_label)}</g>'
    )
    unc, rel, res = forecaster
    m_unc, m_rel, m_res = market
    label = (
        f"Murphy decomposition: {forecaster_label} UNC {unc:.4f}, REL {rel:.4f}, RES "
        f"{res:.4f}; {market_label} UNC {m_unc:.4f}, REL {m_rel:.4f}, RES {m_res:.4f}"
    )
    return svg_figure(
        width=MURPHY_WIDTH,
        height=int(legend_y + 8),
        label=label,
        css_class="murphy",
        body=body,
    )


# ---------------------------------------------------------------------------------------------
# Cumulative Alpha over cohorts


CUMULATIVE_WIDTH, CUMULATIVE_HEIGHT = 360, 244
CUMULATIVE_LEFT, CUMULATIVE_RIGHT = 56.0, 348.0
CUMULATIVE_TOP, CUMULATIVE_BOTTOM = 12.0, 180.0
MAX_COHORT_TICKS = 6


@dataclass(frozen=True)
class Frame:
    """A plot area mapping (cohort number, Alpha) onto the diagram's coordinates."""

    first: int
    last: int
    low: float
    high: float

    def x(self, cohort: float) -> float:
        if self.last == self.first:
            return (CUMULATIVE_LEFT + CUMULATIVE_RIGHT) / 2
        share = (cohort - self.first) / (self.last - self.first)
        return CUMULATIVE_LEFT + share * (CUMULATIVE_RIGHT - CUMULATIVE_LEFT)

    def y(self, value: float) -> float:
        share = (value - self.low) / (self.high - self.low)
        return CUMULATIVE_BOTTOM - share * (CUMULATIVE_BOTTOM - CUMULATIVE_TOP)


def alpha_frame(points: Sequence[tuple[int, float, float]]) -> Frame:
    """Return the frame of `cumulative_alpha_line`: the cohorts' span, and an Alpha range
    that holds every point and 0, padded by a tenth (at least ±0.01 around 0)."""
    values = [0.0, *(v for _, a, c in points for v in (a, c))]
    low, high = min(values), max(values)
    pad = max((high - low) * 0.1, 0.01 if high == low else 0.0)
    numbers = [number for number, _, _ in points] or [0]
    return Frame(first=min(numbers), last=max(numbers), low=low - pad, high=high + pad)


def _cohort_ticks(first: int, last: int) -> list[int]:
    span = last - first
    if span < MAX_COHORT_TICKS:
        return list(range(first, last + 1))
    step = math.ceil(span / (MAX_COHORT_TICKS - 1))
    ticks = list(range(first, last, step))
    if last - ticks[-1] < step / 2:
        ticks.pop()
    return [*ticks, last]


def _cumulative_axes(
    frame: Frame, *, cohorts: bool, axis: str = "cohort", tick: Callable[[int], str] = str
) -> list[str]:
    """The Alpha chart's grid, Alpha ticks, zero line (the market) and its `axis` (cohorts, or
    weeks), each tick labelled by `tick`; the ticks only when there are points to mark."""
    body: list[str] = []
    for value in (frame.high, frame.low):
        y = frame.y(value)
        body.append(
            f'<line class="grid" x1="{num(CUMULATIVE_LEFT)}" y1="{num(y)}" '
            f'x2="{num(CUMULATIVE_RIGHT)}" y2="{num(y)}"/>'
        )
    places = _places_for(frame.high - frame.low)
    for value in sorted({frame.low, 0.0, frame.high}):
        body.append(
            svg_text(
                CUMULATIVE_LEFT - 6,
                frame.y(value) + 4,
                signed(value, places),
                anchor="end",
                css="tick",
            )
        )
    zero = frame.y(0.0)
    body.append(
        f'<line class="zero" x1="{num(CUMULATIVE_LEFT)}" y1="{num(zero)}" '
        f'x2="{num(CUMULATIVE_RIGHT)}" y2="{num(zero)}"/>'
    )
    if cohorts:
        for number in _cohort_ticks(frame.first, frame.last):
            body.append(
                svg_text(
                    frame.x(number),
                    CUMULATIVE_BOTTOM + 16,
                    tick(number),
                    anchor="middle",
                    css="tick",
                )
            )
    body.append(
        svg_text(
            (CUMULATIVE_LEFT + CUMULATIVE_RIGHT) / 2,
            CUMULATIVE_BOTTOM + 34,
            axis,
            anchor="middle",
        )
    )
    return body


def _cumulative_legend(axis: str = "cohort") -> str:
    legend_y = CUMULATIVE_HEIGHT - 8
    return (
        f'<g class="legend"><line class="cumulative" x1="4" y1="{legend_y - 4}" x2="22" '
        f'y2="{legend_y - 4}"/>{svg_text(26, legend_y, "Alpha so far")}'
        f'<circle class="cohort" cx="124" cy="{legend_y - 4}" r="3.5"/>'
        f"{svg_text(132, legend_y, f'one {axis}')}"
        f'<line class="zero" x1="216" y1="{legend_y - 4}" x2="234" y2="{legend_y - 4}"/>'
        f"{svg_text(238, legend_y, '0: the market')}</g>"
    )


def _alpha_points(
    frame: Frame,
    points: Sequence[tuple[int, float, float]],
    *,
    own: Callable[[int], str],
    pooled: Callable[[int], str],
) -> list[str]:
    """The pooled line of (number, own Alpha, pooled Alpha) points, each number's own Alpha
    as a hollow dot and its pooled Alpha as a small filled one, titled by `own(number)` and
    `pooled(number)`."""
    body = []
    if len(points) > 1:
        path = " ".join(f"{num(frame.x(n))},{num(frame.y(c))}" for n, _, c in points)
        body.append(f'<polyline class="cumulative" points="{path}"/>')
    for number, alpha, so_far in points:
        x = frame.x(number)
        body.append(
            f'<circle class="pt cohort" cx="{num(x)}" cy="{num(frame.y(alpha))}" r="3.5">'
            f"<title>{esc(f'{own(number)}: Alpha {signed(alpha)}')}</title></circle>"
            f'<circle class="pt running" cx="{num(x)}" cy="{num(frame.y(so_far))}" r="2.5">'
            f"<title>{esc(f'{pooled(number)}: Alpha {signed(so_far)}')}</title></circle>"
        )
    return body


def cumulative_alpha_line(
    points: Sequence[tuple[int, float, float]], *, forecaster_label: str = "Model"
) -> SafeString:
    """Return Alpha over cohorts: a line of the Alpha pooled over every cohort so far, the
    cohort's own Alpha as hollow dots (class `pt cohort`), and the zero line (the market).
    `points` are (cohort number, cohort Alpha, cumulative Alpha), cohorts ascending. Raises
    nothing: no points draws the frame and the zero line only."""
    frame = alpha_frame(points)
    body = _cumulative_axes(frame, cohorts=bool(points))
    body += _alpha_points(
        frame, points, own=lambda n: f"Cohort {n}", pooled=lambda n: f"Through cohort {n}"
    )
    body.append(_cumulative_legend())
    if points:
        last = points[-1]
        cohorts = f"{len(points)} cohort{'s' if len(points) != 1 else ''}"
        label = (
            f"Alpha of {forecaster_label} over {cohorts} ({points[0][0]} to {last[0]}): "
            f"{signed(last[2])} pooled through cohort {last[0]}"
        )
    else:
        label = f"Alpha of {forecaster_label} over cohorts: no resolved bets yet"
    return svg_figure(
        width=CUMULATIVE_WIDTH,
        height=CUMULATIVE_HEIGHT,
        label=label,
        css_class="cumulative-alpha",
        body=body,
    )


# ---------------------------------------------------------------------------------------------
# The forecast panel week by week (methodology v2)


def _week_tick(weeks: Sequence[date]) -> Callable[[int], str]:
    """Label the n-th week (1-based) by its start, month and day: the ticks' room is small."""
    return lambda number: weeks[number - 1].strftime("%m-%d") if 0 < number <= len(weeks) else ""


def weekly_alpha_line(
    points: Sequence[tuple[date, float, float]], *, forecaster_label: str = "Model"
) -> SafeString:
    """Return panel Alpha week by week: as `cumulative_alpha_line` draws it over cohorts, over
    the weeks whose panel questions have resolved. `points` are (week start, the week's Alpha,
    Alpha pooled over every question so far), weeks ascending. Raises nothing."""
    weeks = [week for week, _, _ in points]
    numbered = [(n, alpha, pooled) for n, (_, alpha, pooled) in enumerate(points, start=1)]
    frame = alpha_frame(numbered)
    body = _cumulative_axes(frame, cohorts=bool(points), axis="week", tick=_week_tick(weeks))
    body += _alpha_points(
        frame,
        numbered,
        own=lambda n: f"Week of {weeks[n - 1]:%Y-%m-%d}",
        pooled=lambda n: f"Through the week of {weeks[n - 1]:%Y-%m-%d}",
    )
    body.append(_cumulative_legend("week"))
    if points:
        count = f"{len(points)} week{'s' if len(points) != 1 else ''}"
        label = (
            f"Panel Alpha of {forecaster_label} over {count} ({weeks[0]:%Y-%m-%d} to "
            f"{weeks[-1]:%Y-%m-%d}): {signed(points[-1][2])} pooled over every question"
        )
    else:
        label = f"Panel Alpha of {forecaster_label} by week: no resolved question yet"
    return svg_figure(
        width=CUMULATIVE_WIDTH,
        height=CUMULATIVE_HEIGHT,
        label=label,
        css_class="cumulative-alpha",
        body=body,
    )


def _brier_axes(frame: Frame, weeks: Sequence[date], *, high: float) -> list[str]:
    """The weekly Brier chart's grid and Brier ticks (0, 0.25 and `high`, the top point, when
    over 0.25) and its week axis, each week labelled by its start."""
    body: list[str] = []
    for value in (0.0, 0.25, high) if high > 0.25 else (0.0, 0.125, 0.25):
        y = frame.y(value)
        body.append(
            f'<line class="grid" x1="{num(CUMULATIVE_LEFT)}" y1="{num(y)}" '
            f'x2="{num(CUMULATIVE_RIGHT)}" y2="{num(y)}"/>'
            + svg_text(CUMULATIVE_LEFT - 6, y + 4, fixed(value, 3), anchor="end", css="tick")
        )
    tick = _week_tick(weeks)
    if weeks:
        for number in _cohort_ticks(1, len(weeks)):
            body.append(
                svg_text(
                    frame.x(number),
                    CUMULATIVE_BOTTOM + 16,
                    tick(number),
                    anchor="middle",
                    css="tick",
                )
            )
    body.append(
        svg_text(
            (CUMULATIVE_LEFT + CUMULATIVE_RIGHT) / 2,
            CUMULATIVE_BOTTOM + 34,
            "week",
            anchor="middle",
        )
    )
    return body


def weekly_brier_lines(
    points: Sequence[tuple[date, float, float]],
    *,
    forecaster_label: str = "Model",
    market_label: str = "Market (b)",
) -> SafeString:
    """Return panel Brier week by week: the forecaster's (filled dots on a line) and the
    market's on the same questions (hollow diamonds on a dashed line), on a Brier axis from 0
    to the largest of 0.25 and every point. `points` are (week start, the forecaster's Brier,
    the market's Brier), weeks ascending. Raises nothing."""
    weeks = [week for week, _, _ in points]
    high = max([0.25, *(v for _, a, b in points for v in (a, b))])
    frame = Frame(first=1, last=max(len(points), 1), low=0.0, high=high * 1.05)
    body = _brier_axes(frame, weeks, high=high)
    if len(points) > 1:
        for css, values in (
            ("model", [own for _, own, _ in points]),
            ("market", [market for _, _, market in points]),
        ):
            path = " ".join(
                f"{num(frame.x(n))},{num(frame.y(value))}" for n, value in enumerate(values, 1)
            )
            body.append(f'<polyline class="line {css}" points="{path}"/>')
    for number, (week, own, market) in enumerate(points, start=1):
        x, y, r = frame.x(number), frame.y(market), 4.0
        body.append(
            f'<circle class="pt model" cx="{num(x)}" cy="{num(frame.y(own))}" r="3.5">'
            f"<title>{esc(f'Week of {week:%Y-%m-%d}: {forecaster_label} Brier {own:.4f}')}"
            "</title></circle>"
            f'<path class="pt market" d="M{num(x)} {num(y - r)}L{num(x + r)} {num(y)}'
            f'L{num(x)} {num(y + r)}L{num(x - r)} {num(y)}Z">'
            f"<title>{esc(f'Week of {week:%Y-%m-%d}: {market_label} Brier {market:.4f}')}"
            "</title></path>"
        )
    legend_y = CUMULATIVE_HEIGHT - 8
    body.append(
        f'<g class="legend"><circle class="model" cx="10" cy="{legend_y - 4}" r="4"/>'
        f"{svg_text(19, legend_y, forecaster_label)}"
        f'<path class="market" d="M136 {legend_y - 10}L142 {legend_y - 4}L136 {legend_y + 2}'
        f'L130 {legend_y - 4}Z"/>{svg_text(147, legend_y, market_label + ", same questions")}'
        "</g>"
    )
    if points:
        label = (
            f"Panel Brier of {forecaster_label} and of {market_label} by week over "
            f"{len(points)} week{'s' if len(points) != 1 else ''}, {weeks[0]:%Y-%m-%d} to "
            f"{weeks[-1]:%Y-%m-%d}; the last week {points[-1][1]:.4f} against {points[-1][2]:.4f}"
        )
    else:
        label = f"Panel Brier of {forecaster_label} by week: no resolved question yet"
    return svg_figure(
        width=CUMULATIVE_WIDTH,
        height=CUMULATIVE_HEIGHT,
        label=label,
        css_class="weekly-brier",
        body=body,
    )


# ---------------------------------------------------------------------------------------------
# A model's figures cohort by cohort

STRIPS_WIDTH, STRIP_HEIGHT, STRIP_GAP = 640, 78, 26
STRIPS_LEFT, STRIPS_RIGHT, STRIPS_TOP = 64.0, 624.0, 20.0


@dataclass(frozen=True)
class CohortPoint:
    """One cohort's figures for a model: its resolved bets' Brier and Alpha (None without a
    resolved bet) and its agent's return in percent (None before it has a value)."""

    cohort: int
    brier: float | None
    alpha: float | None
    return_percent: float | None


@dataclass(frozen=True)
class Strip:
    """One strip of `cohort_strips`: its title, how a value reads, its reference line, the
    lowest value its range may show (a Brier is never below 0), and the figure it draws."""

    title: str
    write: Callable[[float], str]
    reference: float
    floor: float | None
    value_of: Callable[[CohortPoint], float | None]


_STRIPS = (
    Strip("Brier of its resolved bets (lower is better)", lambda v: fixed(v, 3), 0.25, 0.0,
          lambda p: p.brier),
    Strip("Alpha against the market (above 0 beats it)", lambda v: signed(v, 3), 0.0, None,
          lambda p: p.alpha),
    Strip("Return on $10,000 (%)", lambda v: signed(v, 1), 0.0, -100.0,
          lambda p: p.return_percent),
)  # fmt: skip


def _strip(
    top: float, x: Callable[[int], float], points: Sequence[CohortPoint], strip: Strip
) -> list[str]:
    """One strip: its title, its range's ticks, its reference line, and a dot per cohort that
    has the figure, joined by a line, each titled with its cohort and value."""
    write, reference = strip.write, strip.reference
    shown = [(p.cohort, v) for p in points if (v := strip.value_of(p)) is not None]
    body = [svg_text(STRIPS_LEFT, top - 6, strip.title, css="strip-title")]
    if not shown:
        return body
    values = [v for _, v in shown] + [reference]
    low, high = min(values), max(values)
    pad = max((high - low) * 0.1, 0.01 if high == low else 0.0)
    low, high = low - pad, high + pad
    if strip.floor is not None:
        low = max(low, strip.floor)

    def y(value: float) -> float:
        return top + (high - value) / (high - low) * STRIP_HEIGHT

    for value in (high, low):
        body.append(
            f'<line class="grid" x1="{num(STRIPS_LEFT)}" y1="{num(y(value))}" '
            f'x2="{num(STRIPS_RIGHT)}" y2="{num(y(value))}"/>'
            + svg_text(STRIPS_LEFT - 6, y(value) + 4, write(value), anchor="end", css="tick")
        )
    body.append(
        f'<line class="zero" x1="{num(STRIPS_LEFT)}" y1="{num(y(reference))}" '
        f'x2="{num(STRIPS_RIGHT)}" y2="{num(y(reference))}"/>'
        + svg_text(STRIPS_LEFT - 6, y(reference) + 4, write(reference), anchor="end", css="tick")
    )
    if len(shown) > 1:
        path = " ".join(f"{num(x(n))},{num(y(v))}" for n, v in shown)
        body.append(f'<polyline class="line model" points="{path}"/>')
    for number, value in shown:
        body.append(
            f'<circle class="pt model" cx="{num(x(number))}" cy="{num(y(value))}" r="3.5">'
            f"<title>{esc(f'Cohort {number}: {write(value)}')}</title></circle>"
        )
    return body


def cohort_strips(points: Sequence[CohortPoint], *, forecaster_label: str = "Model") -> SafeString:
    """Return a model's Brier, Alpha and return cohort by cohort as three strips over one cohort
    axis, each with its reference (Brier 0.25, the coin's at 50%; Alpha 0, the market; return
    0). `points` are cohorts ascending. A cohort without the figure has no dot in its strip
    (the line joins its neighbours across it). Raises nothing."""
    numbers = [p.cohort for p in points] or [0]
    first, last = min(numbers), max(numbers)

    def x(number: int) -> float:
        if last == first:
            return (STRIPS_LEFT + STRIPS_RIGHT) / 2
        return STRIPS_LEFT + (number - first) / (last - first) * (STRIPS_RIGHT - STRIPS_LEFT)

    body: list[str] = []
    for index, strip in enumerate(_STRIPS):
        body += _strip(STRIPS_TOP + index * (STRIP_HEIGHT + STRIP_GAP), x, points, strip)
    bottom = STRIPS_TOP + 3 * STRIP_HEIGHT + 2 * STRIP_GAP
    if points:
        for number in _cohort_ticks(first, last):
            body.append(svg_text(x(number), bottom + 16, str(number), anchor="middle", css="tick"))
    body.append(svg_text((STRIPS_LEFT + STRIPS_RIGHT) / 2, bottom + 34, "cohort", anchor="middle"))
    count = f"{len(points)} cohort{'s' if len(points) != 1 else ''}"
    label = (
        f"Brier, Alpha and return of {forecaster_label} cohort by cohort over {count}"
        if points
        else f"{forecaster_label} cohort by cohort: no cohort yet"
    )
    return svg_figure(
        width=STRIPS_WIDTH,
        height=int(bottom + 44),
        label=label,
        css_class="cohort-strips",
        body=body,
    )
