"""Reads of methodology v2's panel figures: each model's scores over the weekly forecast panel's
resolved questions (scoring/panel.py), with n, coverage and 95% intervals, and the references
on exactly the same questions (docs/methodology.md, "Methodology v2").

A row is a model, its offline stand-in apart from it as everywhere (a forecast counts as the
offline row's when an offline stand-in answered its decision). Per question, a row's forecast
is the mean of its agents' stated ones, imputed at b when none stated one. The LLM crowd is
the median, per question, of the LLM rows' stated forecasts. Intervals are t intervals of the
mean of the per-question values, clustered by week (every cohort of a week answers in its run)
and by market (`scoring.statistics.pooled_mean_interval`).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from decimal import Decimal
from typing import Any

from agents.models import BenchmarkModel
from arena.models import PanelForecast, Trade
from arena.selectors.standings import offline_agent_ids
from scoring.alpha import bets_to_separate
from scoring.murphy import Murphy, murphy_decomposition
from scoring.panel import PanelScores, log_score, panel_scores, question_forecast
from scoring.say_do import ReliabilityBin, SayDo, StatedBet, reliability, say_do
from scoring.statistics import (
    MIN_WEEKS_TO_CLAIM,
    Interval,
    holm_adjusted,
    pooled_mean_interval,
    pooled_mean_test,
    within_range,
)

CROWD = "LLM crowd"
MIN_WEEKS = MIN_WEEKS_TO_CLAIM  # weeks of questions under which no difference is called

Question = tuple[date, str]  # (week, market id)


@dataclass
class _Answers:
    """One row's answers to each question: its agents' stated forecasts, their b's, the
    outcome."""

    stated: dict[Question, list[float | None]] = field(default_factory=lambda: defaultdict(list))
    prices: dict[Question, list[float]] = field(default_factory=lambda: defaultdict(list))
    outcomes: dict[Question, int] = field(default_factory=dict)

    def add(
        self, question: Question, *, stated: Decimal | None, price: Decimal, outcome: int
    ) -> None:
        """One agent's answer to `question`: its stated forecast (None: imputed), b and the
        outcome."""
        self.stated[question].append(float(stated) if stated is not None else None)
        self.prices[question].append(float(price))
        self.outcomes[question] = outcome


@dataclass(frozen=True)
class PanelRow:
    """A row's panel figures: its scores, and the interval of each mean."""

    label: str
    model: BenchmarkModel | None  # None for the LLM crowd
    offline: bool
    scores: PanelScores
    brier: Interval
    log_score: Interval
    alpha: Interval
    # Each resolved question's Brier, for the pairwise comparisons.
    question_brier: dict[Question, float] = field(default_factory=dict, repr=False, compare=False)
    # Its forecasts' Murphy decomposition, in the YES frame (every question a YES forecast).
    murphy: Murphy | None = None
    # Its place in its own table (the real rows, or the offline stand-ins), by Brier; None
    # when not ranked (under 80% coverage) or not an LLM row.
    rank: int | None = None

    @property
    def ranked(self) -> bool:
        return self.scores.ranked


@dataclass(frozen=True)
class PanelComparison:
    """Two LLM rows' panel Brier compared on the questions both were scored on: the mean of
    the per-question differences (first − second: below 0, the first forecast better), its
    interval and t test clustered by week and market, and the p-value after Holm's
    correction over the board's comparisons. `weeks` is how many weeks the questions span:
    under MIN_WEEKS no difference is called, whatever its p-value (too early to tell)."""

    first: str
    second: str
    offline: bool
    questions: int
    weeks: int
    difference: Interval
    p_value: float | None
    holm_p: float | None
    # The shared questions the power analysis needs to tell the two apart, if the observed
    # difference is the true one (`scoring.alpha.bets_to_separate` on the paired differences:
    # 80% power, one-sided 5%); None when the difference or its spread is 0.
    questions_needed: float | None = None

    @property
    def verdict(self) -> str:
        if self.weeks < MIN_WEEKS or self.holm_p is None:
            return "too early to tell"
        if self.holm_p >= 0.05:
            return "no difference shown"
        return f"{self.first if self.difference.estimate < 0 else self.second} forecast better"


@dataclass(frozen=True)
class PanelBoard:
    llms: list[PanelRow]  # ranked rows by Brier, then the unranked ones
    references: list[PanelRow]  # the baselines, and the LLM crowd
    outside: list[PanelRow]
    questions: int  # resolved panel questions with a reference price
    comparisons: list[PanelComparison] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.llms or self.references or self.outside)


def panel_board() -> PanelBoard:
    """Every row's panel figures over the resolved questions (three queries). An agent is
    its model's offline stand-in's when any of its decisions was answered offline, as
    everywhere (`standings.offline_agent_ids`)."""
    rows = (
        PanelForecast.objects.filter(outcome__isnull=False, reference_price__isnull=False)
        .order_by()
        .values_list(
            "agent__model_id", "agent_id", "week_start", "market__polymarket_id",
            "probability", "reference_price", "outcome",
        )
    )  # fmt: skip
    stand_ins = offline_agent_ids(PanelForecast.objects.order_by().values("agent_id"))
    answers: dict[tuple[int, bool], _Answers] = defaultdict(_Answers)
    for model_id, agent_id, week, market_id, stated, price, outcome in rows:
        if price is None or outcome is None:  # never: the filter leaves them out
            continue
        row = answers[(model_id, agent_id in stand_ins)]
        row.add((week, market_id), stated=stated, price=price, outcome=outcome)
    models = BenchmarkModel.objects.in_bulk({model_id for model_id, _ in answers})
    llms, references, outside = [], [], []
    for (model_id, stand_in), row in answers.items():
        model = models[model_id]
        scored = _row(model.display_name, model, stand_in, row)
        if model.is_baseline:
            references.append(scored)
        elif model.is_outside:
            outside.append(scored)
        else:
            llms.append(scored)
    for stand_in in (False, True):
        crowd = _crowd(
            [answers[key] for key in answers if key[1] == stand_in and _is_llm(models[key[0]])]
        )
        if crowd is not None:
            references.append(_row(CROWD, None, stand_in, crowd))
    llms.sort(key=lambda r: (not r.ranked, r.offline, r.scores.brier))
    llms = _numbered(llms)
    questions = {q for row in answers.values() for q in row.outcomes}
    return PanelBoard(
        llms=llms,
        references=references,
        outside=outside,
        questions=len(questions),
        comparisons=_comparisons(llms),
    )


def _numbered(rows: list[PanelRow]) -> list[PanelRow]:
    """`rows` (in board order) with each ranked row's place in its own table: the real rows
    1, 2, …, and the offline stand-ins 1, 2, … among themselves."""
    places = {False: 0, True: 0}
    numbered = []
    for row in rows:
        if row.ranked:
            places[row.offline] += 1
            row = replace(row, rank=places[row.offline])
        numbered.append(row)
    return numbered


def _comparisons(rows: Sequence[PanelRow]) -> list[PanelComparison]:
    """Every pair of ranked LLM rows of one kind (real, or offline stand-ins), in board
    order, on their shared questions; Holm's correction over all of them."""
    pairs = []
    for index, first in enumerate(rows):
        for second in rows[index + 1 :]:
            if first.offline != second.offline or not (first.ranked and second.ranked):
                continue
            shared = sorted(set(first.question_brier) & set(second.question_brier))
            if not shared:
                continue
            differences = [first.question_brier[q] - second.question_brier[q] for q in shared]
            weeks = [q[0].toordinal() for q in shared]
            markets = [q[1] for q in shared]
            test = pooled_mean_test(differences, weeks, markets)
            pairs.append((first, second, shared, _interval(differences, weeks, markets), test))
    adjusted = holm_adjusted([test.p_value if test else None for *_, test in pairs])
    return [
        PanelComparison(
            first=first.label,
            second=second.label,
            offline=first.offline,
            questions=len(shared),
            weeks=len({q[0] for q in shared}),
            difference=interval,
            p_value=test.p_value if test else None,
            holm_p=holm,
            questions_needed=_needed(first, second, shared),
        )
        for (first, second, shared, interval, test), holm in zip(pairs, adjusted, strict=True)
    ]


def _needed(first: PanelRow, second: PanelRow, shared: Sequence[Question]) -> float | None:
    """The shared questions a paired one-sided 5% test with 80% power needs to detect the
    observed mean difference, from the per-question differences' variance."""
    differences = [first.question_brier[q] - second.question_brier[q] for q in shared]
    if len(differences) < 2:
        return None
    variance = statistics.variance(differences)
    mean = statistics.fmean(differences)
    if variance == 0.0 or mean == 0.0:
        return None
    return bets_to_separate(difference=mean, variance_a=variance, variance_b=0.0)


def _is_llm(model: BenchmarkModel) -> bool:
    return not (model.is_baseline or model.is_outside)


def _crowd(rows: Sequence[_Answers]) -> _Answers | None:
    """The LLM crowd's answers: per question, the median of the rows' own forecasts (each
    row's mean over its agents), at the mean of their b's."""
    if not rows:
        return None
    crowd = _Answers()
    questions = {q for row in rows for q in row.outcomes}
    for question in questions:
        own = [question_forecast(row.stated[question]) for row in rows if question in row.outcomes]
        stated = [value for value in own if value is not None]
        # A crowd of one is no crowd: under two models' forecasts, the question is imputed.
        crowd.stated[question] = [statistics.median(stated) if len(stated) >= 2 else None]
        crowd.prices[question] = [p for row in rows for p in row.prices.get(question, [])]
        crowd.outcomes[question] = next(
            row.outcomes[question] for row in rows if question in row.outcomes
        )
    return crowd


def _row(label: str, model: BenchmarkModel | None, offline: bool, row: _Answers) -> PanelRow:
    questions = sorted(row.outcomes)
    # b as the stored scores read it: strictly inside (0, 1) (a live price may be 0 or 1).
    prices = [_inside(sum(row.prices[q]) / len(row.prices[q])) for q in questions]
    outcomes = [row.outcomes[q] for q in questions]
    scores = panel_scores([row.stated[q] for q in questions], prices=prices, outcomes=outcomes)
    assert scores is not None  # a row exists only for a question it answered
    forecasts = [question_forecast(row.stated[q]) for q in questions]
    used = [p if f is None else f for f, p in zip(forecasts, prices, strict=True)]
    brier = [(p - x) ** 2 for p, x in zip(used, outcomes, strict=True)]
    log = [log_score(forecast=p, outcome=x) for p, x in zip(used, outcomes, strict=True)]
    alpha = [(b - x) ** 2 - s for b, x, s in zip(prices, outcomes, brier, strict=True)]
    weeks = [q[0].toordinal() for q in questions]
    markets = [q[1] for q in questions]
    return PanelRow(
        label=label,
        model=model,
        offline=offline,
        scores=scores,
        brier=_interval(brier, weeks, markets, 0.0, 1.0),
        log_score=_interval(log, weeks, markets, 0.0, math.inf),
        alpha=_interval(alpha, weeks, markets, -1.0, 1.0),
        question_brier=dict(zip(questions, brier, strict=True)),
        murphy=murphy_decomposition(used, outcomes),
    )


def _inside(price: float) -> float:
    """A price kept strictly inside (0, 1), to the stored places (`arena.money.probability`)."""
    return min(max(price, 1e-6), 1 - 1e-6)


def _interval(
    values: list[float],
    weeks: list[int],
    markets: list[Any],
    lowest: float = -math.inf,
    highest: float = math.inf,
) -> Interval:
    """The t interval of the values' mean, its ends kept inside the figure's range."""
    interval = within_range(pooled_mean_interval(values, weeks, markets), lowest, highest)
    assert interval is not None  # never empty: a row has a question
    return interval


@dataclass(frozen=True)
class PanelWeek:
    """A model's panel figures over one week's resolved questions."""

    week_start: date
    questions: int
    brier: float
    alpha: float

    @property
    def market_brier(self) -> float:
        """The Brier of b on the same questions (Alpha is the market's Brier less the row's)."""
        return self.brier + self.alpha


@dataclass(frozen=True)
class ModelSayDo:
    """A model's (or its offline stand-in's) methodology v2 figures on its page."""

    offline: bool
    panel: PanelRow | None
    weeks: list[PanelWeek]
    say_do: SayDo | None
    panel_reliability: list[ReliabilityBin]  # stated P(YES) against YES
    bet_reliability: list[ReliabilityBin]  # stated P(side wins) against the side winning
    # The market on the same forecasts: b of each stated panel forecast, the price of each bet.
    panel_market_reliability: list[ReliabilityBin] = field(default_factory=list)
    bet_market_reliability: list[ReliabilityBin] = field(default_factory=list)

    @property
    def reliability_rows(self) -> list[tuple[ReliabilityBin, ReliabilityBin]]:
        """The two tables side by side, bin by bin."""
        return list(zip(self.panel_reliability, self.bet_reliability, strict=True))


def model_say_do(*, model: BenchmarkModel, offline: set[int]) -> list[ModelSayDo]:
    """The model's v2 figures, its real rows then its offline stand-in's (none without a
    stated probability anywhere): its panel row as the leaderboard's v2 view scores it, week
    by week, its say-and-do figures and both reliability tables. `offline`: its agents an
    offline stand-in answered for (`standings.offline_agent_ids`). Two queries."""
    forecasts = (
        PanelForecast.objects.filter(
            agent__model=model, outcome__isnull=False, reference_price__isnull=False
        )
        .order_by()
        .values_list(
            "agent_id", "week_start", "market__polymarket_id", "probability",
            "reference_price", "outcome",
        )
    )  # fmt: skip
    answers: dict[bool, _Answers] = defaultdict(_Answers)
    for agent_id, week, market_id, probability, price, outcome in forecasts:
        if price is None or outcome is None:  # never: the filter leaves them out
            continue
        answers[agent_id in offline].add(
            (week, market_id), stated=probability, price=price, outcome=outcome
        )
    bets = _stated_bets(model=model, offline=offline)
    figures = []
    for stand_in in (False, True):
        row = answers.get(stand_in)
        if row is None and not bets[stand_in]:
            continue
        points = [
            (value, price, row.outcomes[q])
            for q, values in row.stated.items()
            for value, price in zip(values, row.prices[q], strict=True)
            if value is not None
        ] if row is not None else []  # fmt: skip
        outcomes = [x for _, _, x in points]
        resolved = [b for b in bets[stand_in] if b.won is not None]
        won = [int(bool(b.won)) for b in resolved]
        figures.append(
            ModelSayDo(
                offline=stand_in,
                panel=_row(model.display_name, model, stand_in, row) if row else None,
                weeks=_weeks(row) if row else [],
                say_do=say_do(bets[stand_in]),
                panel_reliability=reliability([p for p, _, _ in points], outcomes),
                bet_reliability=reliability([b.probability for b in resolved], won),
                panel_market_reliability=reliability([b for _, b, _ in points], outcomes),
                bet_market_reliability=reliability([b.price for b in resolved], won),
            )
        )
    return figures


def _stated_bets(*, model: BenchmarkModel, offline: set[int]) -> dict[bool, list[StatedBet]]:
    """The model's executed bets that stated a probability, its real ones and its offline
    stand-in's apart (one query)."""
    stated = (
        Trade.objects.filter(
            agent__model=model,
            kind=Trade.Kind.BUY,
            status=Trade.Status.EXECUTED,
            stated_probability__isnull=False,
        )
        .order_by("pk")
        .values_list(
            "agent_id", "stated_probability", "price", "amount", "cash_before",
            "side_won", "brier_score",
        )
    )  # fmt: skip
    bets: dict[bool, list[StatedBet]] = {False: [], True: []}
    for agent_id, probability, price, amount, cash, won, brier in stated:
        if probability is None or amount is None or not cash or not price or not 0 < price < 1:
            continue
        bets[agent_id in offline].append(
            StatedBet(
                probability=float(probability),
                price=float(price),
                stake=float(amount / cash),
                won=bool(won) if brier is not None else None,
            )
        )
    return bets


def _weeks(row: _Answers) -> list[PanelWeek]:
    """A row's panel Brier and Alpha week by week (one forecast per question: its agents'
    mean, b where none stated one)."""
    by_week: dict[date, list[tuple[float, float]]] = defaultdict(list)
    for question, x in row.outcomes.items():
        b = sum(row.prices[question]) / len(row.prices[question])
        own = question_forecast(row.stated[question])
        p = b if own is None else own
        by_week[question[0]].append(((p - x) ** 2, (b - x) ** 2 - (p - x) ** 2))
    return [
        PanelWeek(
            week_start=week,
            questions=len(values),
            brier=sum(v[0] for v in values) / len(values),
            alpha=sum(v[1] for v in values) / len(values),
        )
        for week, values in sorted(by_week.items())
    ]
