"""The admin of outside agents: register an outside team's agent, issue it API tokens (shown
once), admit it to the main leaderboard or withdraw it, and revoke its tokens."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.forms import ModelForm
from django.http import HttpRequest
from django.template.response import TemplateResponse

from agents.models import BenchmarkModel
from arena.admin.common import ReadOnlyAdmin, ReadOnlyInline, staff_action_log, user_may
from arena.models import OutsideAgent, OutsideAgentToken
from arena.services.outside import outside_admission_set, outside_token_issue, outside_token_revoke


class OutsideTokenInline(ReadOnlyInline):
    model = OutsideAgentToken
    fk_name = "model"
    fields = ("prefix", "created_at", "created_by", "expires_at", "revoked_at", "last_used_at")
    readonly_fields = fields
    show_change_link = False

    def get_queryset(self, request: HttpRequest) -> QuerySet[OutsideAgentToken]:
        return super().get_queryset(request).select_related("created_by")


@admin.register(OutsideAgent)
class OutsideAgentAdmin(admin.ModelAdmin[OutsideAgent]):
    """Register an outside team's agent, issue it API tokens (shown once), admit it
    to the main leaderboard or withdraw it. Every change is recorded with who made it."""

    list_display = (
        "internal_id",
        "display_name",
        "owner",
        "contact",
        "active",
        "admitted_to_main_board",
    )
    list_filter = ("active", "admitted_to_main_board")
    search_fields = ("internal_id", "display_name", "owner")
    fields = (
        "internal_id",
        "display_name",
        "owner",
        "contact",
        "method_description",
        "active",
        "admitted_to_main_board",
    )
    inlines = [OutsideTokenInline]
    actions = ["issue_token", "admit", "withdraw"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[OutsideAgent]:
        return super().get_queryset(request).filter(kind=BenchmarkModel.Kind.OUTSIDE)

    def get_readonly_fields(self, request, obj=None):  # type: ignore[no-untyped-def]
        # Admission is an action (recorded); the id is stable forever once registered.
        return ("internal_id", "admitted_to_main_board") if obj else ("admitted_to_main_board",)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # its agents and decisions refer to it forever

    def save_model(
        self,
        request: HttpRequest,
        obj: OutsideAgent,
        form: ModelForm,  # type: ignore[type-arg]
        change: bool,
    ) -> None:
        obj.kind = BenchmarkModel.Kind.OUTSIDE
        super().save_model(request, obj, form, change)
        fields = ", ".join(form.changed_data) or "nothing"
        staff_action_log(
            self,
            request,
            action="change_outside_agent" if change else "register_outside_agent",
            summary=f"outside agent {obj.internal_id}: {fields} "
            f"{'changed' if change else 'registered'}",
            data={"model": obj.internal_id, "fields": form.changed_data},
        )

    @admin.action(
        description="Issue an API token for each selected outside agent", permissions=["change"]
    )
    def issue_token(
        self, request: HttpRequest, queryset: QuerySet[OutsideAgent]
    ) -> TemplateResponse:
        issued = []
        for model in queryset.order_by("internal_id"):
            row, token = outside_token_issue(model=model, actor_id=request.user.pk)
            issued.append((model, row, token))
            staff_action_log(
                self,
                request,
                action="issue_outside_token",
                summary=f"token fa_{row.prefix}_… for {model.internal_id}, "
                f"expires {row.expires_at:%Y-%m-%d}",
                objects=[model],
                data={"model": model.internal_id, "token_prefix": row.prefix},
            )
        # Shown on this one response, never stored anywhere the site can show it again (not
        # even a message, which a cookie would carry): only its SHA-256 is kept.
        response = TemplateResponse(
            request,
            "admin/arena/outside_token_issued.html",
            {**self.admin_site.each_context(request), "issued": issued, "title": "API tokens"},
        )
        response["Cache-Control"] = "no-store"  # the admin adds its own never-cache terms
        return response

    @admin.action(
        description="Admit the selected outside agents to the main leaderboard",
        permissions=["change"],
    )
    def admit(self, request: HttpRequest, queryset: QuerySet[OutsideAgent]) -> None:
        self._admission(request, queryset, admitted=True)

    @admin.action(
        description="Withdraw the selected outside agents to their own board",
        permissions=["change"],
    )
    def withdraw(self, request: HttpRequest, queryset: QuerySet[OutsideAgent]) -> None:
        self._admission(request, queryset, admitted=False)

    def _admission(
        self, request: HttpRequest, queryset: QuerySet[OutsideAgent], *, admitted: bool
    ) -> None:
        action = "admit_outside_agent" if admitted else "withdraw_outside_agent"
        for model in queryset.order_by("internal_id"):
            if not outside_admission_set(model_id=model.pk, admitted=admitted):
                continue
            where = "the main leaderboard" if admitted else "its own board"
            staff_action_log(
                self,
                request,
                action=action,
                summary=f"outside agent {model.internal_id} moved to {where}",
                objects=[model],
                data={"model": model.internal_id},
            )
            self.message_user(request, f"{model.display_name} is now ranked on {where}.")


@admin.register(OutsideAgentToken)
class OutsideAgentTokenAdmin(ReadOnlyAdmin):
    """The outside agents' API tokens, by prefix only (the token itself is never stored)."""

    list_display = ("prefix", "model", "created_at", "created_by", "expires_at", "revoked_at")
    list_filter = ("revoked_at",)
    list_select_related = ("model", "created_by")
    search_fields = ("prefix", "model__internal_id")
    readonly_fields = (
        "prefix",
        "model",
        "created_at",
        "created_by",
        "expires_at",
        "revoked_at",
        "last_used_at",
    )
    fields = readonly_fields
    actions = ["revoke"]

    def has_revoke_permission(self, request: HttpRequest) -> bool:
        return user_may(request, "arena.change_outsideagenttoken")

    @admin.action(description="Revoke the selected tokens", permissions=["revoke"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[OutsideAgentToken]) -> None:
        for token in queryset.select_related("model").order_by("pk"):
            if not outside_token_revoke(token_id=token.pk):
                continue
            staff_action_log(
                self,
                request,
                action="revoke_outside_token",
                summary=f"token fa_{token.prefix}_… of {token.model.internal_id} revoked",
                objects=[token],
                data={"model": token.model.internal_id, "token_prefix": token.prefix},
            )
            self.message_user(request, f"Token fa_{token.prefix}_… revoked.")
