"""Measure the weekly decision prompt built from 500 real Polymarket markets.

Run from the repository root: .venv/bin/python bench/prompt_size.py

It loads the recorded Gamma listing of 500 active markets, builds a $10,000 portfolio with 3
open positions, and prints the prompt's size: characters, characters per market and an
estimate of tokens (characters / 4, and a real count when `tiktoken` is importable). The
original implementation spent about 233 characters per market.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: make the project importable

from agents.prompts import build_messages, format_markets, shared_prefix  # noqa: E402
from agents.types import DecisionContext, MarketView, PortfolioView, PositionView  # noqa: E402

RECORDING = ROOT / "markets/recordings/gamma/markets_active_limit500_2026-01-31.json"
ORIGINAL_CHARS_PER_MARKET = 233
MARKET_SECTION_START = "MARKETS:"


def market_view(record: dict[str, Any]) -> MarketView:
    """Return the MarketView of one Gamma market record (category "General" when missing)."""
    outcomes = tuple(str(o) for o in json.loads(record["outcomes"]))
    prices = tuple(Decimal(p) for p in json.loads(record["outcomePrices"]))
    end = record.get("endDate")
    return MarketView(
        market_id=str(record["id"]),
        question=str(record.get("question") or ""),
        category=str(record.get("category") or "General"),
        outcomes=outcomes,
        prices=prices,
        volume=Decimal(str(record.get("volumeNum") or record.get("volume") or 0)),
        close_date=datetime.fromisoformat(end.replace("Z", "+00:00")) if end else None,
    )


def recorded_markets() -> tuple[MarketView, ...]:
    """Return the recording's markets, top volume first, as the engine orders them."""
    records = json.loads(RECORDING.read_text(encoding="utf-8"))
    markets = [market_view(record) for record in records]
    return tuple(sorted(markets, key=lambda m: (-m.volume, m.market_id)))


def sample_context(markets: tuple[MarketView, ...]) -> DecisionContext:
    """Return a context with $10,000 of value: cash and 3 open positions (YES, NO, YES)."""
    positions = []
    for number, (market, side) in enumerate(zip(markets[:3], ("YES", "NO", "YES"), strict=True)):
        yes = market.yes_price or Decimal("0.5")
        price = yes if side == "YES" else 1 - yes
        shares = Decimal("1000.000000")
        cost = Decimal("400.00")
        positions.append(
            PositionView(
                position_id=str(101 + number),
                market_id=market.market_id,
                question=market.question,
                side=side,
                shares=shares,
                avg_entry_price=cost / shares,
                current_price=price,
                current_value=(shares * price).quantize(Decimal("0.01")),
                cost_basis=cost,
            )
        )
    portfolio = PortfolioView(
        cash=Decimal("8800.00"), starting_balance=Decimal("10000.00"), positions=tuple(positions)
    )
    return DecisionContext(
        as_of=datetime(2026, 2, 1, 0, 5, tzinfo=UTC),
        week_start=date(2026, 2, 1),
        cohort_number=1,
        portfolio=portfolio,
        markets=markets,
    )


def main() -> None:
    markets = recorded_markets()
    context = sample_context(markets)
    system, user = (message["content"] for message in build_messages(context))
    # The market section is the part every agent shares (prompt v2 puts it first): from its
    # "MARKETS:" heading, legend included, to the agent's own part.
    shared = shared_prefix(context)
    section = len(shared) - shared.index(MARKET_SECTION_START)
    lines = format_markets(markets)
    total = len(system) + len(user)
    print(f"markets:                      {len(markets)}")
    print(f"system prompt chars:          {len(system):,}")
    print(f"user prompt chars:            {len(user):,}")
    print(f"market section chars:         {section:,} ({len(lines):,} in the market lines)")
    print(f"chars per market:             {section / len(markets):.1f}")
    print(f"original chars per market:    {ORIGINAL_CHARS_PER_MARKET}")
    print(f"  ratio to original:          {section / len(markets) / ORIGINAL_CHARS_PER_MARKET:.2f}")
    print(f"total chars (system + user):  {total:,}")
    print(f"estimated tokens (chars / 4): {total / 4:,.0f}")
    try:
        import tiktoken
    except ImportError:
        print("tiktoken not installed: no exact token count")
    else:
        encoding = tiktoken.get_encoding("o200k_base")
        tokens = len(encoding.encode(system)) + len(encoding.encode(user))
        print(f"tokens (tiktoken o200k_base): {tokens:,}")


if __name__ == "__main__":
    main()
