"""Turn the resolved bets (`read.Bets`) into the analytics' figures, with numpy and `scoring`:
every row's figures, the references and the pairwise comparisons. No query: `read` has read
everything first.

Every row's figures come from one vectorised pass over the columns (bench/analytics.py
measures it on a year of bets).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from arena.selectors.analytics.definitions import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    CROWD_MIN_FORECASTS,
    DIFFICULTY_MIN_ROWS,
    DIFFICULTY_MIN_SHARED,
    KAPPA,
    POWER,
)
from arena.selectors.analytics.figures import (
    CategoryFigures,
    CohortFigures,
    Comparison,
    Metric,
    ModelAnalytics,
    PowerFigures,
    ReferenceAnalytics,
    skill_score,
)
from arena.selectors.analytics.read import Bets, Questions
from scoring.aggregates import RANDOM_BRIER
from scoring.alpha import RANDOM_UNIFORM_BRIER, bet_alphas, predictions_needed
from scoring.bootstrap import ResampledWorlds
from scoring.codes import dense_codes, row_codes
from scoring.crowd import grouped_geometric_mean_odds, grouped_median
from scoring.difficulty import design_support, difficulty_fit, difficulty_influence
from scoring.murphy import alpha_anatomy, murphy_decomposition
from scoring.statistics import (
    Interval,
    cell_mean_interval,
    holm_adjusted,
    paired_difference_tests,
    pooled_mean_interval,
    pooled_mean_test,
    ratio_interval,
    share_positive,
    student_t_quantile,
    two_way_variances,
    within_range,
)

_BRIER = 1  # the column of the rows' bootstrap (`fill_rows`: Alpha's δ, then Brier) ranked


def _scaled(interval: Interval | None, factor: float) -> Interval | None:
    """The interval of factor × x (factor > 0) from the interval of x."""
    if interval is None:
        return None

    def times(value: float | None) -> float | None:
        return None if value is None else value * factor

    return replace(
        interval,
        estimate=interval.estimate * factor,
        low=times(interval.low),
        high=times(interval.high),
        standard_error=times(interval.standard_error),
    )


def _one_minus(interval: Interval | None) -> Interval | None:
    """The interval of 1 − x from the interval of x (a skill score from a Brier ratio)."""
    if interval is None:
        return None
    return replace(
        interval,
        estimate=1.0 - interval.estimate,
        low=None if interval.high is None else 1.0 - interval.high,
        high=None if interval.low is None else 1.0 - interval.low,
    )


def _per_cohort(
    cohort: NDArray[np.int64], values: NDArray[np.float64]
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]]:
    """(cohort numbers, Σ values, bets) per cohort, cohorts ascending."""
    numbers, inverse = np.unique(cohort, return_inverse=True)
    sums = np.bincount(inverse, weights=values, minlength=len(numbers)).astype(np.float64)
    counts = np.bincount(inverse, minlength=len(numbers)).astype(np.int64)
    return numbers, sums, counts


def fill_rows(
    *,
    rows: list[ModelAnalytics],
    bets: Bets,
    categories: list[str],
    questions: Questions,
    bins: int,
) -> ResampledWorlds:
    """Fill every row's figures from the scope's bets (`rows` in the order `bets.row` indexes),
    with `bins` forecast bins; `categories` names the bets' category indexes and `questions`
    are each row's questions of the coverage-adjusted Alpha. Return the bootstrap's resampled
    worlds of every row's Alpha and Brier (`rank_rows` ranks the rows in them)."""
    framed = _framed(bets)
    for number, row in enumerate(rows):
        _fill_row(row, bets, framed, bets.row == number, categories, bins)
    # Every row's bootstrap in the same resampled worlds: one set of draws for them all.
    resampled = ResampledWorlds(
        [bets.delta, bets.brier],  # Brier's at _BRIER
        bets.row,
        bets.week,
        bets.market,
        resamples=BOOTSTRAP_RESAMPLES,
        seed=BOOTSTRAP_SEED,
    )
    for number, (alpha_bootstrap, brier_bootstrap) in resampled.intervals().items():
        rows[number].alpha_bootstrap = within_range(alpha_bootstrap, -1.0, 1.0)
        rows[number].brier_bootstrap = within_range(brier_bootstrap, 0.0, 1.0)
    _coverage(bets, questions, rows)
    _difficulty(bets, rows)
    return resampled


def _fill_row(
    row: ModelAnalytics,
    bets: Bets,
    framed: _Framed,
    mask: NDArray[np.bool_],
    categories: list[str],
    bins: int,
) -> None:
    forecast, price, outcome = bets.forecast[mask], bets.price[mask], bets.outcome[mask]
    brier, market_brier, delta = bets.brier[mask], bets.market_brier[mask], bets.delta[mask]
    n = int(mask.sum())
    row.bets = n
    if n == 0:
        return
    row.brier = float(brier.mean())
    row.market_brier = float(market_brier.mean())
    row.alpha = float(delta.mean())
    week, market = bets.week[mask], bets.market[mask]
    row.alpha_interval = within_range(pooled_mean_interval(delta, week, market), -1.0, 1.0)
    row.brier_interval = within_range(pooled_mean_interval(brier, week, market), 0.0, 1.0)
    row.alpha_test = pooled_mean_test(delta, week, market)
    _fill_cohorts(row, bets.cohort[mask], brier, market_brier, delta)
    # One frame for the Murphy terms, which change with it: a two-outcome market's bets as
    # forecasts of its first outcome (YES), as the references are; a bet on a market of more
    # outcomes forecasts only its own outcome, so those are decomposed apart, in that frame.
    binary, multi = mask & bets.binary, mask & ~bets.binary
    row.anatomy = alpha_anatomy(
        framed.forecast[binary], framed.price[binary], framed.outcome[binary], bins=bins
    )
    if row.anatomy is not None:
        row.murphy, row.market_murphy = row.anatomy.agent, row.anatomy.market
    row.multi_anatomy = alpha_anatomy(
        bets.forecast[multi], bets.price[multi], bets.outcome[multi], bins=bins
    )
    row.skill_vs_random = skill_score(row.brier, RANDOM_BRIER)
    row.skill_vs_market = skill_score(row.brier, row.market_brier)
    row.skill_vs_random_interval = _one_minus(_scaled(row.brier_interval, 1.0 / RANDOM_BRIER))
    row.skill_vs_market_interval = _one_minus(ratio_interval(brier, market_brier, week, market))
    row.brier_variance = float(brier.var(ddof=1)) if n > 1 else None
    row.power = _power(row.alpha, forecast, price, outcome, delta)
    row.categories = _categories(
        bets.category[mask],
        categories,
        (framed.forecast[mask], framed.outcome[mask], bets.binary[mask]),
        outcome,
        brier,
        market_brier,
        delta,
        bins,
    )


def _fill_cohorts(
    row: ModelAnalytics,
    cohort: NDArray[np.int64],
    brier: NDArray[np.float64],
    market_brier: NDArray[np.float64],
    delta: NDArray[np.float64],
) -> None:
    """The row's figures cohort by cohort, its Alpha pooled so far, and its Beat%."""
    numbers, alpha_sums, counts = _per_cohort(cohort, delta)
    _, brier_sums, _ = _per_cohort(cohort, brier)
    _, market_sums, _ = _per_cohort(cohort, market_brier)
    cohort_alphas = (alpha_sums / counts).tolist()
    row.beat_share = share_positive(cohort_alphas)
    row.cohorts_scored = len(numbers)
    cumulative_sums, cumulative_counts = np.cumsum(alpha_sums), np.cumsum(counts)
    row.per_cohort = [
        CohortFigures(
            cohort=int(numbers[i]),
            bets=int(counts[i]),
            brier=float(brier_sums[i] / counts[i]),
            market_brier=float(market_sums[i] / counts[i]),
            alpha=float(alpha_sums[i] / counts[i]),
            cumulative_alpha=float(cumulative_sums[i] / cumulative_counts[i]),
            cumulative_bets=int(cumulative_counts[i]),
        )
        for i in range(len(numbers))
    ]


def _power(
    alpha: float,
    forecast: NDArray[np.float64],
    price: NDArray[np.float64],
    outcome: NDArray[np.float64],
    delta: NDArray[np.float64],
) -> PowerFigures:
    """Proposition 3 with the row's own Alpha, base rate and boldness (at least one bet)."""
    n = len(delta)
    delta_variance = float(delta.var(ddof=1)) if n > 1 else None
    mean_squared_deviation = float(((price - forecast) ** 2).mean())
    base_rate = float(outcome.mean())
    needed = None
    if alpha != 0.0 and mean_squared_deviation > 0.0 and 0.0 < base_rate < 1.0:
        needed = predictions_needed(
            alpha=abs(alpha),
            kappa=KAPPA,
            power=POWER,
            q=base_rate,
            mean_squared_deviation=mean_squared_deviation,
        )
    return PowerFigures(
        bets=n,
        alpha=alpha,
        base_rate=base_rate,
        mean_squared_deviation=mean_squared_deviation,
        delta_variance=delta_variance,
        bets_needed=needed,
    )


def _categories(
    category: NDArray[np.int64],
    names: list[str],
    yes: tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]],
    outcome: NDArray[np.float64],
    brier: NDArray[np.float64],
    market_brier: NDArray[np.float64],
    delta: NDArray[np.float64],
    bins: int,
) -> list[CategoryFigures]:
    """A row's figures per category of its bets (`category` indexes `names`), the most bets
    first; REL and RES over its two-outcome bets in the YES frame (`yes`: forecast, outcome
    and whether the market has two outcomes, per bet)."""
    yes_forecast, yes_outcome, binary = yes
    figures = []
    for index in np.unique(category).tolist():
        in_category = category == index
        k = int(in_category.sum())
        framed = in_category & binary
        murphy = murphy_decomposition(yes_forecast[framed], yes_outcome[framed], bins=bins)
        category_brier = float(brier[in_category].mean())
        category_market = float(market_brier[in_category].mean())
        figures.append(
            CategoryFigures(
                category=names[index] or "Uncategorised",
                bets=k,
                brier=category_brier,
                market_brier=category_market,
                alpha=float(delta[in_category].mean()),
                win_rate=float(outcome[in_category].mean()),
                skill_vs_market=skill_score(category_brier, category_market),
                reliability=murphy.reliability if murphy else None,
                resolution=murphy.resolution if murphy else None,
            )
        )
    figures.sort(key=lambda c: (-c.bets, c.category))
    return figures


def _coverage(bets: Bets, questions: Questions, rows: list[ModelAnalytics]) -> None:
    """Coverage-adjusted Alpha: every resolved market of the top 500 a run showed is a question
    for every agent that decided in that run; one it did not bet on is imputed δ = 0 (the
    market's price as its forecast), and its bets on one question count once (their mean). Its
    interval is clustered by week and market like the others, from each row's questions
    counted per cell (week × market) rather than written out one by one."""
    # δ per question (agent, run, market), each question's bets weighted to count once.
    mask = bets.in_universe
    keys = row_codes(bets.agent[mask], bets.run[mask], bets.market[mask])
    _, inverse, per_question = np.unique(keys, return_inverse=True, return_counts=True)
    weighted = bets.delta[mask] / per_question[inverse.reshape(-1)]
    bet_rows, bet_weeks, bet_markets = bets.row[mask], bets.week[mask], bets.market[mask]
    for index, row in enumerate(rows):
        if not questions.get(index):
            continue
        parts = questions[index]
        weeks = np.concatenate([np.full(len(ids), w, dtype=np.int64) for w, ids, _ in parts])
        markets = np.concatenate([ids for _, ids, _ in parts])
        agents = np.concatenate([np.full(len(ids), k, dtype=np.int64) for _, ids, k in parts])
        # A cell (week, market) as one integer: the row's questions counted per cell, each
        # run's markets once per agent of the row deciding in it.
        base = int(max(markets.max(), bets.market.max() if len(bets.market) else 0)) + 1
        cells, counts = weeks * base + markets, agents
        if len(cells) > 1 and not np.all(cells[1:] > cells[:-1]):
            # Two runs in one week (ascending by week, then by market within a run) share
            # cells: count them together.
            cells, inverse = np.unique(cells, return_inverse=True)
            counts = np.bincount(inverse.reshape(-1), weights=counts).astype(np.int64)
        mine = np.flatnonzero(bet_rows == index)
        at = np.searchsorted(cells, bet_weeks[mine] * base + bet_markets[mine])
        # A scored bet on a market not (or no longer) counted resolved is not a question: the
        # numerator takes only the questions its denominator counts.
        counted = at < len(cells)
        counted[counted] = cells[at[counted]] == (bet_weeks * base + bet_markets)[mine][counted]
        sums = np.zeros(len(cells))
        np.add.at(sums, at[counted], weighted[mine[counted]])
        row.coverage_markets = int(counts.sum())
        row.coverage_interval = within_range(
            cell_mean_interval(sums, counts, cells // base, cells % base), -1.0, 1.0
        )
        if row.coverage_interval is not None:
            row.coverage_alpha = row.coverage_interval.estimate


def _difficulty(bets: Bets, rows: list[ModelAnalytics]) -> None:
    """Difficulty-adjusted Brier: question effects estimated over every agent's bets, a
    question being a market in a run (its price, and so its difficulty, is the run's), the
    real rows (LLMs and baselines) in one fit and the offline stand-ins in another, so an
    offline answer never moves a real row's figure. A row's figure is shown only where the
    fit rests on enough: the row has at least DIFFICULTY_MIN_SHARED of its questions
    answered by another row too, and at least DIFFICULTY_MIN_ROWS such rows are linked
    through shared questions into one part of the design (the part with the most). The
    figures shown are fitted over that part's bets alone, with a t interval clustered by
    week and market from each bet's influence on the figure (`difficulty_influence`)."""
    offline_rows = np.array([r.offline for r in rows], dtype=np.bool_)
    every_question = dense_codes(row_codes(bets.market, bets.run)) if len(bets.row) else None
    for offline in (False, True):
        mask = offline_rows[bets.row] == offline
        if every_question is None or len(np.unique(bets.row[mask])) < DIFFICULTY_MIN_ROWS:
            continue
        shown, part, component = _difficulty_part(
            bets, rows, mask, offline, dense_codes(every_question[mask])
        )
        if len(shown) < DIFFICULTY_MIN_ROWS:
            continue
        in_part = mask & np.isin(bets.row, part)
        questions = dense_codes(every_question[in_part])
        forecasters = bets.row[in_part]
        adjusted, residuals = difficulty_fit(
            bets.brier[in_part],
            forecasters,
            questions,
            forecaster_count=len(rows),
            component=component,
        )
        try:
            influence: NDArray[np.float64] | None = difficulty_influence(
                forecasters, questions, forecaster_count=len(rows), component=component
            )
        except ArithmeticError:
            influence = None  # the figures stand; their intervals are not shown
        weeks, markets = bets.week[in_part], bets.market[in_part]
        # Every shown row's influences are clustered over the same bets: coded once.
        variances = (
            None
            if influence is None
            else two_way_variances(influence[shown] * residuals, weeks, markets)
        )
        week_codes, market_codes = dense_codes(weeks), dense_codes(markets)
        for number, index in enumerate(shown):
            own = forecasters == index
            rows[index].difficulty_adjusted_brier = float(adjusted[index])
            rows[index].difficulty_interval = _difficulty_interval(
                float(adjusted[index]),
                None if variances is None else float(variances[number]),
                bets=int(own.sum()),
                own_weeks=int(np.count_nonzero(np.bincount(week_codes[own]))),
                own_markets=int(np.count_nonzero(np.bincount(market_codes[own]))),
            )


def _difficulty_part(
    bets: Bets,
    rows: list[ModelAnalytics],
    mask: NDArray[np.bool_],
    offline: bool,
    questions: NDArray[np.intp],
) -> tuple[list[int], list[int], NDArray[np.int64]]:
    """The rows shown (those sharing at least DIFFICULTY_MIN_SHARED questions, in the linked
    part of the design holding the most of them, the lowest label on a tie), every row of
    that part, and each row's part (`design_support`); `questions` codes the bets of `mask`."""
    shared, component = design_support(bets.row[mask], questions, forecaster_count=len(rows))
    parts: dict[int, list[int]] = {}
    for index, row in enumerate(rows):
        if row.offline == offline and component[index] >= 0:
            if shared[index] >= DIFFICULTY_MIN_SHARED:
                parts.setdefault(int(component[index]), []).append(index)
    if not parts:
        return [], [], component
    label, shown = max(sorted(parts.items()), key=lambda part: len(part[1]))
    return shown, [i for i in range(len(rows)) if component[i] == label], component


def _difficulty_interval(
    estimate: float,
    variance: float | None,
    *,
    bets: int,
    own_weeks: int,
    own_markets: int,
) -> Interval:
    """The figure's 95% t interval: `variance`, its influences' variance clustered by week and
    market, df the fewer of the row's own weeks and markets less one (its influence sits
    mostly on its own questions), as every row interval here. Not kept inside [0, 1]: the
    figure is a contrast between rows, which can leave it. None bounds under two weeks or
    markets, or without the influences."""
    groups = min(own_weeks, own_markets)
    if groups < 2 or variance is None:
        return Interval(estimate, None, None, None, own_weeks, bets, own_markets)
    error = math.sqrt(variance)
    half = student_t_quantile(0.975, groups - 1) * error
    return Interval(estimate, estimate - half, estimate + half, error, own_weeks, bets, own_markets)


@dataclass(frozen=True)
class _Framed:
    """The bets in their questions' frame, one entry per bet. A binary market's questions are
    asked of its first outcome (YES of a Yes/No market): a bet on the second with confidence c
    forecasts 1 − c that the first wins; its price and outcome flip with it, so every figure of
    the question is the same in either frame."""

    forecast: NDArray[np.float64]
    price: NDArray[np.float64]
    outcome: NDArray[np.float64]


def _framed(bets: Bets) -> _Framed:
    flip = bets.second_side
    return _Framed(
        forecast=np.where(flip, 1.0 - bets.forecast, bets.forecast),
        price=np.where(flip, 1.0 - bets.price, bets.price),
        outcome=np.where(flip, 1.0 - bets.outcome, bets.outcome),
    )


def reference_figures(
    *, bets: Bets, rows: list[ModelAnalytics], bins: int
) -> list[ReferenceAnalytics]:
    """Return the market consensus, the random forecaster and the LLM crowd, each over the
    questions the LLM rows (real, then separately offline) bet on. A question is a market in a
    run, as the probability of YES for a binary market and of the bet's outcome otherwise."""
    references: list[ReferenceAnalytics] = []
    # The LLM crowd is the lineup's: an outside team's agent is not one of its LLMs.
    llm_rows = np.array(
        [not r.model.is_baseline and not r.model.is_outside for r in rows], dtype=np.bool_
    )
    offline_rows = np.array([r.offline for r in rows], dtype=np.bool_)
    if len(bets.row) == 0:
        return references
    framed = _framed(bets)
    for offline in (False, True):
        mask = llm_rows[bets.row] & (offline_rows[bets.row] == offline)
        if mask.any():
            references.extend(
                _references_over(bets, framed, np.flatnonzero(mask), offline=offline, bins=bins)
            )
    return references


def _references_over(
    bets: Bets, framed: _Framed, members: NDArray[np.intp], *, offline: bool, bins: int
) -> list[ReferenceAnalytics]:
    """The references over the questions of the bets `members` (real rows', or offline)."""
    keys = row_codes(bets.run[members], bets.market[members], bets.frame[members])
    _, first_of, question = np.unique(keys, return_index=True, return_inverse=True)
    question = question.reshape(-1)
    first = members[first_of]
    # The crowd is of models, not of bets: a model with agents in several concurrent
    # cohorts (or two bets on one question) gives one forecast, their mean.
    _, voter_first, voter_of = np.unique(
        row_codes(question, bets.row[members]), return_index=True, return_inverse=True
    )
    voter_of = voter_of.reshape(-1)
    votes = np.bincount(voter_of, weights=framed.forecast[members]) / np.bincount(voter_of)
    voter_question = question[voter_first]
    models_per_question = np.bincount(voter_question, minlength=len(first))
    q_price, q_outcome = framed.price[first], framed.outcome[first]
    two = bets.frame[first] == -1  # the questions of two-outcome markets
    market_brier = float(((q_price - q_outcome) ** 2).mean())
    label = " — on the offline stand-ins' questions" if offline else ""
    references = [
        ReferenceAnalytics(
            key="market",
            label="Market consensus" + label,
            rule="the frozen price the decisions saw, as the forecast",
            offline=offline,
            questions=len(first),
            brier=market_brier,
            market_brier=market_brier,
            alpha=0.0,
            # Its Murphy terms over the two-outcome questions, in the YES frame, as the rows'.
            murphy=murphy_decomposition(q_price[two], q_outcome[two], bins=bins),
        ),
        ReferenceAnalytics(
            key="random",
            label="Random (uniform)" + label,
            rule="a forecast drawn uniformly on [0, 1]; its expected figures",
            offline=offline,
            questions=len(first),
            brier=RANDOM_UNIFORM_BRIER,
            market_brier=market_brier,
            alpha=market_brier - RANDOM_UNIFORM_BRIER,
            murphy=None,
            expected=True,
        ),
    ]
    crowd = models_per_question >= CROWD_MIN_FORECASTS
    if crowd.any():
        references.extend(
            _crowd_references(
                votes,
                voter_question,
                crowd,
                framed.price[first[crowd]],
                framed.outcome[first[crowd]],
                two[crowd],
                offline=offline,
                label=label,
                bins=bins,
            )
        )
    return references


def _crowd_references(
    votes: NDArray[np.float64],
    voter_question: NDArray[np.intp],
    crowd: NDArray[np.bool_],
    price: NDArray[np.float64],
    outcome: NDArray[np.float64],
    two: NDArray[np.bool_],
    *,
    offline: bool,
    label: str,
    bins: int,
) -> list[ReferenceAnalytics]:
    """The LLM crowd's median and geometric mean of odds over the `crowd` questions (those
    with enough models' forecasts), each model's forecast its `votes` entry; their Murphy
    terms over the `two`-outcome questions, in the YES frame."""
    references = []
    for key, name, aggregate in (
        ("crowd-median", "LLM crowd, median", grouped_median),
        ("crowd-geomean", "LLM crowd, geometric mean of odds", grouped_geometric_mean_odds),
    ):
        forecasts = aggregate(votes, voter_question)[crowd]
        c_brier, c_market, c_delta = bet_alphas(forecasts, price, outcome)
        references.append(
            ReferenceAnalytics(
                key=key,
                label=name + label,
                rule=(
                    f"the {name.split(', ')[1]} of the lineup's forecasts on a market in a "
                    f"run, where at least {CROWD_MIN_FORECASTS} models bet on it (a "
                    "model's agents in concurrent cohorts count once, their mean)"
                ),
                offline=offline,
                questions=int(crowd.sum()),
                brier=float(c_brier.mean()),
                market_brier=float(c_market.mean()),
                alpha=float(c_delta.mean()),
                murphy=murphy_decomposition(forecasts[two], outcome[two], bins=bins),
            )
        )
    return references


def pairwise_comparisons(*, bets: Bets, rows: list[ModelAnalytics]) -> list[Comparison]:
    """Every pair of ranked rows of one kind (real with real, offline with offline) and one
    board (the main one, or the outside agents' own) on Alpha and on Brier, over the weeks
    both played (`paired_difference_test`), each metric's p-values of one board Holm-adjusted
    together."""
    comparisons: list[Comparison] = []
    llms = [(i, r) for i, r in enumerate(rows) if not r.model.is_baseline and r.bets]
    metrics: tuple[tuple[Metric, NDArray[np.float64]], ...] = (
        ("alpha", bets.delta),
        ("brier", bets.brier),
    )
    for number, (i, first) in enumerate(llms):
        for j, second in llms[number + 1 :]:
            if first.offline != second.offline:
                continue
            if first.model.on_outside_board != second.model.on_outside_board:
                continue
            both = (bets.row == i) | (bets.row == j)
            tests = paired_difference_tests(
                [values[both] for _, values in metrics],
                bets.week[both],
                bets.market[both],
                bets.row[both] == i,
            )
            for (metric, _), test in zip(metrics, tests, strict=True):
                if test is not None:
                    comparisons.append(Comparison(first.key, second.key, metric, test))
    return _holm(comparisons, rows)


def _holm(comparisons: list[Comparison], rows: list[ModelAnalytics]) -> list[Comparison]:
    """The comparisons with their Holm-adjusted p-values, adjusted together within each family
    (one metric, one board, real or offline rows): the pairs a reader reads side by side."""
    board = {r.key: r.model.on_outside_board for r in rows}
    families: dict[tuple[str, bool, bool], list[int]] = {}
    for index, c in enumerate(comparisons):
        families.setdefault((c.metric, board[c.first], c.first[1]), []).append(index)
    adjusted: list[float | None] = [None] * len(comparisons)
    for members in families.values():
        family = holm_adjusted([comparisons[i].test.p_value for i in members])
        for i, p in zip(members, family, strict=True):
            adjusted[i] = p
    return [replace(c, holm_p=p) for c, p in zip(comparisons, adjusted, strict=True)]


def rank_rows(*, resampled: ResampledWorlds, rows: list[ModelAnalytics]) -> None:
    """Rank each board's rows by Brier with the uncertainty of the ranks: the LLM rows that
    are not provisional, real and offline apart, the main board and the outside agents' apart.
    Each gets its rank range and P(rank 1) over the pigeonhole bootstrap's worlds (`resampled`:
    those of the rows' intervals, `fill_rows`, all rows resampled together), and a tier: in Brier
    order, a tier is its first row and every later row whose rank range reaches that first
    row's rank; the first row beyond starts the next tier."""
    families: dict[tuple[bool, bool], list[int]] = {}
    for index, row in enumerate(rows):
        if row.model.is_baseline or row.provisional or row.brier is None:
            continue
        families.setdefault((row.model.on_outside_board, row.offline), []).append(index)
    for members in families.values():
        if len(members) < 2:
            continue
        ranges = resampled.rank_ranges(members, column=_BRIER)
        ordered = sorted(members, key=lambda i: (rows[i].brier, rows[i].model.display_order))
        tier, leader_rank = 0, 0
        for rank, index in enumerate(ordered, start=1):
            row = rows[index]
            row.rank_range = ranges.get(index)
            reaches = row.rank_range is not None and row.rank_range.low <= leader_rank
            if not reaches:
                tier, leader_rank = tier + 1, rank
            row.tier = tier
