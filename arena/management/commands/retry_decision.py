from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from arena.exceptions import DecisionNotRetryable
from arena.services.decisions.run import decision_retry


class Command(BaseCommand):
    help = "Run a retryable decision again now, on a fresh frozen snapshot."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("decision_id", type=int)

    def handle(self, *args: Any, decision_id: int, **options: Any) -> None:
        try:
            outcome = decision_retry(decision_id=decision_id)
        except DecisionNotRetryable as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"decision {decision_id}: {outcome.status}, {outcome.executed} executed, "
            f"{outcome.rejected} rejected"
        )
