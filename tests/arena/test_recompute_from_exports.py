"""A researcher's check: the published analytics recompute from the public exports alone.

A generated world of twelve weekly runs (four models, one of them joining in the third week;
Yes/No markets, two-outcome markets
with named outcomes and three-outcome markets; each market shown in two runs at different
prices) is exported through the API (`bets.csv`, `decisions.csv`), and every figure below is
computed again with the methodology page's definitions, written out here with numpy and the
standard library, none of the project's own statistics:
- the Murphy terms (UNC, REL, RES) in the YES frame over the two-outcome bets, and apart
  over the bets on markets of more outcomes, for each row and for its market;
- the difficulty-adjusted Brier (question = market × run, least squares, the support rule)
  with its interval from each bet's influence, clustered by week and market;
- each row's Brier interval (two-way clustered t);
- the rank ranges and P(rank 1), from a pigeonhole bootstrap of our own draws: the same
  definition, other random numbers, so within Monte-Carlo error of the published ones.
"""

from __future__ import annotations

import csv
import io
import math
import random
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from decimal import Decimal
from typing import Any

import numpy as np
import pytest
from django.test import Client

from agents.models import BenchmarkModel
from arena import clock
from arena.models import Agent, Decision, DecisionRun, SnapshotMarket, Trade
from markets.models import Market
from tests.arena.factories import CohortFactory
from tests.worlds import ModuleWorld, module_world

pytestmark = pytest.mark.django_db

WEEKS = 12
MODELS = ("recompute-a", "recompute-b", "recompute-c", "recompute-d")
SHOWN_PER_RUN = 6  # markets a run shows; each market is shown in two consecutive runs
BETS_PER_RUN = 3  # of each model
# One model joins late (with the bets still to be ranked): its row's degrees of freedom are
# its own weeks', not the others'.
LATE_MODEL, LATE_FROM_WEEK = "recompute-d", 2
# The methodology page's rules, as it states them.
BINS = 10
DIFFICULTY_MIN_SHARED = 10
DIFFICULTY_MIN_ROWS = 3
# Student's t, 0.975 quantile, by degrees of freedom (any table).
T_975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
         9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179}  # fmt: skip

OUTCOMES = (["Yes", "No"], ["Lakers", "Celtics"], ["Red", "Green", "Blue"])


def _prices(rng: random.Random, count: int) -> list[float]:
    raw = [rng.uniform(0.1, 1.0) for _ in range(count)]
    return [round(r / sum(raw), 4) for r in raw]


def _build() -> None:
    rng = random.Random(20261128)
    models = [
        BenchmarkModel.objects.create(
            internal_id=internal_id,
            display_name=internal_id.title(),
            provider="test",
            openrouter_id=f"test/{internal_id}",
            kind=BenchmarkModel.Kind.LLM,
            display_order=900 + n,
        )
        for n, internal_id in enumerate(MODELS)
    ]
    skill = {m.pk: 0.15 + 0.1 * n for n, m in enumerate(models)}  # how far each strays
    markets: list[Market] = []
    for week in range(WEEKS):
        cohort = CohortFactory.create()
        start = datetime.combine(cohort.week_start, time(), UTC)
        run = DecisionRun.objects.create(
            week_start=cohort.week_start,
            started_at=start + timedelta(minutes=5),
            finished_at=start + timedelta(minutes=6),
            source="demo",
            universe_size=SHOWN_PER_RUN,
        )
        # Half of what a run shows is new this week; the other half the week before's.
        for n in range(SHOWN_PER_RUN // 2):
            outcomes = OUTCOMES[(week + n) % len(OUTCOMES)]
            winner = rng.randrange(len(outcomes))
            markets.append(
                Market.objects.create(
                    polymarket_id=f"rc-{week}-{n}",
                    question=f"Question {n} of week {week}?",
                    outcomes=outcomes,
                    outcome_prices=["1" if i == winner else "0" for i in range(len(outcomes))],
                    price=Decimal("0.5"),
                    resolution=Market.Resolution.RESOLVED,
                    winning_outcome=outcomes[winner],
                    resolved_at=start + timedelta(days=9),
                )
            )
        shown = markets[-SHOWN_PER_RUN:]
        prices = {}
        for rank, market in enumerate(shown, start=1):
            prices[market.pk] = _prices(rng, len(market.outcomes))
            SnapshotMarket.objects.create(
                run=run,
                market=market,
                rank=rank,
                polymarket_id=market.polymarket_id,
                question=market.question,
                outcomes=market.outcomes,
                outcome_prices=[str(p) for p in prices[market.pk]],
                volume=Decimal("1000"),
            )
        for model in models:
            if model.internal_id == LATE_MODEL and week < LATE_FROM_WEEK:
                continue
            agent = Agent.objects.create(cohort=cohort, model=model, cash=Decimal("10000"))
            decision = Decision.objects.create(
                agent=agent,
                cohort=cohort,
                week_start=cohort.week_start,
                run=run,
                status=Decision.Status.DONE,
                action=Decision.Action.BET,
                responder=Decision.Responder.OPENROUTER,
            )
            for order, market in enumerate(rng.sample(shown, BETS_PER_RUN)):
                outcome = rng.randrange(len(market.outcomes))
                side = market.outcomes[outcome]
                side = "YES" if side == "Yes" else "NO" if side == "No" else side
                price = prices[market.pk][outcome]
                won = market.outcomes[outcome] == market.winning_outcome
                # A forecast near the truth, strayed by the model's own amount.
                confidence = min(0.95, max(0.05, float(won) + rng.gauss(0, skill[model.pk])))
                confidence = round(confidence, 4)
                amount = Decimal(str(round(confidence * 2500, 2)))
                Trade.objects.create(
                    decision=decision,
                    agent=agent,
                    order_index=order,
                    kind=Trade.Kind.BUY,
                    status=Trade.Status.EXECUTED,
                    market=market,
                    side=side,
                    requested_amount=amount,
                    amount=amount,
                    price=Decimal(str(price)),
                    shares=(amount / Decimal(str(price))).quantize(Decimal("0.000001")),
                    cash_before=Decimal("10000"),
                    cash_after=Decimal("10000") - amount,
                    implied_confidence=confidence,
                    brier_score=(confidence - float(won)) ** 2,
                    side_won=won,
                    scored_at=start + timedelta(days=9),
                    created_at=start + timedelta(minutes=5),
                )


@dataclass(frozen=True)
class Published:
    bets: list[dict[str, Any]]  # bets.csv, each row with its decision's week and run
    analytics: dict[str, dict[str, Any]]  # /api/v1/analytics rows by model
    leaderboard: dict[str, dict[str, Any]]  # /api/v1/leaderboard rows by model


@module_world()
def generated_world() -> int:
    _build()
    return WEEKS


def _csv(client: Client, path: str) -> list[dict[str, str]]:
    response = client.get(path)
    assert response.status_code == 200, path
    body = b"".join(response.streaming_content).decode()  # type: ignore[attr-defined]
    return list(csv.DictReader(io.StringIO(body)))


# Read on a weekday: from Sunday 00:00 to the outside window's close the week is sealed and
# the downloads pause (arena/seal.py), which a run of the suite on a Sunday night would meet.
READ_AT = datetime(2026, 11, 25, 12, tzinfo=UTC)


@pytest.fixture
def published(generated_world: ModuleWorld[int], client: Client) -> Published:
    with clock.simulated(READ_AT):
        return _read(client)


def _read(client: Client) -> Published:
    decisions = {d["decision_id"]: d for d in _csv(client, "/api/v1/exports/decisions.csv")}
    bets = []
    for bet in _csv(client, "/api/v1/exports/bets.csv"):
        if bet["model"] in MODELS and bet["status"] in ("won", "lost"):
            decision = decisions[bet["decision_id"]]
            bets.append(bet | {"week": decision["week_start"], "run": decision["run_id"]})
    assert len(bets) == (WEEKS * len(MODELS) - LATE_FROM_WEEK) * BETS_PER_RUN
    analytics = client.get("/api/v1/analytics").json()["rows"]
    leaderboard = client.get("/api/v1/leaderboard").json()["rows"]
    return Published(
        bets=bets,
        analytics={r["model"]: r for r in analytics if not r["offline"]},
        leaderboard={r["model"]: r for r in leaderboard if not r["offline"]},
    )


# ------------------------------------------------------------------------- the definitions


def yes_frame(bet: dict[str, Any]) -> tuple[float, float, float] | None:
    """A two-outcome bet as a forecast of the first outcome: (forecast, price, outcome);
    None for a bet on a market of more outcomes."""
    first = bet["first_outcome"]
    if not first:
        return None
    f, b, x = float(bet["implied_confidence"]), float(bet["market_price"]), bet["status"] == "won"
    if bet["side"].lower() == first.lower():
        return f, b, float(x)
    return 1 - f, 1 - b, float(not x)


def own_frame(bet: dict[str, Any]) -> tuple[float, float, float]:
    won = bet["status"] == "won"
    return float(bet["implied_confidence"]), float(bet["market_price"]), float(won)


def murphy(forecasts: list[float], outcomes: list[float]) -> tuple[float, float, float]:
    """(UNC, REL, RES) over K equal-width bins [k/K, (k+1)/K), the last closed at 1."""
    n = len(forecasts)
    base = sum(outcomes) / n
    bins: dict[int, list[tuple[float, float]]] = {}
    for f, x in zip(forecasts, outcomes, strict=True):
        bins.setdefault(min(int(f * BINS), BINS - 1), []).append((f, x))
    rel = res = 0.0
    for members in bins.values():
        mean_f = sum(f for f, _ in members) / len(members)
        mean_x = sum(x for _, x in members) / len(members)
        rel += len(members) * (mean_f - mean_x) ** 2 / n
        res += len(members) * (mean_x - base) ** 2 / n
    return base * (1 - base), rel, res


def clustered(psi: np.ndarray, labels: list[Any]) -> float:
    """G/(G − 1) · Σ_g (Σ_{i∈g} ψᵢ)²; 0 with one cluster."""
    sums: dict[Any, float] = {}
    for value, label in zip(psi.tolist(), labels, strict=True):
        sums[label] = sums.get(label, 0.0) + value
    g = len(sums)
    return 0.0 if g < 2 else g / (g - 1) * sum(s * s for s in sums.values())


def two_way(psi: np.ndarray, weeks: list[str], markets: list[str]) -> float:
    """V_week + V_market − V_week×market, never below the larger one-way variance."""
    by_week, by_market = clustered(psi, weeks), clustered(psi, markets)
    by_cell = clustered(psi, list(zip(weeks, markets, strict=True)))
    return max(by_week + by_market - by_cell, by_week, by_market)


def difficulty(bets: list[dict[str, Any]]) -> dict[str, tuple[float, float, int]]:
    """Each shown row's difficulty-adjusted Brier, its standard error and its df: least
    squares of score = a_model + d_question over every row's bets (a question is a market in
    a run), the adjusted figure the mean over the row's bets of (Brier − d), d centred on
    the bets; its influence map found by fitting each bet's unit score."""
    models = sorted({b["model"] for b in bets})
    questions = sorted({(b["market_id"], b["run"]) for b in bets})
    answered = {q: {b["model"] for b in bets if (b["market_id"], b["run"]) == q} for q in questions}
    shared = {
        m: sum(1 for q in questions if m in answered[q] and len(answered[q]) > 1) for m in models
    }
    shown = [m for m in models if shared[m] >= DIFFICULTY_MIN_SHARED]
    assert len(shown) >= DIFFICULTY_MIN_ROWS  # and one linked part: every model shares here
    x = np.zeros((len(bets), len(models) + len(questions)))
    for i, b in enumerate(bets):
        x[i, models.index(b["model"])] = 1.0
        x[i, len(models) + questions.index((b["market_id"], b["run"]))] = 1.0
    own = {m: np.array([b["model"] == m for b in bets]) for m in models}

    def adjusted(y: np.ndarray) -> np.ndarray:
        beta = np.linalg.lstsq(x, y, rcond=None)[0]
        d = x[:, len(models) :] @ beta[len(models) :]  # each bet's question effect
        d = d - d.mean()
        return np.array([float(np.mean((y - d)[own[m]])) for m in models])

    y = np.array([float(b["brier"]) for b in bets])
    figures = adjusted(y)
    beta = np.linalg.lstsq(x, y, rcond=None)[0]
    residual = y - x @ beta
    influence = np.stack([adjusted(unit) for unit in np.eye(len(bets))], axis=1)  # rows × bets
    weeks, markets = [b["week"] for b in bets], [b["market_id"] for b in bets]
    result = {}
    for m in shown:
        k = models.index(m)
        error = math.sqrt(two_way(influence[k] * residual, weeks, markets))
        mine = [b for b in bets if b["model"] == m]
        df = min(len({b["week"] for b in mine}), len({b["market_id"] for b in mine})) - 1
        result[m] = (float(figures[k]), error, df)
    return result


# ------------------------------------------------------------------------------ the checks


def test_the_murphy_terms_recompute_in_the_yes_frame_and_apart(published: Published) -> None:
    for model in MODELS:
        mine = [b for b in published.bets if b["model"] == model]
        two = [framed for b in mine if (framed := yes_frame(b)) is not None]
        more = [own_frame(b) for b in mine if not b["first_outcome"]]
        assert two  # the world has both kinds
        assert more
        row = published.analytics[model]
        for (forecasts, prices, outcomes), agent, market in (
            (zip(*two, strict=True), row["murphy"], row["market_murphy"]),
            (zip(*more, strict=True), row["multi_murphy"], row["multi_market_murphy"]),
        ):
            f, b, x = list(forecasts), list(prices), list(outcomes)
            for terms, published_terms in ((murphy(f, x), agent), (murphy(b, x), market)):
                unc, rel, res = terms
                assert published_terms["bets"] == len(x)
                assert published_terms["uncertainty"] == pytest.approx(unc, abs=1e-12)
                assert published_terms["reliability"] == pytest.approx(rel, abs=1e-12)
                assert published_terms["resolution"] == pytest.approx(res, abs=1e-12)


def test_the_difficulty_adjusted_brier_and_its_interval_recompute(published: Published) -> None:
    expected = difficulty(published.bets)
    assert set(expected) == set(MODELS)
    assert expected[LATE_MODEL][2] < expected[MODELS[0]][2]  # the late model's df is its own
    for model, (figure, error, df) in expected.items():
        row = published.analytics[model]
        assert row["difficulty_adjusted_brier"] == pytest.approx(figure, abs=1e-9)
        interval = row["difficulty_adjusted_brier_interval"]
        assert interval["standard_error"] == pytest.approx(error, rel=1e-6)
        half = interval["high"] - interval["estimate"]
        assert half / error == pytest.approx(T_975[df], abs=1e-3)
        assert interval["estimate"] - interval["low"] == pytest.approx(half, rel=1e-9)
    # The figures differ from the raw Brier: the models chose different questions.
    raw = {
        m: np.mean([float(b["brier"]) for b in published.bets if b["model"] == m]) for m in MODELS
    }
    assert any(abs(expected[m][0] - raw[m]) > 1e-4 for m in MODELS)


def test_each_rows_brier_interval_recomputes(published: Published) -> None:
    for model in MODELS:
        mine = [b for b in published.bets if b["model"] == model]
        briers = np.array([float(b["brier"]) for b in mine])
        psi = (briers - briers.mean()) / len(briers)
        weeks, markets = [b["week"] for b in mine], [b["market_id"] for b in mine]
        error = math.sqrt(two_way(psi, weeks, markets))
        df = min(len(set(weeks)), len(set(markets))) - 1
        row = published.leaderboard[model]
        assert row["brier"] == pytest.approx(briers.mean(), abs=1e-12)
        half = T_975[df] * error
        assert row["brier_ci_low"] == pytest.approx(max(0.0, briers.mean() - half), abs=1e-3)
        assert row["brier_ci_high"] == pytest.approx(min(1.0, briers.mean() + half), abs=1e-3)


def test_the_rank_ranges_recompute_from_our_own_resampled_worlds(published: Published) -> None:
    """The pigeonhole bootstrap as defined (every week and every market weighted by a
    Poisson(1) draw, a bet by the product; rank 1 the lowest weighted mean Brier, ties taking
    the best rank; the range the 2.5th and 97.5th percentiles of the ranks, rounded out; a
    tie for first shares P(rank 1)), with 4,000 worlds of numpy's own draws."""
    rng = np.random.default_rng(7)
    bets = published.bets
    weeks = sorted({b["week"] for b in bets})
    markets = sorted({b["market_id"] for b in bets})
    week_of = np.array([weeks.index(b["week"]) for b in bets])
    market_of = np.array([markets.index(b["market_id"]) for b in bets])
    brier = np.array([float(b["brier"]) for b in bets])
    model_of = np.array([MODELS.index(b["model"]) for b in bets])
    worlds = 4000
    weights = (
        rng.poisson(1.0, (worlds, len(weeks)))[:, week_of]
        * rng.poisson(1.0, (worlds, len(markets)))[:, market_of]
    )  # worlds × bets
    sums = np.stack([(weights * brier)[:, model_of == k].sum(axis=1) for k in range(4)], axis=1)
    counts = np.stack([weights[:, model_of == k].sum(axis=1) for k in range(4)], axis=1)
    drawn = np.all(counts > 0, axis=1)
    means = sums[drawn] / counts[drawn]  # worlds × models
    ranks = (means[:, None, :] < means[:, :, None]).sum(axis=2) + 1
    firsts = (ranks == 1).sum(axis=1)
    for k, model in enumerate(MODELS):
        row = published.leaderboard[model]
        low = int(np.floor(np.quantile(ranks[:, k], 0.025)))
        high = int(np.ceil(np.quantile(ranks[:, k], 0.975)))
        p_first = float(np.mean((ranks[:, k] == 1) / np.maximum(firsts, 1)))
        # Two sets of random worlds: a bound may sit one rank apart at a quantile's edge, and
        # P(rank 1) within four standard errors of 1,000 and 4,000 draws.
        assert abs(row["rank_low"] - low) <= 1, model
        assert abs(row["rank_high"] - high) <= 1, model
        spread = 4 * math.sqrt(max(p_first * (1 - p_first), 0.01) * (1 / 1000 + 1 / worlds))
        assert row["p_rank_first"] == pytest.approx(p_first, abs=spread), model
    assert sum(published.leaderboard[m]["p_rank_first"] for m in MODELS) == pytest.approx(1.0)


def test_the_world_is_one_a_researcher_would_recognise(published: Published) -> None:
    """What the checks above rest on: shared questions, several frames, ranked rows."""
    kinds = {len(b["first_outcome"]) > 0 for b in published.bets}
    assert kinds == {True, False}
    named = {b["first_outcome"] for b in published.bets if b["first_outcome"]}
    assert named == {"Yes", "Lakers"}
    runs_per_market = {
        market: len({b["run"] for b in published.bets if b["market_id"] == market})
        for market in {b["market_id"] for b in published.bets}
    }
    assert max(runs_per_market.values()) == 2  # a market bet on in two runs, at two prices
    assert all(published.leaderboard[m]["rank_low"] is not None for m in MODELS)
