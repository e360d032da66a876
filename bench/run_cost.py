"""The cost of a weekly decision run, with and without prompt caching.

Run from the repository root: .venv/bin/python bench/run_cost.py [--cohorts 100]

Self-contained: no network, no database, no farm-bench. It builds the real prompts (the
current prompt version) of the 7 LLM agents of one run from the recorded 500-market Gamma
listing, each agent with its own cohort, clock and portfolio, and reports

1. the share of prompt characters every agent of the run shares (system prompt + market
   table, and under methodology v2 the forecast panel: the part a provider can cache), for
   the current version (v3, methodology v2, with a panel of PANEL_SIZE questions), v2
   (methodology v1's) and v1;
2. the USD cost of a run with `--cohorts` active cohorts x 7 LLM agents at the lineup's
   recorded OpenRouter prices, without caching and with it;
3. what methodology v2's stated probabilities add to every answer: the completion tokens of
   the panel's forecasts and each bet's probability (measured on the offline stand-ins'
   answers to the same contexts under v1 and v2), and what they cost a run.

Tokens are estimated as characters / 4 (tiktoken is not a dependency; each provider's own
tokenizer differs anyway). Completion tokens per call default to those of the project's real
recorded completion. Prices are USD per token from the recorded OpenRouter model lists
(agents/recordings/openrouter/models_list_*.json; the newer snapshot wins); a model missing
from both is priced from the source named in PRICES_NOT_RECORDED.

Caching model (OpenRouter, https://openrouter.ai/docs/features/prompt-caching, read
2026-11-24): a model's first call of the run writes the shared prefix to the cache (at the
recorded `input_cache_write` price where there is one, Anthropic 1.25x and Gemini about
1.19x of input; providers that cache by themselves charge writes as plain input), every later
call of the same model reads it at `input_cache_read`; the agent's own part is always plain
input. A model without a recorded cache-read price gets no discount. This is the best case:
every later call must land within the cache's lifetime (Anthropic: 5 minutes, refreshed by
each hit) on the same provider.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: make the project importable

from agents.offline import offline_agent_reply  # noqa: E402
from agents.prompts import PROMPT_VERSION, build_messages, shared_prefix  # noqa: E402
from agents.types import DecisionContext, MarketView, PortfolioView, PositionView  # noqa: E402

MARKETS = ROOT / "markets/recordings/gamma/markets_active_limit500_2026-01-31.json"
OPENROUTER = ROOT / "agents/recordings/openrouter"
MODEL_LISTS = ("models_list_2026-08_selected.json", "models_list_2025-12-02_selected.json")
COMPLETION = OPENROUTER / "chat_completion_ok_json_content_with_reasoning.json"
LINEUP_MIGRATION = ROOT / "agents/migrations/0002_seed_lineup.py"
CHARS_PER_TOKEN = 4
PANEL_SIZE = 20  # K, as settings.PANEL_SIZE
MILLION = Decimal(1_000_000)

# Not in either recorded model list (the 2025-12 list has only the :free variant).
PRICES_NOT_RECORDED: dict[str, dict[str, Any]] = {
    "x-ai/grok-4.1-fast": {
        "prompt": Decimal("0.20") / MILLION,
        "completion": Decimal("0.50") / MILLION,
        # xAI caches prefixes by itself; its cached-input price was not found in the stored
        # sources, so the 0.25x read rate is an assumption (that of xAI's grok-4 fast models).
        "input_cache_read": Decimal("0.05") / MILLION,
        "source": "https://wavespeed.ai/zh-CN/llm/x-ai/grok-4.1-fast ($0.20/M in, $0.50/M "
        "out, read 2026-11-24); cache read 0.25x assumed",
    },
}


def market_view(record: dict[str, Any]) -> MarketView:
    """Return the MarketView of one Gamma market record (category "General" when missing)."""
    end = record.get("endDate")
    return MarketView(
        market_id=str(record["id"]),
        question=str(record.get("question") or ""),
        category=str(record.get("category") or "General"),
        outcomes=tuple(str(o) for o in json.loads(record["outcomes"])),
        prices=tuple(Decimal(p) for p in json.loads(record["outcomePrices"])),
        volume=Decimal(str(record.get("volumeNum") or record.get("volume") or 0)),
        close_date=datetime.fromisoformat(end.replace("Z", "+00:00")) if end else None,
    )


def recorded_markets() -> tuple[MarketView, ...]:
    """The recording's 500 markets, top volume first, as the engine orders them."""
    markets = [market_view(r) for r in json.loads(MARKETS.read_text(encoding="utf-8"))]
    return tuple(sorted(markets, key=lambda m: (-m.volume, m.market_id)))


def forecast_panel(markets: tuple[MarketView, ...]) -> tuple[MarketView, ...]:
    """PANEL_SIZE binary markets priced 3% to 97%, as the panel's rule admits (its liquidity
    and end-date filters and its spread across prices change the lines, not their length)."""
    eligible = [
        m
        for m in markets
        if m.is_binary
        and m.yes_price is not None
        and Decimal("0.03") <= m.yes_price <= Decimal("0.97")
    ]
    return tuple(eligible[:PANEL_SIZE])


def agent_contexts(
    markets: tuple[MarketView, ...], agents: int = 7, methodology: str = "v2"
) -> list[DecisionContext]:
    """The contexts of `agents` agents of one run: the same markets (and under methodology
    v2 the same panel); each its own cohort, minute of the run, cash and 0-3 open
    positions."""
    panel = forecast_panel(markets) if methodology != "v1" else ()
    contexts = []
    for index in range(agents):
        positions = []
        for number, market in enumerate(markets[index : index + index % 4]):
            yes = market.yes_price or Decimal("0.5")
            shares = Decimal("800.000000")
            positions.append(
                PositionView(
                    position_id=str(100 * index + number),
                    market_id=market.market_id,
                    question=market.question,
                    side="YES",
                    shares=shares,
                    avg_entry_price=Decimal("0.5"),
                    current_price=yes,
                    current_value=(shares * yes).quantize(Decimal("0.01")),
                    cost_basis=Decimal("400.00"),
                )
            )
        contexts.append(
            DecisionContext(
                as_of=datetime(2026, 2, 1, 0, 5, tzinfo=UTC) + timedelta(minutes=index),
                week_start=date(2026, 2, 1),
                cohort_number=1 + index,
                portfolio=PortfolioView(
                    cash=Decimal("10000.00") - 400 * len(positions),
                    starting_balance=Decimal("10000.00"),
                    positions=tuple(positions),
                ),
                markets=markets,
                panel=panel,
                methodology=methodology,
            )
        )
    return contexts


def added_completion_tokens(markets: tuple[MarketView, ...]) -> Decimal:
    """The completion tokens methodology v2 adds to an answer (chars / 4): the offline
    stand-ins' answers to the same contexts under v2 less under v1, over the lineup's
    stand-ins and the run's agents."""
    added = []
    for v1, v2 in zip(
        agent_contexts(markets, methodology="v1"), agent_contexts(markets), strict=True
    ):
        for model in ("gpt-5.1", "claude-opus-4.5", "gemini-3-pro", "grok-4", "kimi-k2"):
            before = offline_agent_reply(model_id=model, context=v1, attempt=2).text
            after = offline_agent_reply(model_id=model, context=v2, attempt=2).text
            added.append(len(after) - len(before))
    return Decimal(sum(added)) / len(added) / CHARS_PER_TOKEN


def common_prefix(texts: list[str]) -> int:
    """Characters at the start that all `texts` have in common."""
    first, length = texts[0], min(len(t) for t in texts)
    for index in range(length):
        if any(t[index] != first[index] for t in texts):
            return index
    return length


@dataclass(frozen=True)
class PromptShape:
    version: str
    shared_chars: int  # system prompt + shared part of the user message, the same for all
    mean_chars: float  # the whole prompt (system + user), mean over the agents


def prompt_shape(contexts: list[DecisionContext], version: str) -> PromptShape:
    wholes = []
    for context in contexts:
        system, user = (m["content"] for m in build_messages(context, version=version))
        wholes.append(system + user)
    shared = common_prefix(wholes)
    if version == PROMPT_VERSION:  # what the client marks is exactly what they share
        marked = len(build_messages(contexts[0], version=version)[0]["content"]) + len(
            shared_prefix(contexts[0], version=version)
        )
        assert marked <= shared, (marked, shared)
        shared = marked
    return PromptShape(version, shared, sum(map(len, wholes)) / len(wholes))


def lineup() -> list[tuple[str, str]]:
    """(display name, OpenRouter id) of the seeded LLM lineup."""
    spec = importlib.util.spec_from_file_location("seed_lineup", LINEUP_MIGRATION)
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [(name, openrouter_id) for _, name, _, openrouter_id in module.LINEUP]


def recorded_prices() -> dict[str, dict[str, Any]]:
    """USD-per-token prices by OpenRouter id; the newer recorded snapshot wins."""
    prices: dict[str, dict[str, Any]] = {}
    for name in reversed(MODEL_LISTS):  # older first, newer overwrites
        for model in json.loads((OPENROUTER / name).read_text())["data"]:
            pricing = {k: Decimal(v) for k, v in model["pricing"].items()}
            prices[model["id"]] = {**pricing, "source": f"{name} (recorded)"}
    return {**prices, **PRICES_NOT_RECORDED}


@dataclass(frozen=True)
class ModelCost:
    name: str
    model: str
    read_multiplier: Decimal  # cache read price / input price
    write_multiplier: Decimal  # cache write price / input price
    uncached: Decimal
    cached: Decimal
    output: Decimal  # of both: the completion tokens
    source: str
    completion_price: Decimal  # USD a completion token


def model_cost(
    name: str,
    model: str,
    price: dict[str, Any],
    *,
    calls: int,
    shared_tokens: Decimal,
    own_tokens: Decimal,
    completion_tokens: Decimal,
) -> ModelCost:
    prompt, completion = price["prompt"], price["completion"]
    read = price.get("input_cache_read", prompt)
    write = price.get("input_cache_write", prompt)
    output = calls * completion_tokens * completion
    uncached = calls * (shared_tokens + own_tokens) * prompt + output
    cached = (
        shared_tokens * write  # the first call writes the shared prefix
        + (calls - 1) * shared_tokens * read  # the others read it
        + calls * own_tokens * prompt
        + output
    )
    ratio = (lambda value: value / prompt) if prompt else (lambda value: Decimal(1))
    return ModelCost(
        name,
        model,
        ratio(read),
        ratio(write),
        uncached,
        cached,
        output,
        price["source"],
        completion,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cohorts", type=int, default=100, help="active cohorts (default 100)")
    recorded_completion = json.loads(COMPLETION.read_text())["usage"]["completion_tokens"]
    parser.add_argument(
        "--completion-tokens",
        type=int,
        default=recorded_completion,
        help=f"completion tokens per call (default {recorded_completion}, the recorded answer)",
    )
    args = parser.parse_args()

    markets = recorded_markets()
    contexts = agent_contexts(markets)
    shapes = {version: prompt_shape(contexts, version) for version in ("v1", "v2", PROMPT_VERSION)}
    print(f"markets: {len(markets)}, agents of one run: {len(contexts)}")
    print("prompt version | shared chars (system + table) | mean chars a call | shared share")
    for shape in shapes.values():
        share = shape.shared_chars / shape.mean_chars
        print(
            f"{shape.version:>14} | {shape.shared_chars:>29,} | {shape.mean_chars:>17,.0f} | "
            f"{share:>12.1%}"
        )

    current = shapes[PROMPT_VERSION]
    shared_tokens = Decimal(current.shared_chars) / CHARS_PER_TOKEN
    own_tokens = Decimal(current.mean_chars - current.shared_chars) / CHARS_PER_TOKEN
    completion_tokens = Decimal(args.completion_tokens)
    prices = recorded_prices()
    costs = [
        model_cost(
            name,
            model,
            prices[model],
            calls=args.cohorts,
            shared_tokens=shared_tokens,
            own_tokens=own_tokens,
            completion_tokens=completion_tokens,
        )
        for name, model in lineup()
    ]
    calls = args.cohorts * len(costs)
    print()
    print(
        f"run of {args.cohorts} cohorts x {len(costs)} LLM agents = {calls} calls; per call "
        f"~{shared_tokens:,.0f} shared + ~{own_tokens:,.0f} own prompt tokens (chars / 4), "
        f"{completion_tokens:,} completion tokens"
    )
    print("model                       | read x | write x |  no cache $ |  cached $ | saved")
    for c in costs:
        saved = 1 - c.cached / c.uncached if c.uncached else Decimal(0)
        print(
            f"{c.model:<27} | {c.read_multiplier:>6.3f} | {c.write_multiplier:>7.4f} | "
            f"{c.uncached:>11.2f} | {c.cached:>9.2f} | {saved:>5.1%}"
        )
    uncached = sum((c.uncached for c in costs), Decimal(0))
    cached = sum((c.cached for c in costs), Decimal(0))
    output = sum((c.output for c in costs), Decimal(0))
    print(
        f"{'total':<27} |        |         | {uncached:>11.2f} | {cached:>9.2f} | "
        f"{1 - cached / uncached:>5.1%}"
    )
    print(
        f"prompt tokens only (the completion cost, ${output:,.2f}, is the same both ways): "
        f"${uncached - output:,.2f} -> ${cached - output:,.2f} "
        f"({1 - (cached - output) / (uncached - output):.1%} saved)"
    )
    added = added_completion_tokens(markets)
    added_cost = sum((args.cohorts * added * c.completion_price for c in costs), Decimal(0))
    print(
        f"methodology v2 adds ~{added:,.0f} completion tokens a call ({PANEL_SIZE} panel "
        f"forecasts and each bet's probability): ${added_cost:,.2f} a run of {args.cohorts} "
        "cohorts"
    )
    print()
    print("prices used:")
    for c in costs:
        print(f"  {c.model}: {c.source}")


if __name__ == "__main__":
    main()
