"""The analytics' reads: the leaderboard rows of a scope, its resolved bets as columns, and the
markets each row's runs showed (the questions of the coverage-adjusted Alpha).

A completed cohort's bets are kept in each process's cache between computations (`CohortBets`),
under a stamp of which of its bets are scored, which won and when the latest was scored: the
only things about a bet that change once it is made (`Stamp`). A cohort whose stamp moved (a
bet scored late, a market settled again) is read again; what a bet's market says (its
category, its outcomes) is read fresh every time. So a computation reads the bets of the
active cohorts and of the cohorts that moved, and takes the rest as they were."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from typing import Any

import numpy as np
from django.core.cache import caches
from django.db import connection
from django.db.models import (
    Case,
    Count,
    Exists,
    F,
    FloatField,
    Max,
    OuterRef,
    QuerySet,
    Sum,
    When,
)
from django.db.models.functions import Cast
from numpy.typing import NDArray

from agents.models import BenchmarkModel
from arena.models import Agent, Cohort, Decision, SnapshotMarket, Trade
from arena.seal import cache_part
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
    completed: QuerySet[Agent]  # those of `agents` whose cohort has completed


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
    completed = agents.filter(cohort__status=Cohort.Status.COMPLETED).order_by()
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
        completed=completed,
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
    market: NDArray[np.int64],
    side: NDArray[np.int64],
    side_names: Sequence[str],
    markets: dict[int, tuple[str, str | None]],
) -> tuple[NDArray[np.bool_], NDArray[np.bool_], NDArray[np.int64]]:
    """Per bet: whether its market has two outcomes, whether it is on the second of them, and
    the outcome its question asks of (`Bets.frame`); worked out once per distinct (market,
    side), the sides as codes into `side_names`, `markets` giving each market's first outcome
    when it has two."""
    radix = max(len(side_names), 1)
    pairs, pair = np.unique(market * radix + side, return_inverse=True)
    outcome_codes: dict[str, int] = {}
    binary, second, frame = [], [], []
    for market_id, side_code in zip(
        (pairs // radix).tolist(), (pairs % radix).tolist(), strict=True
    ):
        first, name = markets[market_id][1], side_names[side_code]
        binary.append(first is not None)
        second.append(first is not None and name.lower() != first)
        frame.append(
            -1 if first is not None else outcome_codes.setdefault(name, len(outcome_codes))
        )
    return (
        np.array(binary, dtype=np.bool_)[pair],
        np.array(second, dtype=np.bool_)[pair],
        np.array(frame, dtype=np.int64)[pair],
    )


MARKETS_A_QUERY = 900  # ids in one `IN`: under SQLite's smallest limit of parameters (999)


def _markets_of(market_ids: Sequence[int]) -> dict[int, tuple[str, str | None]]:
    """Each market of `market_ids` (the bets' markets): its category and, for a two-outcome
    market, its first outcome in lower case, the frame its questions are asked in (YES of a
    Yes/No market; a bet's side is "YES", "NO" or the outcome's name). Read by id: asking for
    the markets of the scope's bets would scan the bets again. On PostgreSQL the ids are one
    array parameter (lists of hundreds of ids cost it more to plan than to run); elsewhere a
    few hundred to a query."""
    ids = sorted(set(market_ids))
    table = Market._meta.db_table
    queries: list[tuple[str, Sequence[Any]]]
    if connection.vendor == "postgresql":
        # Only our own table's name is formatted in; the ids are a parameter.
        queries = [(f"SELECT id, category, outcomes FROM {table} WHERE id = ANY(%s)", [ids])]  # nosec B608
    else:
        queries = [
            Market.objects.filter(pk__in=ids[start : start + MARKETS_A_QUERY])
            .order_by()
            .values_list("pk", "category", "outcomes")
            .query.sql_with_params()
            for start in range(0, len(ids), MARKETS_A_QUERY)
        ]
    markets: dict[int, tuple[str, str | None]] = {}
    with connection.cursor() as cursor:
        for sql, params in queries:
            cursor.execute(sql, params)
            for pk, category, stored in cursor.fetchall():
                # The JSON as the driver gives it: text (decoded as the field would), or decoded.
                outcomes = json.loads(stored) if isinstance(stored, str) else stored
                two = isinstance(outcomes, list) and len(outcomes) == 2
                markets[pk] = (category or "", str(outcomes[0]).lower() if two else None)
    return markets


@dataclass(frozen=True)
class CohortBets:
    """Scored bets as the database gives them (`_read_bets`): what never changes about a bet
    once it is made (whose, which run and week, which market and side, at what price and
    confidence, whether the market was in the universe shown), and whether it won. What its
    market says (category, outcomes) is read with each computation instead. A completed
    cohort's are kept between computations (`_cohort_parts`)."""

    agent: NDArray[np.int64]
    run: NDArray[np.int64]
    week: NDArray[np.int64]  # the ordinal of its decision's week start
    market: NDArray[np.int64]
    side: NDArray[np.int64]  # index into `side_names`
    side_names: tuple[str, ...]
    in_universe: NDArray[np.bool_]
    forecast: NDArray[np.float64]
    price: NDArray[np.float64]
    outcome: NDArray[np.float64]

    def take(self, members: NDArray[np.intp]) -> CohortBets:
        """The bets at `members`."""
        return CohortBets(
            agent=self.agent[members],
            run=self.run[members],
            week=self.week[members],
            market=self.market[members],
            side=self.side[members],
            side_names=self.side_names,
            in_universe=self.in_universe[members],
            forecast=self.forecast[members],
            price=self.price[members],
            outcome=self.outcome[members],
        )

    @classmethod
    def joined(cls, parts: Sequence[CohortBets]) -> CohortBets:
        """The bets of every part, in turn, their sides coded anew over all of them."""
        side_code: dict[str, int] = {}
        sides = [
            np.array(
                [side_code.setdefault(name, len(side_code)) for name in part.side_names],
                dtype=np.int64,
            )[part.side]
            for part in parts
        ]

        def joined(column: list[NDArray[Any]], dtype: type[Any]) -> NDArray[Any]:
            return np.concatenate(column) if column else np.zeros(0, dtype=dtype)

        return CohortBets(
            agent=joined([p.agent for p in parts], np.int64),
            run=joined([p.run for p in parts], np.int64),
            week=joined([p.week for p in parts], np.int64),
            market=joined([p.market for p in parts], np.int64),
            side=joined(sides, np.int64),
            side_names=tuple(side_code),
            in_universe=joined([p.in_universe for p in parts], np.bool_),
            forecast=joined([p.forecast for p in parts], np.float64),
            price=joined([p.price for p in parts], np.float64),
            outcome=joined([p.outcome for p in parts], np.float64),
        )


# What `_cohort_parts` keeps for one seal state (`cache_part`): each completed cohort's part
# under the stamp of what it holds, by number. All of them in one cache entry (KEPT_KEY), so
# that the cache's count of entries never culls some of them.
Kept = dict[int, tuple["Stamp", CohortBets]]


@dataclass(frozen=True)
class Stamp:
    """What can still change about a completed cohort's scored bets: which are scored (how
    many, the sum of their ids), which of them won (the sum of their ids, and a sum of a
    product of two residues of each, so that bets starting and stopping to win with equal
    sums of ids still move it), and when the latest was scored (every scoring sets it to its
    time; a correction made by hand must too: docs/resolution.md)."""

    count: int = 0
    ids: int = 0
    won: int = 0
    won_mixed: int = 0
    scored_at: datetime | None = None

    def plus(self, other: Stamp) -> Stamp:
        latest = max((t for t in (self.scored_at, other.scored_at) if t is not None), default=None)
        return Stamp(
            self.count + other.count,
            self.ids + other.ids,
            self.won + other.won,
            self.won_mixed + other.won_mixed,
            latest,
        )


# Residues of a bet's id whose product is summed over the bets that won: below 2¹⁶ each, so a
# million bets' sum stays far inside 63 bits on every database.
_RESIDUES = (65_521, 65_519)


# The pickle names CohortBets and Stamp by module: the version moves when they do.
KEPT_KEY = "analytics-bets:v2"


def _stamps(scope: Scope) -> dict[int, Stamp]:
    """Each completed cohort's Stamp (by number). A bet scored late or settled again moves
    its cohort's; nothing else about a bet changes once it is made. One grouped query, by
    agent (grouping by cohort would join the agents)."""
    first, second = _RESIDUES
    grouped = (
        _scored_bets(scope.completed)
        .order_by()
        .values("agent_id")
        .annotate(
            n=Count("pk"),
            ids=Sum("pk"),
            won=Sum(Case(When(side_won=True, then="pk"), default=0)),
            won_mixed=Sum(
                Case(When(side_won=True, then=(F("pk") % first) * (F("pk") % second)), default=0)
            ),
            latest=Max("scored_at"),
        )
        .values_list("agent_id", "n", "ids", "won", "won_mixed", "latest")
    )
    stamps: dict[int, Stamp] = {}
    for agent_id, n, ids, won, won_mixed, latest in grouped:
        cohort = scope.cohort_of_agent[agent_id]
        own = Stamp(n, int(ids or 0), int(won or 0), int(won_mixed or 0), latest)
        stamps[cohort] = stamps.get(cohort, Stamp()).plus(own)
    return stamps


def _read_bets(trades: QuerySet[Trade]) -> list[tuple[Any, ...]]:
    """`trades` as rows of their ids and the columns of `CohortBets` (the side as its name)."""
    universe = SnapshotMarket.objects.filter(
        run_id=OuterRef("decision__run_id"), market_id=OuterRef("market_id"), rank__isnull=False
    )
    query = (
        trades.order_by()
        # Read as floats by the database: a Decimal per price, converted to a float here, would
        # cost a third of the read on SQLite.
        .annotate(in_universe=Exists(universe), price_float=Cast("price", FloatField()))
        .values_list(
            "pk",
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
        rows: list[tuple[Any, ...]] = cursor.fetchall()
    return rows


def _parts_of(rows: list[tuple[Any, ...]], scope: Scope) -> dict[int, tuple[CohortBets, Stamp]]:
    """The rows `_read_bets` gave, as one CohortBets per cohort (by number), each with the
    stamp of what it holds (its `scored_at` left unset: the rows do not carry it)."""
    if not rows:
        return {}
    # Columns at once (one transpose), not a generator per column over 40,000 tuples.
    ids, agents, runs, weeks, markets, sides, prices, confidences, won, shown = zip(
        *rows, strict=True
    )
    side_code: dict[str, int] = {}
    every = CohortBets(
        agent=np.array(agents, dtype=np.int64),
        run=np.array([r or 0 for r in runs], dtype=np.int64),
        week=_ordinals(weeks),
        market=np.array(markets, dtype=np.int64),
        side=np.fromiter(
            (side_code.setdefault(name, len(side_code)) for name in sides), np.int64, len(sides)
        ),
        side_names=(),
        in_universe=np.array(shown, dtype=np.bool_),
        forecast=np.array(confidences, dtype=np.float64),  # never null (filtered)
        price=np.array(prices, dtype=np.float64),  # never null (filtered)
        outcome=np.array(won, dtype=np.float64),
    )
    every = replace(every, side_names=tuple(side_code))
    bet_ids = np.array(ids, dtype=np.int64)
    first, second = _RESIDUES
    winning = every.outcome > 0.5
    mixed = (bet_ids % first) * (bet_ids % second)
    cohort = _looked_up(scope.cohort_of_agent, every.agent)
    # By cohort, and in each by the bet's id: a part's order, and so the order of every sum
    # over the bets, is the same whichever query read it (the database gives no order).
    order = np.lexsort((bet_ids, cohort))
    numbers, starts = np.unique(cohort[order], return_index=True)
    parts: dict[int, tuple[CohortBets, Stamp]] = {}
    for number, members in zip(numbers.tolist(), np.split(order, starts[1:]), strict=True):
        won_members = members[winning[members]]
        stamp = Stamp(
            count=len(members),
            ids=int(bet_ids[members].sum()),
            won=int(bet_ids[won_members].sum()),
            won_mixed=int(mixed[won_members].sum()),
        )
        parts[number] = (every.take(members), stamp)
    return parts


def _cohort_parts(scope: Scope) -> list[CohortBets]:
    """The scope's scored bets, a part per cohort in the cohorts' order: each completed
    cohort's as kept in this process's cache while its stamp has not moved, the rest read
    (and the completed ones among them kept). Nothing kept expires: a part's stamp says
    whether it still holds."""
    stamps = _stamps(scope)
    cache, seal = caches["default"], cache_part()
    found = cache.get(KEPT_KEY)
    entry: dict[str, Kept] = found if isinstance(found, dict) else {}
    before = entry.get(seal, {})
    kept = {
        cohort: part
        for cohort, (stamp, part) in before.items()
        if stamps.get(cohort) == stamp and isinstance(part, CohortBets)
    }
    missing = sorted(set(scope.cohort_of_agent.values()) - kept.keys())
    read: dict[int, tuple[CohortBets, Stamp]] = {}
    if missing:
        agents = scope.agents
        if kept:
            # By the shorter list of the two: the cohorts to read, or those kept.
            agents = (
                agents.filter(cohort__number__in=missing)
                if len(missing) <= len(kept)
                else agents.exclude(cohort__number__in=sorted(kept))
            )
        read = _parts_of(_read_bets(_scored_bets(agents)), scope)
    # A part is kept under the stamp of what it holds, counted from its own rows (a bet
    # scored, or a correction made and undone, between the stamps' query and the bets' read
    # cannot pair a part with another state's stamp), with the latest scoring time the
    # stamps' query saw before the read: a scoring during the read moves the stamp again.
    fresh = {
        cohort: (replace(own, scored_at=stamps[cohort].scored_at), part)
        for cohort, (part, own) in read.items()
        if cohort in stamps
    }
    if fresh:
        # Merged with what other scopes kept (a methodology's scope reads some cohorts only);
        # beside this seal's parts, only the latest other seal's are kept (the week's seal
        # and the open arena), so a seal that lifted is dropped at the next one.
        others = {part: k for part, k in entry.items() if part != seal}
        latest = dict(list(others.items())[-1:])
        cache.set(KEPT_KEY, {**latest, seal: before | fresh}, None)
    parts = kept | {cohort: part for cohort, (part, _) in read.items()}
    return [parts[cohort] for cohort in sorted(parts)]


def resolved_bets(*, scope: Scope) -> tuple[Bets, list[str]]:
    """Return the scope's scored bets as columns, and the names of the categories their
    `category` column indexes (sorted)."""
    read = CohortBets.joined(_cohort_parts(scope))
    markets = _markets_of(np.unique(read.market).tolist())
    categories = sorted({category for category, _ in markets.values()})
    category_index = {name: number for number, name in enumerate(categories)}
    binary, second_side, frame = _sides(read.market, read.side, read.side_names, markets)
    bets = Bets(
        agent=read.agent,
        row=_looked_up(scope.row_of_agent, read.agent),
        cohort=_looked_up(scope.cohort_of_agent, read.agent),
        run=read.run,
        week=read.week,
        market=read.market,
        binary=binary,
        second_side=second_side,
        frame=frame,
        category=_looked_up(
            {pk: category_index[category] for pk, (category, _) in markets.items()}, read.market
        ),
        in_universe=read.in_universe,
        forecast=read.forecast,
        price=read.price,
        outcome=read.outcome,
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
