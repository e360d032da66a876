"""Reads of the market catalogue."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q, QuerySet

from markets.models import Market, MarketSyncRun

STATUSES = ("open", "closed", "resolved", "cancelled")
SORTS = {"volume": ("-volume", "polymarket_id"), "close": ("close_date", "polymarket_id")}


@dataclass(frozen=True)
class MarketFilter:
    """What a catalogue listing asks for; unknown values fall back to 'no filter'."""

    q: str = ""
    category: str = ""
    status: str = ""
    sort: str = "volume"


def market_list(*, filters: MarketFilter | None = None) -> QuerySet[Market]:
    """Return catalogue markets matching `filters`, highest volume first by default."""
    filters = filters or MarketFilter()
    markets = Market.objects.defer("raw", "description")
    if filters.q:
        markets = markets.filter(Q(question__icontains=filters.q) | Q(polymarket_id=filters.q))
    if filters.category:
        markets = markets.filter(category=filters.category)
    if filters.status == "open":
        markets = markets.filter(resolution=Market.Resolution.OPEN, closed=False)
    elif filters.status == "closed":
        markets = markets.filter(resolution=Market.Resolution.OPEN, closed=True)
    elif filters.status == "resolved":
        markets = markets.filter(resolution=Market.Resolution.RESOLVED)
    elif filters.status == "cancelled":
        markets = markets.filter(resolution=Market.Resolution.CANCELLED)
    return markets.order_by(*SORTS.get(filters.sort, SORTS["volume"]))


def market_categories() -> list[str]:
    """Return every category in the catalogue, alphabetically."""
    return list(Market.objects.order_by("category").values_list("category", flat=True).distinct())


def market_last_sync() -> MarketSyncRun | None:
    return MarketSyncRun.objects.order_by("-started_at").first()
