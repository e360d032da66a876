"""Staff inspection of the catalogue. Synced fields are read-only: Gamma is their source."""

from __future__ import annotations

import json

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from markets import services
from markets.models import Market, MarketSyncRun


@admin.register(Market)
class MarketAdmin(admin.ModelAdmin[Market]):
    list_display = (
        "polymarket_id",
        "question",
        "category",
        "price",
        "volume",
        "close_date",
        "closed",
        "resolution",
        "last_synced_at",
    )
    list_filter = ("resolution", "closed", "active", "category")
    search_fields = ("question", "=polymarket_id", "=condition_id", "slug")
    ordering = ("-volume",)
    actions = ["resync"]
    exclude = ("raw",)
    readonly_fields = [f.name for f in Market._meta.fields if f.name != "raw"] + ["raw_record"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Market | None = None) -> bool:
        return False  # Gamma is the source of every field; the only writes are the actions

    def has_delete_permission(self, request: HttpRequest, obj: Market | None = None) -> bool:
        return False

    def resync_record(
        self, request: HttpRequest, polymarket_ids: list[str], summary: str, *, failed: bool
    ) -> None:
        """Record who re-read which markets. The catalogue keeps no operations record of its
        own; the arena's admin, which extends this one, records it as a system event."""

    @admin.display(description="Raw Gamma record")
    def raw_record(self, obj: Market) -> str:
        return format_html(
            '<pre style="white-space:pre-wrap;max-height:600px;overflow:auto">{}</pre>',
            json.dumps(obj.raw, indent=2, ensure_ascii=False),
        )

    def has_resync_permission(self, request: HttpRequest) -> bool:
        """Return whether the user may run `resync` (the Operators group may)."""
        return request.user.has_perm("markets.resync_market")

    @admin.action(
        description="Re-read the selected markets from the market source", permissions=["resync"]
    )
    def resync(self, request: HttpRequest, queryset: QuerySet[Market]) -> None:
        wanted = list(queryset.values_list("polymarket_id", flat=True))
        result = services.markets_refresh(polymarket_ids=wanted)
        self.resync_record(request, wanted, result.summary(), failed=bool(result.error))
        level = messages.ERROR if result.error else messages.SUCCESS
        self.message_user(request, result.summary(), level)
        if result.error:
            return
        refused = [f"{market_id}: {reason}" for market_id, reason in result.rejections]
        synced = {m.polymarket_id for m in result.markets}
        refused += [
            f"{market_id}: not returned by {result.source}"
            for market_id in sorted(set(wanted) - synced - {i for i, _ in result.rejections})
        ]
        if refused:
            self.message_user(
                request, f"{len(refused)} not synced — " + "; ".join(refused), messages.WARNING
            )


@admin.register(MarketSyncRun)
class MarketSyncRunAdmin(admin.ModelAdmin[MarketSyncRun]):
    list_display = (
        "started_at",
        "source",
        "status",
        "requested",
        "fetched",
        "created",
        "updated",
        "rejected",
    )
    list_filter = ("status", "source")
    readonly_fields = [f.name for f in MarketSyncRun._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: MarketSyncRun | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: MarketSyncRun | None = None) -> bool:
        return False
