"""Reads of the market catalogue."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q, QuerySet
from django.utils import timezone

from markets.models import Market, MarketSyncRun

STATUSES = tuple(Market.Status.values)  # open, closed (awaiting resolution), resolved, cancelled
SORTS = {"volume": ("-volume", "polymarket_id"), "close": ("close_date", "polymarket_id")}


@dataclass(frozen=True)
class MarketFilter:
    """What a catalogue listing asks for; unknown values fall back to 'no filter'."""

    q: str = ""
    category: str = ""
    status: str = ""
    sort: str = "volume"


def market_list(
    *, filters: MarketFilter | None = None, now: datetime | None = None
) -> QuerySet[Market]:
    """Return catalogue markets matching `filters`, highest volume first by default. The
    status filter follows `Market.status_at(now)`: "closed" is closed upstream or past the
    close date, and not yet resolved."""
    filters = filters or MarketFilter()
    now = now or timezone.now()
    markets = Market.objects.defer("raw", "description")
    if filters.q:
        markets = markets.filter(Q(question__icontains=filters.q) | Q(polymarket_id=filters.q))
    if filters.category:
        markets = markets.filter(category=filters.category)
    awaiting = Market.awaiting_resolution(now)
    if filters.status == Market.Status.OPEN:
        markets = markets.filter(resolution=Market.Resolution.OPEN).exclude(awaiting)
    elif filters.status == Market.Status.CLOSED:
        markets = markets.filter(awaiting)
    elif filters.status == Market.Status.RESOLVED:
        markets = markets.filter(resolution=Market.Resolution.RESOLVED)
    elif filters.status == Market.Status.CANCELLED:
        markets = markets.filter(resolution=Market.Resolution.CANCELLED)
    return markets.order_by(*SORTS.get(filters.sort, SORTS["volume"]))


def market_categories() -> list[str]:
    """Return every category in the catalogue, alphabetically."""
    return list(Market.objects.order_by("category").values_list("category", flat=True).distinct())


def market_last_sync() -> MarketSyncRun | None:
    return MarketSyncRun.objects.order_by("-started_at").first()
