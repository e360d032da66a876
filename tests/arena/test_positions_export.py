"""The positions export's data dictionary says what its rows hold: checked on a position
that was bought, partly sold a week later at another price, then settled when its real
recorded market resolved (001 §2.3; 002 "Execution", "Resolution and settlement")."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from agents.types import SellOrder
from arena.models import Cohort, Position
from arena.selectors.exports import DATASETS
from arena.services.decisions.lifecycle import decision_claim
from arena.services.exports import dataset_stream
from arena.services.frozen import FrozenMarkets, run_prepare
from arena.services.trades import trade_sell
from tests.arena.test_settlement import (
    NEXT_WEEK,
    RESOLVED_YES,
    Gamma,
    agent_named,
    bet,
    decision_for,
    list_and_freeze,
    settle_with,
    trading,
)
from tests.replay import ReplayServer

NEXT_RUN_AT = datetime.combine(NEXT_WEEK, datetime.min.time(), UTC) + timedelta(minutes=5)
SETTLED_AT = NEXT_RUN_AT + timedelta(days=1)


@pytest.fixture
def gamma(gamma_server: ReplayServer) -> Gamma:
    return Gamma(gamma_server)


def test_a_settled_positions_row_holds_what_its_columns_describe(
    gamma: Gamma, cohort: Cohort
) -> None:
    """$2,000 on YES at 0.40 is 5,000 shares. A week later, at 0.50, 40% are sold: 2,000
    shares for $1,000, releasing $800 of cost basis, +$200 realized. The market resolves
    YES: the 3,000 shares left pay $3,000 against the $1,200 still held, +$1,800. The row
    keeps its 3,000 shares and $1,200, and its realized P/L is both: +$2,000."""
    agent = agent_named(cohort, "gpt-5.1")
    frozen = list_and_freeze(gamma, trading(RESOLVED_YES, ["0.4", "0.6"]))
    bought = bet(decision_for(agent), frozen, "522900", "YES", "2000.00")
    gamma.serve(trading(RESOLVED_YES, ["0.5", "0.5"]))
    next_week = FrozenMarkets.load(run_prepare(now=NEXT_RUN_AT))
    decision = decision_claim(agent=agent, week_start=NEXT_WEEK, now=NEXT_RUN_AT)
    assert decision is not None
    order = SellOrder(position_id=str(bought.position_id), percentage=Decimal(40))
    sold = trade_sell(decision=decision, order=order, frozen=next_week, index=0)
    assert (sold.amount, sold.cost_basis_released) == (Decimal("1000.00"), Decimal("800.00"))
    assert settle_with(gamma, RESOLVED_YES, now=SETTLED_AT).resolved == ["522900"]

    dataset = DATASETS["positions"]
    body = b"".join(dataset_stream(dataset, "csv", dataset.rows())).decode()
    [row] = [
        r for r in csv.DictReader(io.StringIO(body)) if r["position_id"] == str(sold.position_id)
    ]
    said = {column.name: column.description for column in dataset.columns}

    assert row["status"] == Position.Status.SETTLED
    assert said["shares"] == (
        "Shares held: those a sell left (0 once sold out); a settled or refunded position "
        "keeps the shares it held."
    )
    assert row["shares"] == "3000.000000"
    assert said["cost_basis"] == (
        "USD paid for the shares held: a sell takes off the cost basis it releases; a "
        "settled or refunded position keeps it."
    )
    assert row["cost_basis"] == "1200.00"
    assert said["settlement_value"] == (
        "USD paid out at settlement: $1 a winning share (cents down), $0 a losing one, the "
        "cost basis when refunded; empty before."
    )
    assert row["settlement_value"] == "3000.00"
    assert said["realized_pnl"] == (
        "P/L realized: each sell's proceeds − the cost basis it released, and at settlement "
        "the payout − the cost basis held."
    )
    assert row["realized_pnl"] == "2000.00"  # +200 by the sell, +1,800 at settlement
    assert said["last_price"] == "Side-correct price of its last trade, a buy or a sell."
    assert row["last_price"] == "0.500000"
    assert said["closed_at"] == "When it was sold out, settled or refunded."
    assert row["closed_at"] == SETTLED_AT.isoformat().replace("+00:00", "Z")
