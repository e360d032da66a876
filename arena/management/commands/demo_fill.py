"""`manage.py demo_fill`: fill an empty database by running the engine over the demo world."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection
from django.db.migrations.loader import MigrationLoader

from arena.demo import demo_releases_discard, demo_run
from arena.models import Cohort


class Command(BaseCommand):
    help = "Run the real engine over the recorded markets on a simulated clock (no network)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--weeks", type=int, default=6, help="weekly cohorts to simulate")
        parser.add_argument("--tick-hours", type=int, default=8, help="simulated hours a tick")
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument(
            "--reset",
            action="store_true",
            help="start from a freshly migrated database and no release folders",
        )

    def handle(
        self, *args: Any, weeks: int, tick_hours: int, seed: int, reset: bool, **options: Any
    ) -> None:
        if settings.MARKET_SOURCE != "demo":
            raise CommandError("demo_fill runs only with MARKET_SOURCE=demo (the embedded default)")
        if settings.OPENROUTER_API_KEY:
            raise CommandError("demo_fill runs offline agents only: unset OPENROUTER_API_KEY")
        if reset:
            _migrated_afresh()
        elif Cohort.objects.exists():
            self.stdout.write("demo data already present; `make demo` rebuilds it")
            return
        # The database holds no cohort: release folders on the disk are an earlier demo's
        # (`make clean` or a deleted db.sqlite3 leaves them), and would be adopted as this one's.
        discarded = demo_releases_discard()
        if discarded:
            self.stdout.write(
                f"removed an earlier demo's releases ({discarded} folders and lock files)"
            )
        started = time.perf_counter()
        report = demo_run(weeks=weeks, seed=seed, tick=timedelta(hours=tick_hours))
        self.stdout.write(f"{report.summary()} in {time.perf_counter() - started:.1f}s")


def _migrated_afresh() -> None:
    """Return the database to a freshly migrated one. Not `flush`: it empties the tables the
    migrations filled (the lineup and its baselines, the staff groups and their permissions),
    and migrating again fills nothing, since every migration is recorded as applied, so the
    demo ran its outside team alone. Every app's migrations are unapplied, then applied again
    (about five seconds on SQLite)."""
    for label in sorted(MigrationLoader(connection).migrated_apps):
        call_command("migrate", label, "zero", verbosity=0)
    call_command("migrate", verbosity=0)
