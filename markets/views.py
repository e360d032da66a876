"""The public catalogue page. A market's own page is arena's (`arena.views.markets`): it
shows the agents' positions and trades, which `markets` may not read."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from markets import selectors
from markets.models import Market

PAGE_SIZE = 50


def _text(request: HttpRequest, name: str, limit: int) -> str:
    """Return a free-text parameter as the listing filters on it: NULs dropped (PostgreSQL
    refuses them in any string it is sent; no stored text holds one), stripped, cut."""
    return request.GET.get(name, "").replace("\x00", "").strip()[:limit]


def market_list(request: HttpRequest) -> HttpResponse:
    filters = selectors.MarketFilter(
        q=_text(request, "q", 200),
        category=_text(request, "category", 64),
        status=request.GET.get("status", "")
        if request.GET.get("status") in selectors.STATUSES
        else "",
        sort=request.GET.get("sort", "volume")
        if request.GET.get("sort") in selectors.SORTS
        else "volume",
    )
    page = Paginator(selectors.market_list(filters=filters), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "markets/list.html",
        {
            "page": page,
            "filters": filters,
            "categories": selectors.market_categories(),
            "statuses": Market.Status.choices,
            "last_sync": selectors.market_last_sync(),
            "query_string": query.urlencode(),
        },
    )
