from typing import Any

from django.core.management.base import BaseCommand

from arena.services.settlement import resolutions_check


class Command(BaseCommand):
    help = "Settle every held market that resolved upstream; complete finished cohorts."

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(resolutions_check().summary())
