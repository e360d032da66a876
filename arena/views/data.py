"""The Data page: what the exports hold, the live streaming exports, and the frozen weekly
releases with their files."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.paginator import Page, Paginator
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode

from arena.models import Cohort, DataRelease
from arena.selectors import releases as release_selectors
from arena.selectors.exports import DATASETS, Dataset
from arena.services.downloads import DownloadsBusy, SlotFile, download_slot

LIVE_FORMATS = ("csv", "jsonl")
COHORTS_PER_PAGE = 20  # cohorts (each its latest release) per page of the Data page
# The browser may keep a release's file for good: a published file never changes.
IMMUTABLE = "public, max-age=31536000, immutable"


@dataclass(frozen=True)
class DatasetLinks:
    dataset: Dataset
    links: list[tuple[str, str]]  # (format, URL of the live export)


@dataclass(frozen=True)
class ReleaseView:
    release: DataRelease
    files: list[release_selectors.ReleaseFile]
    citation: str


def _export_url(name: str, cohort: int | None) -> str:
    """The URL of a live export file (`bets.csv`, `manifest.json`…) under the API's exports
    mount, bounded to `cohort` if one is given."""
    mount = reverse("api:bets_csv").rsplit("/", 1)[0]
    query = f"?{urlencode({'cohort': cohort})}" if cohort is not None else ""
    return f"{mount}/{name}{query}"


def _chosen_cohort(request: HttpRequest, numbers: list[int]) -> int | None:
    """The `?cohort=` of the page if it names a cohort; anything else means every cohort."""
    value = request.GET.get("cohort", "")
    # isdigit() alone passes "²", which int() refuses; and a number must be short to convert
    if not (value.isascii() and value.isdigit() and len(value) <= 18):
        return None
    return int(value) if int(value) in numbers else None


def _releases_page(request: HttpRequest) -> Page[DataRelease]:
    """The `?page=` of the releases, a cohort each; a page that is not a number is the first,
    one past the end the last."""
    paginator = Paginator(release_selectors.releases_latest_per_cohort(), COHORTS_PER_PAGE)
    return paginator.get_page(request.GET.get("page"))


def _page_url(cohort: int | None, page: int) -> str:
    query = {"cohort": cohort, "page": page} if cohort is not None else {"page": page}
    return f"{reverse('arena:data')}?{urlencode(query)}#releases"


def _release_view(release: DataRelease) -> ReleaseView:
    return ReleaseView(
        release=release,
        files=release_selectors.release_files(release),
        citation=release_selectors.release_citation_of(release),
    )


def _get_release(name: str) -> DataRelease:
    """Return the release with this name, or raise Http404 (also for a name with a NUL:
    PostgreSQL refuses one in a query, and no stored name holds one)."""
    if "\x00" in name:
        raise Http404("No such data release.")
    release = release_selectors.releases_published().filter(name=name).first()
    if release is None:
        raise Http404("No such data release.")
    return release


def data_page(request: HttpRequest) -> HttpResponse:
    numbers = list(Cohort.objects.order_by("-number").values_list("number", flat=True))
    cohort = _chosen_cohort(request, numbers)
    page = _releases_page(request)
    datasets = [
        DatasetLinks(
            dataset=dataset,
            links=[(fmt, _export_url(f"{name}.{fmt}", cohort)) for fmt in LIVE_FORMATS],
        )
        for name, dataset in DATASETS.items()
    ]
    return render(
        request,
        "arena/data.html",
        {
            "datasets": datasets,
            "cohort": cohort,
            "cohort_numbers": numbers,
            "manifest_url": _export_url("manifest.json", cohort),
            "releases": [_release_view(r) for r in page],
            "page": page,
            "previous_url": _page_url(cohort, page.number - 1) if page.has_previous() else "",
            "next_url": _page_url(cohort, page.number + 1) if page.has_next() else "",
        },
    )


def release_detail(request: HttpRequest, name: str) -> HttpResponse:
    release = _get_release(name)
    versions = list(release_selectors.release_versions(cohort=release.cohort))
    latest = versions[0] if versions else release
    return render(
        request,
        "arena/release_detail.html",
        {
            "view": _release_view(release),
            "versions": versions,
            "superseded_by": latest if latest.version > release.version else None,
            "live_url": _export_url("manifest.json", release.cohort.number),
        },
    )


def release_file(request: HttpRequest, name: str, filename: str) -> HttpResponse | FileResponse:
    """Send one file of a release from RELEASES_ROOT; only the names the release lists. It is
    sent in one of the process's download slots (arena/services/downloads.py): 503 with
    `Retry-After` while every slot is busy."""
    release = _get_release(name)
    path = release_selectors.release_file_path(release, filename)
    if path is None:
        raise Http404("No such file in this release.")
    try:
        give_back = download_slot()
    except DownloadsBusy as busy:
        answer = HttpResponse(str(busy), status=503, content_type="text/plain; charset=utf-8")
        answer["Retry-After"] = str(busy.retry_after)
        return answer
    try:
        file = SlotFile(open(path, "rb"), give_back)  # closed (slot back) when the response ends
    except BaseException:
        give_back()
        raise
    data = path.suffix in (".csv", ".jsonl", ".parquet")
    response = FileResponse(
        file,
        as_attachment=data,
        filename=filename,
        content_type=release_selectors.release_content_type(filename),
    )
    response["Cache-Control"] = IMMUTABLE
    return response
