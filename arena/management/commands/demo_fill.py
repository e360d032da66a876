"""`manage.py demo_fill`: fill an empty database from the embedded demo data."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from markets import services as market_services
from markets.models import Market


class Command(BaseCommand):
    help = "Fill the site from the recordings shipped with the project (no network)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--weeks", type=int, default=6, help="simulated weeks to run")
        parser.add_argument("--reset", action="store_true", help="rebuild even if filled")

    def handle(self, *args: Any, weeks: int, reset: bool, **options: Any) -> None:
        if settings.MARKET_SOURCE != "demo":
            raise CommandError("demo_fill runs only with MARKET_SOURCE=demo (the embedded default)")
        if Market.objects.exists() and not reset:
            self.stdout.write("demo data already present; `make demo` rebuilds it")
            return
        result = market_services.markets_sync_top()
        if not result.ok:
            raise CommandError(result.summary())
        self.stdout.write(result.summary())
