"""Plain values that cross the boundary between the engine (`arena`) and the agents.

`agents` never reads `arena`'s models: the engine hands it a DecisionContext (the agent's
portfolio and the run's frozen markets) and gets back text and a ParsedDecision.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Literal

from scoring.portfolio import MIN_BET, max_bet

BINARY_OUTCOMES = ("Yes", "No")

Action = Literal["BET", "SELL", "HOLD"]


@dataclass(frozen=True)
class MarketView:
    """One market of a run's frozen snapshot, as every agent of the run sees it.

    `market_id` is Polymarket's own id. Prices are per outcome, in outcome order, in [0, 1];
    for a binary (Yes/No) market the first price is the YES price, the market's price.
    """

    market_id: str
    question: str
    category: str
    outcomes: tuple[str, ...]
    prices: tuple[Decimal | None, ...]
    volume: Decimal
    close_date: datetime | None

    @property
    def is_binary(self) -> bool:
        return tuple(o.lower() for o in self.outcomes) == ("yes", "no")

    @property
    def yes_price(self) -> Decimal | None:
        return self.prices[0] if self.is_binary and self.prices else None


@dataclass(frozen=True)
class PositionView:
    """One open position of the agent; prices are side-correct (a NO position sees 1 − YES)."""

    position_id: str
    market_id: str
    question: str
    side: str  # "YES", "NO", or the exact outcome name of a multi-outcome market
    shares: Decimal
    avg_entry_price: Decimal
    current_price: Decimal | None
    current_value: Decimal
    cost_basis: Decimal

    @property
    def unrealized_pnl(self) -> Decimal:
        return self.current_value - self.cost_basis


@dataclass(frozen=True)
class PortfolioView:
    """The agent's money at decision time, in USD."""

    cash: Decimal
    starting_balance: Decimal
    positions: tuple[PositionView, ...] = ()

    @property
    def positions_value(self) -> Decimal:
        return sum((p.current_value for p in self.positions), Decimal("0"))

    @property
    def total_value(self) -> Decimal:
        return self.cash + self.positions_value

    @property
    def pnl(self) -> Decimal:
        return self.total_value - self.starting_balance

    @property
    def pnl_percent(self) -> Decimal:
        return self.pnl / self.starting_balance * 100 if self.starting_balance else Decimal("0")

    @property
    def max_bet(self) -> Decimal:
        """The largest bet that executes now: 25% of cash floored to the cent."""
        return max_bet(self.cash)

    @property
    def min_bet(self) -> Decimal:
        """The smallest bet that executes: $50."""
        return Decimal(str(MIN_BET))

    @property
    def can_bet(self) -> bool:
        """Whether any bet can execute: the maximum bet is at least the minimum (cash of
        $200 or more). An agent with less is not bankrupt while it has $50 or a position, but
        it can only SELL or HOLD."""
        return self.max_bet >= self.min_bet


@dataclass(frozen=True)
class DecisionContext:
    """Everything one agent is shown for one weekly decision."""

    as_of: datetime
    week_start: date
    cohort_number: int
    portfolio: PortfolioView
    markets: tuple[MarketView, ...]
    # Methodology v2: the week's forecast panel, in its order (every agent of the week sees
    # the same questions); empty under v1.
    panel: tuple[MarketView, ...] = ()
    # The rules the agent's cohort runs ("v1", "v2"): they say which prompt it is asked with
    # and what its answer must carry.
    methodology: str = "v1"

    @property
    def states_probabilities(self) -> bool:
        """Whether the answer must state probabilities (methodology v2)."""
        return self.methodology != "v1"


@dataclass(frozen=True)
class BetOrder:
    market_id: str
    side: str  # "YES"/"NO" for binary markets, the canonical outcome name otherwise
    amount: Decimal
    # Methodology v2: the stated probability that the side backed happens, strictly between
    # 0 and 1; None under v1, which reads no probability.
    probability: Decimal | None = None


@dataclass(frozen=True)
class SellOrder:
    position_id: str
    percentage: Decimal  # 1 to 100


@dataclass(frozen=True)
class PanelForecast:
    """Methodology v2: an answer's forecast of one question of the week's panel, the
    probability of the market's first outcome (YES). None when the answer gave none or an
    invalid one; `problem` then says which ("missing", or what was wrong with it)."""

    market_id: str
    probability: Decimal | None
    problem: str = ""


@dataclass(frozen=True)
class ParsedDecision:
    """A validated decision. A HOLD has neither bets nor sells. Under methodology v2 it
    carries a forecast for each question of the panel, in the panel's order (none under v1)."""

    action: Action
    reasoning: str
    bets: tuple[BetOrder, ...] = field(default_factory=tuple)
    sells: tuple[SellOrder, ...] = field(default_factory=tuple)
    forecasts: tuple[PanelForecast, ...] = field(default_factory=tuple)
