"""Decide from a Gamma market whether it has resolved, and to which outcome.

Pure logic: no database, no network, no clock (the caller passes `now`). The rules and the
recorded case behind each one are in docs/resolution.md. In short:

- a market that is not `closed` is open, whatever its UMA status or prices;
- closed with UMA status "resolved": the single outcome priced ≥ 0.99 (all others ≤ 0.01)
  wins; any other price pattern means no reliable winner, so the market is cancelled
  (positions refunded, spec 002);
- closed with UMA status "proposed" or "disputed" (or one we do not know): not final, open;
- closed with no UMA status (old AMM markets): terminal prices resolve it; otherwise it is
  cancelled only once it has been closed for more than RESOLUTION_GRACE, else open.

An open verdict says why it is open (`why_open`), for the check's record of every market it
leaves unsettled.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, Literal

from markets.exceptions import OddRecord
from markets.parsing import GammaMarket, parse_market

VerdictState = Literal["open", "resolved", "cancelled"]
# Why an open verdict is open: the classes the resolution check records for every market it
# leaves unsettled (docs/resolution.md, "Nothing stalls silently").
WhyOpen = Literal["", "trading", "awaiting_resolution", "unknown_uma_status", "unreadable_record"]

WIN_AT_LEAST = Decimal("0.99")
LOSE_AT_MOST = Decimal("0.01")
# How long a closed market with no UMA status and no determinable winner is waited for
# before it is refunded as cancelled.
RESOLUTION_GRACE = timedelta(days=30)

UMA_RESOLVED = "resolved"
UMA_NOT_FINAL = frozenset({"proposed", "disputed"})


@dataclass(frozen=True)
class Verdict:
    """What to do with a market now: keep waiting, settle to a winner, or refund."""

    state: VerdictState
    winning_outcome: str | None
    winning_index: int | None
    reason: str
    why_open: WhyOpen = field(default="", compare=False)

    def __post_init__(self) -> None:
        decided = self.winning_outcome is not None and self.winning_index is not None
        undecided = self.winning_outcome is None and self.winning_index is None
        if (self.state == "resolved" and not decided) or (
            self.state != "resolved" and not undecided
        ):
            raise ValueError(f"inconsistent verdict {self!r}")


def _open(reason: str, why: WhyOpen = "awaiting_resolution") -> Verdict:
    return Verdict("open", None, None, reason, why)


def _cancelled(reason: str) -> Verdict:
    return Verdict("cancelled", None, None, reason)


def _price_list(market: GammaMarket) -> str:
    return ", ".join(f"{o} {p}" for o, p in zip(market.outcomes, market.prices, strict=True))


def terminal_winner(prices: tuple[Decimal, ...]) -> int | None:
    """Index of the one outcome priced ≥ 0.99 when every other is ≤ 0.01; else None."""
    winners = [i for i, p in enumerate(prices) if p >= WIN_AT_LEAST]
    if len(winners) != 1:
        return None
    index = winners[0]
    if all(p <= LOSE_AT_MOST for i, p in enumerate(prices) if i != index):
        return index
    return None


def _no_winner_pattern(prices: tuple[Decimal, ...]) -> str:
    """Name the price pattern that left no reliable winner."""
    if all(p == 0 for p in prices):
        return "all prices are zero"
    high = sum(1 for p in prices if p >= WIN_AT_LEAST)
    if high > 1:
        return f"{high} outcomes are priced at or above {WIN_AT_LEAST}"
    if len(set(prices)) == 1:
        split = "50-50" if len(prices) == 2 else f"an even {len(prices)}-way split"
        return f"prices are {split} ({prices[0]} each)"
    return (
        f"prices are not terminal (no single outcome at or above {WIN_AT_LEAST} "
        f"with all others at or below {LOSE_AT_MOST})"
    )


def _resolved(market: GammaMarket, index: int, basis: str) -> Verdict:
    outcome = market.outcomes[index]
    return Verdict(
        "resolved",
        outcome,
        index,
        f"{basis}; winner {outcome!r} (prices: {_price_list(market)})",
    )


def _parse_moment(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def closed_since(market: GammaMarket) -> datetime | None:
    """When the wait for a resolution starts: the later of endDate and closedTime.

    The later one is the cautious choice (a market can close before its end date, or after
    it). None when the record carries neither date.
    """
    moments = [m for m in (market.close_date, _parse_moment(market.raw.get("closedTime"))) if m]
    return max(moments) if moments else None


def resolution_verdict(market: GammaMarket, *, now: datetime) -> Verdict:
    """Return the verdict for `market` at `now` (timezone-aware) by docs/resolution.md."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    status = market.uma_resolution_status.strip().lower()
    prices = _price_list(market)

    if not market.closed:
        detail = f" (UMA status {status!r}; nothing is final until it closes)" if status else ""
        return _open(f"market is still open for trading{detail}", "trading")

    if status == UMA_RESOLVED:
        index = terminal_winner(market.prices)
        if index is not None:
            return _resolved(market, index, "closed and resolved upstream (UMA status resolved)")
        return _cancelled(
            "closed and resolved upstream (UMA status resolved) but no reliable winner: "
            f"{_no_winner_pattern(market.prices)} (prices: {prices}); refunded"
        )

    if status in UMA_NOT_FINAL:
        return _open(f"closed; UMA resolution {status}, not final yet (prices: {prices})")

    if status:
        return _open(
            f"closed; unrecognised UMA status {status!r}, not treated as final",
            "unknown_uma_status",
        )

    # No UMA status at all: an old AMM market, which ended at terminal prices when resolved.
    index = terminal_winner(market.prices)
    if index is not None:
        return _resolved(market, index, "closed with no UMA status and terminal prices")
    pattern = _no_winner_pattern(market.prices)
    since = closed_since(market)
    if since is None:
        return _open(
            f"closed with no UMA status and no determinable winner ({pattern}); "
            "no close date to measure the wait from, so still waiting"
        )
    waited = now - since
    if waited > RESOLUTION_GRACE:
        return _cancelled(
            f"closed {waited.days} days ago with no resolution and no determinable winner "
            f"({pattern}; prices: {prices}); refunded"
        )
    return _open(
        f"closed with no UMA status and no determinable winner yet ({pattern}); waiting up "
        f"to {RESOLUTION_GRACE.days} days from {since.astimezone(UTC):%Y-%m-%d %H:%M} UTC "
        "before refunding"
    )


SIMULATED = "forecasterArenaSimulated"
"""A key only the demo's market source puts on a record whose resolution it drew itself."""
SIMULATED_WHY = "the market did not resolve so on Polymarket"


def verdict_for_record(record: Any, *, now: datetime) -> Verdict:
    """The verdict for a raw Gamma record; "open" with the reason if it cannot be read.

    Nothing is decided from a record we cannot read: a later sync may bring a readable one.
    """
    try:
        market = parse_market(record)
    except OddRecord as exc:
        return _open(f"record cannot be read, nothing decided: {exc}", "unreadable_record")
    verdict = resolution_verdict(market, now=now)
    if verdict.state != "open" and isinstance(record, dict) and record.get(SIMULATED) is True:
        # The demo drew this resolution: the note says so wherever it is shown, not only the
        # site's banner.
        return replace(verdict, reason=f"{verdict.reason} (simulated by the demo: {SIMULATED_WHY})")
    return verdict
