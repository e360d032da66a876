"""What each analytics figure means, with the method's parameters that the definitions quote.

The analytics are read from the resolved bets, beside the v1 figures (`standings.py`), whose
definitions and default order they leave alone. Each resolved bet is a forecast that its side
wins (003 §3.4, in the side's terms):

- f = its implied confidence, b = the side-correct price it executed at (`Trade.price`, the
  bets export's `market_price`: the run's frozen snapshot price, or for an outside agent's bet
  the worse of it and the live price at submission), x = 1 if its side won, else 0. A
  multi-outcome bet is a binary forecast on its outcome; cancelled bets are not scored.
- Brier (f − x)², market Brier (b − x)², Alpha δ = (b − x)² − (f − x)². A row's Alpha is the
  mean δ over its resolved bets, pooled like its Brier, so the bets export recomputes both.
- Intervals are across weekly runs and markets (`scoring.statistics`): every cohort active in
  a week decides in its one run, on one snapshot and one week's news, and every bet on a market
  shares its one outcome, so bets are not independent draws. Under MIN_WEEKS_TO_CLAIM weeks a
  figure keeps its interval but claims no difference ("too early to tell").
- Rows are the leaderboard's: one per (model, offline or not); offline stand-ins are never
  pooled with the real models. The references (market consensus, the uniform random forecaster,
  the LLM crowd) are labelled pseudo-models, computed separately over real and offline rows.

The package reads the bets (`read`), turns them into figures (`compute`, into the dataclasses
of `figures`) and keeps the answer (`cache`).
"""

from __future__ import annotations

from scoring.statistics import MIN_BOOTSTRAP_WEEKS, MIN_WEEKS_TO_CLAIM

DEFAULT_BINS = 10
MIN_BINS, MAX_BINS = 2, 50
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 20260423  # fixed: the same data gives the same interval on every request
POWER = 0.80
KAPPA = 0.05  # one-sided significance of the power analysis, as 003 §3.6.2
DIFFICULTY_MIN_ROWS = 3  # rows in one connected fit of the question effects
DIFFICULTY_MIN_SHARED = 10  # of a row's questions, answered by another row too
CROWD_MIN_FORECASTS = 2  # models; a crowd of one is that model, not an aggregate
# A row is ranked once it has this many resolved bets over this many weeks; before, it is
# provisional: shown apart, never ranked. Five weeks is the fewest the bootstrap of its rank
# range is drawn from (a percentile bootstrap of fewer clusters claims too much).
MIN_RANKED_BETS = 30
MIN_RANKED_WEEKS = MIN_BOOTSTRAP_WEEKS

DEFINITIONS: list[tuple[str, str, str]] = [
    (
        "Alpha",
        "mean over resolved bets of δ = (b − x)² − (f − x)²: f the implied confidence, b the "
        "side-correct price the decision saw, x = 1 if the side won; above 0 beats the market. "
        "Not a proper score: f is read off the bet's size (sizing every bet at its price "
        "scores 0 whatever the belief); the v2 panel's Alpha, on stated probabilities, is",
        "Foresight Arena (003) §3.4, Definition 2",
    ),
    (
        "Market Brier",
        "mean of (b − x)² on the same bets: the market's price scored as the forecast",
        "003 §3.4",
    ),
    (
        "Coverage-adjusted Alpha",
        "Σ δ over every resolved market of the snapshots the agents saw ÷ the number of those "
        "markets; a market not bet on is imputed the market's price (δ = 0); 95% t interval "
        "clustered by week and market, the imputed zeros included",
        "ForecastBench (004) imputation, with 003's δ",
    ),
    (
        "Murphy decomposition",
        "Brier = UNC + REL − RES over K equal-width forecast bins: UNC = ō(1 − ō), REL = Σ nₖ"
        "(p̄ₖ − ōₖ)² ÷ N (calibration error), RES = Σ nₖ(ōₖ − ō)² ÷ N (discrimination); exact "
        "when forecasts are constant within bins, the residual is shown otherwise; over the "
        "two-outcome bets read as forecasts of YES (rows and references alike), the bets on "
        "markets of more outcomes apart, each in its own outcome's frame",
        "003 §3.5, Theorem 1 (Murphy, 1973); 003 Table 6 (the YES frame)",
    ),
    (
        "Anatomy of Alpha",
        "Alpha = (RES − RES of the market) + (REL of the market − REL) on the same bets",
        "003 §3.5, Corollary 1",
    ),
    (
        "Brier skill score",
        "1 − Brier ÷ reference: against the 50% guesser (0.25), and against the market's "
        "Brier on the same bets; 95% t intervals from the Brier's, and from the ratio Brier ÷ "
        "market Brier linearised (clustered by week and market)",
        "001 §1.5; 003 §3.4",
    ),
    (
        "Interval (t)",
        "pooled figure ± t₀.₉₇₅,G−1 × SE; SE clustered two ways, by week (the weekly run "
        "every active cohort decides in, on one snapshot) and by market (whose outcome is "
        "drawn once), never below the larger one-way SE; G the fewer of weeks and markets; "
        "its ends kept inside the figure's range (Brier [0, 1], Alpha [−1, 1])",
        "000 §5.2, with Student's t; Cameron, Gelbach & Miller (2011) two-way clustering",
    ),
    (
        "Interval (bootstrap)",
        f"2.5th–97.5th percentile of the pooled figure over {BOOTSTRAP_RESAMPLES} seeded "
        "resampled worlds weighting every week and every market by a Poisson(1) draw "
        "(pigeonhole bootstrap, "
        "conservative: about twice the variance where bets are independent); "
        f"shown from {MIN_BOOTSTRAP_WEEKS} weeks; each bound written to the places its "
        "Monte-Carlo error supports (the 95% half-width of the quantile over fresh resamples, "
        "from the binomial count of draws below it: `monte_carlo_error`)",
        "004 (bootstrapped intervals); Owen (2007)",
    ),
    (
        "p (Alpha ≠ 0)",
        "two-sided p of t = Alpha ÷ SE (the interval's) with G − 1 degrees of freedom; none "
        f"when the SE is 0; under {MIN_WEEKS_TO_CLAIM} weeks shown, but no difference from "
        "the market is claimed (too early to tell)",
        "003 §6.6",
    ),
    ("Beat%", "share of cohorts whose Alpha is above 0", "003 §6.2"),
    (
        "Pairwise difference",
        "difference of two models' pooled figures over the weeks both played, its SE "
        "clustered by week and market (so a shared week or market pairs their bets), "
        "two-sided p, Holm-adjusted over every pair of one board and metric; a difference "
        f"is called at a Holm p under 0.05, and never under {MIN_WEEKS_TO_CLAIM} shared weeks",
        "004 (pairwise comparisons); Holm (1979)",
    ),
    (
        "Var(δ)",
        "4q(1 − q)(b − p)² for one bet; the observed variance of δ is shown per model",
        "003 §3.6.1, Proposition 2",
    ),
    (
        "Bets to detect an edge",
        "n ≥ ((z₁₋κ + z_π) ÷ α*)² × 4q̄(1 − q̄) × mean (b − p)², κ = 0.05 one-sided, π = 0.80; "
        "with a row's own Alpha as α* it is a rough, after-the-fact figure that assumes "
        "independent bets",
        "003 §3.6.2, Proposition 3",
    ),
    (
        "Difficulty-adjusted Brier",
        "Brier with question fixed effects estimated over all agents' bets (agents choose "
        "different markets), a question being a market in a run: score = a_model + "
        "d_question by least squares; the mean over the row's bets of (Brier − d_question), "
        "a contrast between rows on the Brier scale that can leave [0, 1]; shown only where "
        f"a row has at least {DIFFICULTY_MIN_SHARED} of its questions answered by another "
        f"row too and at least {DIFFICULTY_MIN_ROWS} such rows are linked through shared "
        "questions (the linked part with the most of them), fitted over that part's bets; "
        "95% t interval from each bet's influence on the figure (B·residual, B the fit's "
        "linear map), clustered by week and market, df the fewer of the row's own weeks and "
        "markets less one",
        "ours: two-way fixed effects (not in the 004 paper)",
    ),
    (
        "LLM crowd",
        "per market and run, the median and the geometric mean of odds of the lineup's "
        "forecasts (as the YES probability for a binary market), scored as a pseudo-model",
        "004 (LLM crowd aggregates)",
    ),
    (
        "Random (uniform)",
        "a forecast drawn uniformly on [0, 1]: expected Brier 1/3 on any outcome",
        "003 §5.4",
    ),
    ("Market consensus", "the price as the forecast: Alpha 0 by construction", "003 §5.4"),
]
