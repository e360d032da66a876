"""The admin of decisions and their evidence: each decision with its prompts and parsed
payload (retry the retryable ones), every attempt's raw response, the trades, and the decision
runs with the markets each froze."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from arena.admin.common import (
    ReadOnlyAdmin,
    ReadOnlyInline,
    preformatted,
    pretty_json,
    report_record,
    report_to,
    short,
    user_may,
)
from arena.models import Decision, DecisionAttempt, DecisionRun, SnapshotMarket, Trade
from arena.services import operations


class AttemptInline(ReadOnlyInline):
    model = DecisionAttempt
    fields = ("number", "responder", "response_model", "valid", "problem", "latency_ms")
    readonly_fields = fields

    @admin.display(description="Error")
    def problem(self, obj: DecisionAttempt) -> str:
        return short(obj.api_error or obj.parse_error or obj.error, 90) or "—"


class TradeInline(ReadOnlyInline):
    model = Trade
    fk_name = "decision"
    fields = (
        "order_index",
        "try_number",
        "kind",
        "status",
        "market_ref",
        "side_short",
        "amount",
        "price",
        "shares",
        "reason",
    )
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[Trade]:
        return super().get_queryset(request).select_related("market")

    @admin.display(description="Market")
    def market_ref(self, obj: Trade) -> str:
        return obj.market.polymarket_id if obj.market else short(obj.requested_market_id, 20)

    @admin.display(description="Side")
    def side_short(self, obj: Trade) -> str:
        return short(obj.side, 20)

    @admin.display(description="Rejected because")
    def reason(self, obj: Trade) -> str:
        return short(obj.reject_reason, 60)


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
    search_fields = (
        "id__exact",
        "agent__model__display_name",
        "agent__model__internal_id",
        "cohort__number__exact",
        "reasoning",
    )
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

    @admin.display(description="Traceback")
    def traceback_text(self, obj: Decision) -> str:
        return preformatted(obj.traceback) if obj.traceback else "—"

    @admin.display(description="Parsed decision")
    def parsed_payload(self, obj: Decision) -> str:
        return pretty_json(obj.parsed) if obj.parsed else "—"

    @admin.display(description="System prompt")
    def system_prompt_text(self, obj: Decision) -> str:
        return preformatted(obj.system_prompt)

    @admin.display(description="User prompt")
    def user_prompt_text(self, obj: Decision) -> str:
        return preformatted(obj.user_prompt)

    def has_retry_permission(self, request: HttpRequest) -> bool:
        return user_may(request, "arena.retry_decision")

    @admin.action(description="Retry the selected retryable decisions now", permissions=["retry"])
    def retry(self, request: HttpRequest, queryset: QuerySet[Decision]) -> None:
        decisions = list(queryset.order_by("pk"))
        ids = [decision.pk for decision in decisions]
        report = operations.decisions_retry(decision_ids=ids)
        report_record(
            self, request, report, action="retry", objects=decisions, data={"decisions": ids}
        )
        report_to(self, request, report, what="Retry")


@admin.register(DecisionAttempt)
class DecisionAttemptAdmin(ReadOnlyAdmin):
    list_display = ("decision", "number", "responder", "response_model", "valid", "started_at")
    list_filter = ("valid", "responder")
    list_select_related = ("decision__agent__model", "decision__agent__cohort")
    search_fields = ("decision__id__exact", "response_model")
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
        "commitment_salt",
        "commitment_digest",
        "parsed_text",
    )
    readonly_fields = fields

    @admin.display(description="Request messages")
    def messages_sent(self, obj: DecisionAttempt) -> str:
        return preformatted(
            "\n\n".join(
                f"--- {m.get('role')} ---\n{m.get('content')}"
                for m in obj.request_messages
                if isinstance(m, dict)
            )
        )

    @admin.display(description="Raw response")
    def raw_response_text(self, obj: DecisionAttempt) -> str:
        return preformatted(obj.raw_response)

    @admin.display(description="Commitment (SHA-256)")
    def commitment_digest(self, obj: DecisionAttempt) -> str:
        # None for an attempt with no body, or stored before commitments were made.
        commitment = getattr(obj, "commitment", None)
        return (
            f"{commitment.sha256} at {commitment.committed_at:%Y-%m-%d %H:%M:%S}"
            if commitment
            else "—"
        )

    @admin.display(description="Text parsed")
    def parsed_text(self, obj: DecisionAttempt) -> str:
        return preformatted(obj.response_text)

    @admin.display(description="Traceback")
    def traceback_text(self, obj: DecisionAttempt) -> str:
        return preformatted(obj.traceback) if obj.traceback else "—"


@admin.register(Trade)
class TradeAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "agent",
        "kind",
        "status",
        "side_short",
        "market_ref",
        "amount",
        "price",
        "shares",
        "implied_confidence",
        "brier_score",
    )
    list_filter = ("kind", "status", "agent__model")
    list_select_related = ("agent__model", "agent__cohort", "market")
    search_fields = (
        "market__polymarket_id",
        "market__question",
        "requested_market_id",
        "agent__model__display_name",
        "agent__model__internal_id",
        "reject_reason",
    )

    @admin.display(description="Market")
    def market_ref(self, obj: Trade) -> str:
        if obj.market is None:
            return short(obj.requested_market_id, 24) or "—"
        return f"{obj.market.polymarket_id}: {short(obj.market.question, 50)}"

    @admin.display(description="Side")
    def side_short(self, obj: Trade) -> str:
        return short(obj.side, 24)


@admin.register(DecisionRun)
class DecisionRunAdmin(ReadOnlyAdmin):
    list_display = ("id", "week_start", "started_at", "finished_at", "source", "universe_size")
    date_hierarchy = "started_at"
    fields = (
        "week_start",
        "started_at",
        "finished_at",
        "source",
        "universe_size",
        "sync_summary",
        "forecast_panel",
        "panel_seed",
        "related",
    )
    readonly_fields = fields

    @admin.display(description="Forecast panel (methodology v2)")
    def forecast_panel(self, obj: DecisionRun) -> str:
        """The week's panel questions, in the order the rule took them, each with its question
        as frozen."""
        if not obj.panel:
            return "none (picked from the frozen markets when the snapshot froze)"
        questions = dict(
            SnapshotMarket.objects.filter(run=obj, polymarket_id__in=obj.panel).values_list(
                "polymarket_id", "question"
            )
        )
        return format_html_join(
            "", "<div>{}: {}</div>", ((pid, questions.get(pid, "")) for pid in obj.panel)
        )

    @admin.display(description="Records")
    def related(self, obj: DecisionRun) -> str:
        return format_html(
            '<a href="{}?run__id__exact={}">frozen markets</a> · '
            '<a href="{}?run__id__exact={}">decisions</a>',
            reverse("admin:arena_snapshotmarket_changelist"),
            obj.pk,
            reverse("admin:arena_decision_changelist"),
            obj.pk,
        )


@admin.register(SnapshotMarket)
class SnapshotMarketAdmin(ReadOnlyAdmin):
    """A market as a run froze it: the prices every decision of the run saw."""

    list_display = ("run", "rank", "polymarket_id", "question_short", "prices", "volume", "closed")
    list_filter = ("closed",)
    list_select_related = ("run",)
    search_fields = ("question", "=polymarket_id", "run__id__exact")
    show_full_result_count = False
    raw_id_fields = ("run", "market")
    ordering = ("-run", "rank")

    @admin.display(description="Question")
    def question_short(self, obj: SnapshotMarket) -> str:
        return short(obj.question, 80)

    @admin.display(description="Outcome prices")
    def prices(self, obj: SnapshotMarket) -> str:
        pairs = zip(obj.outcomes or [], obj.outcome_prices or [], strict=False)
        return short(", ".join(f"{o}: {p}" for o, p in pairs), 60)
