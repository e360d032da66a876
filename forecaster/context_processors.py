from typing import Any

from django.conf import settings
from django.http import HttpRequest

from arena.seal import sealed_from
from arena.weeks import outside_window


def site(request: HttpRequest) -> dict[str, Any]:
    """Tell every page whether it shows demo data rather than live Polymarket data, and, while
    the week is sealed (arena/seal.py), from when and until when."""
    seal = sealed_from()
    return {
        "demo_data": settings.MARKET_SOURCE == "demo",
        "sealed_from": seal,
        "sealed_until": outside_window(seal.date())[1] if seal else None,
    }
