"""A market's public page: the catalogue facts, and what the agents did with it."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from arena.selectors import markets as market_selectors
from arena.views import charts
from markets.models import Market
from markets.parsing import POLYMARKET_ID


def _get_market(polymarket_id: str) -> Market:
    """Return the catalogue market with this Polymarket id, or raise Http404 (also for text no
    Polymarket id can be: PostgreSQL refuses a NUL in a query)."""
    if not POLYMARKET_ID.fullmatch(polymarket_id):
        raise Http404("No such market.")
    try:
        return market_selectors.market_get(polymarket_id=polymarket_id)
    except Market.DoesNotExist as exc:
        raise Http404("No such market.") from exc


def market_detail(request: HttpRequest, polymarket_id: str) -> HttpResponse:
    market = _get_market(polymarket_id)
    page = market_selectors.market_page(market=market)
    chart = charts.price_chart(page.price_lines) if page.price_lines else None
    return render(request, "markets/detail.html", {"market": market, "page": page, "chart": chart})
