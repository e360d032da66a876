"""Deterministic stand-ins that answer when no model is called.

- Offline agents answer for the lineup's LLMs when no OPENROUTER_API_KEY is set. Each is
  labelled "offline" wherever it appears; it writes a raw text response (sometimes in a code
  fence, sometimes inside prose, as real models do) that then goes through the very same
  parse → execute path as a real model's.
- Baselines join every cohort and are never ranked among the LLMs: a seeded random bettor,
  and a market follower that backs each market's favourite with the confidence the market
  price implies.

Under methodology v2 (`context.states_probabilities`) each states its probabilities too, as
v2 asks: a probability on every bet, and a forecast of every question of the week's panel.
The offline agents' forecasts stray from the price as their temperament says, the same for a
model's agents in every cohort of the week but for a little noise of each cohort's; the random
bettor forecasts uniformly at random; the market follower forecasts the market price.

Same context, same model → byte-identical response (seeded by model id, cohort and week).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_DOWN, Decimal

from agents.types import DecisionContext, MarketView

MIN_BET = Decimal("50")
MAX_FRACTION = Decimal("0.25")
OFFLINE_MODEL = "offline"


@dataclass(frozen=True)
class OfflineReply:
    """What an offline agent or a baseline said, shaped like a model's answer."""

    text: str
    responder: str  # "offline" or "baseline"
    model: str


def _rng(*parts: object) -> random.Random:
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))  # nosec B311 # seeded: a reproducible stand-in, not a secret


def _usable(market: MarketView) -> list[tuple[str, Decimal]]:
    """Return (side, side-correct price) pairs that can be traded (price strictly in (0, 1))."""
    if market.is_binary:
        yes = market.yes_price
        if yes is None or not Decimal("0.02") <= yes <= Decimal("0.98"):
            return []
        return [("YES", yes), ("NO", 1 - yes)]
    return [
        (outcome, p)
        for outcome, p in zip(market.outcomes, market.prices, strict=False)
        if p is not None and Decimal("0.02") <= p <= Decimal("0.98")
    ]


def _amount(cash: Decimal, confidence: float) -> Decimal:
    confidence = min(max(confidence, 0.0), 1.0)
    amount = (cash * MAX_FRACTION * Decimal(str(round(confidence, 4)))).quantize(
        Decimal("1"), rounding=ROUND_DOWN
    )
    return max(amount, MIN_BET)


def _probability(value: float) -> float:
    """A probability as the stand-ins state it: to a price's 6 places (the market follower
    states the price itself), strictly inside (0, 1)."""
    return round(min(max(value, 0.000001), 0.999999), 6)


def _with_forecasts(
    payload: dict[str, object], context: DecisionContext, forecast: Callable[[MarketView], float]
) -> dict[str, object]:
    """The payload with a forecast of each panel question, under methodology v2."""
    if not context.states_probabilities:
        return payload
    forecasts = [
        {"market_id": market.market_id, "probability": _probability(forecast(market))}
        for market in context.panel
    ]
    return {**payload, "forecasts": forecasts}


def _market_price(market: MarketView) -> float:
    return float(market.yes_price) if market.yes_price is not None else 0.5


def _wrap(payload: dict[str, object], style: int) -> str:
    body = json.dumps(payload, indent=2)
    if style == 0:
        return body
    if style == 1:
        return f"```json\n{body}\n```"
    return f"After weighing the markets against my own estimates, here is my decision.\n\n{body}\n"


def offline_agent_reply(
    *, model_id: str, context: DecisionContext, attempt: int = 1
) -> OfflineReply:
    """Answer as the offline stand-in of lineup model `model_id`.

    Each model gets a fixed temperament from its id: how many bets it places, how far its
    own estimate strays from the market price, how boldly it sizes, how often its first
    answer is malformed (cut off mid-object, as real models sometimes are — the engine then
    sends the error back, and the second attempt answers properly). It bets where its
    estimate differs most from the price, and sells positions that have run up or down.
    """
    reply = _offline_decision(model_id=model_id, context=context)
    sloppiness = _rng("sloppiness", model_id).uniform(0.0, 0.3)
    slip = _rng("slip", model_id, context.cohort_number, context.week_start.isoformat())
    if attempt == 1 and slip.random() < sloppiness:
        cut = reply.text[: max(20, len(reply.text) * 2 // 3)]
        return OfflineReply(cut, reply.responder, reply.model)
    return reply


def _offline_decision(*, model_id: str, context: DecisionContext) -> OfflineReply:
    temperament = _rng("temperament", model_id)
    max_bets = temperament.randint(1, 4)
    noise = temperament.uniform(0.05, 0.2)
    boldness = temperament.uniform(0.3, 1.0)
    hold_chance = temperament.uniform(0.05, 0.25)
    rng = _rng(model_id, context.cohort_number, context.week_start.isoformat())
    style = rng.randrange(3)
    portfolio = context.portfolio
    forecast = _offline_forecast(model_id, context, noise)

    def reply(payload: dict[str, object]) -> OfflineReply:
        return OfflineReply(
            _wrap(_with_forecasts(payload, context, forecast), style), "offline", OFFLINE_MODEL
        )

    sells = _moved_positions(context)
    if sells and rng.random() < 0.6:
        return reply(
            {
                "action": "SELL",
                "sells": sells[:3],
                "reasoning": "Taking profit or cutting losses on positions that have moved.",
            }
        )
    if rng.random() < hold_chance or portfolio.cash < MIN_BET * 4:
        return reply({"action": "HOLD", "reasoning": "No market is mispriced enough to act on."})

    candidates = []
    for market in context.markets:
        for side, price in _usable(market):
            estimate = min(max(float(price) + rng.gauss(0, noise), 0.01), 0.99)
            edge = estimate - float(price)
            candidates.append((edge, market.market_id, side, estimate))
    candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
    bets: list[dict[str, object]] = []
    seen: set[str] = set()
    cash = portfolio.cash
    for edge, market_id, side, estimate in candidates:
        if len(bets) >= max_bets or edge <= 0:
            break
        if market_id in seen:
            continue
        seen.add(market_id)
        amount = _amount(cash, estimate * boldness)
        bet: dict[str, object] = {"market_id": market_id, "side": side, "amount": float(amount)}
        if context.states_probabilities:
            bet["probability"] = _probability(estimate)
        bets.append(bet)
        cash -= amount
    if not bets:
        return reply({"action": "HOLD", "reasoning": "Prices look fair."})
    return reply(
        {
            "action": "BET",
            "bets": bets,
            "reasoning": "My estimates differ from the market prices on these questions.",
        }
    )


def _moved_positions(context: DecisionContext) -> list[dict[str, object]]:
    """The sells of the positions that have run up (half of each) or down (all of each)."""
    sells: list[dict[str, object]] = []
    for position in context.portfolio.positions:
        price = position.current_price
        if price is None or not position.avg_entry_price:
            continue
        change = (price - position.avg_entry_price) / position.avg_entry_price
        if change > Decimal("0.3") or change < Decimal("-0.5"):
            sells.append(
                {"position_id": position.position_id, "percentage": 50 if change > 0 else 100}
            )
    return sells


def _offline_forecast(
    model_id: str, context: DecisionContext, noise: float
) -> Callable[[MarketView], float]:
    """The offline agent's probability of YES on a panel question: the price, strayed from by
    the model's view of the question for the week, and by a little more in each cohort (its
    agents see the same question with different portfolios)."""
    week = context.week_start.isoformat()

    def forecast(market: MarketView) -> float:
        view = _rng("forecast", model_id, week, market.market_id).gauss(0, noise)
        own = _rng("forecast", model_id, week, context.cohort_number, market.market_id)
        return _market_price(market) + view + own.gauss(0, 0.01)

    return forecast


def random_baseline_reply(*, seed: str, context: DecisionContext) -> OfflineReply:
    """A seeded random bettor: 1–3 random markets, a random side, a random size."""
    rng = _rng("random-baseline", seed, context.cohort_number, context.week_start.isoformat())
    # Its stated probabilities are drawn apart, so its bets are v1's under either methodology.
    stated = _rng("random-forecasts", seed, context.cohort_number, context.week_start.isoformat())

    def forecast(market: MarketView) -> float:
        return stated.random()

    tradable = [(m, _usable(m)) for m in context.markets]
    tradable = [(m, sides) for m, sides in tradable if sides]
    if not tradable or context.portfolio.cash < MIN_BET * 4:
        return OfflineReply(
            json.dumps(
                _with_forecasts(
                    {"action": "HOLD", "reasoning": "Random baseline: nothing to bet on."},
                    context,
                    forecast,
                )
            ),
            "baseline",
            "baseline-random",
        )
    bets = []
    cash = context.portfolio.cash
    for market, sides in rng.sample(tradable, k=min(rng.randint(1, 3), len(tradable))):
        side, _ = rng.choice(sides)
        amount = _amount(cash, rng.uniform(0.05, 1.0))
        bet: dict[str, object] = {
            "market_id": market.market_id,
            "side": side,
            "amount": float(amount),
        }
        if context.states_probabilities:
            bet["probability"] = _probability(stated.random())
        bets.append(bet)
        cash -= amount
    return OfflineReply(
        json.dumps(
            _with_forecasts(
                {"action": "BET", "bets": bets, "reasoning": "Random baseline (seeded)."},
                context,
                forecast,
            )
        ),
        "baseline",
        "baseline-random",
    )


def market_baseline_reply(*, context: DecisionContext, count: int = 3) -> OfflineReply:
    """A market follower: backs the favourite of the highest-volume tradable markets, sized so
    its implied confidence equals the favourite's price (it forecasts exactly the market)."""
    bets: list[dict[str, object]] = []
    cash = context.portfolio.cash
    held = {p.market_id for p in context.portfolio.positions}
    for market in context.markets:
        if len(bets) >= count or cash < MIN_BET * 4:
            break
        sides = _usable(market)
        if not sides or market.market_id in held:
            continue
        side, price = max(sides, key=lambda s: (s[1], s[0]))
        amount = _amount(cash, float(price))
        bet: dict[str, object] = {
            "market_id": market.market_id,
            "side": side,
            "amount": float(amount),
        }
        if context.states_probabilities:
            bet["probability"] = _probability(float(price))
        bets.append(bet)
        cash -= amount
    if not bets:
        return OfflineReply(
            json.dumps(
                _with_forecasts(
                    {"action": "HOLD", "reasoning": "Market follower: no new favourites."},
                    context,
                    _market_price,
                )
            ),
            "baseline",
            "baseline-market",
        )
    return OfflineReply(
        json.dumps(
            _with_forecasts(
                {
                    "action": "BET",
                    "bets": bets,
                    "reasoning": "Market follower: backs the favourites.",
                },
                context,
                _market_price,
            )
        ),
        "baseline",
        "baseline-market",
    )
