from typing import Any

from django.core.management.base import BaseCommand

from arena import services


class Command(BaseCommand):
    help = "Settle every held market that resolved upstream; complete finished cohorts."

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(services.resolutions_check().summary())
