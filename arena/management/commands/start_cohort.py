from datetime import date
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from arena.services.cohorts import cohort_start


class Command(BaseCommand):
    help = "Start this week's cohort, or the cohort of a given Sunday (--week YYYY-MM-DD)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--week", type=date.fromisoformat, default=None)

    def handle(self, *args: Any, week: date | None, **options: Any) -> None:
        try:
            cohort, created = cohort_start(week_start=week)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        if created:
            self.stdout.write(f"started {cohort} with {cohort.agents.count()} agents")
        else:
            self.stdout.write(f"{cohort} already exists: nothing done")
