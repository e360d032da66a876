from django.contrib import admin

from agents.models import BenchmarkModel


@admin.register(BenchmarkModel)
class BenchmarkModelAdmin(admin.ModelAdmin[BenchmarkModel]):
    """Staff may rename a model or point it at a new OpenRouter id; the internal id is fixed."""

    list_display = (
        "internal_id",
        "display_name",
        "provider",
        "openrouter_id",
        "release_date",
        "reasoning_mode",
        "kind",
        "active",
        "display_order",
    )
    list_filter = ("kind", "active")
    list_editable = ("active", "display_order")
    search_fields = ("internal_id", "display_name", "openrouter_id", "upstream_model_id")

    def get_readonly_fields(self, request, obj=None):  # type: ignore[no-untyped-def]
        return (
            ("internal_id", "kind", "created_at", "updated_at")
            if obj
            else ("created_at", "updated_at")
        )

    def has_delete_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False  # agents and decisions refer to lineup rows forever
