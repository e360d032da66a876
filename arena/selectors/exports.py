"""Reads for the bulk exports: rows streamed straight from the database in chunks.

The bets export has one row per executed BUY, ordered by trade id, with exactly the columns of
`BET_COLUMNS` — enough to recompute the leaderboard's pooled Brier and win rate (issue 10):

- `model`: the model's stable id (`BenchmarkModel.internal_id`); `cohort`: the cohort number;
  `market_id`: Polymarket's id of the market.
- `market_price`: the side-correct price the decision saw in its run's frozen snapshot, which
  is the stored `Trade.price` (`trade_buy` executes at `frozen.side_price(view, side)`: YES the
  stored price, NO 1 − it, another outcome its own).
- `status`: `cancelled` when the market's resolution was cancelled (refunded, never scored);
  else `won` or `lost` from `Trade.side_won` once the bet is scored; else `open`.
- `brier`: the bet's Brier score, None (an empty cell) until it is scored.

Offline stand-ins are never pooled with the real models (arena/selectors/standings.py), and the
columns are fixed, so the split is a filter: `offline="exclude"` keeps the bets of agents no
offline stand-in ever answered for, `"only"` the others, `"include"` (the default) both.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Literal

from django.db.models import Q

from arena.models import Decision, Trade
from arena.selectors.standings import ANSWERED_OFFLINE
from markets.models import Market

BET_COLUMNS = (
    "trade_id",
    "model",
    "cohort",
    "decision_id",
    "market_id",
    "side",
    "amount",
    "implied_confidence",
    "market_price",
    "status",
    "brier",
)

Offline = Literal["include", "exclude", "only"]
OFFLINE_CHOICES: tuple[Offline, ...] = ("include", "exclude", "only")
CHUNK_SIZE = 2000

BetRow = dict[str, int | str | Decimal | float | None]


def _day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def bet_rows(
    *,
    cohort: int | None = None,
    since: date | None = None,
    until: date | None = None,
    offline: Offline = "include",
) -> Iterator[BetRow]:
    """Yield a row per executed BUY (columns: `BET_COLUMNS`), ordered by trade id.

    Bounded by the cohort number and/or by the UTC day the bet was placed (`since` and `until`
    both inclusive). One query, read in chunks of `CHUNK_SIZE` rows (flat memory, whatever the
    number of bets).
    """
    trades = Trade.objects.filter(kind=Trade.Kind.BUY, status=Trade.Status.EXECUTED)
    if cohort is not None:
        trades = trades.filter(agent__cohort__number=cohort)
    if since is not None:
        trades = trades.filter(created_at__gte=_day_start(since))
    if until is not None:
        trades = trades.filter(created_at__lt=_day_start(until + timedelta(days=1)))
    if offline != "include":
        answered_offline = Decision.objects.filter(ANSWERED_OFFLINE).values("agent_id")
        offline_agents = Q(agent_id__in=answered_offline)
        if offline == "only":
            trades = trades.filter(offline_agents)
        else:
            trades = trades.exclude(offline_agents)
    fields = trades.order_by("pk").values_list(
        "pk",
        "agent__model__internal_id",
        "agent__cohort__number",
        "decision_id",
        "market__polymarket_id",
        "side",
        "amount",
        "implied_confidence",
        "price",
        "market__resolution",
        "side_won",
        "brier_score",
    )
    for (
        trade_id, model, cohort_number, decision_id, market_id, side, amount, confidence, price,
        resolution, side_won, brier,
    ) in fields.iterator(chunk_size=CHUNK_SIZE):  # fmt: skip
        if resolution == Market.Resolution.CANCELLED:
            status = "cancelled"
        elif brier is not None:
            status = "won" if side_won else "lost"
        else:
            status = "open"
        yield {
            "trade_id": trade_id,
            "model": model,
            "cohort": cohort_number,
            "decision_id": decision_id,
            "market_id": market_id,
            "side": side,
            "amount": amount,
            "implied_confidence": confidence,
            "market_price": price,
            "status": status,
            "brier": brier,
        }
