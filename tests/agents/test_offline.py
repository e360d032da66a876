"""Offline agents: deterministic raw text through the same parser as a real model's."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest

from agents.exceptions import DecisionParseError
from agents.offline import (
    market_baseline_reply,
    offline_agent_reply,
    random_baseline_reply,
)
from agents.parsing import parse_decision
from agents.types import DecisionContext, MarketView, PortfolioView

MARKETS = tuple(
    MarketView(
        market_id=str(1000 + i),
        question=f"Will event {i} happen?",
        category="General",
        outcomes=("Yes", "No"),
        prices=(Decimal("0.1") + Decimal(i) / 100, Decimal("0.9") - Decimal(i) / 100),
        volume=Decimal(1_000_000 - i),
        close_date=datetime(2027, 1, 1, tzinfo=UTC),
    )
    for i in range(40)
)
BY_ID = {m.market_id: m for m in MARKETS}


def context(week: int, cohort: int = 1) -> DecisionContext:
    start = date(2026, 1, 4) + timedelta(weeks=week)
    return DecisionContext(
        as_of=datetime(start.year, start.month, start.day, 0, 5, tzinfo=UTC),
        week_start=start,
        cohort_number=cohort,
        portfolio=PortfolioView(cash=Decimal("10000"), starting_balance=Decimal("10000")),
        markets=MARKETS,
    )


@pytest.mark.parametrize("model_id", ["gpt-5.1", "kimi-k2", "qwen-3-next"])
def test_the_same_context_gives_the_same_raw_text(model_id: str) -> None:
    first = offline_agent_reply(model_id=model_id, context=context(3))
    again = offline_agent_reply(model_id=model_id, context=context(3))
    assert first == again
    assert first.responder == "offline"


def test_second_attempts_always_parse() -> None:
    for week in range(30):
        for model_id in ("gpt-5.1", "grok-4", "deepseek-v3.1"):
            reply = offline_agent_reply(model_id=model_id, context=context(week), attempt=2)
            parse_decision(reply.text, markets=BY_ID, position_ids=())


def test_some_first_answers_are_malformed_so_the_retry_path_is_exercised() -> None:
    malformed = 0
    for week in range(30):
        for model_id in ("gpt-5.1", "gemini-2.5-flash", "grok-4", "claude-opus-4.5", "kimi-k2"):
            reply = offline_agent_reply(model_id=model_id, context=context(week))
            try:
                parse_decision(reply.text, markets=BY_ID, position_ids=())
            except DecisionParseError:
                malformed += 1
    assert 0 < malformed < 150 * 0.3


def test_baselines_answer_valid_bets_within_the_rules() -> None:
    for reply in (
        random_baseline_reply(seed="baseline-random", context=context(1)),
        market_baseline_reply(context=context(1)),
    ):
        decision = parse_decision(reply.text, markets=BY_ID, position_ids=())
        assert reply.responder == "baseline"
        assert decision.action == "BET"
        assert all(Decimal(50) <= b.amount <= Decimal(2500) for b in decision.bets)


def test_the_market_follower_backs_the_favourite_at_its_price() -> None:
    decision = parse_decision(
        market_baseline_reply(context=context(1)).text, markets=BY_ID, position_ids=()
    )
    first = decision.bets[0]
    assert (first.market_id, first.side) == ("1000", "NO")  # NO at 0.90 is the favourite
    assert first.amount == Decimal(2250)  # 0.90 × the $2,500 maximum: confidence = price
