"""System checks that refuse unsafe production settings."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, Tags, register


@register(Tags.security)
def check_secret_key_is_not_the_dev_default(**kwargs: Any) -> list[Error]:
    """Refuse the embedded development key whenever DEBUG is off (runs on every start)."""
    if not settings.DEBUG and settings.SECRET_KEY == settings.DEV_SECRET_KEY:
        return [
            Error(
                "SECRET_KEY is the development default while DEBUG is off.",
                hint="Set SECRET_KEY in the environment to a long random value.",
                id="forecaster.E001",
            )
        ]
    return []
