"""The weekly forecast panel of methodology v2: the K markets of a run's frozen snapshot on which
every agent states a probability, whatever it trades, so that every model is scored on the
same questions. Picked by a published rule, deterministic given the run's seed.

The rule (`panel_pick`), over the frozen top markets that no earlier week's panel asked (a
question is asked in one week only: its earlier forecasts are public by the time an outside
agent answers; `arena.services.frozen.run_panel` leaves them out):

1. Eligible (`panel_eligible`): an open binary market (two outcomes); a first-outcome (YES) price
   from 3% to 97% (a near-certain one tells little: a forecast and the market price barely
   differ); at least MIN_LIQUIDITY dollars on the order book, about the median of the top 500,
   so that its price means something; an end date at least END_AFTER_WINDOW after the outside
   agents' window closes, so that nobody can forecast a question already settled.
2. Spread across price levels: the eligible markets fall into PRICE_BANDS by YES price; the
   panel takes one market from each band in turn, lowest band first, skipping a band that has
   none left, until it holds K (or every eligible market).
3. Soonest first: within a band, the market that ends soonest goes first, so that scores come
   in within weeks rather than months; markets ending at the same moment are ordered by a hash
   of the run's seed and their id.

The seed (`panel_seed`) is derived from the run's week and its frozen snapshot (each market's
id and prices), so anyone holding the snapshot can pick the same panel again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal, InvalidOperation

PANEL_SIZE = 20  # K: the questions each agent forecasts a week
PRICE_FLOOR = Decimal("0.03")
PRICE_CEILING = Decimal("0.97")
MIN_LIQUIDITY = Decimal("10000")  # dollars on the order book
END_AFTER_WINDOW = timedelta(days=1)
PRICE_BANDS: tuple[tuple[Decimal, Decimal], ...] = (
    (Decimal("0.03"), Decimal("0.20")),
    (Decimal("0.20"), Decimal("0.40")),
    (Decimal("0.40"), Decimal("0.60")),
    (Decimal("0.60"), Decimal("0.80")),
    (Decimal("0.80"), Decimal("0.97")),
)
"""Each band holds the prices from its lower bound up to, not including, its upper one; the
last holds its upper bound too."""


@dataclass(frozen=True)
class Candidate:
    """A market of the frozen snapshot, as the rule reads it."""

    market_id: str
    outcomes: tuple[str, ...]
    prices: tuple[str | None, ...]  # as frozen, in the outcomes' order
    liquidity: Decimal | None
    close_date: datetime | None
    closed: bool = False

    @property
    def yes_price(self) -> Decimal | None:
        """The first outcome's frozen price, or None when it is missing or not a number."""
        if not self.prices or self.prices[0] is None:
            return None
        try:
            price = Decimal(self.prices[0])
        except InvalidOperation:
            return None
        return price if price.is_finite() else None


def panel_seed(*, week_start: date, snapshot: Iterable[tuple[str, Sequence[str | None]]]) -> str:
    """The seed of a run's panel: SHA-256 (hex) of its week and of each frozen market's id and
    prices, in the order of the ids as strings ("100" before "99"), one line each:
    `2026-03-08` then `<id> <price> <price>...` (an empty field for a missing price)."""
    lines = [week_start.isoformat()]
    for market_id, prices in sorted(snapshot, key=lambda market: market[0]):
        lines.append(" ".join([market_id, *("" if p is None else p for p in prices)]))
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def panel_eligible(candidate: Candidate, *, earliest_end: datetime) -> bool:
    """Whether the market may be a panel question (rule 1): `earliest_end` is the outside
    window's close plus END_AFTER_WINDOW."""
    price = candidate.yes_price
    return (
        not candidate.closed
        and len(candidate.outcomes) == 2
        and len(candidate.prices) == 2
        and price is not None
        and PRICE_FLOOR <= price <= PRICE_CEILING
        and candidate.liquidity is not None
        and candidate.liquidity >= MIN_LIQUIDITY
        and candidate.close_date is not None
        and candidate.close_date >= earliest_end
    )


def price_band(price: Decimal) -> int:
    """The index of the band of PRICE_BANDS that holds an eligible price."""
    for index, (low, high) in enumerate(PRICE_BANDS):
        if low <= price < high:
            return index
    return len(PRICE_BANDS) - 1  # PRICE_CEILING itself


def panel_pick(
    candidates: Iterable[Candidate], *, seed: str, earliest_end: datetime, size: int = PANEL_SIZE
) -> list[str]:
    """The ids of the run's panel, in the order the rule took them (rules 1 to 3)."""
    if size < 0:
        raise ValueError(f"a panel holds no fewer than 0 questions, not {size}")
    unique = {c.market_id: c for c in candidates}
    bands: list[list[Candidate]] = [[] for _ in PRICE_BANDS]
    for candidate in unique.values():
        if panel_eligible(candidate, earliest_end=earliest_end):
            bands[price_band(candidate.yes_price or PRICE_FLOOR)].append(candidate)

    def soonest(candidate: Candidate) -> tuple[datetime, str]:
        tie = hashlib.sha256(f"{seed} {candidate.market_id}".encode()).hexdigest()
        return candidate.close_date or earliest_end, tie

    queues = [sorted(band, key=soonest) for band in bands]
    picked: list[str] = []
    while len(picked) < size and any(queues):
        for queue in queues:
            if queue and len(picked) < size:
                picked.append(queue.pop(0).market_id)
    return picked
