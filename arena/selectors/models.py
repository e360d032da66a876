"""Per-model statistics of the lineup, shared by the leaderboard and the model pages.

The performance figures (return, Brier, win rate) are defined in `arena/selectors/standings.py`;
this module adds how a model behaves as a forecaster and what it costs to ask. Like every
per-model figure they are kept per (model, offline or not) — the standings module docstring
says when an agent is offline — so `usage_by_key` takes each agent's row key and never pools
an offline agent with a real one. Definitions (shown on the pages as USAGE_DEFINITIONS):

- **HOLD share** = valid answers that were HOLD ÷ valid answers. A valid answer is a decision
  that ended DONE from a parsed answer: a default HOLD after an unparseable answer, and a week
  skipped (bankrupt, or expired before an answer), are not the model's choice and not counted.
- **Malformed first answer** = decisions whose first answer (the first attempt that got a
  reply: one parsed or failed to parse; a failed API call, or an attempt that broke before
  any reply, is not an answer) did not parse ÷ decisions with an answer.
  Such a decision was sent the error and asked again (002): it may still have ended valid.
- **Rejected trades** = rejected orders ÷ every order (buys and sells) of the model's answers.
- A **call** is an attempt sent to the model through OpenRouter. Offline stand-ins and
  baselines answer without one, so their rows have no cost, latency or provider.
- **USD per decision** = Σ cost of the calls of each decision that made a call ÷ those
  decisions. A failed call (an API error) costs nothing. A decision with a reply of unknown
  cost (the provider reported none usable) is left out of both sums and counted as
  "unknown cost".
- **p95 latency** = the nearest-rank 95th percentile of every call's latency (ms) with a
  known latency: the smallest latency at least 95% of calls did not exceed.
- **Upstream providers** = the providers OpenRouter reported serving the calls, with counts.
- **Model versions answering** = the model names the replies of the calls carried (OpenRouter's
  `model`: the exact version that answered, which a lineup id may move across), with counts.
- **Reasoning** = of the calls whose reply reports reasoning tokens, the share that spent any,
  and their median.

Each reader runs a fixed number of queries, whatever the number of cohorts and decisions.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Collection, Hashable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, TypeVar

from django.db.models import BooleanField, Count, ExpressionWrapper, Q, QuerySet

from agents.models import BenchmarkModel
from arena.models import Decision, DecisionAttempt, Trade

Key = TypeVar("Key", bound=Hashable)

USAGE_DEFINITIONS = [
    (
        "Cohorts, resolved bets",
        "how many figures a mean is taken over: the average return is over cohorts played, "
        "Brier and win rate over resolved bets",
    ),
    (
        "HOLD share",
        "valid answers that were HOLD ÷ valid answers (a default HOLD after an unparseable "
        "answer, or a skipped week, is not counted)",
    ),
    (
        "Malformed first answer",
        "decisions whose first answer did not parse ÷ decisions that got an answer; the model "
        "was then sent the error and asked again",
    ),
    ("Rejected trades", "rejected orders ÷ all orders (buys and sells)"),
    (
        "USD per decision",
        "total cost of the calls to the model through OpenRouter ÷ decisions that made at "
        "least one call; a failed call costs nothing, and a decision with a reply of unknown "
        "cost is left out and counted as unknown. Offline stand-ins and baselines make no call",
    ),
    (
        "p95 latency",
        "nearest-rank 95th percentile of every call's latency: 95% of calls took at most this",
    ),
    ("Upstream providers", "who OpenRouter reported serving the calls, with counts"),
]

# How each baseline decides (agents/offline.py), in one plain clause.
BASELINE_RULES = {
    "baseline-random": "bets on one to three markets picked at random each week, on a random "
    "side, with a random stake",
    "baseline-market": "backs the favourite of the three highest-volume markets each week, "
    "staking so that its implied confidence equals the favourite's price",
}


def baseline_rule(model: BenchmarkModel) -> str:
    """Return how baseline `model` decides, as a clause ("backs the favourite …")."""
    return BASELINE_RULES.get(model.internal_id, "follows a fixed rule instead of a model")


def p95(values: list[int]) -> int | None:
    """Return the nearest-rank 95th percentile of `values`, or None when there are none.

    The value at rank ⌈0.95 × n⌉ of the sorted values: at least 95% of them are ≤ it, and it
    is always one of them (no interpolation).
    """
    if not values:
        return None
    ordered = sorted(values)
    return ordered[math.ceil(0.95 * len(ordered)) - 1]


@dataclass
class Usage:
    """How one (model, offline or not) row's agents answered, traded and cost: the counts
    behind the ratios of the module docstring."""

    valid_answers: int = 0
    holds: int = 0
    answered: int = 0  # decisions that got at least one reply
    malformed_first: int = 0
    orders: int = 0
    rejected: int = 0
    cost: Decimal = field(default_factory=Decimal)
    costed: int = 0  # decisions that made a call, all of known cost
    unknown_cost: int = 0  # decisions that made a call of unknown cost
    latencies: list[int] = field(default_factory=list)  # of the calls, in ms
    providers: Counter[str] = field(default_factory=Counter)
    # The model version each answered call says it ran (OpenRouter's `model` in the reply),
    # and the reasoning tokens of the calls that report them.
    response_models: Counter[str] = field(default_factory=Counter)
    reasoning_tokens: list[int] = field(default_factory=list)

    @property
    def hold_share(self) -> float | None:
        return self.holds / self.valid_answers if self.valid_answers else None

    @property
    def malformed_rate(self) -> float | None:
        return self.malformed_first / self.answered if self.answered else None

    @property
    def rejected_share(self) -> float | None:
        return self.rejected / self.orders if self.orders else None

    @property
    def usd_per_decision(self) -> Decimal | None:
        return self.cost / self.costed if self.costed else None

    @property
    def p95_latency_ms(self) -> int | None:
        return p95(self.latencies)

    @property
    def providers_seen(self) -> list[tuple[str, int]]:
        """(provider, attempts), most used first, ties by name."""
        return sorted(self.providers.items(), key=lambda item: (-item[1], item[0]))

    @property
    def models_seen(self) -> list[tuple[str, int]]:
        """(model version a reply named, calls), most used first, ties by name."""
        return sorted(self.response_models.items(), key=lambda item: (-item[1], item[0]))

    @property
    def reasoning_share(self) -> float | None:
        """The share of the calls reporting reasoning tokens that spent any."""
        if not self.reasoning_tokens:
            return None
        return sum(1 for tokens in self.reasoning_tokens if tokens > 0) / len(self.reasoning_tokens)

    @property
    def median_reasoning_tokens(self) -> float | None:
        return statistics.median(self.reasoning_tokens) if self.reasoning_tokens else None


def usage_by_key(
    agent_keys: Mapping[int, Key], *, agents: QuerySet[Any] | None = None
) -> dict[Key, Usage]:
    """Return the Usage of each row key, given each agent's key ({agent id: key}); `agents`,
    a query of exactly those agents' ids, filters faster than the list of hundreds of ids.

    Three queries whatever the number of agents: decisions and trades are counted in the
    database, and the attempts are read as small tuples (no prompt or response text), since
    the first answer of a decision and a percentile need them one by one.
    """
    usage: dict[Key, Usage] = {key: Usage() for key in agent_keys.values()}
    if not agent_keys:
        return usage
    ids: Collection[int] | QuerySet[Any] = list(agent_keys) if agents is None else agents
    _add_counts(usage, agent_keys, ids)
    _add_attempts(usage, agent_keys, _attempt_rows(ids))
    return usage


def _add_counts(
    usage: dict[Key, Usage], agent_keys: Mapping[int, Key], ids: Collection[int] | QuerySet[Any]
) -> None:
    """Add each agent's valid answers, HOLDs, orders and rejected orders to its row."""
    # A missing outside submission is a HOLD by rule, not an answer (like a parse failure).
    done = Q(status=Decision.Status.DONE, parse_failed=False, no_submission=False) & ~Q(action="")
    for agent_id, valid, holds in (
        Decision.objects.filter(agent_id__in=ids)
        .order_by()
        .values("agent_id")
        .annotate(
            valid=Count("pk", filter=done),
            holds=Count("pk", filter=done & Q(action=Decision.Action.HOLD)),
        )
        .values_list("agent_id", "valid", "holds")
    ):
        row = usage[agent_keys[agent_id]]
        row.valid_answers += valid
        row.holds += holds
    for agent_id, orders, rejected in (
        Trade.objects.filter(agent_id__in=ids)
        .order_by()
        .values("agent_id")
        .annotate(orders=Count("pk"), rejected=Count("pk", filter=Q(status="rejected")))
        .values_list("agent_id", "orders", "rejected")
    ):
        row = usage[agent_keys[agent_id]]
        row.orders += orders
        row.rejected += rejected


def _attempt_rows(ids: Collection[int] | QuerySet[Any]) -> QuerySet[Any]:
    """The agents' attempts as small tuples, each decision's in order: (decision id, agent id,
    answered, malformed, called, failed call, cost, latency, upstream provider, the model
    version the reply named, reasoning tokens)."""
    return (
        DecisionAttempt.objects.filter(decision__agent_id__in=ids)
        .annotate(
            # A reply came back: it was parsed, or it failed to parse. A failed call, or an
            # attempt that broke before any reply, answered nothing.
            answered=ExpressionWrapper(
                Q(valid=True) | ~Q(parse_error=""), output_field=BooleanField()
            ),
            failed_call=ExpressionWrapper(~Q(api_error=""), output_field=BooleanField()),
            malformed=ExpressionWrapper(~Q(parse_error=""), output_field=BooleanField()),
            called=ExpressionWrapper(
                Q(responder=Decision.Responder.OPENROUTER), output_field=BooleanField()
            ),
        )
        .order_by("decision_id", "number")
        .values_list(
            "decision_id",
            "decision__agent_id",
            "answered",
            "malformed",
            "called",
            "failed_call",
            "cost_usd",
            "latency_ms",
            "upstream_provider",
            "response_model",
            "reasoning_tokens",
        )
    )


def _add_attempts(
    usage: dict[Key, Usage], agent_keys: Mapping[int, Key], attempts: QuerySet[Any]
) -> None:
    """Add the attempts' first answers, costs, latencies and providers to their agents' rows."""
    # Each decision's row and its cost so far (None once an attempt's cost is unknown).
    decisions: dict[int, tuple[Usage, Decimal | None]] = {}
    first_answer_seen: set[int] = set()
    for (
        decision_id,
        agent_id,
        answered,
        malformed,
        called,
        failed_call,
        cost,
        latency,
        provider,
        response_model,
        reasoning_tokens,
    ) in attempts:
        row = usage[agent_keys[agent_id]]
        if answered and decision_id not in first_answer_seen:
            first_answer_seen.add(decision_id)
            row.answered += 1
            row.malformed_first += int(bool(malformed))
        if not called:
            continue
        if cost is None and failed_call:
            cost = Decimal(0)  # a refused or failed call is not billed; only a reply's cost counts
        _, so_far = decisions.get(decision_id, (row, Decimal(0)))
        decisions[decision_id] = (row, None if so_far is None or cost is None else so_far + cost)
        if latency is not None:
            row.latencies.append(latency)
        if provider:
            row.providers[provider] += 1
        if response_model:
            row.response_models[response_model] += 1
        if reasoning_tokens is not None:
            row.reasoning_tokens.append(reasoning_tokens)
    for row, total in decisions.values():
        if total is None:
            row.unknown_cost += 1
        else:
            row.costed += 1
            row.cost += total


def model_bets(*, model: BenchmarkModel) -> QuerySet[Trade]:
    """Return the model's executed bets (buys), newest first, with market and cohort."""
    return (
        Trade.objects.filter(agent__model=model, kind=Trade.Kind.BUY, status=Trade.Status.EXECUTED)
        .select_related("market", "agent__cohort")
        .defer("market__raw", "market__description")
        .order_by("-created_at", "-order_index")
    )
