"""System checks that refuse unsafe or broken production settings."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.staticfiles.storage import ManifestFilesMixin, staticfiles_storage
from django.core.checks import Error, Tags, register

from forecaster.environment import DEV_SECRET_KEY


@register(Tags.security)
def check_secret_key_is_not_the_dev_default(**kwargs: Any) -> list[Error]:
    """Refuse the embedded development key whenever DEBUG is off (runs on every start)."""
    if not settings.DEBUG and settings.SECRET_KEY == DEV_SECRET_KEY:
        return [
            Error(
                "SECRET_KEY is the development default while DEBUG is off.",
                hint="Set SECRET_KEY in the environment to a long random value.",
                id="forecaster.E001",
            )
        ]
    return []


# No tag: `collectstatic` runs only the staticfiles-tagged checks, so this one never stops the
# command that fixes it; every other command (check, migrate, runserver) runs it.
@register()
def check_static_files_are_collected(**kwargs: Any) -> list[Error]:
    """With DEBUG off the static storage is whitenoise's manifest storage, which serves only
    what `collectstatic` wrote to STATIC_ROOT: without its manifest every page would fail."""
    if not isinstance(staticfiles_storage, ManifestFilesMixin):
        return []  # DEBUG on: files are served from static/ as they are
    if staticfiles_storage.read_manifest() is not None:
        return []
    return [
        Error(
            f"Static files are not collected: {staticfiles_storage.manifest_name} is missing from "
            f"STATIC_ROOT ({settings.STATIC_ROOT}), so every page would fail while DEBUG is off.",
            hint="Run `python manage.py collectstatic --noinput` with the same STATIC_ROOT.",
            id="forecaster.E002",
        )
    ]
