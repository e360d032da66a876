"""The books every drill and catalogue ends by checking:
for every agent, cash + the cost basis of its open positions − the realized P/L of all its
positions is its cohort's starting balance, to the cent, with cash never below 0; and no market
marked resolved keeps an open position. Summed in Python from the stored Decimals (SQLite
would sum in floating point)."""

from __future__ import annotations

from decimal import Decimal

from django.db.models import Q

from arena.models import Agent, Position
from markets.models import Market


def assert_books_balance(*, cohort_id: int | None = None) -> None:
    """Check the books of every agent (of `cohort_id`, if given); raise AssertionError naming
    the agents whose books do not balance."""
    agents = Agent.objects.all() if cohort_id is None else Agent.objects.filter(cohort_id=cohort_id)
    rows = agents.order_by().values_list("pk", "cash", "cohort__starting_balance")
    cash = {pk: value for pk, value, _ in rows}
    expected = {pk: start for pk, _, start in rows}
    books = dict(cash)
    positions = Position.objects.filter(agent__in=agents.values("pk")).order_by()
    for agent_id, status, cost, pnl in positions.values_list(
        "agent_id", "status", "cost_basis", "realized_pnl"
    ):
        books[agent_id] += (cost if status == Position.Status.OPEN else Decimal(0)) - pnl
    assert all(value >= 0 for value in cash.values()), cash
    assert books == expected, {pk: (books[pk], expected[pk]) for pk in books}
    stranded = positions.filter(
        Q(status=Position.Status.OPEN) & Q(market__resolution=Market.Resolution.RESOLVED)
    )
    assert not stranded.exists(), list(stranded.values_list("pk", flat=True))
