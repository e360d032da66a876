from typing import Any

from django.core.management.base import BaseCommand

from arena import services


class Command(BaseCommand):
    help = "Refresh held markets' prices and snapshot every active agent now (this 10-minute slot)."

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(services.snapshots_take().summary())
