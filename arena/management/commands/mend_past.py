from typing import Any

from django.core.management.base import BaseCommand

from arena.services.mend import past_mend


class Command(BaseCommand):
    help = (
        "Mend the records made under defects since fixed: audit settlements by outcome name, "
        "mark outside trades made before fair entry, void first-round determinism checks, and "
        "publish again every release this changes. Recorded as a staff action; a repeat "
        "changes nothing."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(past_mend().summary())
