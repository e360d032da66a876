"""The one NinjaAPI instance; each app mounts its router here."""

from ninja import NinjaAPI

api = NinjaAPI(
    title="Forecaster Arena API",
    version="1",
    urls_namespace="api",
    description="Read-only access to the benchmark's markets, cohorts, agents and decisions.",
)
