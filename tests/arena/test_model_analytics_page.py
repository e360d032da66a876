"""The model page's analytics: reliability diagram, Murphy bars, Alpha over cohorts,
the headline figures and the per-category table, beside the v1 figures.

The world: gpt-5.1 answered through OpenRouter in two cohorts, and its offline stand-in in a
third. Each resolved bet is (category, implied confidence f, price b, side won x), and its
Alpha δ = (b − x)² − (f − x)²:

- cohort 1: Politics 0.8 / 0.6 won (δ +0.12), Politics 0.7 / 0.5 lost (−0.24), Sports 0.3 /
  0.4 lost (+0.07): the cohort's Alpha −0.05 / 3;
- cohort 2: Sports 0.9 / 0.7 won (+0.08), Crypto 0.6 / 0.5 won (+0.09): Alpha +0.085;
- the real row's Alpha (0.12 − 0.24 + 0.07 + 0.08 + 0.09) / 5 = +0.0240, Beat% 1 of 2; its
  forecasts fill 5 of the 10 bins (0.3, 0.6, 0.7, 0.8, 0.9), the prices 4 (0.4, 0.5, 0.6, 0.7);
- by category: Politics 2 bets, Alpha −0.0600, win rate 50%; Sports 2, +0.0750, 50%; Crypto 1,
  +0.0900, 100%;
- cohort 3, offline: Politics 0.8 / 0.6 won (+0.12), one cohort: no interval yet.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal

import pytest
from django.test import Client
from django.utils.html import escape

from agents.models import BenchmarkModel
from arena.models import Agent, Cohort, Decision, Trade
from arena.selectors.analytics import cache
from arena.views import analytics, diagrams
from arena.views.analytics import DEFINED
from markets.models import Market
from tests.arena.factories import CohortFactory

SCRIPT = "<script>alert(1)</script>"
Bet = tuple[str, float, str, bool]  # category, implied confidence, price, side won

REAL_COHORTS: list[list[Bet]] = [
    [
        ("Politics", 0.8, "0.6", True),
        ("Politics", 0.7, "0.5", False),
        ("Sports", 0.3, "0.4", False),
    ],
    [("Sports", 0.9, "0.7", True), ("Crypto", 0.6, "0.5", True)],
]
OFFLINE_COHORT: list[Bet] = [("Politics", 0.8, "0.6", True)]

_markets = iter(range(10**6))


@dataclass(frozen=True)
class Lineup:
    model: BenchmarkModel
    real: list[Agent]
    offline: Agent


def market(category: str, won: bool) -> Market:
    """A resolved binary market; the bets are on YES, so YES wins when the side won."""
    created: Market = Market.objects.create(
        polymarket_id=f"88{next(_markets)}",
        question=f"A {category} question?",
        category=category,
        outcomes=["Yes", "No"],
        outcome_prices=["1", "0"] if won else ["0", "1"],
        closed=True,
        resolution=Market.Resolution.RESOLVED,
        winning_outcome="Yes" if won else "No",
    )
    return created


def agent_with_bets(
    model: BenchmarkModel, cohort: Cohort, bets: list[Bet], *, responder: str
) -> Agent:
    agent: Agent = Agent.objects.create(cohort=cohort, model=model, cash=Decimal("10000"))
    made = Decision.objects.create(
        agent=agent,
        cohort=cohort,
        week_start=cohort.week_start,
        status=Decision.Status.DONE,
        action=Decision.Action.BET,
        responder=responder,
    )
    for index, (category, confidence, price, won) in enumerate(bets):
        Trade.objects.create(
            decision=made,
            agent=agent,
            order_index=index,
            kind=Trade.Kind.BUY,
            status=Trade.Status.EXECUTED,
            market=market(category, won),
            side="YES",
            price=Decimal(price),
            shares=Decimal("100"),
            amount=Decimal(price) * 100,
            implied_confidence=confidence,
            brier_score=(confidence - won) ** 2,
            side_won=won,
            scored_at=cohort.started_at + timedelta(days=3),
            created_at=cohort.started_at + timedelta(minutes=5 + index),
        )
    return agent


@pytest.fixture
def lineup(db: None) -> Lineup:
    model = BenchmarkModel.objects.get(internal_id="gpt-5.1")
    real = [
        agent_with_bets(
            model, CohortFactory.create(), bets, responder=Decision.Responder.OPENROUTER
        )
        for bets in REAL_COHORTS
    ]
    offline = agent_with_bets(
        model, CohortFactory.create(), OFFLINE_COHORT, responder=Decision.Responder.OFFLINE
    )
    return Lineup(model, real, offline)


def page(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def panels(html: str) -> list[str]:
    """The analytics section's panels, one per row: the real row first, then the offline."""
    section = html.split('id="analytics"', 1)[1]
    return re.split(r'<section class="analytics-row', section)[1:]


def cells(row: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]


def hand_alpha(agents: list[Agent]) -> float:
    """Mean over the agents' resolved bets of (price − won)² − (confidence − won)²."""
    deltas = []
    for price, confidence, won in Trade.objects.filter(
        agent__in=agents, side_won__isnull=False
    ).values_list("price", "implied_confidence", "side_won"):
        assert price is not None
        assert confidence is not None
        x = 1.0 if won else 0.0
        deltas.append((float(price) - x) ** 2 - (confidence - x) ** 2)
    return sum(deltas) / len(deltas)


# ------------------------------------------------------------------------------ the page


def test_the_page_shows_the_alpha_the_selector_computes_and_the_bets_recompute(
    lineup: Lineup, client: Client
) -> None:
    real, offline = cache.model_analytics(model=lineup.model)
    assert (real.offline, offline.offline) == (False, True)
    assert real.alpha == pytest.approx(hand_alpha(lineup.real)) == pytest.approx(0.024)
    assert offline.alpha == pytest.approx(hand_alpha([lineup.offline])) == pytest.approx(0.12)
    real_panel, offline_panel = panels(page(client, "/models/gpt-5.1/"))
    assert '<b class="figure">+0.0240</b>' in real_panel
    assert '<b class="figure">+0.1200</b>' in offline_panel
    assert '<b class="figure">50%</b> <span class="muted">of 2 cohorts' in real_panel


def test_the_offline_row_is_labelled_and_one_week_has_no_interval(
    lineup: Lineup, client: Client
) -> None:
    real_panel, offline_panel = panels(page(client, "/models/gpt-5.1/"))
    assert "Answered by the model" in real_panel
    assert "offline" not in real_panel.split("</h3>")[0]
    assert "Answered by the offline stand-in" in offline_panel
    assert '<span class="badge offline"' in offline_panel
    assert "one week: no interval yet" in offline_panel
    assert "one week: no test yet" in offline_panel
    assert "one week: no interval yet" not in real_panel
    # Two weeks: a t interval, and no bootstrap until there are five.
    assert re.search(
        r"95% t \[[−+]?\d\.\d{4}, [−+]?\d\.\d{4}\]; bootstrap from 5 weeks", real_panel
    )


def test_the_power_line_gives_the_bets_needed_and_had(lineup: Lineup, client: Client) -> None:
    (real, _) = cache.model_analytics(model=lineup.model)
    assert real.power is not None
    assert real.power.bets_needed is not None
    real_panel, _ = panels(page(client, "/models/gpt-5.1/"))
    text = re.sub(r"\s+", " ", real_panel)
    needed = f"{math.ceil(real.power.bets_needed):,}"
    assert (
        f"Telling an Alpha of +0.0240 from 0 (the market) needs about {needed} resolved bets at "
        "80% power (one-sided, κ = 0.05, with its own base rate and boldness); it has 5"
    ) in text


def test_the_diagrams_draw_one_point_per_filled_bin_and_per_cohort(
    lineup: Lineup, client: Client
) -> None:
    real, _ = cache.model_analytics(model=lineup.model)
    assert len(analytics.reliability_points(real.murphy)) == 5
    assert len(analytics.reliability_points(real.market_murphy)) == 4
    real_panel, offline_panel = panels(page(client, "/models/gpt-5.1/"))
    reliability = re.search(r'<svg class="diagram reliability".*?</svg>', real_panel, flags=re.S)
    assert reliability is not None
    assert reliability.group(0).count('class="pt model"') == 5
    assert reliability.group(0).count('class="pt market"') == 4
    assert 'role="img"' in reliability.group(0)
    assert '<svg class="diagram murphy"' in real_panel
    cumulative = re.search(r'<svg class="diagram cumulative-alpha".*?</svg>', real_panel, re.S)
    assert cumulative is not None
    assert cumulative.group(0).count('class="pt cohort"') == 2
    assert "<polyline" in cumulative.group(0)
    assert offline_panel.count('class="pt cohort"') == 1
    assert "one cohort: no line yet" in offline_panel
    for svg in re.findall(r"<svg.*?</svg>", real_panel, flags=re.S):
        ET.fromstring(svg)  # well-formed: every label escaped


def test_the_murphy_identity_and_the_anatomy_of_alpha_are_written_out(
    lineup: Lineup, client: Client
) -> None:
    real, _ = cache.model_analytics(model=lineup.model)
    assert real.murphy is not None
    assert real.anatomy is not None
    real_panel, _ = panels(page(client, "/models/gpt-5.1/"))
    m = real.murphy
    assert (
        f"Model: Brier {m.brier:.4f} = UNC {m.uncertainty:.4f} + REL {m.reliability:.4f} − RES "
        f"{m.resolution:.4f}"
    ) in real_panel
    assert (
        f"Alpha +0.0240 = resolution gain {diagrams.signed(real.anatomy.resolution_gain)} + "
        f"reliability gap {diagrams.signed(real.anatomy.reliability_gap)}"
    ) in real_panel


def test_the_category_table_gives_each_category_its_figures(lineup: Lineup, client: Client) -> None:
    real_panel, _ = panels(page(client, "/models/gpt-5.1/"))
    table = real_panel.split('class="data analytics-categories"', 1)[1].split("</table>")[0]
    heads = re.findall(r"<th[^>]*>(.*?)</th>", table)
    assert heads == [
        "Category",
        "Bets",
        "Brier",
        "Market Brier",
        "Alpha",
        "Win rate",
        "BSS vs market",
        "REL",
        "RES",
    ]
    assert f'title="{escape(DEFINED["Alpha"])}">Alpha<' in table
    rows = [cells(r) for r in re.findall(r"<tr>.*?</tr>", table.split("<tbody>")[1], re.S)]
    # Politics: Brier (0.04 + 0.49) / 2, market (0.16 + 0.25) / 2, BSS 1 − 0.265 / 0.205.
    assert rows[0][:7] == ["Politics", "2", "0.2650", "0.2050", "−0.0600", "50%", "−0.2927"]
    assert rows[1][:6] == ["Sports", "2", "0.0500", "0.1250", "+0.0750", "50%"]
    assert rows[2][:6] == ["Crypto", "1", "0.1600", "0.2500", "+0.0900", "100%"]


def test_a_model_without_resolved_bets_reads_so(db: None, client: Client) -> None:
    html = page(client, "/models/claude-opus-4.5/")
    (panel,) = panels(html)
    assert "has no resolved bets yet" in panel
    assert "<svg" not in panel


def test_an_open_bet_is_no_resolved_bet(lineup: Lineup, client: Client) -> None:
    model = BenchmarkModel.objects.get(internal_id="grok-4")
    agent = agent_with_bets(
        model, CohortFactory.create(), [("Politics", 0.5, "0.5", True)], responder="openrouter"
    )
    Trade.objects.filter(agent=agent).update(side_won=None, brier_score=None)
    (panel,) = panels(page(client, "/models/grok-4/"))
    assert "has no resolved bets yet" in panel


def test_hostile_category_text_is_escaped(lineup: Lineup, client: Client) -> None:
    Market.objects.filter(category="Crypto").update(category=SCRIPT)
    html = page(client, "/models/gpt-5.1/")
    assert SCRIPT not in html
    real_panel, _ = panels(html)
    assert f"<td>{escape(SCRIPT)}</td>" in real_panel


# ---------------------------------------------------------------------------- diagrams


def test_a_reliability_point_lands_at_its_forecast_and_frequency() -> None:
    svg = diagrams.reliability_diagram([(0.25, 0.75, 4), (0.5, 0.5, 1)], [(1.0, 0.0, 1)])
    # The plot is the square 48 + 296·x across, 12 + 296·(1 − y) down.
    assert '<circle class="pt model" cx="122" cy="86" r="10">' in svg  # the most bets: largest
    assert '<circle class="pt model" cx="196" cy="160" r="6.5">' in svg  # √(1/4) of the way
    assert '<path class="pt market" d="M344 301.5L350.5 308L344 314.5L337.5 308Z">' in svg
    assert '<line class="diagonal" x1="48" y1="308" x2="344" y2="12"/>' in svg
    ET.fromstring(svg)


def test_reliability_diagram_with_no_bins_draws_the_frame_only() -> None:
    svg = diagrams.reliability_diagram([], [])
    assert 'class="pt' not in svg
    assert 'class="diagonal"' in svg
    ET.fromstring(svg)


def test_every_label_in_a_diagram_is_escaped() -> None:
    for svg in (
        diagrams.reliability_diagram([(0.5, 0.5, 1)], [], forecaster_label=SCRIPT),
        diagrams.murphy_bars((0.2, 0.01, 0.05), (0.2, 0.02, 0.03), market_label=SCRIPT),
        diagrams.cumulative_alpha_line([(1, 0.1, 0.1)], forecaster_label=SCRIPT),
        diagrams.weekly_alpha_line([(date(2026, 11, 1), 0.1, 0.1)], forecaster_label=SCRIPT),
        diagrams.weekly_brier_lines([(date(2026, 11, 1), 0.2, 0.25)], market_label=SCRIPT),
    ):
        assert SCRIPT not in svg
        assert escape(SCRIPT) in svg
        root = ET.fromstring(svg)
        assert root.get("role") == "img"
        assert SCRIPT in (root.get("aria-label") or "")  # escaped once, read back as text


def test_murphy_bars_share_one_scale_from_uncertaintys_ceiling() -> None:
    svg = diagrams.murphy_bars((0.25, 0.0, 0.125), (0.25, 0.0625, 0.0))
    widths = [float(w) for w in re.findall(r'<rect class="bar [a-z]+" [^>]*width="([\d.]+)"', svg)]
    # UNC, REL, RES of the model then the market, each pair in turn; 0.25 is the full 232.
    assert widths == [232, 232, 0, 58, 116, 0]


def test_cumulative_alpha_puts_cohorts_and_zero_in_the_frame() -> None:
    points = [(3, -0.1, -0.1), (4, 0.3, 0.1), (5, 0.0, 0.0667)]
    frame = diagrams.alpha_frame(points)
    assert (frame.first, frame.last) == (3, 5)
    assert frame.low == pytest.approx(-0.14)  # −0.1 padded by a tenth of the 0.4 span
    assert frame.high == pytest.approx(0.34)
    assert frame.x(3) == diagrams.CUMULATIVE_LEFT
    assert frame.x(5) == diagrams.CUMULATIVE_RIGHT
    svg = diagrams.cumulative_alpha_line(points)
    zero = f"{frame.y(0.0):.2f}".rstrip("0").rstrip(".")
    assert f'<line class="zero" x1="56" y1="{zero}" x2="348" y2="{zero}"/>' in svg
    assert svg.count('class="pt cohort"') == 3
    assert svg.count("<polyline") == 1


def test_one_cohort_is_a_dot_in_the_middle_and_no_line() -> None:
    svg = diagrams.cumulative_alpha_line([(7, 0.05, 0.05)])
    middle = (diagrams.CUMULATIVE_LEFT + diagrams.CUMULATIVE_RIGHT) / 2
    assert f'<circle class="pt cohort" cx="{middle:g}"' in svg
    assert "<polyline" not in svg
    assert "<polyline" not in diagrams.cumulative_alpha_line([])


def test_a_reliability_bin_counts_what_it_is_told() -> None:
    svg = diagrams.reliability_diagram(
        [(0.25, 0.75, 1), (0.6, 0.5, 3)], [], market_label="Market (b)", unit="forecast"
    )
    assert "mean forecast 0.250, observed 0.750, 1 forecast<" in svg
    assert "observed 0.500, 3 forecasts<" in svg
    assert "bet" not in svg


WEEKS = (date(2026, 11, 1), date(2026, 11, 8), date(2026, 11, 15))


def coordinate(value: float) -> str:
    """A coordinate as the diagrams write it: two decimals at most, no trailing zeros."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def test_panel_alpha_by_week_labels_each_week_by_its_start() -> None:
    figures = ((-0.1, -0.1), (0.3, 0.1), (0.0, 0.0667))
    points = [(week, a, pooled) for week, (a, pooled) in zip(WEEKS, figures, strict=True)]
    svg = diagrams.weekly_alpha_line(points)
    # The frame of Alpha over cohorts, the weeks numbered 1 to 3 across it.
    frame = diagrams.alpha_frame([(n, a, c) for n, (_, a, c) in enumerate(points, start=1)])
    first = f'<circle class="pt cohort" cx="56" cy="{coordinate(frame.y(-0.1))}" r="3.5">'
    assert first in svg
    assert svg.count('class="pt cohort"') == 3
    assert svg.count("<polyline") == 1
    assert ">11-01<" in svg  # each tick: the week's start, month and day
    assert ">11-15<" in svg
    assert "Week of 2026-11-08: Alpha +0.3000" in svg
    assert "Through the week of 2026-11-15: Alpha +0.0667" in svg
    assert "over 3 weeks (2026-11-01 to 2026-11-15): +0.0667 pooled" in svg
    ET.fromstring(svg)


def test_panel_brier_by_week_sets_the_model_beside_the_market() -> None:
    points = [(WEEKS[0], 0.125, 0.25), (WEEKS[1], 0.5, 0.25)]
    svg = diagrams.weekly_brier_lines(points)
    frame = diagrams.Frame(first=1, last=2, low=0.0, high=0.5 * 1.05)  # up to the worst point
    assert f'<circle class="pt model" cx="56" cy="{coordinate(frame.y(0.125))}"' in svg
    assert f'<circle class="pt model" cx="348" cy="{coordinate(frame.y(0.5))}"' in svg
    assert svg.count('class="pt market"') == 2
    assert svg.count('<polyline class="line') == 2  # the model's and the market's
    assert "Week of 2026-11-08: Model Brier 0.5000" in svg
    assert "Week of 2026-11-01: Market (b) Brier 0.2500" in svg
    one = diagrams.weekly_brier_lines(points[:1])
    assert "<polyline" not in one
    assert one.count('class="pt model"') == 1
    assert 'class="pt' not in diagrams.weekly_brier_lines([])
    ET.fromstring(svg)


def test_figures_are_written_with_a_sign_and_a_true_minus() -> None:
    assert diagrams.signed(0.024) == "+0.0240"
    assert diagrams.signed(-0.004) == "−0.0040"
    assert diagrams.signed(0.00001) == "0.0000"  # rounds to zero: no sign
    assert diagrams.signed(-0.12345, 3) == "−0.123"
    assert diagrams.fixed(-0.5) == "−0.5000"
    assert diagrams.fixed(0.25) == "0.2500"
