from typing import Any

from django.core.management.base import BaseCommand

from arena.services.marking import snapshots_take


class Command(BaseCommand):
    help = "Refresh held markets' prices and snapshot every active agent now (this 10-minute slot)."

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(snapshots_take().summary())
