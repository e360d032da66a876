"""The books: positions, trades, and the portfolio snapshots that mark them to market."""

from __future__ import annotations

from decimal import Decimal

from django.db import models
from django.db.models import Q

from arena.models.cohorts import Agent
from arena.models.decisions import Decision
from arena.money import money_field, percent_field, price_field, shares_field
from arena.seal import SealedManager
from markets.models import Market


class Position(models.Model):
    """Shares an agent holds in one side of one market. One OPEN position per market per side;
    a new bet after a full sell opens a new position."""

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        CLOSED = "closed", "Closed (sold)"
        SETTLED = "settled", "Settled"
        CANCELLED = "cancelled", "Cancelled (refunded)"

    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="positions")
    market = models.ForeignKey(Market, on_delete=models.PROTECT, related_name="positions")
    side = models.CharField(max_length=255, help_text="YES, NO, or the outcome name.")
    outcome_index = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    shares = shares_field()
    cost_basis = money_field()
    realized_pnl = money_field(default=Decimal("0"))
    last_price = price_field(null=True, blank=True, help_text="Last usable side-correct price.")
    settlement_value = money_field(null=True, blank=True)
    opened_at = models.DateTimeField()
    closed_at = models.DateTimeField(null=True, blank=True)

    objects = SealedManager["Position"]()

    class Meta:
        ordering = ["agent", "opened_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "market", "side"],
                condition=Q(status="open"),
                name="one_open_position_per_market_side",
            ),
            models.CheckConstraint(
                condition=~Q(status="open") | Q(shares__gt=0), name="open_position_has_shares"
            ),
            models.CheckConstraint(condition=Q(shares__gte=0), name="position_shares_not_negative"),
            models.CheckConstraint(
                condition=Q(cost_basis__gte=0), name="position_cost_not_negative"
            ),
            models.CheckConstraint(
                condition=Q(last_price__isnull=True)
                | (Q(last_price__gte=0) & Q(last_price__lte=1)),
                name="position_price_in_unit_interval",
            ),
        ]
        indexes = [models.Index(fields=["status", "market"], name="position_status_market")]

    def __str__(self) -> str:
        return f"{self.side} {self.shares} of {self.market.polymarket_id}"

    @property
    def avg_entry_price(self) -> Decimal | None:
        return (
            (self.cost_basis / self.shares).quantize(Decimal("0.000001")) if self.shares else None
        )


class Trade(models.Model):
    """One order of a decision, executed or rejected with its reason, with every input kept."""

    class Kind(models.TextChoices):
        BUY = "BUY", "Buy"
        SELL = "SELL", "Sell"

    class Status(models.TextChoices):
        EXECUTED = "executed", "Executed"
        REJECTED = "rejected", "Rejected"

    decision = models.ForeignKey(Decision, on_delete=models.PROTECT, related_name="trades")
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="trades")
    order_index = models.PositiveSmallIntegerField()
    try_number = models.PositiveSmallIntegerField(default=1)
    kind = models.CharField(max_length=4, choices=Kind.choices)
    status = models.CharField(max_length=16, choices=Status.choices)
    reject_reason = models.TextField(blank=True)
    market = models.ForeignKey(
        Market, on_delete=models.PROTECT, null=True, blank=True, related_name="trades"
    )
    position = models.ForeignKey(
        Position, on_delete=models.PROTECT, null=True, blank=True, related_name="trades"
    )
    requested_market_id = models.CharField(max_length=64, blank=True)
    requested_position_id = models.CharField(max_length=64, blank=True)
    side = models.CharField(max_length=255, blank=True)
    requested_amount = money_field(null=True, blank=True)
    requested_percentage = models.DecimalField(
        max_digits=7, decimal_places=4, null=True, blank=True
    )
    # The side-correct prices: executed at (every figure uses it), frozen in the run's
    # snapshot, and (an outside order's) live at submission; it executed at the worse of those.
    price = price_field(null=True, blank=True, help_text="Executed at: every figure uses it.")
    snapshot_price = price_field(null=True, blank=True, help_text="In the frozen snapshot.")
    live_price = price_field(null=True, blank=True, help_text="An outside order's, at submission.")
    shares = shares_field(null=True, blank=True)
    # An outside order executed at the snapshot's price before fair entry (`mend_past`).
    before_fair_entry = models.BooleanField(default=False, db_default=False)
    amount = money_field(
        null=True, blank=True, help_text="Cash moved: paid for a buy, received for a sell."
    )
    cash_before = money_field(null=True, blank=True)
    cash_after = money_field(null=True, blank=True)
    implied_confidence = models.FloatField(null=True, blank=True)
    # Methodology v2: the probability the bet stated that its side wins (none under v1).
    stated_probability = models.DecimalField(max_digits=7, decimal_places=6, null=True, blank=True)
    cost_basis_released = money_field(null=True, blank=True)
    realized_pnl = money_field(null=True, blank=True)
    brier_score = models.FloatField(null=True, blank=True)
    side_won = models.BooleanField(null=True, blank=True)
    scored_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()

    objects = SealedManager["Trade"]()

    class Meta:
        ordering = ["created_at", "order_index"]
        constraints = [
            # Each order of a decision's answer executes (or is rejected) once: the key that
            # makes a reclaim after a crash unable to execute an order twice.
            models.UniqueConstraint(
                fields=["decision", "try_number", "order_index"], name="trade_once_per_order"
            ),
            models.CheckConstraint(
                condition=Q(price__isnull=True) | (Q(price__gte=0) & Q(price__lte=1)),
                name="trade_price_in_unit_interval",
            ),
            models.CheckConstraint(
                condition=~Q(status="executed") | Q(shares__gt=0), name="executed_trade_has_shares"
            ),
            models.CheckConstraint(
                condition=Q(cash_after__isnull=True) | Q(cash_after__gte=0),
                name="trade_cash_after_not_negative",
            ),
        ]
        indexes = [
            models.Index(fields=["agent", "status"], name="trade_agent_status"),
            models.Index(fields=["market", "kind", "status"], name="trade_market_kind"),
            # The analytics' watermark reads the latest scoring time
            # (arena/selectors/analytics/cache.py).
            models.Index(fields=["scored_at"], name="trade_scored_at"),
            # Every snapshot's Brier aggregate reads the scored buys of the agents it marks
            # (arena/services/marking.py, `_SCORED_BUYS`) from this index alone.
            models.Index(
                fields=["agent", "brier_score"],
                name="trade_agent_brier",
                condition=Q(kind="BUY", status="executed", brier_score__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.side} {self.status}"


class PortfolioSnapshot(models.Model):
    """An agent's marked-to-market portfolio at one 10-minute slot (`snapshot_timestamp`)."""

    # No index of its own: the unique (agent, snapshot_timestamp) index serves every read by
    # agent, and a second index on agent alone misled the planner into scanning an agent's
    # whole history for a day's window (and cost every tick's insert a third index).
    agent = models.ForeignKey(
        Agent, on_delete=models.CASCADE, related_name="snapshots", db_index=False
    )
    snapshot_timestamp = models.DateTimeField()
    cash = money_field()
    positions_value = money_field()
    total_value = money_field()
    total_pnl = money_field()
    total_pnl_percent = percent_field()
    brier_score = models.FloatField(
        null=True, blank=True, help_text="Mean of resolved bets so far."
    )
    resolved_bets = models.PositiveIntegerField(default=0)
    prices_stale = models.BooleanField(
        default=False, help_text="The price refresh failed: valued at the last known prices."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = SealedManager["PortfolioSnapshot"]()

    class Meta:
        ordering = ["agent", "snapshot_timestamp"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "snapshot_timestamp"], name="one_snapshot_per_agent_slot"
            )
        ]
        # The unique index (agent, snapshot_timestamp) also serves the chart's range scans.

    def __str__(self) -> str:
        return f"{self.agent_id} @ {self.snapshot_timestamp:%Y-%m-%d %H:%M}"


class AgentSnapshotRollup(models.Model):
    """An agent's snapshots over one UTC hour or day, summed up for the charts: the last
    snapshot's figures (a bucket's value is its last, as the charts draw it), the range of
    values and how many snapshots. Kept by every snapshot write (arena.services.rollup) and
    rebuilt from the snapshots by `manage.py rebuild_snapshot_rollup`."""

    class Resolution(models.TextChoices):
        HOUR = "hour", "Hour"
        DAY = "day", "Day"

    # No index of its own: the unique (agent, resolution, bucket_start) index serves.
    agent = models.ForeignKey(
        Agent, on_delete=models.CASCADE, related_name="snapshot_rollups", db_index=False
    )
    resolution = models.CharField(max_length=4, choices=Resolution.choices)
    bucket_start = models.DateTimeField()
    first_at = models.DateTimeField(help_text="The bucket's first snapshot.")
    last_at = models.DateTimeField(help_text="The bucket's last snapshot: the figures below.")
    total_value = money_field()
    total_pnl = money_field()
    total_pnl_percent = percent_field()
    min_total_value = money_field()
    max_total_value = money_field()
    snapshots = models.PositiveIntegerField()

    objects = SealedManager["AgentSnapshotRollup"]()

    class Meta:
        ordering = ["agent", "resolution", "bucket_start"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "resolution", "bucket_start"], name="one_rollup_per_agent_bucket"
            )
        ]

    def __str__(self) -> str:
        return f"{self.agent_id} {self.resolution} @ {self.bucket_start:%Y-%m-%d %H:%M}"


class SnapshotTick(models.Model):
    """One mark-to-market tick: what it refreshed, whether the refresh failed, and when it heard
    the held markets, once, not on each market's row (`selectors.markets.market_heard_at`)."""

    slot = models.DateTimeField(unique=True)
    markets_refreshed = models.PositiveIntegerField(default=0)
    snapshots_written = models.PositiveIntegerField(default=0)
    refresh_error = models.TextField(blank=True)
    # When the refresh heard the held markets, changed or not (empty: it failed, or nothing
    # was held); and the held markets it did not bring back (not returned, or refused).
    refreshed_at = models.DateTimeField(null=True, blank=True)
    not_refreshed = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-slot"]

    def __str__(self) -> str:
        return f"tick {self.slot:%Y-%m-%d %H:%M}"
