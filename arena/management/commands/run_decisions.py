from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from arena.models import Cohort
from arena.services.decisions.run import decisions_run_all


class Command(BaseCommand):
    help = "Run this week's decisions now, for every active cohort or one (--cohort N)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--cohort", type=int, default=None, help="cohort number")

    def handle(self, *args: Any, cohort: int | None, **options: Any) -> None:
        cohort_id = None
        if cohort is not None:
            found = Cohort.objects.filter(number=cohort).first()
            if found is None:
                raise CommandError(f"no cohort number {cohort}")
            cohort_id = found.pk
        report = decisions_run_all(cohort_id=cohort_id)
        self.stdout.write(report.summary())
