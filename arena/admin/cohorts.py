"""Staff inspection of the arena. A stored decision is evidence: nothing here edits one;
changes of state are actions that call services (`arena/services/operations.py`), and each
reports what it did and the reason of every failure.

Staff without the superuser flag see and run what their group allows (the Viewers and
Operators groups, migration 0007): every action and operation asks for its own permission,
and each run is recorded with who ran it (`staff_action_record`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Model, QuerySet
from django.forms import ModelForm
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from agents.admin import BenchmarkModelAdmin as LineupAdmin
from agents.models import BenchmarkModel
from arena.evidence import error_text
from arena.models import (
    Agent,
    Cohort,
    DataRelease,
    Decision,
    DecisionAttempt,
    DecisionRun,
    DeterminismCheck,
    OutsideAgent,
    OutsideAgentToken,
    PortfolioSnapshot,
    Position,
    ResolutionCheck,
    SnapshotMarket,
    SnapshotTick,
    SystemEvent,
    Trade,
)
from arena.selectors.standings import AgentStanding, agent_standings
from arena.services import operations
from arena.services.audit import determinism_cost_estimate, determinism_sample
from arena.services.cohorts import cohort_start
from arena.services.events import Level, event_record
from arena.services.outside import (
    outside_admission_set,
    outside_token_issue,
    outside_token_revoke,
)
from arena.services.releases import releases_publish
from markets.admin import MarketAdmin as CatalogueMarketAdmin
from markets.models import Market

AUDIT_DEFAULT_SIZE = 5
AUDIT_MAX_SIZE = 50

# The kind of the event every staff operation in the admin records.
STAFF_ACTION = SystemEvent.Kind.STAFF_ACTION


def _pre(text: str) -> str:
    return format_html(
        '<pre style="white-space:pre-wrap;max-height:520px;overflow:auto;font-size:12px">{}</pre>',
        text,
    )


def _json(value: Any) -> str:
    return _pre(json.dumps(value, indent=2, ensure_ascii=False)) if value is not None else "—"


def short(text: str | None, length: int = 80) -> str:
    """Return `text` on one line, cut to `length` characters (inlines and lists must fit a
    1280 px window; the whole text is on the row's own page)."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= length else flat[: length - 1] + "…"


def usd(value: Decimal | None) -> str:
    return "—" if value is None else f"${value:,.2f}"


def report_to(
    model_admin: admin.ModelAdmin,  # type: ignore[type-arg]
    request: HttpRequest,
    report: operations.OperationReport,
    *,
    what: str,
) -> None:
    """Show an operation's report: one success message with what went through, one error
    message with every failure and its reason (the admin escapes both)."""
    if report.done:
        model_admin.message_user(
            request,
            f"{what}: {len(report.done)} done — " + "; ".join(report.done),
            messages.SUCCESS,
        )
    if report.failed:
        model_admin.message_user(
            request,
            f"{what}: {len(report.failed)} failed — " + "; ".join(report.failed),
            messages.ERROR,
        )


def actor(request: HttpRequest) -> dict[str, Any]:
    """Return who is acting, for an event's data: the signed-in user's username and id."""
    return {"username": request.user.get_username(), "id": request.user.pk}


def staff_action_record(
    model_admin: admin.ModelAdmin,  # type: ignore[type-arg]
    request: HttpRequest,
    *,
    action: str,
    summary: str,
    failed: bool = False,
    objects: Sequence[Model] = (),
    data: dict[str, Any] | None = None,
    **links: int | None,
) -> None:
    """Record that the signed-in user ran `action`: one SystemEvent whose data names the user
    (`actor`), the action and `data`, linked through `links` (cohort_id, decision_id, …), and
    an admin LogEntry for each of `objects` (the admin's own history of each row). The event
    never raises (`event_record` logs and swallows a failed write); the LogEntry rows are
    written like any admin edit's."""
    who = actor(request)
    for obj in objects:
        model_admin.log_change(request, obj, f"{action}: {summary}"[:2000])
    event_record(
        kind=STAFF_ACTION,
        level=Level.WARNING if failed else Level.INFO,
        message=f"{who['username']} ran {action} in the admin: {summary}",
        data={"actor": who, "action": action, **(data or {})},
        **links,
    )


def report_record(
    model_admin: admin.ModelAdmin,  # type: ignore[type-arg]
    request: HttpRequest,
    report: operations.OperationReport,
    *,
    action: str,
    objects: Sequence[Model] = (),
    data: dict[str, Any] | None = None,
) -> None:
    """Record an operation's run (`staff_action_record`) with its report: what went through,
    what failed and why."""
    staff_action_record(
        model_admin,
        request,
        action=action,
        summary=f"{len(report.done)} done, {len(report.failed)} failed",
        failed=bool(report.failed),
        objects=objects,
        data={**(data or {}), "done": report.done, "failed": report.failed},
    )


def user_may(request: HttpRequest, permission: str) -> bool:
    """Return whether the signed-in user holds `permission` (a superuser holds them all)."""
    return bool(request.user.has_perm(permission))


class ReadOnlyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """View only: no add, no change (so no Save buttons), no delete."""

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

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


# -------------------------------------------------------------------------------- cohorts


class AgentInline(ReadOnlyInline):
    model = Agent
    fields = ("model", "cash", "status")
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[Agent]:
        return super().get_queryset(request).select_related("model", "cohort")


@admin.register(Cohort)
class CohortAdmin(ReadOnlyAdmin):
    list_display = ("number", "week_start", "status", "agent_count", "started_at", "completed_at")
    list_filter = ("status",)
    search_fields = ("number__exact", "week_start__icontains")
    inlines = [AgentInline]
    actions = ["publish_release"]
    fields = (
        "number",
        "week_start",
        "started_at",
        "status",
        "completed_at",
        "methodology_version",
        "starting_balance",
        "related",
    )
    readonly_fields = fields

    @admin.display(description="Records")
    def related(self, obj: Cohort) -> str:
        return format_html(
            '<a href="{}?cohort__id__exact={}">agents with cash, total value and return</a> · '
            '<a href="{}?cohort__id__exact={}">decisions</a>',
            reverse("admin:arena_agent_changelist"),
            obj.pk,
            reverse("admin:arena_decision_changelist"),
            obj.pk,
        )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Cohort]:
        cohorts: QuerySet[Cohort] = super().get_queryset(request)
        return cohorts.annotate(agent_total=Count("agents"))

    @admin.display(description="Agents", ordering="agent_total")
    def agent_count(self, obj: Cohort) -> int:
        return int(getattr(obj, "agent_total", 0))

    def has_publish_permission(self, request: HttpRequest) -> bool:
        return user_may(request, "arena.publish_datarelease")

    def has_start_permission(self, request: HttpRequest) -> bool:
        return user_may(request, "arena.start_cohort")

    @admin.action(
        description="Publish the selected cohorts' data releases (only once a cohort is "
        "final: completed, every position settled, baselines included)",
        permissions=["publish"],
    )
    def publish_release(self, request: HttpRequest, queryset: QuerySet[Cohort]) -> None:
        cohorts = list(queryset.order_by("number"))
        numbers = [cohort.number for cohort in cohorts]
        report = releases_publish(cohort_numbers=numbers)
        report_record(
            self,
            request,
            report,
            action="publish_release",
            objects=cohorts,
            data={"cohorts": numbers},
        )
        report_to(self, request, report, what="Publish")

    def get_urls(self) -> list[URLPattern]:
        start = path(
            "start-week/",
            self.admin_site.admin_view(self.start_week_view),
            name="arena_cohort_start_week",
        )
        return [start, *super().get_urls()]

    def start_week_view(self, request: HttpRequest) -> HttpResponse:
        """POST: start this week's cohort (`cohort_start`); a repeat says it already exists."""
        return _start_week(self, request)


def _start_week(model_admin: CohortAdmin, request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    if not model_admin.has_start_permission(request):
        raise PermissionDenied
    try:
        cohort, created = cohort_start()
    except (ValueError, RuntimeError) as exc:
        staff_action_record(
            model_admin, request, action="start_week", summary=f"failed: {exc}", failed=True
        )
        model_admin.message_user(
            request, f"Could not start this week's cohort: {exc}", messages.ERROR
        )
    else:
        agents = cohort.agents.count()
        staff_action_record(
            model_admin,
            request,
            action="start_week",
            summary=f"{cohort} {'started' if created else 'already existed'} ({agents} agents)",
            data={"created": created, "agents": agents},
            cohort_id=cohort.pk,
        )
        if created:
            model_admin.log_addition(request, cohort, f"started in the admin ({agents} agents)")
            model_admin.message_user(
                request, f"Started {cohort} with {agents} agents", messages.SUCCESS
            )
        else:
            model_admin.message_user(
                request,
                f"{cohort} already exists ({agents} agents): nothing started",
                messages.WARNING,
            )
    return redirect("admin:arena_cohort_changelist")


# --------------------------------------------------------------------------------- agents


class PositionInline(ReadOnlyInline):
    model = Position
    fields = (
        "market_ref",
        "side_short",
        "status",
        "shares",
        "cost_basis",
        "realized_pnl",
        "last_price",
    )
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[Position]:
        return super().get_queryset(request).select_related("market")

    @admin.display(description="Market")
    def market_ref(self, obj: Position) -> str:
        return f"{obj.market.polymarket_id}: {short(obj.market.question, 60)}"

    @admin.display(description="Side")
    def side_short(self, obj: Position) -> str:
        return short(obj.side, 24)


def _standing(obj: Agent) -> AgentStanding | None:
    standing: AgentStanding | None = vars(obj).get("admin_standing")
    return standing


def with_standings(agents: list[Agent]) -> None:
    """Attach each agent's standing now (cash, total value, return) to it, in a constant
    number of queries whatever the count (`agent_standings`)."""
    standings = {
        s.agent.pk: s
        for s in agent_standings(agents=Agent.objects.filter(pk__in=[a.pk for a in agents]))
    }
    for agent in agents:
        vars(agent)["admin_standing"] = standings.get(agent.pk)


@admin.register(Agent)
class AgentAdmin(ReadOnlyAdmin):
    list_display = (
        "model_label",
        "cohort",
        "status",
        "cash_usd",
        "total_value",
        "return_percent",
    )
    list_filter = ("status", "model", "cohort")
    list_select_related = ("cohort", "model")
    search_fields = ("model__display_name", "model__internal_id", "cohort__number__exact")
    inlines = [PositionInline]
    fields = (
        "model",
        "cohort",
        "status",
        "cash_usd",
        "total_value",
        "return_percent",
        "created_at",
        "related",
    )
    readonly_fields = fields

    def get_changelist_instance(self, request: HttpRequest) -> ChangeList:
        changelist = super().get_changelist_instance(request)
        with_standings(list(changelist.result_list))  # fills the page's cached rows
        return changelist

    def get_object(self, request: HttpRequest, object_id: str, from_field: Any = None) -> Any:
        agent = super().get_object(request, object_id, from_field)
        if agent is not None:
            with_standings([agent])
        return agent

    @admin.display(description="Model", ordering="model__display_name")
    def model_label(self, obj: Agent) -> str:
        standing = _standing(obj)
        offline = " (offline)" if standing is not None and standing.offline else ""
        return f"{obj.model.display_name} [{obj.model.internal_id}]{offline}"

    @admin.display(description="Cash", ordering="cash")
    def cash_usd(self, obj: Agent) -> str:
        return usd(obj.cash)

    @admin.display(description="Total value")
    def total_value(self, obj: Agent) -> str:
        standing = _standing(obj)
        return usd(standing.total_value) if standing else "—"

    @admin.display(description="Return")
    def return_percent(self, obj: Agent) -> str:
        standing = _standing(obj)
        return f"{standing.return_percent:+.2f}%" if standing else "—"

    @admin.display(description="Records")
    def related(self, obj: Agent) -> str:
        return format_html(
            '<a href="{}?agent__id__exact={}">decisions</a> · '
            '<a href="{}?agent__id__exact={}">trades</a> · '
            '<a href="{}?agent__id__exact={}">portfolio snapshots</a>',
            reverse("admin:arena_decision_changelist"),
            obj.pk,
            reverse("admin:arena_trade_changelist"),
            obj.pk,
            reverse("admin:arena_portfoliosnapshot_changelist"),
            obj.pk,
        )


# ------------------------------------------------------------------------------ decisions


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
        return _pre(obj.traceback) if obj.traceback else "—"

    @admin.display(description="Parsed decision")
    def parsed_payload(self, obj: Decision) -> str:
        return _json(obj.parsed) if obj.parsed else "—"

    @admin.display(description="System prompt")
    def system_prompt_text(self, obj: Decision) -> str:
        return _pre(obj.system_prompt)

    @admin.display(description="User prompt")
    def user_prompt_text(self, obj: Decision) -> str:
        return _pre(obj.user_prompt)

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
        "parsed_text",
    )
    readonly_fields = fields

    @admin.display(description="Request messages")
    def messages_sent(self, obj: DecisionAttempt) -> str:
        return _pre(
            "\n\n".join(
                f"--- {m.get('role')} ---\n{m.get('content')}"
                for m in obj.request_messages
                if isinstance(m, dict)
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


# -------------------------------------------------------------------- positions and trades


@admin.register(Position)
class PositionAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "agent",
        "market_ref",
        "side_short",
        "status",
        "shares",
        "cost_basis",
        "realized_pnl",
    )
    list_filter = ("status", "agent__model")
    list_select_related = ("agent__model", "agent__cohort", "market")
    search_fields = (
        "id__exact",  # the decision and agent pages name positions by id
        "market__question",
        "market__polymarket_id",
        "agent__model__display_name",
        "agent__model__internal_id",
    )

    @admin.display(description="Market", ordering="market__polymarket_id")
    def market_ref(self, obj: Position) -> str:
        return f"{obj.market.polymarket_id}: {short(obj.market.question, 70)}"

    @admin.display(description="Side")
    def side_short(self, obj: Position) -> str:
        return short(obj.side, 24)


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


# ------------------------------------------------------------------------------ snapshots


@admin.register(PortfolioSnapshot)
class PortfolioSnapshotAdmin(ReadOnlyAdmin):
    """Ten-minute marks of every portfolio: the biggest table, so no full count and no
    per-row query."""

    list_display = (
        "agent",
        "snapshot_timestamp",
        "cash",
        "positions_value",
        "total_value",
        "total_pnl_percent",
        "brier_score",
        "resolved_bets",
        "prices_stale",
    )
    list_filter = ("agent__cohort", "agent__model", "prices_stale")
    list_select_related = ("agent__model", "agent__cohort")
    date_hierarchy = "snapshot_timestamp"
    show_full_result_count = False
    raw_id_fields = ("agent",)
    ordering = ("-snapshot_timestamp", "agent")


@admin.register(SnapshotTick)
class SnapshotTickAdmin(ReadOnlyAdmin):
    list_display = ("slot", "markets_refreshed", "snapshots_written", "refresh_failure")
    date_hierarchy = "slot"
    show_full_result_count = False
    search_fields = ("refresh_error",)

    @admin.display(description="Refresh error")
    def refresh_failure(self, obj: SnapshotTick) -> str:
        return short(obj.refresh_error, 100) or "—"


@admin.register(ResolutionCheck)
class ResolutionCheckAdmin(ReadOnlyAdmin):
    list_display = (
        "checked_at",
        "markets_checked",
        "n_resolved",
        "n_cancelled",
        "n_failed",
        "failure",
    )
    list_filter = (("error", admin.EmptyFieldListFilter),)
    date_hierarchy = "checked_at"
    show_full_result_count = False
    search_fields = ("error",)

    @admin.display(description="Resolved")
    def n_resolved(self, obj: ResolutionCheck) -> int:
        return len(obj.resolved)

    @admin.display(description="Cancelled (refunded)")
    def n_cancelled(self, obj: ResolutionCheck) -> int:
        return len(obj.cancelled)

    @admin.display(description="Failed to settle")
    def n_failed(self, obj: ResolutionCheck) -> int:
        return len(obj.failed)

    @admin.display(description="Fetch error")
    def failure(self, obj: ResolutionCheck) -> str:
        return short(obj.error, 100) or "—"


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
        "related",
    )
    readonly_fields = fields

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


# ------------------------------------------------------------------------------ the audit


@admin.register(DeterminismCheck)
class DeterminismCheckAdmin(ReadOnlyAdmin):
    list_display = (
        "decision",
        "requested_model",
        "response_model",
        "matches",
        "cost_usd",
        "checked_at",
        "error_short",
    )
    list_filter = ("matches", "requested_model")
    list_select_related = ("decision__agent__model", "decision__agent__cohort")
    search_fields = ("decision__id__exact", "requested_model")
    date_hierarchy = "checked_at"
    fields = (
        "decision",
        "requested_model",
        "response_model",
        "matches",
        "cost_usd",
        "checked_at",
        "error",
        "original_json",
        "repeated_json",
        "raw_response_text",
    )
    readonly_fields = fields

    @admin.display(description="Error")
    def error_short(self, obj: DeterminismCheck) -> str:
        return short(obj.error, 80) or "—"

    @admin.display(description="Stored decision")
    def original_json(self, obj: DeterminismCheck) -> str:
        return _json(obj.original)

    @admin.display(description="Repeated decision")
    def repeated_json(self, obj: DeterminismCheck) -> str:
        return _json(obj.repeated)

    @admin.display(description="Raw response")
    def raw_response_text(self, obj: DeterminismCheck) -> str:
        return _pre(obj.raw_response) if obj.raw_response else "—"

    def has_audit_permission(self, request: HttpRequest) -> bool:
        return user_may(request, "arena.run_determinismcheck")

    def get_urls(self) -> list[URLPattern]:
        audit = path(
            "audit/",
            self.admin_site.admin_view(self.audit_view),
            name="arena_determinismcheck_audit",
        )
        return [audit, *super().get_urls()]

    def audit_view(self, request: HttpRequest) -> HttpResponse:
        """GET: the seeded sample and what its prompts cost the first time. POST: re-send
        them (`operations.determinism_audit`) and report each verdict."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        if request.method == "POST" and not self.has_audit_permission(request):
            raise PermissionDenied  # looking is viewing; sending costs money
        size, seed, problem = _audit_params(request)
        if request.method == "POST" and not problem:
            report = operations.determinism_audit(size=size, seed=seed)
            report_record(
                self, request, report, action="determinism_audit", data={"size": size, "seed": seed}
            )
            if not report.done and not report.failed:
                self.message_user(
                    request,
                    "No decision answered by OpenRouter to audit: nothing sent",
                    messages.WARNING,
                )
            report_to(self, request, report, what="Determinism audit")
            return HttpResponseRedirect(reverse("admin:arena_determinismcheck_changelist"))
        sample = determinism_sample(size=size, seed=seed) if not problem else []
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Run the determinism audit for a sample",
            "size": size,
            "seed": seed,
            "max_size": AUDIT_MAX_SIZE,
            "problem": problem,
            "sample": sample,
            "cost": determinism_cost_estimate(decisions=sample),
        }
        return TemplateResponse(request, "admin/arena/determinismcheck/audit.html", context)


def _audit_params(request: HttpRequest) -> tuple[int, int, str]:
    data = request.POST if request.method == "POST" else request.GET
    try:
        size = int(data.get("size", AUDIT_DEFAULT_SIZE))
        seed = int(data.get("seed", 0))
    except ValueError:
        return AUDIT_DEFAULT_SIZE, 0, "sample size and seed must be whole numbers"
    if not 1 <= size <= AUDIT_MAX_SIZE:
        return AUDIT_DEFAULT_SIZE, seed, f"the sample size must be between 1 and {AUDIT_MAX_SIZE}"
    return size, seed, ""


# ------------------------------------------------------------------------ system events


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
        return _json(obj.data)


# ---------------------------------------------------------------------------- data releases


@admin.register(DataRelease)
class DataReleaseAdmin(ReadOnlyAdmin):
    """The frozen weekly data releases: a published release is never edited; publishing again
    makes a new version only if the cohort's data changed."""

    list_display = ("name", "cohort", "version", "published_at", "total_bytes", "sha256")
    list_filter = ("version",)
    search_fields = ("name", "cohort__number__exact")
    list_select_related = ("cohort",)
    actions = ["publish_again"]
    fields = (
        "name",
        "cohort",
        "version",
        "published_at",
        "methodology_version",
        "total_bytes",
        "sha256",
        "changes",
        "files_text",
        "manifest_text",
        "page",
    )
    readonly_fields = fields

    @admin.display(description="Files")
    def files_text(self, obj: DataRelease) -> str:
        return _json(obj.files)

    @admin.display(description="Manifest")
    def manifest_text(self, obj: DataRelease) -> str:
        return _json(obj.manifest)

    @admin.display(description="Public page")
    def page(self, obj: DataRelease) -> str:
        url = reverse("arena:release", args=[obj.name])
        return format_html('<a href="{}">{}</a>', url, url)

    def has_publish_permission(self, request: HttpRequest) -> bool:
        return user_may(request, "arena.publish_datarelease")

    @admin.action(
        description="Publish the selected releases' cohorts again (a new version if "
        "their CSV data changed)",
        permissions=["publish"],
    )
    def publish_again(self, request: HttpRequest, queryset: QuerySet[DataRelease]) -> None:
        releases = list(queryset.select_related("cohort").order_by("name"))
        numbers = sorted({release.cohort.number for release in releases})
        report = releases_publish(cohort_numbers=numbers)
        report_record(
            self,
            request,
            report,
            action="publish_again",
            objects=releases,
            data={"cohorts": numbers},
        )
        report_to(self, request, report, what="Publish")


# --------------------------------------------------------------------------------- markets

# The catalogue's admin (markets/admin.py) cannot reach the arena — markets imports nothing
# of ours — so the arena extends it here with the action that settles positions.
admin.site.unregister(Market)


@admin.register(Market)
class MarketAdmin(CatalogueMarketAdmin):
    actions = [*CatalogueMarketAdmin.actions, "check_resolution"]

    def has_check_resolution_permission(self, request: HttpRequest) -> bool:
        return user_may(request, "markets.check_market_resolution")

    def resync_record(
        self, request: HttpRequest, polymarket_ids: list[str], summary: str, *, failed: bool
    ) -> None:
        staff_action_record(
            self,
            request,
            action="resync",
            summary=summary,
            failed=failed,
            objects=list(Market.objects.filter(polymarket_id__in=polymarket_ids)),
            data={"markets": polymarket_ids},
        )

    @admin.action(
        description="Check the selected markets' resolution now (settle if resolved)",
        permissions=["check_resolution"],
    )
    def check_resolution(self, request: HttpRequest, queryset: QuerySet[Market]) -> None:
        report = operations.OperationReport()
        markets = list(queryset.order_by("polymarket_id"))
        for polymarket_id in [market.polymarket_id for market in markets]:
            try:
                one = operations.market_resolution_check(polymarket_id=polymarket_id)
            except Exception as exc:  # one market's failure must not hide the others' results
                report.failed.append(f"market {polymarket_id}: check failed: {error_text(exc)}")
                continue
            report.done += one.done
            report.failed += one.failed
        report_record(
            self,
            request,
            report,
            action="check_resolution",
            objects=markets,
            data={"markets": [market.polymarket_id for market in markets]},
        )
        report_to(self, request, report, what="Resolution check")


# ---------------------------------------------------------------------------------- lineup

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
        staff_action_record(
            self,
            request,
            action="change_model" if change else "add_model",
            summary=f"model {obj.internal_id}: {fields} {'changed' if change else 'added'}",
            data={"model": obj.internal_id, "fields": form.changed_data},
        )


# ------------------------------------------------------------------------- outside agents


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
    """Register an outside team's agent (issue 13), issue it API tokens (shown once), admit it
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
        staff_action_record(
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
            staff_action_record(
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
            staff_action_record(
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
            staff_action_record(
                self,
                request,
                action="revoke_outside_token",
                summary=f"token fa_{token.prefix}_… of {token.model.internal_id} revoked",
                objects=[token],
                data={"model": token.model.internal_id, "token_prefix": token.prefix},
            )
            self.message_user(request, f"Token fa_{token.prefix}_… revoked.")
