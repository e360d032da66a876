"""The analytics' reads: the leaderboard rows of a scope, its resolved bets as columns, and the
markets each row's runs showed (the questions of the coverage-adjusted Alpha)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date

import numpy as np
from django.db import connection
from django.db.models import Exists, FloatField, OuterRef, QuerySet
from django.db.models.functions import Cast
from numpy.typing import NDArray

from agents.models import BenchmarkModel
from arena.models import Agent, Decision, SnapshotMarket, Trade
from arena.selectors.standings import agents_in_scope, offline_agent_ids
from markets.models import Market
from scoring.alpha import bet_alphas

# Per row index, for each run one of the row's agents decided in, in the order of the weeks:
# (its week as the ordinal of its start (`Bets.week`), the resolved markets the run showed in
# ascending order, how many of the row's agents decided in it).
Questions = dict[int, list[tuple[int, NDArray[np.int64], int]]]


@dataclass(frozen=True)
class Scope:
    """The agents the analytics read, and the leaderboard rows they fall in."""

    agents: QuerySet[Agent]
    rows: list[tuple[BenchmarkModel, bool]]  # (model, offline), in the leaderboard's order
    row_of_agent: dict[int, int]  # agent id: index into `rows`
    cohort_of_agent: dict[int, int]  # agent id: cohort number


@dataclass
class Bets:
    """The resolved bets of the scope, as columns (one entry per bet)."""

    agent: NDArray[np.int64]
    row: NDArray[np.int64]  # index into the row keys
    cohort: NDArray[np.int64]  # cohort number
    run: NDArray[np.int64]
    # The week its decision was made in, as the ordinal of its start: the intervals' cluster
    # (every cohort active that week decides in its run, on one snapshot and one week's news).
    week: NDArray[np.int64]
    market: NDArray[np.int64]
    binary: NDArray[np.bool_]  # a two-outcome market (Yes/No, Over/Under, team v team)
    second_side: NDArray[np.bool_]  # the bet is on the second outcome of a binary market
    # The outcome its question asks of: −1 for a binary market's first (the frame of its
    # questions: YES of a Yes/No market), else a code of the outcome bet on.
    frame: NDArray[np.int64]
    category: NDArray[np.int64]  # index into `categories`
    in_universe: NDArray[np.bool_]  # the market was among the top 500 its run showed
    forecast: NDArray[np.float64]
    price: NDArray[np.float64]
    outcome: NDArray[np.float64]
    brier: NDArray[np.float64] = field(init=False)
    market_brier: NDArray[np.float64] = field(init=False)
    delta: NDArray[np.float64] = field(init=False)

    def __post_init__(self) -> None:
        self.brier, self.market_brier, self.delta = bet_alphas(
            self.forecast, self.price, self.outcome
        )


def analytics_scope(*, cohorts: str) -> Scope:
    """Return the agents of `cohorts` (a leaderboard scope: "all", "completed", "v1" or "v2",
    `standings.agents_in_scope`) and the rows they fall in. As the leaderboard
    (`standings.model_rows`): an active model with no agent in scope has one empty real row;
    one whose agents are all offline stand-ins has its offline row only."""
    agents = agents_in_scope(Agent.objects.all(), cohorts)
    lineup = list(BenchmarkModel.objects.all())
    lineup_order = {m.pk: number for number, m in enumerate(lineup)}
    by_pk = {m.pk: m for m in lineup}
    agent_rows = list(agents.order_by().values_list("pk", "model_id", "cohort__number"))
    offline = offline_agent_ids(agents.order_by().values("pk"))
    played = {(model_id, pk in offline) for pk, model_id, _ in agent_rows}
    seen = {model_id for model_id, _ in played}
    keys = sorted(
        played | {(m.pk, False) for m in lineup if m.active and m.pk not in seen},
        key=lambda k: (lineup_order[k[0]], k[1]),
    )
    index = {key: number for number, key in enumerate(keys)}
    return Scope(
        agents=agents,
        rows=[(by_pk[model_id], off) for model_id, off in keys],
        row_of_agent={pk: index[(model_id, pk in offline)] for pk, model_id, _ in agent_rows},
        cohort_of_agent={pk: number for pk, _, number in agent_rows},
    )


def _scored_bets(agents: QuerySet[Agent]) -> QuerySet[Trade]:
    return Trade.objects.filter(
        agent_id__in=agents.order_by().values("pk"),
        kind=Trade.Kind.BUY,
        status=Trade.Status.EXECUTED,
        brier_score__isnull=False,
        side_won__isnull=False,
        implied_confidence__isnull=False,
        price__isnull=False,
    )


def _ordinals(days: Sequence[date | str]) -> NDArray[np.int64]:
    """Each day's ordinal, the days as the cursor gives them (a date: on SQLite too, whose
    driver converts a column declared `date`; ISO text is read as well, should an expression
    hide the declaration); a week's bets share a day, so each distinct one is converted once."""
    ordinal = {
        day: (day if isinstance(day, date) else date.fromisoformat(day)).toordinal()
        for day in set(days)
    }
    return np.array([ordinal[day] for day in days], dtype=np.int64)


def _looked_up(table: dict[int, int], keys: NDArray[np.int64]) -> NDArray[np.int64]:
    """`table[k]` for every k of `keys` (each one of the table's keys; KeyError otherwise): one
    sorted search in numpy, where a dictionary lookup per bet costs Python a call each."""
    known = np.fromiter(table, np.int64, len(table))
    values = np.fromiter(table.values(), np.int64, len(table))
    if len(keys) and not len(known):
        raise KeyError("a key the table does not hold")
    order = np.argsort(known)
    at = order[np.minimum(np.searchsorted(known, keys, sorter=order), len(known) - 1)]
    if len(keys) and not np.array_equal(known[at], keys):
        raise KeyError("a key the table does not hold")
    found: NDArray[np.int64] = values[at]
    return found


def _sides(
    market_ids: Sequence[int], sides: Sequence[str], markets: dict[int, tuple[str, str | None]]
) -> tuple[NDArray[np.bool_], NDArray[np.bool_], NDArray[np.int64]]:
    """Per bet: whether its market has two outcomes, whether it is on the second of them, and
    the outcome its question asks of (`Bets.frame`); worked out once per distinct (market,
    side), `markets` giving each market's first outcome when it has two."""
    pair_of: dict[tuple[int, str], int] = {}
    pair = np.fromiter(
        (pair_of.setdefault(key, len(pair_of)) for key in zip(market_ids, sides, strict=True)),
        np.int64,
        len(market_ids),
    )
    outcome_codes: dict[str, int] = {}
    binary, second, frame = [], [], []
    for market_id, side in pair_of:
        first = markets[market_id][1]
        binary.append(first is not None)
        second.append(first is not None and side.lower() != first)
        frame.append(
            -1 if first is not None else outcome_codes.setdefault(side, len(outcome_codes))
        )
    return (
        np.array(binary, dtype=np.bool_)[pair],
        np.array(second, dtype=np.bool_)[pair],
        np.array(frame, dtype=np.int64)[pair],
    )


MARKETS_A_QUERY = 900  # ids in one `IN`: under SQLite's smallest limit of parameters (999)


def _markets_of(market_ids: Sequence[int]) -> dict[int, tuple[str, str | None]]:
    """Each market of `market_ids` (the bets' markets): its category and, for a
    two-outcome market, its first outcome in lower case, the frame its questions are asked in
    (YES of a Yes/No market; a bet's side is "YES", "NO" or the outcome's name). Read by id,
    a few hundred at a time: asking for the markets of the scope's bets would scan the bets
    again."""
    ids = sorted(set(market_ids))
    markets: dict[int, tuple[str, str | None]] = {}
    for start in range(0, len(ids), MARKETS_A_QUERY):
        for pk, category, outcomes in (
            Market.objects.filter(pk__in=ids[start : start + MARKETS_A_QUERY])
            .order_by()
            .values_list("pk", "category", "outcomes")
        ):
            two = isinstance(outcomes, list) and len(outcomes) == 2
            markets[pk] = (category or "", str(outcomes[0]).lower() if two else None)
    return markets


def resolved_bets(*, scope: Scope) -> tuple[Bets, list[str]]:
    """Return the scope's scored bets as columns, and the names of the categories their
    `category` column indexes (sorted)."""
    trades = _scored_bets(scope.agents)
    universe = SnapshotMarket.objects.filter(
        run_id=OuterRef("decision__run_id"), market_id=OuterRef("market_id"), rank__isnull=False
    )
    query = (
        trades.order_by()
        # Read as floats by the database: a Decimal per price, converted to a float here, would
        # cost a third of the read on SQLite.
        .annotate(in_universe=Exists(universe), price_float=Cast("price", FloatField()))
        .values_list(
            "agent_id",
            "decision__run_id",
            "decision__week_start",
            "market_id",
            "side",
            "price_float",
            "implied_confidence",
            "side_won",
            "in_universe",
        )
    )
    # The queryset's own SQL (its seal included), read by the cursor: Django's converters,
    # called per cell, cost twice the query on a year's 40,000 bets. The columns are numbers,
    # text and the week's date, as the drivers give them (`_ordinals`).
    sql, params = query.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    # Columns at once (one transpose), not a generator per column over 40,000 tuples.
    columns = list(zip(*rows, strict=True)) if rows else [()] * 9
    agent_ids, run_ids, weeks, market_ids, sides, prices, confidences, won, in_universe = columns
    markets = _markets_of(market_ids)
    categories = sorted({category for category, _ in markets.values()})
    category_index = {name: number for number, name in enumerate(categories)}
    agent = np.array(agent_ids, dtype=np.int64)
    market = np.array(market_ids, dtype=np.int64)
    binary, second_side, frame = _sides(market_ids, sides, markets)
    bets = Bets(
        agent=agent,
        row=_looked_up(scope.row_of_agent, agent),
        cohort=_looked_up(scope.cohort_of_agent, agent),
        run=np.array([r or 0 for r in run_ids], dtype=np.int64),
        week=_ordinals(weeks),
        market=market,
        binary=binary,
        second_side=second_side,
        frame=frame,
        category=_looked_up(
            {pk: category_index[category] for pk, (category, _) in markets.items()}, market
        ),
        in_universe=np.array(in_universe, dtype=np.bool_),
        forecast=np.array(confidences, dtype=np.float64),  # never null (filtered)
        price=np.array(prices, dtype=np.float64),  # never null (filtered)
        outcome=np.array(won, dtype=np.float64),
    )
    return bets, categories


def coverage_questions(*, scope: Scope) -> Questions:
    """Return, per row, the resolved markets of the top 500 each run showed, for every run one
    of the row's agents decided in: the questions of the coverage-adjusted Alpha."""
    agent_ids = scope.agents.order_by().values("pk")
    query = (
        SnapshotMarket.objects.filter(
            rank__isnull=False,
            market__resolution=Market.Resolution.RESOLVED,
            run_id__in=Decision.objects.filter(agent_id__in=agent_ids).order_by().values("run_id"),
        )
        .order_by()
        .values_list("run_id", "market_id")
    )
    # Two integer columns of ~50,000 rows a year: read by the cursor and split by run in numpy.
    sql, params = query.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        pairs = np.array(cursor.fetchall(), dtype=np.int64).reshape(-1, 2)
    pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]  # by run, then market
    runs, starts = np.unique(pairs[:, 0], return_index=True)
    # (With no pair at all, `split` still gives one empty part, and no run takes it.)
    shown = dict(zip(runs.tolist(), np.split(pairs[:, 1], starts[1:]), strict=False))
    deciding: Counter[tuple[int, int, int]] = Counter()  # (row, week, run): its agents
    for agent_id, run_id, week in (
        Decision.objects.filter(agent_id__in=agent_ids, run_id__isnull=False)
        .order_by()
        .values_list("agent_id", "run_id", "week_start")
        .distinct()
    ):
        if run_id in shown:
            deciding[(scope.row_of_agent[agent_id], week.toordinal(), run_id)] += 1
    seen: Questions = defaultdict(list)
    for (row, ordinal, run_id), agents in sorted(deciding.items()):
        seen[row].append((ordinal, shown[run_id], agents))
    return seen
