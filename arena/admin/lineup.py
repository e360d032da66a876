"""The admin of the model lineup, extended so every edit is recorded with who made it."""

from __future__ import annotations

from django.contrib import admin
from django.forms import ModelForm
from django.http import HttpRequest

from agents.admin import BenchmarkModelAdmin as LineupAdmin
from agents.models import BenchmarkModel
from arena.admin.common import staff_action_log

# The lineup's admin (agents/admin.py) cannot reach the arena's operations record — agents
# never reads arena — so the arena extends it here to record every edit with who made it.
admin.site.unregister(BenchmarkModel)


@admin.register(BenchmarkModel)
class BenchmarkModelAdmin(LineupAdmin):
    def save_model(
        self,
        request: HttpRequest,
        obj: BenchmarkModel,
        form: ModelForm,  # type: ignore[type-arg]
        change: bool,
    ) -> None:
        super().save_model(request, obj, form, change)
        fields = ", ".join(form.changed_data) or "nothing"
        staff_action_log(
            self,
            request,
            action="change_model" if change else "add_model",
            summary=f"model {obj.internal_id}: {fields} {'changed' if change else 'added'}",
            data={"model": obj.internal_id, "fields": form.changed_data},
        )
