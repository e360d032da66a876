from typing import Any

from django.conf import settings
from django.http import HttpRequest


def site(request: HttpRequest) -> dict[str, Any]:
    """Tell every page whether it shows demo data rather than live Polymarket data."""
    return {"demo_data": settings.MARKET_SOURCE == "demo"}
