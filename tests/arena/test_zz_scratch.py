from decimal import Decimal
import pytest
from tests.arena.test_money_invariants import Ledger, Reprice, Bet, Sell, cohort, run, markets, foreign_position  # noqa
from arena.models import Position, Trade

@pytest.mark.django_db
@pytest.mark.parametrize("price", ["0.5", "0.3", "0.123457", "0.999999", "0.000001"])
def test_x(frozen, markets, foreign_position, price):
    ledger = Ledger(frozen, markets, foreign_position)
    ledger.apply(Reprice(0, Decimal(price)))
    ledger.apply(Bet(0, 0, Decimal("50.00"), Decimal(0)))
    for pct in [Decimal("95.75"), Decimal(100)]:
        p = Position.objects.filter(agent=ledger.agent).first()
        print(p.shares, p.cost_basis, p.status)
        try:
            ledger.apply(Sell(0, pct))
        finally:
            for t in Trade.objects.filter(agent=ledger.agent).order_by("pk"): print(t.kind, t.status, t.reject_reason, t.price, t.shares, t.amount, t.cost_basis_released)
