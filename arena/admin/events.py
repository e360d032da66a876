"""The admin of the operations record: the system events, read-only."""

from __future__ import annotations

from django.contrib import admin

from arena.admin.common import ReadOnlyAdmin, pretty_json, short
from arena.models import SystemEvent


@admin.register(SystemEvent)
class SystemEventAdmin(ReadOnlyAdmin):
    """The operations record: runs, failures, retries, reclaims, settlements, sync failures."""

    list_display = ("created_at", "level", "kind", "message_short", "cohort", "decision")
    list_filter = ("level", "kind")
    search_fields = ("message",)
    date_hierarchy = "created_at"
    show_full_result_count = False
    list_select_related = ("cohort", "decision__agent__model", "decision__agent__cohort")
    fields = (
        "created_at",
        "kind",
        "level",
        "message",
        "cohort",
        "agent",
        "decision",
        "run",
        "market",
        "data_text",
    )
    readonly_fields = fields

    @admin.display(description="Message")
    def message_short(self, obj: SystemEvent) -> str:
        return short(obj.message, 140)

    @admin.display(description="Data")
    def data_text(self, obj: SystemEvent) -> str:
        return pretty_json(obj.data)
