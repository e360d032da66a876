"""The analytics beyond v1, read from the database: every figure recomputed here by
hand from the world's bets, as anyone would from the bets export.

The world: three cohorts, each deciding in a run of its own week whose top of the market (the
universe, ranked) holds four resolved markets, one still open, one cancelled and one unranked
(frozen because an agent held it). gpt-5.1 answered through OpenRouter in all three cohorts,
claude-opus-4.5 in the first two, gpt-5.1's offline stand-in in a fourth cohort, and the
market-following baseline in the first. f = implied confidence, b = the price the decision saw
(side-correct), x = 1 if the side won.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import itertools
import math
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

import numpy as np
import pytest
from django.core.cache import cache
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.models import BenchmarkModel
from arena.models import (
    Agent,
    Cohort,
    Decision,
    DecisionAttempt,
    DecisionRun,
    SnapshotMarket,
    Trade,
)
from arena.seal import public_view
from arena.selectors import standings
from arena.selectors.analytics import read
from arena.selectors.analytics.cache import analytics, analytics_watermark, compute_analytics
from arena.selectors.analytics.figures import Analytics, claim
from arena.selectors.exports import bet_rows
from markets.models import Market
from scoring.difficulty import difficulty_adjusted_brier
from scoring.statistics import (
    Interval,
    holm_adjusted,
    pooled_mean_interval,
    ratio_interval,
    student_t_quantile,
    two_way_variance,
)
from tests.arena.factories import CohortFactory
from tests.profiles import example_count

_ids = itertools.count(1)


def market(*, won: bool | None = None, cancelled: bool = False, outcomes: Any = None) -> Market:
    """A market: binary unless `outcomes`; resolved to its first outcome when `won`, to its
    second when `won` is False, cancelled, or open."""
    outcomes = outcomes or ["Yes", "No"]
    resolved = won is not None
    created: Market = Market.objects.create(
        polymarket_id=f"77{next(_ids)}",
        question="Will it happen?",
        category="Politics" if next(_ids) % 2 else "Crypto",
        outcomes=outcomes,
        outcome_prices=["0.5"] * len(outcomes),
        closed=resolved or cancelled,
        resolution=(
            Market.Resolution.CANCELLED
            if cancelled
            else Market.Resolution.RESOLVED
            if resolved
            else Market.Resolution.OPEN
        ),
        winning_outcome=(outcomes[0] if won else outcomes[1]) if resolved else "",
        resolved_at=timezone.now() if resolved or cancelled else None,
    )
    return created


def run_of(cohort: Cohort, markets: list[Market], unranked: list[Market] = ()) -> DecisionRun:  # type: ignore[assignment]
    run: DecisionRun = DecisionRun.objects.create(
        week_start=cohort.week_start, started_at=cohort.started_at, source="test"
    )
    for rank, m in enumerate([*markets, *unranked], start=1):
        SnapshotMarket.objects.create(
            run=run, market=m, rank=rank if rank <= len(markets) else None,
            polymarket_id=m.polymarket_id, question=m.question, category=m.category,
            outcomes=m.outcomes, outcome_prices=m.outcome_prices, volume=Decimal(1000),
        )  # fmt: skip
    return run


def decision_of(agent: Agent, run: DecisionRun, responder: str = "openrouter") -> Decision:
    created: Decision = Decision.objects.create(
        agent=agent, cohort=agent.cohort, week_start=agent.cohort.week_start, run=run,
        status=Decision.Status.DONE, action=Decision.Action.BET, responder=responder,
    )  # fmt: skip
    return created


def bet(of: Decision, on: Market, *, side: str = "YES", price: float, confidence: float) -> Trade:
    """An executed BUY at `price` (side-correct) with implied `confidence`, scored as the
    settlement would: side_won from the market's resolution, Brier (c − x)²."""
    index = of.trades.count()
    won: bool | None = None
    brier: float | None = None
    if on.resolution == Market.Resolution.RESOLVED:
        winner = on.winning_outcome
        won = winner.upper() == side.upper() if on.is_binary else winner == side
        brier = (confidence - (1.0 if won else 0.0)) ** 2
    created: Trade = Trade.objects.create(
        decision=of, agent=of.agent, order_index=index, kind=Trade.Kind.BUY,
        status=Trade.Status.EXECUTED, market=on, side=side, price=Decimal(str(price)),
        shares=Decimal("100"), amount=Decimal("100.00"), cash_before=Decimal("10000.00"),
        implied_confidence=confidence, brier_score=brier, side_won=won,
        scored_at=timezone.now() if brier is not None else None,
        created_at=of.cohort.started_at + timedelta(minutes=5 + index),
    )  # fmt: skip
    return created


def model(internal_id: str) -> BenchmarkModel:
    found: BenchmarkModel = BenchmarkModel.objects.get(internal_id=internal_id)
    return found


def agent_of(of: BenchmarkModel, cohort: Cohort) -> Agent:
    created: Agent = Agent.objects.create(cohort=cohort, model=of, cash=Decimal("10000"))
    return created


@dataclass
class World:
    cohorts: list[Cohort]
    runs: list[DecisionRun]
    universes: list[list[Market]]  # each run's ranked markets


def delta(price: float, confidence: float, won: bool) -> float:
    x = 1.0 if won else 0.0
    return (price - x) ** 2 - (confidence - x) ** 2


@pytest.fixture
def world(db: None) -> World:
    cohorts = CohortFactory.create_batch(4)
    for done in cohorts[:2]:
        done.status, done.completed_at = Cohort.Status.COMPLETED, timezone.now()
        done.save()
    runs, universes = [], []
    for cohort in cohorts:
        universe = [market(won=True), market(won=False), market(won=True), market(won=False),
                    market(), market(cancelled=True)]  # fmt: skip
        universes.append(universe)
        runs.append(run_of(cohort, universe, unranked=[market(won=True)]))
    gpt, claude = model("gpt-5.1"), model("claude-opus-4.5")
    # gpt-5.1: cohort 1 bets on two resolved markets, the open one and the cancelled one.
    d = decision_of(agent_of(gpt, cohorts[0]), runs[0])
    bet(d, universes[0][0], price=0.6, confidence=0.8)  # YES won: δ = 0.16 − 0.04 = +0.12
    bet(d, universes[0][1], side="NO", price=0.7, confidence=0.5)  # NO won
    bet(d, universes[0][4], price=0.5, confidence=0.5)  # open: not scored
    bet(d, universes[0][5], price=0.5, confidence=0.5)  # cancelled: not scored
    d = decision_of(agent_of(gpt, cohorts[1]), runs[1])
    bet(d, universes[1][0], price=0.3, confidence=0.9)  # YES won
    bet(d, universes[1][1], price=0.4, confidence=0.6)  # YES lost
    d = decision_of(agent_of(gpt, cohorts[2]), runs[2])
    bet(d, universes[2][2], price=0.5, confidence=0.7)
    bet(d, runs[2].markets.get(rank__isnull=True).market, price=0.5, confidence=0.7)  # unranked
    # claude-opus-4.5 in cohorts 1 and 2; in cohort 1 it bets NO where gpt-5.1 bet YES.
    d = decision_of(agent_of(claude, cohorts[0]), runs[0])
    bet(d, universes[0][0], side="NO", price=0.4, confidence=0.6)  # NO lost
    bet(d, universes[0][3], price=0.2, confidence=0.3)  # YES lost
    d = decision_of(agent_of(claude, cohorts[1]), runs[1])
    bet(d, universes[1][2], price=0.5, confidence=0.9)
    # gpt-5.1's offline stand-in, in cohort 4: never pooled with the real row.
    d = decision_of(agent_of(gpt, cohorts[3]), runs[3], responder="offline")
    bet(d, universes[3][0], price=0.5, confidence=1.0)
    # The market follower echoes the price: Alpha exactly 0.
    d = decision_of(agent_of(model("baseline-market"), cohorts[0]), runs[0], "baseline")
    bet(d, universes[0][2], price=0.55, confidence=0.55)
    bet(d, universes[0][3], side="NO", price=0.65, confidence=0.65)
    return World(cohorts, runs, universes)


def row(result: Analytics, internal_id: str, offline: bool = False) -> Any:
    found = result.row(model(internal_id).pk, offline)
    assert found is not None
    return found


# --------------------------------------------------------------------------- Alpha and Brier


def test_alpha_is_the_mean_delta_over_the_rows_resolved_bets(world: World) -> None:
    result = compute_analytics()
    gpt = row(result, "gpt-5.1")
    expected = [
        delta(0.6, 0.8, True), delta(0.7, 0.5, True), delta(0.3, 0.9, True),
        delta(0.4, 0.6, False), delta(0.5, 0.7, True), delta(0.5, 0.7, True),
    ]  # fmt: skip
    assert gpt.bets == 6  # the open and the cancelled bets are not scored
    assert gpt.alpha == pytest.approx(sum(expected) / 6, abs=1e-12)
    assert expected[0] == pytest.approx(0.12)  # 003 Figure 2(a)
    market_briers = [0.16, 0.09, 0.49, 0.16, 0.25, 0.25]
    assert gpt.market_brier == pytest.approx(sum(market_briers) / 6, abs=1e-12)


def test_the_brier_is_the_v1_leaderboards_pooled_brier(world: World) -> None:
    result = compute_analytics()
    for v1 in standings.model_rows():
        figures = result.row(v1.model.pk, v1.offline)
        assert figures is not None
        if v1.brier is None:
            assert figures.brier is None
        else:
            assert figures.brier == pytest.approx(v1.brier, abs=1e-12)
            assert figures.bets == v1.resolved_bets


def test_alpha_is_recomputed_from_the_bets_export(world: World) -> None:
    deltas: dict[str, list[float]] = {}
    for r in bet_rows(offline="exclude"):
        if r["status"] in ("won", "lost"):
            x = r["status"] == "won"
            deltas.setdefault(str(r["model"]), []).append(
                delta(float(str(r["market_price"])), float(str(r["implied_confidence"])), x)
            )
    result = compute_analytics()
    for internal_id, values in deltas.items():
        assert row(result, internal_id).alpha == pytest.approx(sum(values) / len(values))


def test_the_market_follower_has_alpha_zero(world: World) -> None:
    follower = row(compute_analytics(), "baseline-market")
    assert follower.alpha == 0.0
    assert follower.skill_vs_market == pytest.approx(0.0)


def test_offline_stand_ins_are_a_row_of_their_own(world: World) -> None:
    result = compute_analytics()
    offline = row(result, "gpt-5.1", offline=True)
    assert offline.bets == 1
    assert offline.alpha == pytest.approx(delta(0.5, 1.0, True))
    assert row(result, "gpt-5.1").bets == 6


def test_skill_scores_against_random_and_market(world: World) -> None:
    gpt = row(compute_analytics(), "gpt-5.1")
    assert gpt.skill_vs_random == pytest.approx(1 - gpt.brier / 0.25)
    assert gpt.skill_vs_market == pytest.approx(1 - gpt.brier / gpt.market_brier)
    # Against 0.25 the interval is the Brier's, mapped through 1 − x ÷ 0.25 (bounds swap).
    random_interval = gpt.skill_vs_random_interval
    assert random_interval.low == pytest.approx(1 - gpt.brier_interval.high / 0.25)
    assert random_interval.high == pytest.approx(1 - gpt.brier_interval.low / 0.25)
    # Against the market: 1 − the ratio interval of Brier over market Brier, same bets.
    u = world.universes
    unranked = world.runs[2].markets.get(rank__isnull=True).market
    briers = [0.04, 0.25, 0.01, 0.36, 0.09, 0.09]
    market_briers = [0.16, 0.09, 0.49, 0.16, 0.25, 0.25]
    markets = [u[0][0].pk, u[0][1].pk, u[1][0].pk, u[1][1].pk, u[2][2].pk, unranked.pk]
    ratio = ratio_interval(briers, market_briers, [1, 1, 2, 2, 3, 3], markets)
    assert ratio is not None
    assert ratio.low is not None
    assert ratio.high is not None
    market_interval = gpt.skill_vs_market_interval
    assert market_interval.estimate == pytest.approx(gpt.skill_vs_market)
    assert market_interval.low == pytest.approx(1 - ratio.high)
    assert market_interval.high == pytest.approx(1 - ratio.low)


# ------------------------------------------------------------------------------ intervals


def test_intervals_are_clustered_by_week_around_the_pooled_figure(world: World) -> None:
    gpt = row(compute_analytics(), "gpt-5.1")
    u = world.universes
    unranked = [m.market for m in world.runs[2].markets.filter(rank__isnull=True)]
    values = [delta(0.6, 0.8, True), delta(0.7, 0.5, True), delta(0.3, 0.9, True),
              delta(0.4, 0.6, False), delta(0.5, 0.7, True), delta(0.5, 0.7, True)]  # fmt: skip
    weeks = [1, 1, 2, 2, 3, 3]  # each cohort decided in a week of its own
    markets = [u[0][0].pk, u[0][1].pk, u[1][0].pk, u[1][1].pk, u[2][2].pk, unranked[0].pk]
    expected = pooled_mean_interval(values, weeks, markets)
    assert expected is not None
    assert gpt.alpha_interval is not None
    assert gpt.alpha_interval.estimate == pytest.approx(gpt.alpha)
    assert gpt.alpha_interval.low == pytest.approx(expected.low)
    assert gpt.alpha_interval.high == pytest.approx(expected.high)
    assert gpt.alpha_interval.clusters == 3
    assert gpt.alpha_interval.markets == 6
    # Three cohorts are too few for the bootstrap (it would claim too much): no bounds.
    assert gpt.alpha_bootstrap is not None
    assert gpt.alpha_bootstrap.low is None
    assert gpt.cohorts_scored == 3
    sums = [values[0] + values[1], values[2] + values[3], values[4] + values[5]]
    assert gpt.beat_share == pytest.approx(sum(s > 0 for s in sums) / 3)
    assert gpt.alpha_test is not None
    assert gpt.alpha_test.p_value is not None
    assert 0.0 <= gpt.alpha_test.p_value <= 1.0
    # Three weeks: the interval is shown, but no difference from the market is claimed.
    assert gpt.alpha_claim == "too early to tell"


def test_the_bootstrap_interval_appears_from_five_cohorts(world: World) -> None:
    u = world.universes
    for _ in range(2):
        extra: Cohort = CohortFactory.create()
        d = decision_of(agent_of(model("gpt-5.1"), extra), world.runs[0])
        bet(d, u[0][2], price=0.5, confidence=0.6)
        bet(d, u[0][3], price=0.5, confidence=0.6)
    gpt = row(compute_analytics(), "gpt-5.1")
    assert gpt.cohorts_scored == 5
    assert gpt.alpha_bootstrap is not None
    assert gpt.alpha_bootstrap.low is not None
    assert gpt.alpha_bootstrap.high is not None
    assert gpt.alpha_bootstrap.low <= gpt.alpha <= gpt.alpha_bootstrap.high
    again = row(compute_analytics(), "gpt-5.1")
    assert again.alpha_bootstrap == gpt.alpha_bootstrap  # seeded: the same every time


def test_one_cohort_gives_a_figure_but_no_interval(world: World) -> None:
    offline = row(compute_analytics(), "gpt-5.1", offline=True)
    assert offline.alpha_interval is not None
    assert offline.alpha_interval.low is None
    assert offline.alpha_interval.high is None
    assert offline.alpha_claim is None
    assert offline.alpha_test is None


def test_cumulative_alpha_runs_over_the_cohorts_in_order(world: World) -> None:
    gpt = row(compute_analytics(), "gpt-5.1")
    numbers = [c.cohort for c in gpt.per_cohort]
    assert numbers == sorted(numbers) == [c.number for c in world.cohorts[:3]]
    last = gpt.per_cohort[-1]
    assert last.cumulative_alpha == pytest.approx(gpt.alpha)
    assert last.cumulative_bets == gpt.bets
    first = gpt.per_cohort[0]
    assert first.cumulative_alpha == pytest.approx(first.alpha)


def test_pairwise_comparisons_pair_the_weeks_both_bet_in(world: World) -> None:
    result = compute_analytics()
    comparisons = [c for c in result.comparisons if c.metric == "alpha"]
    gpt_key, claude_key = ("gpt-5.1", False), ("claude-opus-4.5", False)
    pair = next(c for c in comparisons if {c.first, c.second} == {gpt_key, claude_key})
    assert pair.test.pairs == 2  # weeks 1 and 2; gpt-5.1's third week has no partner
    gpt_shared = [delta(0.6, 0.8, True), delta(0.7, 0.5, True),
                  delta(0.3, 0.9, True), delta(0.4, 0.6, False)]  # fmt: skip
    claude = [delta(0.4, 0.6, False), delta(0.2, 0.3, False), delta(0.5, 0.9, True)]
    difference = sum(gpt_shared) / 4 - sum(claude) / 3
    sign = 1 if pair.first == gpt_key else -1
    assert pair.test.mean_difference == pytest.approx(sign * difference)
    # Offline rows are never paired with real rows.
    assert all(c.first[1] == c.second[1] for c in comparisons)
    # Two shared weeks: no difference is called, whatever the p-value.
    assert pair.verdict == "too early to tell"


def test_the_pairs_p_values_are_holm_adjusted_within_each_metric_and_kind(world: World) -> None:
    result = compute_analytics()
    families: dict[tuple[str, bool], list[Any]] = {}
    for c in result.comparisons:
        families.setdefault((c.metric, c.first[1]), []).append(c)
    assert families
    for members in families.values():
        expected = holm_adjusted([c.test.p_value for c in members])
        assert [c.holm_p for c in members] == pytest.approx(expected)
        for c in members:
            assert c.holm_p is None or c.holm_p >= (c.test.p_value or 0.0)


@pytest.mark.parametrize(
    ("estimate", "low", "high", "weeks", "said"),
    [
        (0.02, 0.01, 0.03, 9, "too early to tell"),  # nine weeks: no claim, whatever it shows
        (0.02, 0.01, 0.03, 10, "significant"),
        (0.02, -0.01, 0.05, 10, "not significant"),  # the interval holds the market's 0
        # Shown as 0.0000 though its interval excludes 0 (cent rounding of the prices): a
        # figure shown as the reference is not called different from it.
        (-0.00004, -0.00006, -0.00002, 52, "not significant"),
        (-0.00005, -0.00006, -0.00004, 52, "significant"),  # shown as −0.0001
    ],
)
def test_what_an_interval_lets_a_page_claim(
    estimate: float, low: float, high: float, weeks: int, said: str
) -> None:
    interval = Interval(estimate, low, high, 0.01, clusters=weeks, count=500, markets=300)
    assert claim(interval, 0.0) == said
    assert claim(Interval(estimate, None, None, None, clusters=1, count=3), 0.0) is None


def test_a_claim_needs_ten_markets_as_well_as_ten_weeks() -> None:
    # Twelve weeks of bets on three markets: a t interval on 2 degrees of freedom.
    interval = Interval(0.02, 0.01, 0.03, 0.01, clusters=12, count=400, markets=3)
    assert claim(interval, 0.0) == "too early to tell"


def test_separation_names_the_two_best_by_alpha(world: World) -> None:
    result = compute_analytics()
    separation = result.separation("alpha")
    assert separation is not None
    gpt, claude = row(result, "gpt-5.1"), row(result, "claude-opus-4.5")
    best, second = sorted([gpt, claude], key=lambda r: -r.alpha)
    assert (separation.first, separation.second) == (best, second)
    assert separation.difference == pytest.approx(best.alpha - second.alpha)
    assert separation.bets_needed is not None
    assert separation.bets_more is not None


# ------------------------------------------------------------------------------ coverage


def test_coverage_adjusted_alpha_imputes_the_market_on_every_resolved_market_seen(
    world: World,
) -> None:
    gpt = row(compute_analytics(), "gpt-5.1")
    # Each of its three runs showed four resolved markets (the open, the cancelled and the
    # unranked market are not questions); the bet on the unranked market is not counted.
    assert gpt.coverage_markets == 12
    in_universe = [delta(0.6, 0.8, True), delta(0.7, 0.5, True), delta(0.3, 0.9, True),
                   delta(0.4, 0.6, False), delta(0.5, 0.7, True)]  # fmt: skip
    assert gpt.coverage_alpha == pytest.approx(sum(in_universe) / 12)
    # Its interval: the twelve questions written out, zeros included, each on a market of its
    # own (every run froze its own markets), clustered by cohort and market.
    u = world.universes
    values = in_universe[:2] + [0.0, 0.0] + in_universe[2:4] + [0.0, 0.0]
    values += [0.0, 0.0, in_universe[4], 0.0]
    cohorts = [1] * 4 + [2] * 4 + [3] * 4
    markets = [m.pk for universe in u[:3] for m in universe[:4]]
    expected = pooled_mean_interval(values, cohorts, markets)
    assert expected is not None
    assert gpt.coverage_interval is not None
    assert gpt.coverage_interval.estimate == pytest.approx(expected.estimate)
    assert gpt.coverage_interval.low == pytest.approx(expected.low)
    assert gpt.coverage_interval.high == pytest.approx(expected.high)
    assert gpt.coverage_interval.count == 12


def test_a_scored_bet_on_a_market_not_counted_resolved_is_not_a_question(world: World) -> None:
    # Data out of step (a bet scored while its market still reads open, or re-opened): the
    # bet keeps its Alpha, the coverage figure leaves it out of both its sums, and nothing
    # breaks.
    u = world.universes
    d = Decision.objects.get(agent__model__internal_id="claude-opus-4.5", run=world.runs[1])
    stray = bet(d, u[1][4], price=0.5, confidence=0.9)  # the run's open market
    stray.side_won, stray.brier_score, stray.scored_at = True, 0.01, timezone.now()
    stray.save()
    claude = row(compute_analytics(), "claude-opus-4.5")
    assert claude.bets == 4
    assert claude.coverage_markets == 8  # two runs' four resolved markets
    in_universe = [delta(0.4, 0.6, False), delta(0.2, 0.3, False), delta(0.5, 0.9, True)]
    assert claude.coverage_alpha == pytest.approx(sum(in_universe) / 8)


# --------------------------------------------------------------------------- Murphy, power


def test_murphy_terms_and_the_anatomy_of_alpha(world: World) -> None:
    gpt = row(compute_analytics(), "gpt-5.1")
    murphy = gpt.murphy
    assert murphy.count == 6
    assert murphy.brier == pytest.approx(gpt.brier)
    # In the YES frame: its NO bet of confidence 0.5 on a market whose NO won is a forecast
    # of 0.5 that YES wins, and YES lost. Four of its six markets resolved YES.
    base_rate = 4 / 6
    assert murphy.uncertainty == pytest.approx(base_rate * (1 - base_rate))
    assert murphy.brier == pytest.approx(
        murphy.uncertainty + murphy.reliability - murphy.resolution + murphy.residual
    )
    anatomy = gpt.anatomy
    assert anatomy.alpha == pytest.approx(gpt.alpha)
    assert anatomy.alpha == pytest.approx(
        anatomy.resolution_gain + anatomy.reliability_gap + anatomy.residual
    )
    # By hand, ten bins: forecasts of YES 0.8, 0.5, 0.9, 0.6, 0.7, 0.7 with YES 1, 0, 1, 0,
    # 1, 1 are constant within their bins, so the identity holds with no residual.
    assert murphy.reliability == pytest.approx((0.04 + 0.25 + 0.01 + 0.36 + 2 * 0.09) / 6)
    third, two_thirds = (1 / 3) ** 2, (2 / 3) ** 2  # each bin's (ōₖ − ō)²
    assert murphy.resolution == pytest.approx((4 * third + 2 * two_thirds) / 6)
    assert gpt.multi_anatomy is None  # every market it bet on has two outcomes
    assert murphy.residual == pytest.approx(0.0, abs=1e-12)
    assert gpt.market_murphy.uncertainty == pytest.approx(murphy.uncertainty)
    assert sum(b.count for b in murphy.bins) == 6
    assert len(murphy.bins) == 10


def test_the_murphy_terms_read_two_outcome_bets_as_yes_and_keep_other_markets_apart(
    world: World,
) -> None:
    before = row(compute_analytics(), "gpt-5.1")
    assert before.murphy is not None
    extra: Cohort = CohortFactory.create()
    d = decision_of(agent_of(model("gpt-5.1"), extra), world.runs[0])
    # A NO bet of 0.7 at 0.6 on a market whose YES won is a forecast of 0.3 on YES at 0.4:
    # in the YES frame it is the same question as a YES bet of 0.3 at 0.4 would be.
    bet(d, market(won=True), side="NO", price=0.6, confidence=0.7)
    three = ["Red", "Green", "Blue"]
    bet(d, market(won=True, outcomes=three), side="Red", price=0.5, confidence=0.6)
    bet(d, market(won=False, outcomes=three), side="Red", price=0.2, confidence=0.4)
    after = row(compute_analytics(), "gpt-5.1")
    assert after.murphy is not None
    assert after.murphy.count == before.murphy.count + 1  # the two-outcome bet only
    bins = {round(b.mean_forecast or 0, 6): b for b in after.murphy.bins if b.count}
    assert 0.3 in bins  # read as 0.3 on YES, never as 0.7 on NO
    assert after.multi_anatomy is not None
    assert after.multi_anatomy.agent.count == 2
    # Its own outcome's frame: forecasts 0.6 and 0.4 with Red winning once.
    assert after.multi_anatomy.agent.brier == pytest.approx(((0.6 - 1) ** 2 + 0.4**2) / 2)
    assert after.multi_anatomy.alpha == pytest.approx(
        (((0.5 - 1) ** 2 - (0.6 - 1) ** 2) + (0.2**2 - 0.4**2)) / 2
    )


def test_bins_are_configurable(world: World) -> None:
    gpt = row(compute_analytics(bins=4), "gpt-5.1")
    assert len(gpt.murphy.bins) == 4


def test_power_uses_the_rows_own_base_rate_and_boldness(world: World) -> None:
    gpt = row(compute_analytics(), "gpt-5.1")
    power = gpt.power
    assert power.base_rate == pytest.approx(5 / 6)
    pairs = [(0.6, 0.8), (0.7, 0.5), (0.3, 0.9), (0.4, 0.6), (0.5, 0.7), (0.5, 0.7)]
    msd = sum((b - f) ** 2 for b, f in pairs) / 6
    assert power.mean_squared_deviation == pytest.approx(msd)
    z = 1.6448536269514722 + 0.8416212335729143
    expected = (z / abs(gpt.alpha)) ** 2 * 4 * (5 / 6) * (1 / 6) * msd
    assert power.bets_needed == pytest.approx(expected, rel=1e-9)
    assert power.bets_more == max(0, math.ceil(expected) - 6)


def test_per_category_figures_add_up_to_the_row(world: World) -> None:
    gpt = row(compute_analytics(), "gpt-5.1")
    assert sum(c.bets for c in gpt.categories) == gpt.bets
    pooled = sum(c.alpha * c.bets for c in gpt.categories) / gpt.bets
    assert pooled == pytest.approx(gpt.alpha)
    assert {c.category for c in gpt.categories} <= {"Politics", "Crypto"}


def test_difficulty_adjustment_is_hidden_where_few_questions_are_shared(world: World) -> None:
    # The world's rows share a market or two: the effects would rest on them alone (a fit on
    # 2 shared markets moved a row's figure from +0.035 to −0.021), so none is shown.
    result = compute_analytics()
    real = [r for r in result.rows if r.bets and not r.offline]
    assert len(real) == 3  # gpt-5.1, claude-opus-4.5 and the market follower
    assert all(r.difficulty_adjusted_brier is None for r in real)
    # The offline fit holds one row: no effects to estimate, no figure.
    assert row(result, "gpt-5.1", offline=True).difficulty_adjusted_brier is None
    assert all(r.difficulty_adjusted_brier is None for r in result.rows if not r.bets)


def test_difficulty_adjustment_ranks_the_easy_picker_below_the_better_forecaster(
    db: None,
) -> None:
    # gpt-5.1 bets twenty easy markets alone (Brier 0.01 each) and ten shared ones (0.16
    # each); claude-opus-4.5 bets twenty hard markets alone (0.25 each) and is better on the
    # shared ten (0.04 each). Raw Brier ranks gpt-5.1 first; markets only one of them bet
    # say nothing of who forecasts better, so adjusted for each question's difficulty
    # claude-opus-4.5 is ahead by the shared markets' 0.12. grok-4 bets only the shared
    # markets (0.09 each): a third forecaster, as a fit needs. Ten shared questions each:
    # enough for the figure to be shown.
    cohort = CohortFactory.create()
    shared = [market(won=True) for _ in range(10)]
    easy, hard = [market(won=True) for _ in range(20)], [market(won=True) for _ in range(20)]
    run = run_of(cohort, shared + easy + hard)
    gpt = decision_of(agent_of(model("gpt-5.1"), cohort), run)
    claude = decision_of(agent_of(model("claude-opus-4.5"), cohort), run)
    for m in shared:
        bet(gpt, m, price=0.5, confidence=0.6)
        bet(claude, m, price=0.5, confidence=0.8)
    grok = decision_of(agent_of(model("grok-4"), cohort), run)
    for m in shared:
        bet(grok, m, price=0.5, confidence=0.7)
    for m in easy:
        bet(gpt, m, price=0.5, confidence=0.9)
    for m in hard:
        bet(claude, m, price=0.5, confidence=0.5)
    result = compute_analytics()
    first, second = row(result, "gpt-5.1"), row(result, "claude-opus-4.5")
    assert first.brier == pytest.approx((10 * 0.16 + 20 * 0.01) / 30)
    assert second.brier == pytest.approx((10 * 0.04 + 20 * 0.25) / 30)
    assert first.brier < second.brier  # raw, the easy picker looks better
    assert first.difficulty_adjusted_brier is not None
    assert second.difficulty_adjusted_brier is not None
    assert second.difficulty_adjusted_brier < first.difficulty_adjusted_brier
    assert first.difficulty_adjusted_brier - second.difficulty_adjusted_brier == pytest.approx(
        0.12, abs=1e-9
    )
    # The question effects are centred over all bets: the adjustment moves scores between
    # rows, never the bet-weighted total.
    fitted = [r for r in result.rows if r.difficulty_adjusted_brier is not None]
    assert len(fitted) == 3
    adjusted = sum(r.bets * (r.difficulty_adjusted_brier or 0.0) for r in fitted)
    assert adjusted == pytest.approx(sum(r.bets * (r.brier or 0.0) for r in fitted))


def test_the_difficulty_adjusted_brier_has_an_interval_from_each_bets_influence(
    db: None,
) -> None:
    # Three weeks, six markets a week, every one bet by all three models at varied
    # confidence: every question shared, one linked part, three weeks to cluster over.
    rng = np.random.default_rng(4)
    names = ("gpt-5.1", "claude-opus-4.5", "grok-4")
    for _ in range(3):
        cohort = CohortFactory.create()
        markets = [market(won=bool(rng.random() < 0.5)) for _ in range(6)]
        run = run_of(cohort, markets)
        for name in names:
            decision = decision_of(agent_of(model(name), cohort), run)
            for m in markets:
                bet(decision, m, price=0.5, confidence=round(float(rng.uniform(0.3, 0.95)), 2))

    result = compute_analytics()

    # The long way, from the bets alone: the fit by least squares on the design's dummies,
    # each bet's influence on a row's figure as the figure of that bet's unit score.
    trades = list(
        Trade.objects.order_by("pk").values_list(
            "agent__model__internal_id", "market_id", "decision__run_id", "brier_score",
            "decision__week_start", "market_id",
        )
    )  # fmt: skip
    forecasters = [names.index(t[0]) for t in trades]
    question_keys = sorted({(t[1], t[2]) for t in trades})
    questions = [question_keys.index((t[1], t[2])) for t in trades]
    scores = np.array([t[3] for t in trades])
    design = np.zeros((len(trades), 3 + len(question_keys)))
    for i, (f, q) in enumerate(zip(forecasters, questions, strict=True)):
        design[i, f] = design[i, 3 + q] = 1.0
    fitted = design @ np.linalg.lstsq(design, scores, rcond=None)[0]
    unit = np.eye(len(trades))
    weeks = [t[4].toordinal() for t in trades]
    for index, name in enumerate(names):
        figures = row(result, name)
        assert figures.difficulty_interval is not None
        influence = [
            difficulty_adjusted_brier(unit[i], forecasters, questions)[index]
            for i in range(len(trades))
        ]
        error = math.sqrt(
            two_way_variance(np.array(influence) * (scores - fitted), weeks, [t[5] for t in trades])
        )
        shown = figures.difficulty_interval
        assert shown.estimate == pytest.approx(figures.difficulty_adjusted_brier)
        assert shown.standard_error == pytest.approx(error, rel=1e-6)
        half = student_t_quantile(0.975, 2) * error  # three weeks: 2 df
        assert shown.low == pytest.approx(shown.estimate - half, rel=1e-6)
        assert shown.high == pytest.approx(shown.estimate + half, rel=1e-6)
        assert (shown.count, shown.clusters) == (18, 3)


# ------------------------------------------------------------------------------ references


def test_references_are_scored_on_the_lineups_questions(world: World) -> None:
    result = compute_analytics()
    real = {r.key: r for r in result.references if not r.offline}
    # Real LLM questions (run, market): gpt-5.1's six and claude-opus-4.5's three, of which
    # cohort 1's first market was bet by both (YES and NO): eight questions.
    market_ref = real["market"]
    assert market_ref.questions == 8
    assert market_ref.alpha == 0.0
    # In the YES frame: b and x of each question.
    questions = [(0.6, 1), (0.3, 0), (0.3, 1), (0.4, 0), (0.5, 1), (0.5, 1), (0.2, 0), (0.5, 1)]
    expected = sum((b - x) ** 2 for b, x in questions) / 8
    assert market_ref.brier == pytest.approx(expected)
    random_ref = real["random"]
    assert random_ref.brier == pytest.approx(1 / 3)
    assert random_ref.expected
    assert random_ref.alpha == pytest.approx(expected - 1 / 3)
    # The crowd: only cohort 1's first market had two forecasts: gpt-5.1 YES 0.8 and
    # claude-opus-4.5 NO 0.6, i.e. YES 0.8 and 0.4; the median is 0.6, the YES side won.
    crowd = real["crowd-median"]
    assert crowd.questions == 1
    assert crowd.brier == pytest.approx((0.6 - 1) ** 2)
    assert crowd.alpha == pytest.approx(0.0)  # the crowd's median is the price here
    geomean = real["crowd-geomean"]
    odds = math.sqrt((0.8 / 0.2) * (0.4 / 0.6))
    assert geomean.brier == pytest.approx((odds / (1 + odds) - 1) ** 2)
    offline = {r.key for r in result.references if r.offline}
    assert offline == {"market", "random"}  # one offline forecast: no crowd


def test_the_crowd_counts_each_model_once(world: World) -> None:
    # A gpt-5.1 agent of a concurrent cohort decides in the same run and bets the question
    # gpt-5.1 and claude-opus-4.5 share: gpt-5.1's vote is the mean of its two agents'.
    u = world.universes
    extra: Cohort = CohortFactory.create()
    d = decision_of(agent_of(model("gpt-5.1"), extra), world.runs[0])
    bet(d, u[0][0], price=0.6, confidence=0.6)
    bet(d, u[0][3], price=0.2, confidence=0.5)  # claude-opus-4.5 bet it too: a crowd of two
    bet(d, u[0][2], price=0.55, confidence=0.5)  # only gpt-5.1 among the LLMs: no crowd
    result = compute_analytics()
    crowd = next(r for r in result.references if r.key == "crowd-median" and not r.offline)
    assert crowd.questions == 2
    # YES of u[0][0] (won): gpt-5.1 (0.8 + 0.6) / 2 = 0.7, claude-opus-4.5 0.4 → 0.55.
    # YES of u[0][3] (lost): gpt-5.1 0.5, claude-opus-4.5 0.3 → 0.4.
    assert crowd.brier == pytest.approx(((0.55 - 1) ** 2 + 0.4**2) / 2)


def test_a_two_outcome_market_is_one_question_whatever_its_outcomes_are_called(
    world: World,
) -> None:
    game = market(won=True, outcomes=["Over", "Under"])
    SnapshotMarket.objects.create(
        run=world.runs[1], market=game, rank=50, polymarket_id=game.polymarket_id,
        question=game.question, category=game.category, outcomes=game.outcomes,
        outcome_prices=game.outcome_prices, volume=Decimal(1000),
    )  # fmt: skip
    gpt = Decision.objects.get(agent__model__internal_id="gpt-5.1", run=world.runs[1])
    claude = Decision.objects.get(agent__model__internal_id="claude-opus-4.5", run=world.runs[1])
    bet(gpt, game, side="Over", price=0.55, confidence=0.7)
    bet(claude, game, side="Under", price=0.45, confidence=0.6)
    result = compute_analytics()
    crowd = next(r for r in result.references if r.key == "crowd-median" and not r.offline)
    market_ref = next(r for r in result.references if r.key == "market" and not r.offline)
    assert market_ref.questions == 9  # one more question, not two
    # Over won: gpt-5.1 says Over 0.7, claude-opus-4.5 Under 0.6 = Over 0.4 → median 0.55.
    assert crowd.questions == 2
    assert crowd.brier == pytest.approx(((0.6 - 1) ** 2 + (0.55 - 1) ** 2) / 2)


# ------------------------------------------------------------------------------ scope, cache


def test_completed_scope_reads_completed_cohorts_only(world: World) -> None:
    gpt = row(compute_analytics(cohorts="completed"), "gpt-5.1")
    assert gpt.bets == 4
    assert [c.cohort for c in gpt.per_cohort] == [c.number for c in world.cohorts[:2]]


def test_query_count_does_not_grow_with_the_data(world: World) -> None:
    # From nothing each time (a process's first computation reads and keeps every cohort).
    cache.clear()
    with CaptureQueriesContext(connection) as small:
        compute_analytics()
    extra: Cohort = CohortFactory.create()
    run = run_of(extra, [market(won=True) for _ in range(5)])
    for internal_id in ("gpt-5.1", "claude-opus-4.5", "gemini-2.5-flash"):
        d = decision_of(agent_of(model(internal_id), extra), run)
        for m in run.markets.all():
            bet(d, m.market, price=0.4, confidence=0.6)
    cache.clear()
    with CaptureQueriesContext(connection) as large:
        compute_analytics()
    assert len(large) == len(small)


def figures_of(result: Analytics) -> dict[str, Any]:
    """Every figure of `result` by its path, the time it was computed left out."""
    leaves: dict[str, Any] = {}

    def walk(value: Any, path: str) -> None:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            for f in dataclasses.fields(value):
                if f.name != "computed_at":
                    walk(getattr(value, f.name), f"{path}.{f.name}")
        elif isinstance(value, list | tuple):
            for number, item in enumerate(value):
                walk(item, f"{path}[{number}]")
        elif isinstance(value, BenchmarkModel):
            leaves[path] = value.internal_id
        else:
            leaves[path] = value

    walk(result, "")
    return leaves


def assert_same_figures(result: Analytics, expected: Analytics) -> None:
    """Every figure of `result` is `expected`'s: numbers to 1e-12 (sums in another order)."""
    got, want = figures_of(result), figures_of(expected)
    assert got.keys() == want.keys()
    for path, value in want.items():
        if isinstance(value, float) and isinstance(got[path], float):
            assert got[path] == pytest.approx(value, rel=1e-12, abs=1e-15, nan_ok=True), path
        else:
            assert got[path] == value, path


def bets_read(queries: CaptureQueriesContext) -> list[str]:
    """The statements of `queries` that read bets with their decisions (the bets' read)."""
    return [
        q["sql"] for q in queries.captured_queries if '"implied_confidence"' in q["sql"]
        and '"arena_decision"' in q["sql"]
    ]  # fmt: skip


def test_a_completed_cohorts_bets_are_kept_and_give_the_same_figures(world: World) -> None:
    cache.clear()
    fresh = compute_analytics()
    with CaptureQueriesContext(connection) as queries:
        again = compute_analytics()
    # The two completed cohorts' bets came from the cache: the read asked for the others only.
    [statement] = bets_read(queries)
    active = ", ".join(str(c.number) for c in world.cohorts[2:])
    assert f'"number" IN ({active})' in statement
    assert "NOT (" not in statement
    assert_same_figures(again, fresh)
    cache.clear()
    assert_same_figures(compute_analytics(), fresh)


def settle_again_the_other_way(flipped: Market) -> None:
    """Flip the wins and scores of every bet on `flipped`, leaving their scoring time alone
    (a clock that did not move)."""
    for trade in Trade.objects.filter(market=flipped):
        won = not trade.side_won
        trade.side_won = won
        trade.brier_score = ((trade.implied_confidence or 0.0) - (1.0 if won else 0.0)) ** 2
        trade.save(update_fields=["side_won", "brier_score"])


def test_a_bet_settled_again_in_a_kept_cohort_is_read_again(world: World) -> None:
    cache.clear()
    compute_analytics()
    # A market of the first (completed) cohort settled again the other way: its bets' wins
    # and scores flip, at the same scoring time (a clock that did not move).
    flipped = world.universes[0][0]
    settle_again_the_other_way(flipped)
    after = compute_analytics()
    cache.clear()
    assert_same_figures(after, compute_analytics())
    # gpt-5.1's YES on it now lost: its first cohort's Alpha is no longer what it was.
    gpt = row(after, "gpt-5.1")
    first = next(c for c in gpt.per_cohort if c.cohort == world.cohorts[0].number)
    assert first.alpha == pytest.approx(
        (delta(0.6, 0.8, won=False) + delta(0.7, 0.5, won=True)) / 2
    )


def test_every_scoring_of_a_completed_cohort_moves_its_stamp(world: World) -> None:
    # Scored again with the same outcome: the sums stay, the time of the latest scoring moves
    # (two flips whose ids offset each other would leave the sums alone too).
    scope = read.analytics_scope(cohorts="all")
    number = world.cohorts[0].number
    before = read._stamps(scope)[number]
    bet = Trade.objects.filter(agent__cohort=world.cohorts[0], side_won__isnull=False).first()
    assert bet is not None
    assert bet.scored_at is not None
    Trade.objects.filter(pk=bet.pk).update(scored_at=bet.scored_at + timedelta(hours=1))
    after = read._stamps(scope)[number]
    assert (after.count, after.ids, after.won) == (before.count, before.ids, before.won)
    assert after != before
    assert world.cohorts[2].number not in read._stamps(scope)  # an active cohort: read always


def test_bets_that_start_and_stop_winning_with_equal_sums_of_ids_are_read_again(
    world: World,
) -> None:
    # One market of a completed cohort, YES bets at ids k and k + 3, NO at k + 1 and k + 2:
    # settled again the other way, the ids of the bets that won sum as before.
    cohort, run, flipped = world.cohorts[0], world.runs[0], market(won=True)
    grok = decision_of(agent_of(model("grok-4"), cohort), run)
    random = decision_of(agent_of(model("baseline-random"), cohort), run, "baseline")
    first = bet(grok, flipped, side="YES", price=0.5, confidence=0.9)
    second = bet(random, flipped, side="NO", price=0.5, confidence=0.9)
    third = bet(random, flipped, side="NO", price=0.5, confidence=0.8)
    fourth = bet(grok, flipped, side="YES", price=0.5, confidence=0.8)
    assert first.pk + fourth.pk == second.pk + third.pk
    cache.clear()
    compute_analytics()
    settle_again_the_other_way(flipped)
    after = compute_analytics()
    cache.clear()
    assert_same_figures(after, compute_analytics())


@pytest.mark.parametrize(
    "scopes", [["completed", "all", "v1", "v2"], ["v2", "all", "completed", "v1"]]
)
def test_every_scope_reads_the_same_kept_cohorts_in_any_order(
    world: World, scopes: list[str]
) -> None:
    cache.clear()
    first = {scope: compute_analytics(cohorts=scope) for scope in scopes}
    again = {scope: compute_analytics(cohorts=scope) for scope in reversed(scopes)}
    for scope in scopes:
        cache.clear()
        fresh = compute_analytics(cohorts=scope)
        assert_same_figures(first[scope], fresh)
        assert_same_figures(again[scope], fresh)


def test_a_cohort_completing_between_two_computations_is_read_then_kept(world: World) -> None:
    cache.clear()
    compute_analytics()
    completing = world.cohorts[2]
    completing.status, completing.completed_at = Cohort.Status.COMPLETED, timezone.now()
    completing.save()
    first, second = compute_analytics(), compute_analytics()
    cache.clear()
    fresh = compute_analytics()
    assert_same_figures(first, fresh)
    assert_same_figures(second, fresh)


def test_the_kept_cohorts_of_a_sealed_read_are_the_seals_own(world: World) -> None:
    cache.clear()
    open_figures = compute_analytics()
    with public_view(world.cohorts[3].started_at + timedelta(minutes=10)) as seal:
        assert seal is not None
        sealed, again = compute_analytics(), compute_analytics()
        cache.clear()
        fresh = compute_analytics()
    assert_same_figures(sealed, fresh)
    assert_same_figures(again, fresh)
    assert_same_figures(compute_analytics(), open_figures)


def test_a_category_edited_after_its_cohort_was_kept_shows_at_once(world: World) -> None:
    cache.clear()
    compute_analytics()
    Market.objects.filter(pk=world.universes[0][0].pk).update(category="Weather")
    categories = {c.category for c in row(compute_analytics(), "gpt-5.1").categories}
    assert "Weather" in categories


def test_the_answer_is_kept_until_a_bet_is_scored(world: World) -> None:
    cache.clear()
    first = analytics()
    with CaptureQueriesContext(connection) as kept:
        again = analytics()
    assert again.computed_at == first.computed_at
    assert len(kept) <= 5  # the watermark's reads only
    open_bet = Trade.objects.get(market=world.universes[0][4])
    resolved = world.universes[0][4]
    resolved.resolution, resolved.winning_outcome = Market.Resolution.RESOLVED, "Yes"
    resolved.resolved_at = timezone.now()
    resolved.save()
    open_bet.side_won, open_bet.brier_score, open_bet.scored_at = True, 0.25, timezone.now()
    open_bet.save()
    after = analytics()
    assert after.computed_at > first.computed_at
    assert row(after, "gpt-5.1").bets == 7


def test_a_round_retried_in_place_moves_the_mark(world: World) -> None:
    # A decision re-run after a failure keeps its row and adds an attempt; if its stand-in
    # answered, the agent's bets move to its offline row.
    before = analytics_watermark()
    decision = Decision.objects.filter(agent__model__internal_id="claude-opus-4.5").first()
    assert decision is not None
    DecisionAttempt.objects.create(
        decision=decision,
        number=2,
        responder="offline",
        request_messages=[],
        started_at=timezone.now(),
    )
    assert analytics_watermark() != before


def test_a_market_resolving_moves_the_mark(world: World) -> None:
    before = analytics_watermark()
    m = world.universes[0][4]
    m.resolution, m.winning_outcome, m.resolved_at = "resolved", "Yes", timezone.now()
    m.save()
    assert analytics_watermark() != before


# ------------------------------------------------------------------------------ the API


def test_leaderboard_rows_carry_the_analytics(world: World, client: Client) -> None:
    body = client.get("/api/v1/leaderboard").json()
    result = compute_analytics()
    by_key = {(r["model"], r["offline"]): r for r in body["rows"]}
    gpt = by_key[("gpt-5.1", False)]
    figures = row(result, "gpt-5.1")
    assert gpt["alpha"] == pytest.approx(figures.alpha)
    assert gpt["alpha_ci_low"] == pytest.approx(figures.alpha_interval.low)
    assert gpt["alpha_ci_high"] == pytest.approx(figures.alpha_interval.high)
    assert gpt["brier_ci_low"] == pytest.approx(figures.brier_interval.low)
    assert gpt["reliability"] == pytest.approx(figures.murphy.reliability)
    assert gpt["resolution"] == pytest.approx(figures.murphy.resolution)
    assert gpt["uncertainty"] == pytest.approx(figures.murphy.uncertainty)
    assert gpt["brier_skill_vs_market_ci_low"] == pytest.approx(
        figures.skill_vs_market_interval.low
    )
    assert gpt["brier_skill_vs_random_ci_high"] == pytest.approx(
        figures.skill_vs_random_interval.high
    )
    assert gpt["resolved_bets"] == 6
    assert gpt["brier"] == pytest.approx(figures.brier)  # the v1 figure, unchanged
    offline = by_key[("gpt-5.1", True)]
    assert offline["alpha_ci_low"] is None  # one cohort: no interval
    assert {r["key"] for r in body["references"]} >= {"market", "random", "crowd-median"}


def test_analytics_endpoint_gives_every_figure_with_its_definition(
    world: World, client: Client
) -> None:
    body = client.get("/api/v1/analytics?bins=5").json()
    assert body["bins"] == 5
    gpt = next(r for r in body["rows"] if r["model"] == "gpt-5.1" and not r["offline"])
    assert len(gpt["murphy"]["bins"]) == 5
    assert gpt["alpha_bootstrap"]["cohorts"] == 3
    assert gpt["anatomy"]["alpha"] == pytest.approx(gpt["alpha"])
    names = {d["name"] for d in body["definitions"]}
    assert {"Alpha", "Murphy decomposition", "Bets to detect an edge"} <= names
    assert all(d["source"] for d in body["definitions"])
    assert body["separation"]["first"]["model"] in ("gpt-5.1", "claude-opus-4.5")
    assert body["separation"]["first"]["offline"] is False
    pair = body["comparisons"][0]
    assert set(pair["first"]) == {"model", "offline"}


def test_model_analytics_endpoint(world: World, client: Client) -> None:
    body = client.get("/api/v1/analytics/models/gpt-5.1").json()
    assert [r["offline"] for r in body["rows"]] == [False, True]
    real = body["rows"][0]
    assert [c["cohort"] for c in real["cohorts"]] == [c.number for c in world.cohorts[:3]]
    assert sum(c["bets"] for c in real["categories"]) == 6
    assert client.get("/api/v1/analytics/models/no-such-model").status_code == 404


@pytest.mark.parametrize("query", ["bins=1", "bins=51", "bins=ten", "cohorts=some", "metric=alpha"])
def test_bad_parameters_are_a_422(world: World, client: Client, query: str) -> None:
    response = client.get(f"/api/v1/analytics?{query}")
    assert response.status_code == 422
    assert "error" in response.json()


def test_an_empty_arena_answers_with_empty_figures(db: None, client: Client) -> None:
    body = client.get("/api/v1/analytics").json()
    assert body["references"] == []
    assert body["comparisons"] == []
    assert all(r["alpha"] is None and r["resolved_bets"] == 0 for r in body["rows"])
    assert body["separation"] is None
    board = client.get("/api/v1/leaderboard").json()
    assert all(r["alpha"] is None for r in board["rows"])


def test_bets_export_csv_recomputes_alpha(world: World, client: Client) -> None:
    response: Any = client.get("/api/v1/exports/bets.csv?offline=exclude")
    body = b"".join(response.streaming_content)
    reader = csv.DictReader(io.StringIO(body.decode()))
    values = [
        delta(float(r["market_price"]), float(r["implied_confidence"]), r["status"] == "won")
        for r in reader
        if r["model"] == "claude-opus-4.5" and r["status"] in ("won", "lost")
    ]
    claude = row(compute_analytics(), "claude-opus-4.5")
    assert claude.alpha == pytest.approx(sum(values) / len(values))


# ------------------------------------------------------------------------------ any world


@st.composite
def odd_bets(draw: st.DrawFn) -> list[tuple[int, int, int, str, float, float, bool | None]]:
    """Bets of a few models over a few cohorts and markets, with what real data can hold:
    both sides of one market, many outcomes, a bet scored while its market reads open."""
    return draw(
        st.lists(
            st.tuples(
                st.integers(0, 2),  # model
                st.integers(0, 2),  # cohort
                st.integers(0, 4),  # market
                st.sampled_from(["YES", "NO", "Over", "B"]),
                st.integers(1, 99).map(lambda cents: cents / 100),  # a price, as stored
                st.floats(0.01, 1.0),  # confidence
                st.one_of(st.none(), st.booleans()),  # scored: side won, or not scored
            ),
            max_size=25,
        )
    )


@settings(
    max_examples=example_count(20),
    deadline=None,
    # Each example's world is rolled back at its end (a savepoint inside the test's database).
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(bets=odd_bets())
def test_any_world_gives_finite_figures_or_none(
    db: None, bets: list[tuple[int, int, int, str, float, float, bool | None]]
) -> None:
    with transaction.atomic():
        check_any_world(bets)
        transaction.set_rollback(True)


def check_any_world(bets: list[tuple[int, int, int, str, float, float, bool | None]]) -> None:
    lineup = [model("gpt-5.1"), model("claude-opus-4.5"), model("baseline-random")]
    cohorts = CohortFactory.create_batch(3)
    kinds = [["Yes", "No"], ["Over", "Under"], ["A", "B", "C"], ["Yes", "No"], ["Yes", "No"]]
    markets = [
        market(won=True, outcomes=kinds[0]), market(outcomes=kinds[1]),
        market(won=False, outcomes=kinds[2]), market(cancelled=True), market(won=False),
    ]  # fmt: skip
    runs = [run_of(c, markets) for c in cohorts]
    decisions: dict[tuple[int, int], Decision] = {}
    for who, cohort, where, side, price, confidence, won in bets:
        key = (who, cohort)
        if key not in decisions:
            decisions[key] = decision_of(agent_of(lineup[who], cohorts[cohort]), runs[cohort])
        placed = bet(decisions[key], markets[where], side=side, price=price, confidence=confidence)
        if won is not None and placed.brier_score is None:
            placed.side_won, placed.scored_at = won, timezone.now()
            placed.brier_score = (confidence - (1.0 if won else 0.0)) ** 2
            placed.save()
    result = compute_analytics()
    for who, of in enumerate(lineup):
        figures = result.row(of.pk, False)
        assert figures is not None
        scored = [t for t in Trade.objects.filter(agent__model=of, brier_score__isnull=False)]
        deltas = [delta(float(t.price or 0), t.implied_confidence or 0.0, bool(t.side_won))
                  for t in scored]  # fmt: skip
        if deltas:
            assert figures.alpha == pytest.approx(sum(deltas) / len(deltas))
        else:
            assert figures.alpha is None
        # Coverage by brute force: every resolved market of every run the model's agents
        # decided in, each agent's bets on one question averaged, the rest 0.
        total, questions = 0.0, 0
        for decision in Decision.objects.filter(agent__model=of):
            for m in markets:
                if m.resolution != Market.Resolution.RESOLVED:
                    continue
                questions += 1
                mine = [
                    delta(float(t.price or 0), t.implied_confidence or 0.0, bool(t.side_won))
                    for t in scored
                    if t.decision_id == decision.pk and t.market_id == m.pk
                ]
                total += sum(mine) / len(mine) if mine else 0.0
        assert figures.coverage_markets == questions
        if questions:
            assert figures.coverage_alpha == pytest.approx(total / questions)
        assert who == lineup.index(of)
    for figures in result.rows:
        for value in (figures.alpha, figures.brier, figures.coverage_alpha,
                      figures.difficulty_adjusted_brier, figures.skill_vs_market):  # fmt: skip
            assert value is None or math.isfinite(value)
        for interval in (figures.alpha_interval, figures.brier_interval,
                         figures.coverage_interval, figures.alpha_bootstrap):  # fmt: skip
            if interval is not None and interval.low is not None:
                assert interval.high is not None
                assert interval.low <= interval.high
        if figures.alpha is not None:
            assert -1.0 <= figures.alpha <= 1.0
    for reference in result.references:
        assert math.isfinite(reference.brier)
        assert math.isfinite(reference.alpha)
