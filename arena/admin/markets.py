"""The admin of market resolution: the hourly resolution checks, and the catalogue's market
admin extended with the action that checks a market now and settles its positions, and the
page where staff settle a market by hand (its winner by name) or cancel it."""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from arena.admin.common import (
    ReadOnlyAdmin,
    report_record,
    report_to,
    short,
    staff_action_log,
    user_may,
)
from arena.models import Position, ResolutionCheck
from arena.services import operations
from markets.admin import MarketAdmin as CatalogueMarketAdmin
from markets.models import Market

# ------------------------------------------------------------------------ resolution checks


@admin.register(ResolutionCheck)
class ResolutionCheckAdmin(ReadOnlyAdmin):
    list_display = (
        "checked_at",
        "markets_checked",
        "n_resolved",
        "n_cancelled",
        "n_failed",
        "n_missing",
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

    @admin.display(description="Not returned")
    def n_missing(self, obj: ResolutionCheck) -> int:
        return len(obj.missing)

    @admin.display(description="Fetch error")
    def failure(self, obj: ResolutionCheck) -> str:
        return short(obj.error, 100) or "—"


# --------------------------------------------------------------------------------- markets

# The catalogue's admin (markets/admin.py) cannot reach the arena — markets imports nothing
# of ours — so the arena extends it here with the action that settles positions.
admin.site.unregister(Market)


@admin.register(Market)
class MarketAdmin(CatalogueMarketAdmin):
    actions = [*CatalogueMarketAdmin.actions, "check_resolution"]
    readonly_fields = [*CatalogueMarketAdmin.readonly_fields, "settle_by_hand"]

    def has_check_resolution_permission(self, request: HttpRequest) -> bool:
        return user_may(request, "markets.check_market_resolution")

    def resync_record(
        self, request: HttpRequest, polymarket_ids: list[str], summary: str, *, failed: bool
    ) -> None:
        staff_action_log(
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
        markets = list(queryset.order_by("polymarket_id"))
        polymarket_ids = [market.polymarket_id for market in markets]
        report = operations.markets_resolution_check(polymarket_ids=polymarket_ids)
        report_record(
            self,
            request,
            report,
            action="check_resolution",
            objects=markets,
            data={"markets": polymarket_ids},
        )
        report_to(self, request, report, what="Resolution check")

    @admin.display(description="Settle by hand")
    def settle_by_hand(self, obj: Market) -> str:
        if obj.pk is None or obj.resolution != Market.Resolution.OPEN:
            return "—"
        return format_html(
            '<a href="{}">Settle or cancel this market by hand</a>',
            reverse("admin:markets_market_settle", args=[obj.pk]),
        )

    def get_urls(self) -> list[URLPattern]:
        settle = path(
            "<int:object_id>/settle/",
            self.admin_site.admin_view(self.settle_view),
            name="markets_market_settle",
        )
        return [settle, *super().get_urls()]

    def settle_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        """GET: the market, its outcomes and its open positions. POST: settle it to the
        outcome named (`operations.market_settle_by_hand`), or cancel it (refund at cost),
        with the note staff give; recorded as a staff action."""
        if not self.has_check_resolution_permission(request):
            raise PermissionDenied
        market = Market.objects.filter(pk=object_id).first()
        if market is None:
            raise Http404("no such market")
        problem = ""
        if request.method == "POST":
            choice = request.POST.get("choice", "")
            note = request.POST.get("note", "").strip()
            winner = None if choice == "cancel" else request.POST.get("outcome", "")
            if choice not in ("settle", "cancel"):
                problem = "choose to settle it to an outcome or to cancel it"
            elif not note:
                problem = "say why in the note: it is kept on the market"
            else:
                report = operations.market_settle_by_hand(
                    polymarket_id=market.polymarket_id, winning_outcome=winner, note=note
                )
                action = "settle_by_hand" if winner is not None else "cancel_by_hand"
                report_record(
                    self,
                    request,
                    report,
                    action=action,
                    objects=[market],
                    data={"market": market.polymarket_id, "winning_outcome": winner, "note": note},
                )
                report_to(self, request, report, what="Settle by hand")
                return HttpResponseRedirect(
                    reverse("admin:markets_market_change", args=[market.pk])
                )
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"Settle market {market.polymarket_id} by hand",
            "market": market,
            "outcomes": [str(o) for o in market.outcomes],
            "positions": market.positions.filter(status=Position.Status.OPEN).select_related(
                "agent__model"
            ),
            "problem": problem,
        }
        return TemplateResponse(request, "admin/markets/market/settle.html", context)
