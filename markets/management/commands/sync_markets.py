"""`manage.py sync_markets`: refresh the catalogue now."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from markets import services


class Command(BaseCommand):
    help = "Fetch the top markets by volume from the market source and upsert them."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--limit", type=int, default=None, help="how many (default 500)")
        parser.add_argument("--show-rejections", action="store_true")

    def handle(self, *args: Any, limit: int | None, show_rejections: bool, **options: Any) -> None:
        interactive = sys.stdout.isatty() and options.get("verbosity", 1) > 0

        def progress(done: int, total: int) -> None:
            if interactive:
                width = 30
                filled = width * done // max(total, 1)
                self.stdout.write(
                    f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total}", ending=""
                )
                if done == total:
                    self.stdout.write("")

        if interactive:
            self.stdout.write("fetching markets…")
        result = services.markets_sync_top(limit=limit, progress=progress)
        if not result.ok:
            raise CommandError(result.summary())
        self.stdout.write(result.summary())
        if show_rejections or interactive:
            for record_id, reason in result.rejections:
                self.stdout.write(f"  rejected {record_id}: {reason}")
