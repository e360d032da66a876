"""Server-rendered SVG charts: no JavaScript, every label escaped."""

from __future__ import annotations

from decimal import Decimal

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from arena.selectors.standings import Curve

PALETTE = [
    "#2a5bd7",
    "#d7263d",
    "#1b998b",
    "#f49d37",
    "#6f2dbd",
    "#3d405b",
    "#c1a100",
    "#e56399",
    "#0f7173",
    "#8d6a9f",
    "#5c946e",
]
WIDTH, HEIGHT, PAD_LEFT, PAD_RIGHT, PAD_Y = 860, 320, 64, 150, 24


def value_chart(curves: list[Curve], *, baseline: Decimal = Decimal("10000")) -> SafeString:
    """Return an SVG line chart of total value over time, with a dashed $10,000 line."""
    points = [p for c in curves for p in c.points]
    if not points:
        return format_html('<p class="muted">{}</p>', "No snapshots yet.")
    t0 = min(p[0] for p in points).timestamp()
    t1 = max(p[0] for p in points).timestamp()
    lo = float(min(min(p[1] for p in points), baseline))
    hi = float(max(max(p[1] for p in points), baseline))
    if hi - lo < 1:
        lo, hi = lo - 50, hi + 50
    span_t = max(t1 - t0, 1.0)
    plot_w = WIDTH - PAD_LEFT - PAD_RIGHT

    def x(t: float) -> float:
        return PAD_LEFT + (t - t0) / span_t * plot_w

    def y(v: float) -> float:
        return PAD_Y + (hi - v) / (hi - lo) * (HEIGHT - 2 * PAD_Y)

    lines = []
    labels = []
    for i, curve in enumerate(curves):
        if not curve.points:
            continue
        color = PALETTE[i % len(PALETTE)]
        path = " ".join(f"{x(ts.timestamp()):.1f},{y(float(v)):.1f}" for ts, v in curve.points)
        dash = "4 3" if curve.kind == "baseline" else ""
        lines.append((path, color, dash, curve.label))
        last_ts, last_v = curve.points[-1]
        labels.append((y(float(last_v)), color, curve.label, f"${float(last_v):,.0f}"))
    labels.sort()
    placed: list[tuple[float, str, str, str]] = []
    for label in labels:  # keep end labels from overlapping …
        ly = max(label[0], placed[-1][0] + 13) if placed else label[0]
        placed.append((ly, *label[1:]))
    limit = HEIGHT - 18.0
    for i in range(len(placed) - 1, -1, -1):  # … and inside the chart
        ly = min(placed[i][0], limit)
        placed[i] = (ly, *placed[i][1:])
        limit = ly - 13
    ticks = [lo + (hi - lo) * k / 4 for k in range(5)]
    return format_html(
        '<svg class="chart" viewBox="0 0 {w} {h}" role="img" aria-label="Total value over time">'
        '<rect x="0" y="0" width="{w}" height="{h}" fill="#fff"/>{grid}'
        '<line x1="{pl}" x2="{pr}" y1="{by}" y2="{by}" stroke="#999" stroke-dasharray="2 4"/>'
        "{paths}{labels}"
        '<text x="{pl}" y="{h}" dy="-4" font-size="11" fill="#677084">{start}</text>'
        '<text x="{pr}" y="{h}" dy="-4" font-size="11" fill="#677084" '
        'text-anchor="end">{end}</text>'
        "</svg>",
        w=WIDTH,
        h=HEIGHT,
        pl=PAD_LEFT,
        pr=WIDTH - PAD_RIGHT,
        by=f"{y(float(baseline)):.1f}",
        grid=format_html_join(
            "",
            '<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="#eef0f4"/>'
            '<text x="{}" y="{}" dy="4" font-size="11" fill="#677084" text-anchor="end">{}</text>',
            (
                (
                    PAD_LEFT,
                    WIDTH - PAD_RIGHT,
                    f"{y(v):.1f}",
                    f"{y(v):.1f}",
                    PAD_LEFT - 6,
                    f"{y(v):.1f}",
                    f"${v:,.0f}",
                )
                for v in ticks
            ),
        ),
        paths=format_html_join(
            "",
            '<polyline fill="none" stroke="{}" stroke-width="1.8" stroke-dasharray="{}" '
            'points="{}"><title>{}</title></polyline>',
            ((color, dash, path, label) for path, color, dash, label in lines),
        ),
        labels=format_html_join(
            "",
            '<text x="{}" y="{}" dy="4" font-size="11" fill="{}">{} {}</text>',
            (
                (WIDTH - PAD_RIGHT + 6, f"{ly:.1f}", color, label, value)
                for ly, color, label, value in placed
            ),
        ),
        start=datetime_label(min(p[0] for p in points)),
        end=datetime_label(max(p[0] for p in points)),
    )


def datetime_label(moment: object) -> str:
    return f"{moment:%Y-%m-%d %H:%M} UTC"
