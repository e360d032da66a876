from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from arena.services.rollup import rollup_rebuild


class Command(BaseCommand):
    help = (
        "Recompute the hourly and daily snapshot rollups the charts read, from the snapshots "
        "(every agent, or those given with --agent)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--agent", type=int, action="append", dest="agents", help="an agent id (repeatable)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        written = rollup_rebuild(agent_ids=options["agents"])
        self.stdout.write(f"{written} rollup rows written")
