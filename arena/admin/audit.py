"""The admin of the determinism audit: its checks, and the page that shows a seeded sample of
stored prompts with their cost before re-sending them."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse

from arena.admin.common import (
    ReadOnlyAdmin,
    preformatted,
    pretty_json,
    report_record,
    report_to,
    short,
    user_may,
)
from arena.models import DeterminismCheck
from arena.services import operations
from arena.services.audit import determinism_cost_estimate, determinism_sample

AUDIT_DEFAULT_SIZE = 5
AUDIT_MAX_SIZE = 50


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
        return pretty_json(obj.original)

    @admin.display(description="Repeated decision")
    def repeated_json(self, obj: DeterminismCheck) -> str:
        return pretty_json(obj.repeated)

    @admin.display(description="Raw response")
    def raw_response_text(self, obj: DeterminismCheck) -> str:
        return preformatted(obj.raw_response) if obj.raw_response else "—"

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
