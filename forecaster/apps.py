from django.apps import AppConfig


class ForecasterConfig(AppConfig):
    """Holds the project's system checks; the project package has no models."""

    name = "forecaster"
    verbose_name = "Forecaster Arena"

    def ready(self) -> None:
        from forecaster import checks  # noqa: F401  (registers the checks)
