"""The admin of cohorts and what they hold: cohorts (start this week's, publish a release),
their agents with cash, total value and return, the agents' positions, and the ten-minute
portfolio snapshots with the ticks that wrote them."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from arena.admin.common import (
    ReadOnlyAdmin,
    ReadOnlyInline,
    report_record,
    report_to,
    short,
    staff_action_log,
    usd,
    user_may,
)
from arena.models import Agent, Cohort, PortfolioSnapshot, Position, SnapshotTick
from arena.selectors.standings import AgentStanding, agent_standings
from arena.services.cohorts import cohort_start
from arena.services.releases import releases_publish

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
        description="Publish the selected cohorts' data releases (once a cohort is final: "
        "completed, every bet of its LLM agents scored or its market cancelled; the next "
        "release of a released cohort only if its data changed)",
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
        staff_action_log(
            model_admin, request, action="start_week", summary=f"failed: {exc}", failed=True
        )
        model_admin.message_user(
            request, f"Could not start this week's cohort: {exc}", messages.ERROR
        )
    else:
        agents = cohort.agents.count()
        staff_action_log(
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


# ------------------------------------------------------------------------------ positions


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
