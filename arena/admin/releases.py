"""The admin of the frozen weekly data releases, and publishing a cohort's release again."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from arena.admin.common import ReadOnlyAdmin, pretty_json, report_record, report_to, user_may
from arena.models import DataRelease
from arena.services.releases import releases_publish


@admin.register(DataRelease)
class DataReleaseAdmin(ReadOnlyAdmin):
    """The frozen weekly data releases: a published release is never edited; publishing again
    makes the cohort's next release (r2, r3, …) only if its data changed."""

    list_display = ("name", "cohort", "release", "published_at", "total_bytes", "sha256")
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
        "open_text",
        "files_text",
        "manifest_text",
        "page",
    )
    readonly_fields = fields

    @admin.display(description="Release", ordering="version")
    def release(self, obj: DataRelease) -> str:
        return obj.label

    @admin.display(description="Open at release time")
    def open_text(self, obj: DataRelease) -> str:
        return pretty_json(obj.open_at_release)

    @admin.display(description="Files")
    def files_text(self, obj: DataRelease) -> str:
        return pretty_json(obj.files)

    @admin.display(description="Manifest")
    def manifest_text(self, obj: DataRelease) -> str:
        return pretty_json(obj.manifest)

    @admin.display(description="Public page")
    def page(self, obj: DataRelease) -> str:
        url = reverse("arena:release", args=[obj.name])
        return format_html('<a href="{}">{}</a>', url, url)

    def has_publish_permission(self, request: HttpRequest) -> bool:
        return user_may(request, "arena.publish_datarelease")

    @admin.action(
        description="Publish the selected releases' cohorts again (their next release if "
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
