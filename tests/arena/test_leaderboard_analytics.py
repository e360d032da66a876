"""The leaderboard's analytics view.

`/?view=analytics` shows, beside the v1 rows and in their order, each row's resolved bets, Alpha
with its 95% interval clustered by week and market, coverage-adjusted Alpha, the Brier skill scores,
the difficulty-adjusted Brier, Brier with its interval, p and Beat%; "too early to tell" under ten
weeks, then "not significant" where an interval crosses its reference; the references as labelled
pseudo-models, never ranked; a power note on the two best models. The v1 view (the default) shows
none of them: its columns and order are v1's. The methodology page gives every formula with its
source.

The worlds are written directly: each cohort's run shows two binary markets at frozen prices,
each model's agent bets on them, and every bet is already resolved and scored.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from agents.models import BenchmarkModel
from arena.models import Agent, Cohort, Decision, DecisionRun, SnapshotMarket, Trade
from arena.selectors import standings
from arena.selectors.analytics.cache import analytics
from arena.selectors.analytics.definitions import DEFINITIONS
from arena.selectors.analytics.figures import ModelAnalytics
from arena.views.analytics import analytics_columns, shown_places
from forecaster.templatetags.figures import brier as brier_text
from markets.models import Market
from tests.arena.factories import CohortFactory

pytestmark = pytest.mark.django_db

NOT_SIGNIFICANT = re.compile(r'<span class="badge ns"[^>]*>not significant</span>')
NOT_BELOW_RANDOM = re.compile(r'<span class="badge ns"[^>]*>not significant vs 0.25</span>')


@dataclass(frozen=True)
class Bet:
    """A bet on market `market` of its cohort's run: the side and the implied confidence f."""

    market: int
    side: str
    confidence: float


# Each cohort's run shows two binary markets: (frozen YES price, did YES win).
MARKETS = [
    [(0.40, True), (0.50, False)],
    [(0.70, False), (0.30, True)],
    [(0.40, True), (0.60, True)],
]
# "Wobbly" beats the market in cohort 1 and loses in cohort 2: its Alpha interval contains 0.
WOBBLY = [
    [Bet(0, "YES", 0.80), Bet(1, "YES", 0.60)],  # δ = +0.32, −0.11
    [Bet(0, "YES", 0.90), Bet(1, "YES", 0.20)],  # δ = −0.32, −0.15
]
WOBBLY_ALPHA = (0.32 - 0.11 - 0.32 - 0.15) / 4  # −0.065
# "Steady" beats it in each of three cohorts: its interval lies above 0.
STEADY = [
    [Bet(0, "YES", 0.80), Bet(1, "NO", 0.70)],  # δ = +0.32, +0.16
    [Bet(0, "NO", 0.80), Bet(1, "YES", 0.50)],  # δ = +0.45, +0.24
    [Bet(0, "YES", 0.70), Bet(1, "YES", 0.80)],  # δ = +0.27, +0.12
]
STEADY_ALPHA = (0.32 + 0.16 + 0.45 + 0.24 + 0.27 + 0.12) / 6  # +0.26


def new_model(internal_id: str, name: str) -> BenchmarkModel:
    return BenchmarkModel.objects.create(
        internal_id=internal_id,
        display_name=name,
        provider="test",
        openrouter_id=f"test/{internal_id}",
        kind=BenchmarkModel.Kind.LLM,
        display_order=950,
    )


def build(
    plans: dict[BenchmarkModel, list[list[Bet]]],
    *,
    markets: list[list[tuple[float, bool]]] = MARKETS,
    offline: bool = False,
) -> list[Cohort]:
    """Write a cohort per entry of `markets` with its run and frozen markets (all resolved),
    and for each model an agent per cohort it has bets in, whose decision placed them."""
    cohorts: list[Cohort] = []
    for number, shown in enumerate(markets):
        cohort: Cohort = CohortFactory.create()
        cohorts.append(cohort)
        start = datetime.combine(cohort.week_start, time(), UTC)
        run = DecisionRun.objects.create(
            week_start=cohort.week_start,
            started_at=start + timedelta(minutes=5),
            finished_at=start + timedelta(minutes=6),
            source="demo",
            universe_size=len(shown),
        )
        rows = []
        for index, (yes_price, yes_won) in enumerate(shown):
            market = Market.objects.create(
                polymarket_id=f"an-{cohort.number}-{index}",
                question=f"Question {index} of cohort {cohort.number}?",
                outcomes=["Yes", "No"],
                outcome_prices=["1", "0"] if yes_won else ["0", "1"],
                price=Decimal(str(yes_price)),
                resolution=Market.Resolution.RESOLVED,
                winning_outcome="Yes" if yes_won else "No",
                resolved_at=start + timedelta(days=3),
            )
            SnapshotMarket.objects.create(
                run=run,
                market=market,
                rank=index + 1,
                polymarket_id=market.polymarket_id,
                question=market.question,
                outcomes=market.outcomes,
                outcome_prices=[str(yes_price), str(round(1 - yes_price, 6))],
                volume=Decimal("1000"),
            )
            rows.append((market, yes_price, yes_won))
        for model, plan in plans.items():
            if number >= len(plan):
                continue
            agent = Agent.objects.create(cohort=cohort, model=model, cash=Decimal("10000"))
            decision = Decision.objects.create(
                agent=agent,
                cohort=cohort,
                week_start=cohort.week_start,
                run=run,
                status=Decision.Status.DONE,
                action=Decision.Action.BET,
                responder=Decision.Responder.OFFLINE if offline else Decision.Responder.OPENROUTER,
            )
            for order, bet in enumerate(plan[number]):
                market, yes_price, yes_won = rows[bet.market]
                price = yes_price if bet.side == "YES" else round(1 - yes_price, 6)
                won = yes_won if bet.side == "YES" else not yes_won
                amount = Decimal(str(bet.confidence * 2500)).quantize(Decimal("0.01"))
                Trade.objects.create(
                    decision=decision,
                    agent=agent,
                    order_index=order,
                    kind=Trade.Kind.BUY,
                    status=Trade.Status.EXECUTED,
                    market=market,
                    side=bet.side,
                    requested_amount=amount,
                    amount=amount,
                    price=Decimal(str(price)),
                    shares=(amount / Decimal(str(price))).quantize(Decimal("0.000001")),
                    cash_before=Decimal("10000"),
                    cash_after=Decimal("10000") - amount,
                    implied_confidence=bet.confidence,
                    brier_score=(bet.confidence - float(won)) ** 2,
                    side_won=won,
                    scored_at=start + timedelta(days=3),
                    created_at=start + timedelta(minutes=5),
                )
    return cohorts


@pytest.fixture
def duo() -> tuple[BenchmarkModel, BenchmarkModel]:
    wobbly = new_model("analytics-wobbly", "Wobbly Forecaster")
    steady = new_model("analytics-steady", "Steady Forecaster")
    build({wobbly: WOBBLY, steady: STEADY})
    return wobbly, steady


@pytest.fixture
def twelve_weeks() -> tuple[BenchmarkModel, BenchmarkModel]:
    """The two forecasters over twelve weeks (each cohort of MARKETS four times): enough weeks
    for the markers to claim what their intervals show."""
    wobbly = new_model("analytics-wobbly", "Wobbly Forecaster")
    steady = new_model("analytics-steady", "Steady Forecaster")
    build({wobbly: WOBBLY * 6, steady: STEADY * 4}, markets=MARKETS * 4)
    return wobbly, steady


def page(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def tables(content: str) -> list[str]:
    return re.findall(r"<table.*?</table>", content, flags=re.S)


def body_rows(table: str) -> list[str]:
    return re.findall(r"<tr[^>]*>.*?</tr>", table.split("<tbody>", 1)[1], flags=re.S)


def cells(row: str) -> list[str]:
    """The row's cells as text: tags dropped, entities decoded, whitespace collapsed."""
    found = re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)
    return [re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", c))).strip() for c in found]


def row_of(table: str, name: str) -> str:
    return next(r for r in body_rows(table) if f">{name}</a>" in r)


def model_ids(table: str) -> list[str]:
    """The internal ids of the models the table's rows link to, in order."""
    return [m.group(1) for r in body_rows(table) if (m := re.search(r'href="/models/([^/]+)/"', r))]


def figures_of(model: BenchmarkModel, *, offline: bool = False) -> ModelAnalytics:
    found = analytics().row(model.pk, offline)
    assert found is not None, model
    return found


def analytics_table(content: str) -> str:
    return next(t for t in tables(content) if "Alpha (95% interval)" in t)


# ------------------------------------------------------------------------------ the figures


def test_alpha_is_the_mean_over_resolved_bets_of_the_market_brier_minus_the_bet_brier(
    duo: tuple[BenchmarkModel, BenchmarkModel], client: Client
) -> None:
    wobbly, steady = duo
    # By hand, from the stored trades: δ = (b − x)² − (f − x)², b the price the decision saw.
    deltas = [
        (float(t.price) - t.side_won) ** 2 - (t.implied_confidence - t.side_won) ** 2
        for t in Trade.objects.filter(agent__model=wobbly)
        if t.price is not None and t.side_won is not None and t.implied_confidence is not None
    ]
    assert len(deltas) == 4
    assert sum(deltas) / len(deltas) == pytest.approx(WOBBLY_ALPHA) == pytest.approx(-0.065)

    assert figures_of(wobbly).alpha == pytest.approx(WOBBLY_ALPHA)
    content = page(client, "/?view=analytics")
    shown = cells(row_of(analytics_table(content), "Wobbly Forecaster"))
    # #, model, resolved bets, Alpha [interval], coverage Alpha, BSS ×2, difficulty, Brier, p, Beat%
    assert shown[2] == "4"
    assert shown[3].startswith("−0.0650 [")
    steady_row = cells(row_of(analytics_table(content), "Steady Forecaster"))
    assert steady_row[2] == "6"
    assert steady_row[3].startswith("0.2600 [")


def test_each_figure_of_a_row_is_the_one_the_analytics_compute(
    duo: tuple[BenchmarkModel, BenchmarkModel], client: Client
) -> None:
    _, steady = duo
    figures = figures_of(steady)
    alpha, brier = figures.alpha_interval, figures.brier_interval
    assert alpha is not None
    assert brier is not None
    assert figures.alpha_test is not None
    assert figures.beat_share == 1.0

    def four(x: float | None) -> str:
        assert x is not None
        return f"{x:.4f}".replace("-", "−")

    def skill(x: float | None) -> str:
        assert x is not None
        return f"{x:+.3f}".replace("-", "−")

    def edge(x: float | None) -> str:
        assert x is not None
        return f"{x:+.4f}".replace("-", "−") if round(x, 4) else "0.0000"

    content = page(client, "/?view=analytics")
    shown = cells(row_of(analytics_table(content), "Steady Forecaster"))
    # Three weeks: the interval is shown, and the claim it cannot yet support is not made.
    assert shown[3] == (
        f"{four(STEADY_ALPHA)} [{four(alpha.low)}, {four(alpha.high)}] too early to tell"
    )
    coverage = figures.coverage_interval
    assert coverage is not None
    assert shown[4] == (
        f"{edge(figures.coverage_alpha)} [{edge(coverage.low)}, {edge(coverage.high)}]"
    )
    random_interval, market_interval = (
        figures.skill_vs_random_interval,
        figures.skill_vs_market_interval,
    )
    assert random_interval is not None
    assert market_interval is not None
    assert shown[5] == (
        f"{skill(figures.skill_vs_random)} "
        f"[{skill(random_interval.low)}, {skill(random_interval.high)}]"
    )
    assert shown[6] == (
        f"{skill(figures.skill_vs_market)} "
        f"[{skill(market_interval.low)}, {skill(market_interval.high)}]"
    )
    # Two forecasters fitted together: the market effects give only their difference.
    assert figures.difficulty_adjusted_brier is None
    assert shown[7] == "—"
    assert shown[8] == (
        f"{four(figures.brier)} [{four(brier.low)}, {four(brier.high)}] too early to tell"
    )
    assert shown[9] == f"{figures.alpha_test.p_value:.3f}"
    assert shown[10] == "100%"  # Beat%: Alpha above 0 in each of its three cohorts


def test_under_ten_weeks_no_row_claims_a_difference_whatever_its_interval(
    duo: tuple[BenchmarkModel, BenchmarkModel], client: Client
) -> None:
    wobbly, steady = duo
    steady_interval = figures_of(steady).alpha_interval
    assert steady_interval is not None
    assert steady_interval.clusters == 3
    assert steady_interval.low is not None
    assert steady_interval.low > 0  # the interval alone would call it better than the market

    table = analytics_table(page(client, "/?view=analytics"))
    for name in ("Wobbly Forecaster", "Steady Forecaster"):
        row = row_of(table, name)
        assert row.count(">too early to tell</span>") == 2  # beside Alpha and beside Brier
        assert not NOT_SIGNIFICANT.search(row)
        assert not NOT_BELOW_RANDOM.search(row)
    assert figures_of(wobbly).alpha_claim == figures_of(steady).alpha_claim == "too early to tell"


def test_not_significant_is_marked_where_the_alpha_interval_contains_zero(
    twelve_weeks: tuple[BenchmarkModel, BenchmarkModel], client: Client
) -> None:
    wobbly, steady = twelve_weeks
    wobbly_interval = figures_of(wobbly).alpha_interval
    steady_interval = figures_of(steady).alpha_interval
    assert wobbly_interval
    assert wobbly_interval.clusters == 12
    assert wobbly_interval.low is not None
    assert wobbly_interval.high
    assert wobbly_interval.low < 0 < wobbly_interval.high
    assert steady_interval
    assert steady_interval.low is not None
    assert steady_interval.low > 0

    table = analytics_table(page(client, "/?view=analytics"))
    wobbly_alpha = re.findall(
        r'<td class="num alpha">.*?</td>', row_of(table, "Wobbly Forecaster"), re.S
    )
    steady_alpha = re.findall(
        r'<td class="num alpha">.*?</td>', row_of(table, "Steady Forecaster"), re.S
    )
    assert NOT_SIGNIFICANT.search(wobbly_alpha[0])
    assert not NOT_SIGNIFICANT.search(steady_alpha[0])
    assert "too early to tell" not in steady_alpha[0]
    assert figures_of(steady).alpha_claim == "significant"


def test_a_brier_interval_containing_a_fifty_percent_guess_is_marked(
    twelve_weeks: tuple[BenchmarkModel, BenchmarkModel], client: Client
) -> None:
    wobbly, steady = twelve_weeks
    wobbly_brier = figures_of(wobbly).brier_interval
    steady_brier = figures_of(steady).brier_interval
    assert wobbly_brier
    assert wobbly_brier.low is not None
    assert wobbly_brier.high is not None
    assert wobbly_brier.low <= 0.25 <= wobbly_brier.high
    assert steady_brier
    assert steady_brier.high is not None
    assert steady_brier.high < 0.25

    table = analytics_table(page(client, "/?view=analytics"))
    assert NOT_BELOW_RANDOM.search(row_of(table, "Wobbly Forecaster"))
    assert not NOT_BELOW_RANDOM.search(row_of(table, "Steady Forecaster"))


def test_one_cohort_gives_no_interval_and_the_page_says_why(client: Client) -> None:
    single = new_model("analytics-single", "Single Cohort Forecaster")
    build({single: WOBBLY[:1]}, markets=MARKETS[:1])
    content = page(client, "/?view=analytics")
    shown = cells(row_of(analytics_table(content), "Single Cohort Forecaster"))
    assert shown[2] == "2"
    assert shown[3] == "0.1050 no interval"  # (0.32 − 0.11) ÷ 2, with no interval
    assert shown[9] == "—"  # no p without two cohorts
    assert "an interval needs at least two of each" in content


def test_a_model_without_resolved_bets_shows_dashes(
    duo: tuple[BenchmarkModel, BenchmarkModel], client: Client
) -> None:
    idle = BenchmarkModel.objects.filter(kind="llm", active=True).exclude(
        internal_id__startswith="analytics-"
    )[0]
    shown = cells(row_of(analytics_table(page(client, "/?view=analytics")), idle.display_name))
    assert shown[2:] == ["0", "—", "—", "—", "—", "—", "—", "—", "—"]


# ------------------------------------------------------------------------------ the order


@pytest.mark.parametrize("sort", ["brier", "return", "win_rate", "resolved_bets"])
def test_the_analytics_rows_keep_the_v1_order_of_the_chosen_sort(
    duo: tuple[BenchmarkModel, BenchmarkModel], client: Client, sort: str
) -> None:
    llms, baselines = standings.leaderboard(sort=sort)
    content = page(client, f"/?view=analytics&sort={sort}")
    ranked, baseline_table = [t for t in tables(content) if "Alpha (95% interval)" in t]
    shown = model_ids(ranked)
    assert shown == [row.model.internal_id for row in llms]
    ranks = [cells(r)[0] for r in body_rows(ranked)]
    assert ranks == [str(n) for n in range(1, len(llms) + 1)]
    for row in baselines:  # apart, and unranked
        assert f">{html.escape(row.model.display_name)}</a>" in baseline_table
    assert "<th>#</th>" not in baseline_table


def test_the_view_switch_keeps_the_sort_and_scope_and_they_keep_the_view(client: Client) -> None:
    content = page(client, "/?view=analytics&sort=return&cohorts=completed")
    assert 'href="?cohorts=completed&amp;view=analytics"' in content  # rank by Brier
    assert 'href="?sort=return&amp;view=analytics"' in content  # every cohort
    assert 'href="?sort=return&amp;cohorts=completed"' in content  # back to the v1 columns
    assert "<strong>analytics (Alpha against the market, intervals)</strong>" in content
    v1 = page(client, "/?sort=return")
    assert 'href="?sort=return&amp;view=analytics"' in v1
    assert "<strong>v1 figures</strong>" in v1


def test_view_v1_and_an_unknown_view_are_the_v1_leaderboard_unchanged(
    duo: tuple[BenchmarkModel, BenchmarkModel], client: Client
) -> None:
    default = page(client, "/")
    assert page(client, "/?view=v1") == default
    assert page(client, "/?view=nonsense") == default
    ranked_table, provisional_table = (t for t in tables(default) if "main-board" in t)
    assert '<th>#</th><th>Model</th><th class="num">Brier <br><span class="unit">' in ranked_table
    assert "Avg <br>return" in ranked_table
    assert "<th>#</th>" not in provisional_table  # provisional rows are never ranked
    assert "Alpha (95% interval)" not in default
    assert "Pseudo-model" not in default
    llms, _ = standings.leaderboard()
    # The v1 order, the ranked rows first, then the provisional ones (here: every row, each
    # with a handful of bets).
    shown = model_ids(ranked_table) + model_ids(provisional_table)
    assert shown == [row.model.internal_id for row in llms]
    assert model_ids(ranked_table) == []


# ------------------------------------------------------------------------- the references


def test_references_are_labelled_pseudo_models_and_never_ranked(
    duo: tuple[BenchmarkModel, BenchmarkModel], client: Client
) -> None:
    content = page(client, "/?view=analytics")
    references = next(t for t in tables(content) if "Pseudo-model" in t)
    shown = [cells(r) for r in body_rows(references)]
    names = [
        "Market consensus",
        "Random (uniform)",
        "LLM crowd, median",
        "LLM crowd, geometric mean of odds",
    ]
    assert len(shown) == len(names)
    for name, row in zip(names, shown, strict=True):
        assert row[0].startswith(f"{name} pseudo-model "), row[0]  # then how it forecasts
    assert "<th>#</th>" not in references  # no rank
    for label in ("Market consensus", "Random (uniform)", "LLM crowd"):
        assert label not in analytics_table(content)  # never among the ranked rows
    market, random = shown[0], shown[1]
    assert market[3] == "0.0000"  # Alpha 0 by construction
    assert random[2] == "0.3333 expected"  # uniform forecasts: expected Brier 1/3
    assert "not ranked" in content


def test_offline_stand_ins_are_labelled_and_the_power_note_falls_back_to_them(
    client: Client,
) -> None:
    wobbly = new_model("analytics-wobbly", "Wobbly Forecaster")
    steady = new_model("analytics-steady", "Steady Forecaster")
    build({wobbly: WOBBLY, steady: STEADY}, offline=True)
    content = page(client, "/?view=analytics")
    references = next(t for t in tables(content) if "Pseudo-model" in t)
    for row in body_rows(references):
        assert "on the offline stand-ins&#x27; questions" in row
        assert re.search(r'<span class="badge offline"[^>]*>offline</span>', row)
    note = re.search(r'<p class="note separation">(.*?)</p>', content, re.S)
    assert note
    text = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", note.group(1))))
    assert "offline stand-ins" in text
    assert "Steady Forecaster (offline stand-in) leads Wobbly Forecaster (offline stand-in)" in text


# --------------------------------------------------------------------------- the power note


def test_the_power_note_says_who_leads_by_how_much_and_how_many_bets_would_separate_them(
    duo: tuple[BenchmarkModel, BenchmarkModel], client: Client
) -> None:
    separation = analytics().separation("alpha")
    assert separation is not None
    assert separation.comparison is not None
    assert separation.bets_more is not None
    assert separation.bets_more > 0
    content = page(client, "/?view=analytics")
    note = re.search(r'<p class="note separation">(.*?)</p>', content, re.S)
    assert note
    text = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", note.group(1))))
    delta = f"{STEADY_ALPHA - WOBBLY_ALPHA:.4f}"  # 0.3250
    p = f"{separation.comparison.test.p_value:.3f}"
    holm = separation.comparison.holm_p
    assert holm is not None
    assert (
        f"Steady Forecaster leads Wobbly Forecaster by ΔAlpha = {delta} (paired p = {p}, "
        f"Holm-adjusted over every pair {holm:.3f}, over the 2 weeks both bet in: too early "
        "to tell)"
    ) in text
    assert separation.bets_needed is not None
    needed = math.ceil(separation.bets_needed)
    # Steady has enough already (no shortfall written); Wobbly lacks some.
    assert separation.first.bets >= needed > separation.second.bets
    assert (
        f"separating them at 80% power (one-sided 5%) takes about {needed:,} resolved bets "
        f"each: Steady Forecaster has {separation.first.bets}, Wobbly Forecaster "
        f"{separation.second.bets} ({needed - separation.second.bets:,} more needed)"
    ) in text
    assert "offline stand-ins" not in text


def test_the_power_note_says_when_no_two_models_can_be_compared(client: Client) -> None:
    single = new_model("analytics-single", "Single Cohort Forecaster")
    build({single: WOBBLY})
    content = page(client, "/?view=analytics")
    assert "Fewer than two models have resolved bets, so no two can be compared yet." in content


# ------------------------------------------------------------------------ headings and docs


def test_each_heading_carries_its_definition_and_links_to_its_formula(client: Client) -> None:
    content = page(client, "/?view=analytics")
    methodology = page(client, "/methodology/")
    found = re.findall(
        r'<th class="num" title="([^"]+)"><a href="/methodology/#([^"]+)">([^<]+)</a>'
        r'<span class="plain">([^<]+)</span></th>',
        analytics_table(content),
    )
    # Each heading says what it means in plain words under its name, readable without a hover.
    assert [html.unescape(plain) for *_, plain in found] == [c.plain for c in analytics_columns()]
    assert all(plain for *_, plain in found)
    headings = [(title, anchor, label) for title, anchor, label, _ in found]
    assert [label for _, _, label in headings] == [c.label for c in analytics_columns()]
    for title, anchor, label in headings:
        assert f'id="{anchor}"' in methodology, label
        assert len(title) > 40, label
    # The definitions are the selector's, each with its source.
    titles = " ".join(html.unescape(title) for title, _, _ in headings)
    for name, formula, source in DEFINITIONS:
        if name in ("Alpha", "Coverage-adjusted Alpha", "Difficulty-adjusted Brier", "Beat%"):
            assert f"{name}: {formula} ({source})" in titles, name
    assert 'href="/methodology/#analytics-beyond-v1"' in content


# The formulas of the analytics, as the methodology states them.
FORMULAS = [
    "Alpha δ = (b − x)² − (f − x)²",
    "Alpha = (1 ÷ n) × Σ δ",
    "Market Brier = (1 ÷ n) × Σ (b − x)²",
    "Coverage-adjusted Alpha = Σ δ ÷ the number of those markets",
    "Brier = UNC + REL − RES",
    "UNC = ō(1 − ō)",
    "REL = (1 ÷ N) × Σ nₖ(p̄ₖ − ōₖ)²",
    "RES = (1 ÷ N) × Σ nₖ(ōₖ − ō)²",
    "Alpha = (RES − RES of the market) + (REL of the market − REL)",
    "BSS = 1 − Brier ÷ reference",
    "SE² = max(V_week + V_market − V_week×market, V_week, V_market)",
    "95% interval = m ± t₀.₉₇₅,G−1 × SE",
    "t = Alpha ÷ SE",
    "Beat% = the share of cohorts whose own Alpha",
    "t = (m₁ − m₂) ÷ SE",
    "Var(δ) = 4q(1 − q)(b − p)²",
    "n ≥ ((z₁₋κ + z_π) ÷ α*)² × 4q̄(1 − q̄) × mean (b − p)²",
    "rounds = ⌈n ÷ k⌉",
    "n = ((z₀.₉₅ + z₀.₈₀) ÷ ΔAlpha)² × (Var₁(δ) + Var₂(δ))",
    "Brier = a_row + d_question",
    "Difficulty-adjusted Brier = the mean over the row's bets of (Brier − d_question)",
    "expected Brier is 1 ÷ 3",
    "the v1 leaderboard's definitions and its default order do not change",
]
CITATIONS = [
    "003 §3.4, Definition 2",
    "003 §3.5, Theorem 1",
    "003 §3.5, Corollary 1",
    "003 §3.6.1, Proposition 2",
    "003 §3.6.2",
    "003 §5.4",
    "003 §6.2",
    "001 §1.5",
    "000 §5.2",
    "004 §3.3",
    "004 §5.1",
    "Appendix E.2",
]
# 003 Table 1: α*, predictions n, rounds of k = 7.
TABLE_1 = [
    ("0.005", "5,567", "796"),
    ("0.010", "1,392", "199"),
    ("0.020", "348", "50"),
    ("0.030", "155", "23"),
    ("0.050", "56", "8"),
    ("0.100", "14", "2"),
]


def test_the_methodology_gives_each_analytics_formula_with_its_source(client: Client) -> None:
    content = page(client, "/methodology/")
    section = content.split('id="analytics-beyond-v1"', 1)[1].split('id="versions"', 1)[0]
    text = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", section)))
    for formula in FORMULAS:
        assert formula in text, formula
    for citation in CITATIONS:
        assert citation in text, citation
    for alpha, n, rounds in TABLE_1:
        assert re.search(rf"<td>{alpha}</td>\s*<td>{n}</td>\s*<td>{rounds}</td>", section), alpha
    # The v1 formulas are still there, before it.
    assert "Brier = (1 ÷ n) × Σ (implied confidence − side won)²" in html.unescape(content)


# ---------------------------------------------------------------------------------- queries


def analytics_queries(client: Client) -> int:
    cache.clear()  # the analytics are kept until the data moves: count a computation
    with CaptureQueriesContext(connection) as queries:
        page(client, "/?view=analytics")
    return len(queries.captured_queries)


def test_the_analytics_view_issues_the_same_queries_whatever_the_number_of_rows(
    client: Client,
) -> None:
    first = new_model("analytics-wobbly", "Wobbly Forecaster")
    build({first: WOBBLY})
    page(client, "/?view=analytics")  # warm per-process caches (content types, sessions)
    small = analytics_queries(client)

    more = [new_model(f"analytics-more-{n}", f"More Forecaster {n}") for n in range(4)]
    build({model: STEADY for model in [first, *more]})
    large = analytics_queries(client)

    assert len(standings.leaderboard()[0]) > 4 + 1
    assert large == small
    assert large <= 25


def test_a_hostile_model_name_is_escaped_in_the_rows_and_the_power_note(client: Client) -> None:
    hostile = '<script>alert("x")</script>'
    wobbly = new_model("analytics-wobbly", hostile)
    steady = new_model("analytics-steady", "Steady Forecaster")
    build({wobbly: WOBBLY, steady: STEADY})
    content = page(client, "/?view=analytics")
    assert hostile not in content
    note = re.search(r'<p class="note separation">(.*?)</p>', content, re.S)
    assert note
    assert html.escape(hostile) in note.group(1)
    assert f">{html.escape(hostile)}</a>" in analytics_table(content)


# ------------------------------------------------------------------ ranks, tiers, provisional

# Eight weeks of four markets each: (frozen YES price, did YES win), varied but fixed.
EIGHT_WEEKS = [
    [(0.3 + 0.1 * ((week + i) % 5), (week * 7 + i * 3) % 3 != 0) for i in range(4)]
    for week in range(8)
]


def _yes_bets(sure: float, unsure: float) -> list[list[Bet]]:
    """A YES bet on every market of every week: confidence `sure` where YES won, else `unsure`."""
    return [
        [Bet(i, "YES", sure if won else unsure) for i, (_, won) in enumerate(week)]
        for week in EIGHT_WEEKS
    ]


@pytest.fixture
def ranked_board() -> dict[str, BenchmarkModel]:
    """Three forecasters with 32 resolved bets over 8 weeks each (ranked), two of them close
    and one far behind, and one with a single week of bets (provisional)."""
    models = {
        "sharp": new_model("analytics-sharp", "Sharp Forecaster"),
        "close": new_model("analytics-close", "Close Forecaster"),
        "poor": new_model("analytics-poor", "Poor Forecaster"),
        "new": new_model("analytics-new", "New Forecaster"),
    }
    build(
        {
            models["sharp"]: _yes_bets(0.80, 0.30),
            models["close"]: _yes_bets(0.75, 0.35),
            models["poor"]: _yes_bets(0.30, 0.80),
            models["new"]: _yes_bets(0.80, 0.30)[:1],
        },
        markets=EIGHT_WEEKS,
    )
    return models


def test_a_row_with_too_little_data_is_provisional_and_never_ranked(
    ranked_board: dict[str, BenchmarkModel], client: Client
) -> None:
    new = figures_of(ranked_board["new"])
    assert (new.bets, new.weeks_scored) == (4, 1)
    assert new.provisional
    assert new.rank_range is None
    assert new.tier is None
    content = page(client, "/")
    ranked_table, provisional_table = (t for t in tables(content) if "main-board" in t)
    assert ">New Forecaster</a>" not in ranked_table
    assert ">New Forecaster</a>" in provisional_table
    assert 'id="provisional"' in content
    api = client.get("/api/v1/leaderboard").json()
    by_model = {row["model"]: row for row in api["rows"]}
    assert by_model["analytics-new"]["provisional"] is True
    assert by_model["analytics-new"]["rank"] is None
    assert by_model["analytics-sharp"]["rank"] == 1


def test_ranked_rows_show_their_brier_interval_rank_range_and_tier(
    ranked_board: dict[str, BenchmarkModel], client: Client
) -> None:
    rows = [figures_of(ranked_board[k]) for k in ("sharp", "close", "poor")]
    for row in rows:
        assert not row.provisional
        assert (row.bets, row.weeks_scored) == (32, 8)
        assert row.rank_range is not None
        assert 1 <= row.rank_range.low <= row.rank_range.high <= 3
    # Each model has the best Brier in some share of the resampled worlds; the shares are
    # those of one set of worlds (a tie for first shared), so together they make the whole.
    assert sum(r.rank_range.p_first for r in rows if r.rank_range) == pytest.approx(1.0)
    # The tiers follow their rule from the rank ranges, in Brier order.
    ordered = sorted(rows, key=lambda r: r.brier or 0.0)
    tier, leader = 0, 0
    for position, row in enumerate(ordered, start=1):
        assert row.rank_range is not None
        if row.rank_range.low > leader:
            tier, leader = tier + 1, position
        assert row.tier == tier
    assert ordered[-1].model == ranked_board["poor"]
    assert ordered[-1].rank_range is not None
    assert ordered[-1].rank_range.low == 3  # far behind in every world: a tier of its own

    main = next(t for t in tables(page(client, "/")) if "main-board" in t)
    shown = cells(row_of(main, "Poor Forecaster"))
    poor = ordered[-1]
    assert poor.brier_interval is not None
    assert shown[0] == "3"
    low, high = poor.brier_interval.low, poor.brier_interval.high
    standing = next(r for r in standings.leaderboard()[0] if r.model == ranked_board["poor"])
    # The v1 pooled Brier (of the stored scores), its interval from the analytics.
    assert shown[2] == f"{brier_text(standing.brier)} [{brier_text(low)}, {brier_text(high)}]"
    assert poor.rank_range is not None
    assert shown[3] == f"3 ({poor.rank_range.p_first:.0%})"  # its rank range, P(rank 1)
    assert shown[4] == str(poor.tier)
    assert shown[5] == "32 / 8"
    api = {r["model"]: r for r in client.get("/api/v1/leaderboard").json()["rows"]}
    assert (api["analytics-poor"]["rank_low"], api["analytics-poor"]["tier"]) == (3, poor.tier)


def test_the_sentence_under_the_table_says_how_many_weeks_the_best_two_need(
    ranked_board: dict[str, BenchmarkModel], client: Client
) -> None:
    separation = analytics().separation("brier", ranked_only=True)
    assert separation is not None
    # The two best ranked rows: the new forecaster has the sharp one's skill but one week of
    # bets, so it is provisional and left out.
    assert {separation.first.model, separation.second.model} == {
        ranked_board["sharp"],
        ranked_board["close"],
    }
    assert separation.bets_more is not None
    # At their four bets a week, and never before the two weeks they lack of ten (before
    # ten weeks no difference is called at all).
    weeks = max(math.ceil(separation.bets_more / (32 / 8)), 10 - 8)
    content = page(client, "/")
    said = re.search(r'id="what-the-ranking-shows">(.*?)</p>', content, re.S)
    assert said is not None
    text = re.sub(r"<[^>]+>", "", said.group(1))
    assert text.startswith("Too early to tell: a ranked row has under 10 weeks")
    expects = "If the gap between the two best is real, the power analysis expects them to"
    assert f"{expects} separate in about {weeks} more week" in text
    assert "cannot show that a model forecasts better than one in its own tier" in text


@pytest.mark.parametrize("sort", ["alpha", "p_first", "cost", "latency", "malformed", "cohorts"])
def test_every_column_sorts_the_page_and_the_api_leaving_the_default_alone(
    ranked_board: dict[str, BenchmarkModel], client: Client, sort: str
) -> None:
    default = [r["model"] for r in client.get("/api/v1/leaderboard").json()["rows"]]
    response = client.get(f"/api/v1/leaderboard?sort={sort}")
    assert response.status_code == 200, response.content
    rows = response.json()["rows"]
    assert sorted(r["model"] for r in rows) == sorted(default)
    content = page(client, f"/?sort={sort}")
    assert "Rank by:" in content
    name = {"alpha": "Alpha", "p_first": "P(rank 1)"}.get(sort, sort)
    assert f"<strong>{name}</strong>" in content
    if sort == "alpha":
        ranked = [r for r in rows if not r["baseline"] and r["alpha"] is not None]
        alphas = [r["alpha"] for r in ranked if not r["offline"]]
        assert alphas == sorted(alphas, reverse=True)
        board = "".join(t for t in tables(content) if "main-board" in t)
        shown = [m for m in model_ids(board) if m.startswith("analytics-")]
        expected = [
            r["model"]
            for r in ranked
            if r["model"].startswith("analytics-") and not r["provisional"]
        ] + [r["model"] for r in ranked if r["model"].startswith("analytics-") and r["provisional"]]
        assert shown == expected
    if sort == "p_first":
        ranked = [r for r in rows if not r["baseline"] and not r["offline"]]
        shares = [r["p_rank_first"] for r in ranked if r["p_rank_first"] is not None]
        assert len(shares) == 3
        assert shares == sorted(shares, reverse=True)
        assert ranked[: len(shares)] == [r for r in ranked if r["p_rank_first"] is not None]
    assert page(client, "/").count("main-board") >= 1  # the default order is Brier's still
    assert [r["model"] for r in client.get("/api/v1/leaderboard").json()["rows"]] == default


def test_the_analytics_view_says_its_alpha_is_not_a_proper_score(
    duo: tuple[BenchmarkModel, BenchmarkModel], client: Client
) -> None:
    content = page(client, "/?view=analytics")
    intro = re.search(r'<p class="note analytics-intro">(.*?)</p>', content, re.S)
    assert intro is not None
    text = re.sub(r"<[^>]+>", "", intro.group(1))
    assert "this Alpha is not a proper score" in text
    assert 'href="?view=panel"' in intro.group(1)  # the proper one
    alpha = next(d for d in DEFINITIONS if d[0] == "Alpha")
    assert "Not a proper score" in alpha[1]
    methodology = page(client, "/methodology/")
    assert "This Alpha is not a proper score." in methodology


@pytest.mark.parametrize(
    ("error", "places"),
    [(None, 4), (0.0, 4), (0.00004, 4), (0.0004, 3), (0.004, 2), (0.02, 1), (0.3, 1)],
)
def test_a_bootstrap_bound_is_written_to_the_places_its_monte_carlo_error_supports(
    error: float | None, places: int
) -> None:
    assert shown_places(error) == places


def test_the_tiers_and_the_holm_p_values_recompute_from_the_api_by_their_stated_rules(
    ranked_board: dict[str, BenchmarkModel], client: Client
) -> None:
    """From the published figures alone, with the methodology page's rules written out again:
    tiers from the rank ranges, Holm's step-down from the raw p-values."""
    rows = client.get("/api/v1/leaderboard").json()["rows"]
    ranked = sorted(
        (r for r in rows if r["rank"] is not None and not r["offline"]), key=lambda r: r["brier"]
    )
    assert len(ranked) == 3
    # A tier is its first model and every later one whose rank range reaches that model's
    # place in Brier order; the first whose range does not starts the next tier.
    tiers, tier, first_place = [], 1, 1
    for place, row in enumerate(ranked, start=1):
        if place > 1 and row["rank_low"] > first_place:
            tier, first_place = tier + 1, place
        tiers.append(tier)
    assert [r["tier"] for r in ranked] == tiers

    comparisons = client.get("/api/v1/analytics").json()["comparisons"]
    families: dict[tuple[str, bool], list[dict[str, Any]]] = {}
    for c in comparisons:
        families.setdefault((c["metric"], c["first"]["offline"]), []).append(c)
    assert families
    for family in families.values():
        tested = sorted((c for c in family if c["p_value"] is not None), key=lambda c: c["p_value"])
        running = 0.0
        for index, c in enumerate(tested):
            running = max(running, min(1.0, (len(tested) - index) * c["p_value"]))
            assert c["holm_p_value"] == pytest.approx(running, rel=1e-12), c
