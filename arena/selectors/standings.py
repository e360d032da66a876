"""Reads of the arena: standings, leaderboards, curves. One definition of each metric:

- **Total value** = cash + Σ open positions marked to market (side-correct prices; a closed,
  unresolved market keeps its last usable price) — 001 §2.4.
- **Return %** = (total value − $10,000) / $10,000 × 100; a model's return is the mean of its
  agents' cohort returns — 001 §2.4, Appendix A.
- **Brier** = mean of the Brier scores of all the model's resolved bets, pooled across
  cohorts (not a mean of cohort means) — 001 §1.4. Cancelled markets are not scored.
- **Win rate** = resolved bets whose side won / resolved bets — 001 §3.

Offline stand-ins are never pooled with the real models: an agent counts as **offline** when
any of its decisions was answered by an offline agent (a mixed agent is offline as a whole, so
no real figure ever carries an offline answer), and every per-model figure is kept per (model,
offline or not), each offline figure labelled "offline".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db.models import Case, Count, Prefetch, Q, QuerySet, When

from agents.models import BenchmarkModel
from arena import money
from arena.models import (
    METHODOLOGY_VERSIONS,
    Agent,
    Cohort,
    Decision,
    PanelForecast,
    Position,
    Trade,
)
from arena.seal_rules import positions_open
from arena.selectors import models as model_stats
from arena.valuation import position_mark, positions_value_by_agent
from scoring.aggregates import mean_brier, win_rate

METRIC_DEFINITIONS = [
    ("Total value", "cash + open positions marked to market at side-correct prices"),
    ("Return", "(total value − $10,000) ÷ $10,000; a model's is the mean over its cohorts"),
    ("Brier", "mean over every resolved bet of (implied confidence − side won)², pooled"),
    ("Implied confidence", "bet ÷ (25% of cash at bet time), capped at 1"),
    ("Win rate", "resolved bets whose side won ÷ resolved bets"),
    (
        "Offline",
        "an agent any of whose decisions a deterministic offline stand-in answered, not the "
        "real model; its figures are never pooled with the real model's",
    ),
]


# Every figure of a model's row: performance, then answers, trades, cost and latency.
MODEL_DEFINITIONS = METRIC_DEFINITIONS + model_stats.USAGE_DEFINITIONS


@dataclass
class AgentStanding:
    agent: Agent
    cash: Decimal
    positions_value: Decimal
    open_positions: int
    offline: bool = False
    scores: list[float] = field(default_factory=list)  # Brier of each resolved bet
    wins: int = 0

    @property
    def brier(self) -> float | None:
        return mean_brier(scores=self.scores)

    @property
    def resolved_bets(self) -> int:
        return len(self.scores)

    @property
    def total_value(self) -> Decimal:
        return self.cash + self.positions_value

    @property
    def return_percent(self) -> Decimal:
        start: Decimal = self.agent.cohort.starting_balance
        return (self.total_value - start) / start * 100

    @property
    def win_rate(self) -> float | None:
        return win_rate(wins=self.wins, resolved=self.resolved_bets)


def _bet_scores(agent_filter: Q) -> dict[int, list[tuple[float, bool]]]:
    scores: dict[int, list[tuple[float, bool]]] = defaultdict(list)
    for agent_id, score, won in (
        Trade.objects.filter(
            agent_filter,
            kind=Trade.Kind.BUY,
            status=Trade.Status.EXECUTED,
            brier_score__isnull=False,
        )
        .order_by()
        .values_list("agent_id", "brier_score", "side_won")
    ):
        scores[agent_id].append((float(score or 0.0), bool(won)))
    return scores


# A decision an offline stand-in answered, in any of its rounds: `Decision.responder` names
# only the latest round, so an offline round later retried through OpenRouter is found by its
# attempts.
ANSWERED_OFFLINE = Q(responder=Decision.Responder.OFFLINE) | Q(
    attempts__responder=Decision.Responder.OFFLINE
)


def offline_agent_ids(agent_ids: Collection[int] | QuerySet[Any]) -> set[int]:
    """Return those of `agent_ids` (ids, or a query of them) with any decision answered by
    an offline agent."""
    return set(
        Decision.objects.filter(ANSWERED_OFFLINE, agent_id__in=agent_ids)
        .order_by()
        .values_list("agent_id", flat=True)
        .distinct()
    )


def agent_standings(*, agents: QuerySet[Agent]) -> list[AgentStanding]:
    """Return each agent's standing now (a constant number of queries, whatever the count).

    `offline` is set when any of the agent's decisions was answered offline (module docstring).
    """
    agent_list = list(agents)
    # Each cohort and model is read once, not once per agent: a year holds hundreds of agents
    # of a few dozen cohorts and a dozen models.
    cohorts = Cohort.objects.in_bulk({a.cohort_id for a in agent_list})
    lineup = BenchmarkModel.objects.in_bulk({a.model_id for a in agent_list})
    for agent in agent_list:
        agent.cohort = cohorts[agent.cohort_id]
        agent.model = lineup[agent.model_id]
    # The agents' own query as a subquery, not a list of their ids: a list of hundreds of
    # parameters is re-prepared value by value and re-parsed on every request.
    ids = agents.order_by().values("pk")
    open_positions = Position.objects.filter(positions_open(), agent_id__in=ids)
    values = positions_value_by_agent(open_positions)
    counts: dict[int, int] = dict(
        open_positions.order_by()
        .values_list("agent_id")
        .annotate(n=Count("pk"))
        .values_list("agent_id", "n")
    )
    scores = _bet_scores(Q(agent_id__in=ids))
    offline = offline_agent_ids(ids)
    standings = []
    for agent in agent_list:
        agent_scores = scores.get(agent.pk, [])
        standings.append(
            AgentStanding(
                agent=agent,
                cash=agent.cash,
                positions_value=money.cents_down(values.get(agent.pk, Decimal(0))),
                open_positions=counts.get(agent.pk, 0),
                offline=agent.pk in offline,
                scores=[s for s, _ in agent_scores],
                wins=sum(1 for _, won in agent_scores if won),
            )
        )
    return sorted(standings, key=lambda s: (s.agent.model.is_baseline, -s.total_value))


@dataclass
class ModelRow:
    """A model's figures over its agents of one kind: answered by the real model (through
    OpenRouter, or a baseline's own rule) or, with `offline`, by its offline stand-in.

    `usage` holds the answer, trade, cost and latency figures (arena/selectors/models.py).
    """

    model: BenchmarkModel
    cohorts: int = 0
    returns: list[Decimal] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    wins: int = 0
    bankrupt: int = 0
    offline: bool = False
    agents: list[AgentStanding] = field(default_factory=list)  # newest cohort first
    usage: model_stats.Usage = field(default_factory=model_stats.Usage)

    @property
    def avg_return(self) -> Decimal | None:
        return sum(self.returns, Decimal(0)) / len(self.returns) if self.returns else None

    @property
    def brier(self) -> float | None:
        return mean_brier(scores=self.scores)

    @property
    def resolved_bets(self) -> int:
        return len(self.scores)

    @property
    def win_rate(self) -> float | None:
        return win_rate(wins=self.wins, resolved=len(self.scores))


# Which cohorts a leaderboard's figures come from: every one (running cohorts marked to market
# now), only the completed ones, whose figures no longer move, or only those of one
# methodology version (docs/methodology.md): "all" pools both versions' v1 figures, which v2
# keeps with their definitions.
COHORT_SCOPES = ("all", "completed", "v1", "v2")


def agents_in_scope(agents: QuerySet[Agent], cohorts: str) -> QuerySet[Agent]:
    """The `agents` whose cohorts a leaderboard scope (`COHORT_SCOPES`) reads."""
    if cohorts == "completed":
        return agents.filter(cohort__status=Cohort.Status.COMPLETED)
    if cohorts in METHODOLOGY_VERSIONS:
        return agents.filter(cohort__methodology_version=cohorts)
    return agents


def model_rows(*, model: BenchmarkModel | None = None, cohorts: str = "all") -> list[ModelRow]:
    """Return a row per (model, offline or not) in lineup order, real before offline: every
    model's, or only `model`'s. A constant number of queries, whatever the data size.

    With cohorts="completed" only the agents of completed cohorts count, with "v1" or "v2"
    only those of cohorts of that methodology: every figure of the row (returns, Brier, win
    rate, cohorts, usage) is theirs alone.

    A model has a row per kind of agent it has, real and offline (never pooled: see the module
    docstring); an active model with no agent yet — or `model` itself, asked for by name —
    has one empty real row.
    """
    models = [model] if model is not None else list(BenchmarkModel.objects.all())
    agents = Agent.objects.all() if model is None else Agent.objects.filter(model=model)
    agents = agents_in_scope(agents, cohorts)
    lineup_order = {m.pk: number for number, m in enumerate(models)}
    rows: dict[tuple[int, bool], ModelRow] = {}
    standings = agent_standings(agents=agents)
    for standing in standings:
        key = (standing.agent.model_id, standing.offline)
        if key not in rows:
            rows[key] = ModelRow(model=standing.agent.model, offline=standing.offline)
        row = rows[key]
        row.cohorts += 1
        row.returns.append(standing.return_percent)
        row.bankrupt += int(standing.agent.status == Agent.Status.BANKRUPT)
        row.scores.extend(standing.scores)
        row.wins += standing.wins
        row.agents.append(standing)
    usage = model_stats.usage_by_key(
        {s.agent.pk: (s.agent.model_id, s.offline) for s in standings},
        agents=agents.order_by().values("pk"),
    )
    for key, row in rows.items():
        row.usage = usage[key]
        row.agents.sort(key=lambda s: -s.agent.cohort.number)
    seen = {model_id for model_id, _ in rows}
    for m in models:
        if (m.active or model is not None) and m.pk not in seen:
            rows[(m.pk, False)] = ModelRow(model=m)
    return sorted(rows.values(), key=lambda r: (lineup_order[r.model.pk], r.offline))


# How each metric ranks the LLM rows, best first: (sort key of a row's figure, whether a
# higher figure is better). A lower Brier is better calibration; a higher return, win rate
# and more resolved bets (more evidence) rank first.
LEADERBOARD_SORTS: dict[str, tuple[Callable[[ModelRow], float | Decimal | None], bool]] = {
    "brier": (lambda r: r.brier, False),
    "return": (lambda r: r.avg_return, True),
    "win_rate": (lambda r: r.win_rate, True),
    "resolved_bets": (lambda r: r.resolved_bets, True),
    "cohorts": (lambda r: r.cohorts, True),
    "cost": (lambda r: r.usage.usd_per_decision, False),
    "latency": (lambda r: r.usage.p95_latency_ms, False),
    "malformed": (lambda r: r.usage.malformed_rate, False),
}
"""The v1 figures a board can be sorted by: (the row's figure, higher first). The analytics'
figures sort too, by `rows_ranked` with the figures the analytics give (ANALYTICS_SORTS):
Alpha, and P(rank 1), the share of the bootstrap's worlds in which the row ranks first."""
ALPHA_SORT = "alpha"
ANALYTICS_SORTS = (ALPHA_SORT, "p_first")


def leaderboard(
    *, sort: str = "brier", cohorts: str = "all", baselines: bool = True
) -> tuple[list[ModelRow], list[ModelRow]]:
    """Return (LLM rows ranked, baseline rows) (rows: `model_rows`, over `cohorts`).

    Ranked by `sort`, one of LEADERBOARD_SORTS (an unknown one ranks by Brier): pooled Brier
    lower first, average return, win rate and resolved bets higher first; rows without the
    figure last. Offline rows rank after every real row. Baselines are never ranked among the
    LLMs; with baselines=False there are none. Outside agents are ranked on their own board
    (`outside_board`), unless staff admitted them to this one.
    """
    llms, baseline_rows, _ = boards(sort=sort, cohorts=cohorts, baselines=baselines)
    return llms, baseline_rows


def boards(
    *, sort: str = "brier", cohorts: str = "all", baselines: bool = True
) -> tuple[list[ModelRow], list[ModelRow], list[ModelRow]]:
    """Return (the main board ranked, the baselines, the outside agents' board ranked) from
    one read of the rows: `leaderboard`'s two, and `outside_board`'s."""
    visible = model_rows(cohorts=cohorts)
    llms = [r for r in visible if not r.model.is_baseline and not on_outside_board(r.model)]
    baseline_rows = [r for r in visible if r.model.is_baseline] if baselines else []
    outside = [r for r in visible if on_outside_board(r.model)]
    return _ranked(llms, sort), baseline_rows, _ranked(outside, sort)


def on_outside_board(model: BenchmarkModel) -> bool:
    """Whether the model is ranked on the outside agents' board: an outside agent that staff
    have not admitted to the main leaderboard."""
    return model.on_outside_board


def outside_board(*, sort: str = "brier", cohorts: str = "all") -> list[ModelRow]:
    """Return the outside agents not admitted to the main board, ranked as the main board
    ranks (`leaderboard`), their figures computed by the same code."""
    return boards(sort=sort, cohorts=cohorts, baselines=False)[2]


def _ranked(rows: list[ModelRow], sort: str) -> list[ModelRow]:
    figure, higher_first = LEADERBOARD_SORTS.get(sort, LEADERBOARD_SORTS["brier"])
    return rows_ranked(rows, figure, higher_first=higher_first)


def rows_ranked(
    rows: list[ModelRow],
    figure: Callable[[ModelRow], float | Decimal | None],
    *,
    higher_first: bool,
) -> list[ModelRow]:
    """Return `rows` in the order of `figure` (higher first, or lower), rows without it last
    and the offline rows after every real row; ties keep the lineup's order."""

    def rank(row: ModelRow) -> tuple[bool, bool, float | Decimal]:
        value = figure(row)
        if value is None:
            return (row.offline, True, 0)
        return (row.offline, False, -value if higher_first else value)

    return sorted(rows, key=rank)  # stable: ties keep the lineup's order


@dataclass(frozen=True)
class BaselineNote:
    """A baseline that beats the best real LLM row on Brier and/or average return: what it
    does, and the best model row it beats on each (None where it does not)."""

    baseline: ModelRow
    rule: str
    best_brier: ModelRow | None
    best_return: ModelRow | None


def baseline_notes(*, llms: list[ModelRow], baselines: list[ModelRow]) -> list[BaselineNote]:
    """Return a note for each baseline row whose pooled Brier is lower, or whose average
    return is higher, than the best real (not offline) LLM row's. Offline stand-ins are not
    the models, so they are the mark only where no real row has the figure (the demo, or
    before any key is set), and the note then names them as stand-ins."""
    real = [r for r in llms if not r.offline]
    briers = [r for r in real if r.brier is not None] or [r for r in llms if r.brier is not None]
    returns = [r for r in real if r.avg_return is not None] or [
        r for r in llms if r.avg_return is not None
    ]
    best_brier = min(briers, key=lambda r: r.brier or 0.0) if briers else None
    best_return = max(returns, key=lambda r: r.avg_return or 0) if returns else None
    notes = []
    for row in baselines:
        beats_brier = (
            best_brier is not None
            and row.brier is not None
            and best_brier.brier is not None
            and row.brier < best_brier.brier
        )
        beats_return = (
            best_return is not None
            and row.avg_return is not None
            and best_return.avg_return is not None
            and row.avg_return > best_return.avg_return
        )
        if beats_brier or beats_return:
            notes.append(
                BaselineNote(
                    baseline=row,
                    rule=model_stats.baseline_rule(row.model),
                    best_brier=best_brier if beats_brier else None,
                    best_return=best_return if beats_return else None,
                )
            )
    return notes


def cohort_list() -> QuerySet[Cohort]:
    return Cohort.objects.annotate(
        agent_count=Count("agents", distinct=True),
        open_positions=Count(
            "agents__positions", filter=positions_open("agents__positions__"), distinct=True
        ),
    ).order_by("-week_start")


# A decision's prompts run to ~60 KB; the lists of decisions show none of them.
LIST_DEFERRED = ("system_prompt", "user_prompt", "traceback", "parsed")
# A market's Gamma record and description run to kilobytes (decoded JSON, for `raw`); the
# rows that show a trade's or a position's market show neither.
MARKET_DEFERRED = ("market__raw", "market__description")


def cohort_decisions(*, cohort: Cohort) -> QuerySet[Decision]:
    return (
        cohort.decisions.select_related("agent__model")
        .defer(*LIST_DEFERRED)
        .order_by("-week_start", "agent__model__kind", "agent__model__display_order")
    )


def agent_decisions(*, agent: Agent) -> QuerySet[Decision]:
    return (
        agent.decisions.defer(*LIST_DEFERRED)
        .order_by("-week_start")
        .annotate(
            executed=Count("trades", filter=Q(trades__status="executed")),
            rejected=Count("trades", filter=Q(trades__status="rejected")),
        )
    )


@dataclass(frozen=True)
class PositionRow:
    """A position with, while it is open, the side-correct price it is marked at now and its
    value at that price (shares × price): the parts of the agent's positions value."""

    position: Position
    price_now: Decimal | None = None
    value_now: Decimal | None = None


# Open positions first, then the newest opened; the id breaks ties between the positions one
# decision opened together, so pages of a list neither repeat nor skip one.
POSITION_ORDER = (Case(When(status=Position.Status.OPEN, then=0), default=1), "-opened_at", "-pk")
# Trades newest decision first, a decision's orders in their order; the id breaks ties.
TRADE_ORDER = ("-created_at", "order_index", "-pk")


def agent_positions(*, agent: Agent) -> list[PositionRow]:
    """Return the agent's positions (`POSITION_ORDER`), the open ones marked to market now."""
    rows = []
    positions = agent.positions.select_related("market").defer(*MARKET_DEFERRED)
    for position in positions.order_by(*POSITION_ORDER):
        if position.status != Position.Status.OPEN:
            rows.append(PositionRow(position))
            continue
        market = position.market
        price = position_mark(
            side=position.side, outcomes=market.outcomes,
            prices=market.outcome_prices, last_open_prices=market.last_open_prices,
            closed=market.closed, last_price=position.last_price,
            shares=position.shares, cost_basis=position.cost_basis,
        )  # fmt: skip
        rows.append(PositionRow(position, price, position.shares * price))
    return rows


def agent_trades(*, agent: Agent) -> QuerySet[Trade]:
    return (
        agent.trades.select_related("market", "decision")
        .defer(*MARKET_DEFERRED, *(f"decision__{name}" for name in LIST_DEFERRED))
        .order_by(*TRADE_ORDER)
    )


def decision_detail(*, decision_id: int) -> Decision:
    return (
        Decision.objects.select_related("agent__model", "agent__cohort", "run")
        .prefetch_related(
            "attempts",
            Prefetch(
                "trades",
                queryset=Trade.objects.select_related("market", "position").defer(*MARKET_DEFERRED),
            ),
            Prefetch(
                "forecasts",
                queryset=PanelForecast.objects.select_related("market").defer(*MARKET_DEFERRED),
            ),
        )
        .get(pk=decision_id)
    )
