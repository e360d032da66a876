"""Staff inspection of the arena. A stored decision is evidence: nothing here edits one;
changes of state are actions that call services."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from arena.exceptions import DecisionNotRetryable
from arena.models import (
    Agent,
    Cohort,
    Decision,
    DecisionAttempt,
    DecisionRun,
    Position,
    SnapshotMarket,
    SystemEvent,
    Trade,
)
from arena.services.decisions import decision_retry


def _pre(text: str) -> str:
    return format_html(
        '<pre style="white-space:pre-wrap;max-height:520px;overflow:auto;font-size:12px">{}</pre>',
        text,
    )


class ReadOnlyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReadOnlyInline(admin.TabularInline):  # type: ignore[type-arg]
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class AgentInline(ReadOnlyInline):
    model = Agent
    fields = ("model", "cash", "status")


@admin.register(Cohort)
class CohortAdmin(ReadOnlyAdmin):
    list_display = ("number", "week_start", "status", "started_at", "completed_at")
    list_filter = ("status",)
    inlines = [AgentInline]


class PositionInline(ReadOnlyInline):
    model = Position
    fields = ("market", "side", "status", "shares", "cost_basis", "realized_pnl", "last_price")


@admin.register(Agent)
class AgentAdmin(ReadOnlyAdmin):
    list_display = ("__str__", "cohort", "model", "cash", "status")
    list_filter = ("status", "model", "cohort")
    list_select_related = ("cohort", "model")
    inlines = [PositionInline]


class AttemptInline(ReadOnlyInline):
    model = DecisionAttempt
    fields = (
        "number",
        "responder",
        "response_model",
        "upstream_provider",
        "valid",
        "parse_error",
        "api_error",
        "error",
        "latency_ms",
    )


class TradeInline(ReadOnlyInline):
    model = Trade
    fk_name = "decision"
    fields = (
        "order_index",
        "try_number",
        "kind",
        "status",
        "side",
        "market",
        "requested_amount",
        "price",
        "shares",
        "amount",
        "implied_confidence",
        "reject_reason",
    )


@admin.register(Decision)
class DecisionAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "agent",
        "week_start",
        "status",
        "action",
        "responder",
        "tries",
        "finished_at",
    )
    list_filter = ("status", "action", "responder", "week_start", "agent__model")
    list_select_related = ("agent__model", "agent__cohort")
    search_fields = ("reasoning", "=id")
    actions = ["retry"]
    inlines = [AttemptInline, TradeInline]
    fields = (
        "agent",
        "cohort",
        "week_start",
        "run",
        "status",
        "action",
        "parse_failed",
        "error",
        "traceback_text",
        "reasoning",
        "parsed_payload",
        "responder",
        "requested_model",
        "response_model",
        "upstream_provider",
        "prompt_version",
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
        "latency_ms",
        "tries",
        "parsed_try",
        "claimed_at",
        "finished_at",
        "system_prompt_text",
        "user_prompt_text",
    )
    readonly_fields = fields

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a stored decision is evidence; nobody edits it

    @admin.display(description="Traceback")
    def traceback_text(self, obj: Decision) -> str:
        return _pre(obj.traceback) if obj.traceback else "—"

    @admin.display(description="Parsed decision")
    def parsed_payload(self, obj: Decision) -> str:
        return _pre(json.dumps(obj.parsed, indent=2, ensure_ascii=False)) if obj.parsed else "—"

    @admin.display(description="System prompt")
    def system_prompt_text(self, obj: Decision) -> str:
        return _pre(obj.system_prompt)

    @admin.display(description="User prompt")
    def user_prompt_text(self, obj: Decision) -> str:
        return _pre(obj.user_prompt)

    @admin.action(description="Retry the selected retryable decisions now")
    def retry(self, request: HttpRequest, queryset: QuerySet[Decision]) -> None:
        for decision in queryset:
            try:
                outcome = decision_retry(decision_id=decision.pk)
            except DecisionNotRetryable as exc:
                self.message_user(request, str(exc), messages.WARNING)
            else:
                self.message_user(request, f"decision {decision.pk}: {outcome.status}")


@admin.register(DecisionAttempt)
class DecisionAttemptAdmin(ReadOnlyAdmin):
    list_display = ("decision", "number", "responder", "response_model", "valid", "started_at")
    list_filter = ("valid", "responder")
    list_select_related = ("decision__agent__model", "decision__agent__cohort")
    fields = (
        "decision",
        "number",
        "run",
        "responder",
        "requested_model",
        "response_model",
        "upstream_provider",
        "finish_reason",
        "used_reasoning",
        "prompt_tokens",
        "completion_tokens",
        "reasoning_tokens",
        "cost_usd",
        "latency_ms",
        "api_error",
        "parse_error",
        "error",
        "traceback_text",
        "valid",
        "started_at",
        "messages_sent",
        "raw_response_text",
        "parsed_text",
    )
    readonly_fields = fields

    @admin.display(description="Request messages")
    def messages_sent(self, obj: DecisionAttempt) -> str:
        return _pre(
            "\n\n".join(
                f"--- {m.get('role')} ---\n{m.get('content')}" for m in obj.request_messages
            )
        )

    @admin.display(description="Raw response")
    def raw_response_text(self, obj: DecisionAttempt) -> str:
        return _pre(obj.raw_response)

    @admin.display(description="Text parsed")
    def parsed_text(self, obj: DecisionAttempt) -> str:
        return _pre(obj.response_text)

    @admin.display(description="Traceback")
    def traceback_text(self, obj: DecisionAttempt) -> str:
        return _pre(obj.traceback) if obj.traceback else "—"


@admin.register(Position)
class PositionAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "agent",
        "market",
        "side",
        "status",
        "shares",
        "cost_basis",
        "realized_pnl",
    )
    list_filter = ("status",)
    list_select_related = ("agent__model", "agent__cohort", "market")


@admin.register(Trade)
class TradeAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "agent",
        "kind",
        "status",
        "side",
        "market",
        "amount",
        "price",
        "shares",
        "implied_confidence",
        "brier_score",
    )
    list_filter = ("kind", "status")
    list_select_related = ("agent__model", "agent__cohort", "market")
    search_fields = ("reject_reason", "requested_market_id")


class SnapshotMarketInline(ReadOnlyInline):
    model = SnapshotMarket
    fields = ("rank", "polymarket_id", "question", "outcome_prices", "volume", "closed")
    show_change_link = False


@admin.register(DecisionRun)
class DecisionRunAdmin(ReadOnlyAdmin):
    list_display = ("id", "week_start", "started_at", "finished_at", "source", "universe_size")
    readonly_fields = (
        "week_start",
        "started_at",
        "finished_at",
        "source",
        "universe_size",
        "sync_summary",
    )


@admin.register(SystemEvent)
class SystemEventAdmin(ReadOnlyAdmin):
    """The operations record: runs, failures, retries, reclaims, settlements, sync failures."""

    list_display = ("created_at", "level", "kind", "message_short", "cohort", "decision")
    list_filter = ("level", "kind")
    search_fields = ("message",)
    date_hierarchy = "created_at"
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
        return obj.message if len(obj.message) <= 140 else obj.message[:139] + "…"

    @admin.display(description="Data")
    def data_text(self, obj: SystemEvent) -> str:
        return _pre(json.dumps(obj.data, indent=2, ensure_ascii=False))
