"""The Polymarket catalogue: one row per market, kept in sync with the Gamma API."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import models
from django.db.models import Q
from django.utils import timezone

# The Gamma record as received and the description: a market's largest columns, which the
# engine never reads (`.defer(*UNREAD_BY_ENGINE)` where it reads markets in bulk or per order).
UNREAD_BY_ENGINE = ("raw", "description")


def unread_by_engine_through(relation: str) -> tuple[str, ...]:
    """UNREAD_BY_ENGINE as seen through `relation` (a foreign key to Market), for `.defer`."""
    return tuple(f"{relation}__{name}" for name in UNREAD_BY_ENGINE)


class Market(models.Model):
    """A Polymarket market as last seen upstream, plus our own resolution state.

    `outcomes` and `outcome_prices` are parallel lists in Polymarket's order; prices are
    decimal strings with 6 places (null where upstream gave none). For a binary market
    (outcomes exactly Yes/No) `price` is the YES price, the market's price.
    """

    class Resolution(models.TextChoices):
        OPEN = "open", "Open"
        RESOLVED = "resolved", "Resolved"
        CANCELLED = "cancelled", "Cancelled"

    class Status(models.TextChoices):
        """What the pages say of a market: its resolution, or whether it is still trading."""

        OPEN = "open", "Open"
        CLOSED = "closed", "Closed, awaiting resolution"
        RESOLVED = "resolved", "Resolved"
        CANCELLED = "cancelled", "Cancelled — refunded"

    polymarket_id = models.CharField(max_length=32, unique=True)
    condition_id = models.CharField(max_length=80, blank=True)
    slug = models.CharField(max_length=255, blank=True)
    question = models.TextField()
    description = models.TextField(blank=True)
    category = models.CharField(max_length=64, default="General")
    event_id = models.CharField(max_length=32, blank=True)
    event_slug = models.CharField(max_length=255, blank=True)
    event_title = models.TextField(blank=True)
    outcomes = models.JSONField(default=list)
    outcome_prices = models.JSONField(default=list)
    last_open_prices = models.JSONField(
        default=list,
        blank=True,
        help_text="Prices when last seen open: the valuation fallback once a market closes.",
    )
    price = models.DecimalField(max_digits=7, decimal_places=6, null=True, blank=True)
    volume = models.DecimalField(max_digits=20, decimal_places=6, default=Decimal("0"))
    liquidity = models.DecimalField(max_digits=20, decimal_places=6, null=True, blank=True)
    close_date = models.DateTimeField(null=True, blank=True)
    active = models.BooleanField(default=True)
    closed = models.BooleanField(default=False)
    neg_risk = models.BooleanField(default=False)
    uma_resolution_status = models.CharField(max_length=32, blank=True)
    resolution = models.CharField(
        max_length=16, choices=Resolution.choices, default=Resolution.OPEN
    )
    winning_outcome = models.CharField(max_length=255, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolution_note = models.TextField(blank=True)
    raw = models.JSONField(default=dict, help_text="The Gamma record as last received.")
    # Stamped only when a row is written: a refresh that hears a market unchanged writes
    # nothing, and its caller keeps when it heard them all (the arena's tick, on its row).
    last_synced_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When a sync last wrote the market: first stored, or a value changed.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-volume", "polymarket_id"]
        indexes = [
            models.Index(fields=["-volume"], name="market_volume_desc"),
            models.Index(fields=["category", "-volume"], name="market_category_volume"),
            models.Index(fields=["resolution", "closed"], name="market_status"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(price__isnull=True) | (Q(price__gte=0) & Q(price__lte=1)),
                name="market_price_in_unit_interval",
            ),
            models.CheckConstraint(
                condition=~Q(resolution="resolved") | ~Q(winning_outcome=""),
                name="market_resolved_has_winner",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.polymarket_id}: {self.question[:80]}"

    @property
    def is_binary(self) -> bool:
        return [str(o).lower() for o in self.outcomes] == ["yes", "no"]

    @staticmethod
    def awaiting_resolution(now: datetime) -> Q:
        """Markets closed but not yet resolved here at `now`: closed upstream, or past their
        close date (Polymarket often leaves a market trading past its end date, and the page
        must not call it open), while our resolution is still OPEN. The one definition, used
        by the row (`status_at`) and by every filter."""
        return Q(resolution=Market.Resolution.OPEN) & (Q(closed=True) | Q(close_date__lte=now))

    def status_at(self, now: datetime) -> Market.Status:
        """Return the market's status at `now` (see `awaiting_resolution`)."""
        if self.resolution == self.Resolution.RESOLVED:
            return self.Status.RESOLVED
        if self.resolution == self.Resolution.CANCELLED:
            return self.Status.CANCELLED
        if self.closed or (self.close_date is not None and self.close_date <= now):
            return self.Status.CLOSED
        return self.Status.OPEN

    @property
    def status(self) -> Market.Status:
        return self.status_at(timezone.now())

    @property
    def status_label(self) -> str:
        """Return what the pages print: Open, Closed, awaiting resolution, Resolved: <winning
        outcome>, or Cancelled — refunded (an ambiguous resolution refunds every position)."""
        status = self.status
        if status == self.Status.RESOLVED:
            return f"Resolved: {self.winning_outcome}"
        return str(status.label)

    def prices_by_outcome(self) -> list[tuple[str, Decimal | None]]:
        """Return (outcome, price) pairs in Polymarket's order."""
        prices: list[Any] = list(self.outcome_prices) + [None] * len(self.outcomes)
        return [
            (str(o), Decimal(p) if p is not None else None)
            for o, p in zip(self.outcomes, prices, strict=False)
        ]


class MarketSyncRun(models.Model):
    """One attempt to refresh the catalogue: what was asked, what came back, what was refused."""

    class Status(models.TextChoices):
        OK = "ok", "OK"
        FAILED = "failed", "Failed"

    source = models.CharField(max_length=16)
    requested = models.PositiveIntegerField()
    fetched = models.PositiveIntegerField(default=0)
    created = models.PositiveIntegerField(default=0)
    updated = models.PositiveIntegerField(default=0)
    rejected = models.PositiveIntegerField(default=0)
    rejections = models.JSONField(default=list, help_text="[{id, reason}] for every odd record")
    status = models.CharField(max_length=16, choices=Status.choices)
    error = models.TextField(blank=True)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()

    class Meta:
        ordering = ["-started_at"]
        # "The last sync" (market list, status page) is read on every request: a year holds
        # ~100,000 syncs, one every 5 minutes.
        indexes = [models.Index(fields=["-started_at", "-id"], name="sync_run_recent")]

    def __str__(self) -> str:
        return f"sync {self.started_at:%Y-%m-%d %H:%M} {self.status}"
