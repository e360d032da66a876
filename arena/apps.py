from __future__ import annotations

from django.apps import AppConfig


class ArenaConfig(AppConfig):
    name = "arena"

    def ready(self) -> None:
        from arena import receivers  # noqa: F401  (connects the signal receivers)
        from arena.seal_rules import install

        install()
