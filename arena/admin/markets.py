"""The admin of market resolution: the hourly resolution checks, and the catalogue's market
admin extended with the action that checks a market now and settles its positions."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from arena.admin.common import (
    ReadOnlyAdmin,
    report_record,
    report_to,
    short,
    staff_action_log,
    user_may,
)
from arena.models import ResolutionCheck
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
