from typing import Any

from django.core.management.base import BaseCommand

from arena.services.schedule import schedules_sync


class Command(BaseCommand):
    help = "Upsert the Celery beat schedules declared in settings (keeps last-run state)."

    def handle(self, *args: Any, **options: Any) -> None:
        for name in schedules_sync():
            self.stdout.write(f"schedule {name} in place")
