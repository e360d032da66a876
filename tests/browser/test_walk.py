"""Mobile and quality bars: a visitor's walk through the site in a real browser.

Leaderboard → a model → a cohort (every chart range) → an agent → a decision → a market →
methodology → status → about → data → a data release, at 1280×900 and at 390×844 (a
phone). On every page: its key content is there, nothing scrolls sideways (the page is no
wider than the viewport), the console logged no error, no page error was thrown and no
request failed (the favicon included). Full-page screenshots go to $BROWSER_SCREENSHOTS
when it is set (`make screenshots`: tests/browser/screenshots/). The pages of a world whose
every stored text is hostile keep their layout too, and run nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.test.utils import override_settings
from django.urls import reverse
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from arena.models import DataRelease
from arena.services.releases import releases_publish_due
from tests.browser.conftest import CHROMIUM, Site

pytestmark = [
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="BROWSER WALK SKIPPED: no chromium on this machine — run `make browser` "
        "(apt-get install chromium) to test the pages in a real browser",
    ),
    # See conftest.py: the data is the module's, committed. serialized_rollback makes the
    # test database keep a copy of the seeded lineup, which the module puts back at its end.
    pytest.mark.django_db(serialized_rollback=True),
    pytest.mark.drill,  # a chromium process
    pytest.mark.slow(reason="a real chromium loads, measures and screenshots every page"),
    pytest.mark.one_pass,  # the pages' rendering, the same on either database
]

VIEWPORTS = {"desktop": (1280, 900), "phone": (390, 844)}
CHROMIUM_SAYS = "the server responded with a status of"


@dataclass
class Visit:
    """What went wrong while the browser was on the site, page by page."""

    problems: list[str] = field(default_factory=list)
    current: str = ""

    def note(self, what: str) -> None:
        self.problems.append(f"{self.current}: {what}")


@pytest.fixture(scope="module", autouse=True)
def _releases_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The walk's data releases live in a folder of its own (autouse: set before the demo
    fills the site, whether or not the demo publishes releases itself)."""
    root = tmp_path_factory.mktemp("releases")
    with override_settings(RELEASES_ROOT=root):
        yield root


@pytest.fixture(scope="module")
def release_page(site: Site, django_db_blocker: Any) -> str:
    """The page of the data release of a cohort the demo completed."""
    with django_db_blocker.unblock():
        report = releases_publish_due()
        assert not report.failed, report.failed
        release = DataRelease.objects.order_by("-published_at").first()
        assert release is not None, "the demo completed no cohort: no data release"
        return site.url + reverse("arena:release", args=[release.name])


@pytest.fixture(params=list(VIEWPORTS))
def tab(request: pytest.FixtureRequest, browser: Any, site: Site) -> Iterator[Any]:
    width, height = VIEWPORTS[request.param]
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(15_000)
    visit = Visit()
    page.on(
        "console",
        lambda m: visit.note(f"console {m.type}: {m.text}") if m.type == "error" else None,
    )
    page.on("pageerror", lambda e: visit.note(f"page error: {e}"))

    def dialog(d: Any) -> None:
        visit.note(f"a script opened a {d.type}")
        d.dismiss()

    page.on("dialog", dialog)

    def failed(r: Any) -> None:
        # A request still in flight when the walk moves on (the favicon, typically) is
        # cancelled by the browser: ERR_ABORTED is that cancellation, not a failure.
        if "ERR_ABORTED" not in str(r.failure):
            visit.note(f"request failed: {r.url} ({r.failure})")

    page.on("requestfailed", failed)
    page.on(
        "response",
        # the page's own status is checked by arrive(); this catches its assets and calls
        lambda r: (
            visit.note(f"HTTP {r.status} for {r.url}")
            if r.status >= 400 and r.request.resource_type != "document"
            else None
        ),
    )
    page.visit = visit
    page.viewport_name = request.param
    yield page
    context.close()


def arrive(
    page: Any, shots: Path | None, name: str, url: str | None = None, status: int = 200
) -> None:
    """Go to `url` (or stay after a click), then check the width and take the screenshot."""
    visit: Visit = page.visit
    visit.current = f"{page.viewport_name} {name}"
    if url is not None:
        response = page.goto(url, wait_until="load")
        if response is None or response.status != status:
            visit.note(f"status {response.status if response else 'none'} for {url}")
        elif status != 200:  # chromium logs the page's own expected error status
            own = f"console error: Failed to load resource: {CHROMIUM_SAYS} {status}"
            visit.problems = [
                p for p in visit.problems if not p.startswith(f"{visit.current}: {own}")
            ]
    page.wait_for_load_state("load")
    wide = page.evaluate(
        "() => [document.documentElement.scrollWidth, window.innerWidth,"
        " document.body.scrollWidth, document.documentElement.scrollHeight]"
    )
    if max(wide[0], wide[2]) > wide[1]:
        culprits = page.evaluate(
            """() => [...document.querySelectorAll('body *')]
                .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1
                     && !e.closest('.table-scroll, pre, .chart'))
                .slice(0, 5).map(e => e.tagName + '.' + e.className)"""
        )
        visit.note(f"page is {wide[0]} px wide in a {wide[1]} px viewport: {culprits}")
    if shots is None:
        return
    # A page of hostile text can be many screens tall: past 12,000 px the first screen will
    # do (a taller one outlasts the screenshot timeout on a slow machine).
    full = wide[3] <= 12_000
    # A tall page takes this slow machine past the default 15 s to draw.
    page.screenshot(
        path=str(shots / f"{page.viewport_name}-{name}.png"), full_page=full, timeout=60_000
    )


def expect_text(page: Any, selector: str, pattern: str) -> None:
    texts = page.locator(selector).all_inner_texts()
    if not any(re.search(pattern, t) for t in texts):
        page.visit.note(f"no {selector} matching {pattern!r} (saw {texts[:3]!r})")


def expect_link(page: Any, href: str) -> None:
    path = re.sub(r"^https?://[^/]+", "", href)
    if page.locator(f'main a[href="{path}"]').count() == 0:
        page.visit.note(f"no link to {path}")


def first_href(page: Any, selector: str) -> str | None:
    link = page.locator(selector).first
    return link.get_attribute("href") if link.count() else None


def test_a_visitor_walks_the_site(
    release_page: str, tab: Any, site: Site, screenshots: Path | None
) -> None:
    page, base = tab, site.url

    arrive(page, screenshots, "01-leaderboard", base + "/")
    expect_text(page, "h1", "Leaderboard")
    expect_text(page, "main table tbody tr", r"\S")
    # The forecast panel's table leads: every model on the same questions, then the bets'.
    expect_text(page, "#headline-panel tbody tr", r"\d\.\d{4}")
    expect_text(page, "#what-the-panel-shows", r"panel")
    # The main table leads with its uncertainty: each ranked Brier with its interval, a rank
    # range and a tier; the rows with too little data apart, marked provisional.
    expect_text(page, "table.main-board td.brier", r"^\d\.\d{4}\s+\[\d\.\d{4}, \d\.\d{4}\]$")
    expect_text(page, "table.main-board .rank-range", r"^\d+(–\d+)?$")
    expect_text(page, "#what-the-ranking-shows", r"tier")
    expect_text(page, "table.main-board.provisional .badge.provisional", r"^provisional$")
    model_href = first_href(page, 'main a[href^="/models/"]:not([href="/models/"])')
    if model_href is None:
        page.visit.note("no link to a model page")
        model_href = reverse("arena:model", args=["gpt-5.1"])

    arrive(page, screenshots, "02-model", base + model_href)
    expect_text(page, "h1", r"\S")
    expect_text(page, "main", r"Cohort \d+")

    arrive(page, screenshots, "03-cohort", site.cohort)
    expect_text(page, "h1", r"Cohort \d+")
    expect_text(page, "main table tbody tr", r"\$[\d,]+\.\d\d")
    expect_link(page, site.agent)
    chart_ranges(page, screenshots, "03-cohort")
    cohort_chart_reads(page, screenshots)

    arrive(page, screenshots, "04-agent", site.agent)
    expect_text(page, "main table tbody tr", r"executed")
    expect_link(page, site.decision)
    chart_ranges(page, screenshots, "04-agent")

    arrive(page, screenshots, "05-decision", site.decision)
    expect_text(page, "h2", "Reasoning")
    expect_text(page, "main table tbody tr", r"executed")
    expect_link(page, site.market)

    arrive(page, screenshots, "06-market", site.market)
    expect_text(page, "h1", r"\S")

    arrive(page, screenshots, "07-methodology", base + "/methodology/")
    expect_text(page, "h1", "Methodology")
    expect_text(page, "main", "Brier")

    arrive(page, screenshots, "08-status", base + "/status/")
    expect_text(page, "h1", "Status")

    arrive(page, screenshots, "09-about", base + "/about/")
    expect_text(page, "h1", r"About")

    arrive(page, screenshots, "10-data", base + "/data/")
    expect_text(page, "h1", "Data")
    expect_text(page, "main section.dataset h3", "bets")
    expect_link(page, reverse("api:bets_csv"))
    expect_link(page, release_page)
    page.locator("main section.release details summary").first.click()  # its files
    arrive(page, screenshots, "10-data-files-open")

    arrive(page, screenshots, "11-release", release_page)
    expect_text(page, "h1", r"Data release cohort-\d+-[rv]\d+")
    expect_text(page, "main table tbody tr", r"bets\.csv")
    readme = first_href(page, 'main a[href$="/README.md"]')
    if readme is None or page.request.get(base + readme).status != 200:
        page.visit.note("the release's README.md is not served")

    arrive(page, screenshots, "12-not-found", base + "/cohorts/999999/", status=404)
    expect_text(page, "h1", "Not found")

    # Browsers and crawlers ask for /favicon.ico even when the page links favicon.svg.
    icon = page.goto(base + "/favicon.ico")
    if icon is None or icon.status != 200 or "svg" not in icon.headers.get("content-type", ""):
        page.visit.note("/favicon.ico is not served")
    linked = page.request.get(base + "/static/favicon.svg")
    if linked.status != 200:
        page.visit.note(f"the linked favicon answers {linked.status}")

    assert not page.visit.problems, "\n".join(page.visit.problems)


def chart_ranges(page: Any, shots: Path | None, name: str) -> None:
    """Click every range of the page's chart: each draws again (a canvas, or says there is
    nothing in the range) without a console error."""
    ranges = page.locator(".chart-ranges a")
    keys = ranges.all_inner_texts()
    if not keys:
        page.visit.note("the chart has no range buttons")
    for key in keys:
        with page.expect_navigation(wait_until="load"):
            page.locator(".chart-ranges a", has_text=re.compile(rf"^{re.escape(key)}$")).click()
        try:
            page.wait_for_selector(".chart-plot canvas, .chart-empty", timeout=5_000)
        except PlaywrightTimeout:
            page.visit.note(f"range {key}: no chart drawn")
        active = page.locator(".chart-ranges a.active").all_inner_texts()
        if active != [key]:
            page.visit.note(f"range {key}: the active range shown is {active}")
    if keys:
        arrive(page, shots, f"{name}-range-{keys[-1]}")


def cohort_chart_reads(page: Any, shots: Path | None) -> None:
    """A cohort's chart of ten lines stays legible: it opens on the return axis (log scale),
    wide, each line is named at its right end, inside the plot and apart from the others;
    pointing at (or tapping) a name in the key brings its line forward; USD draws it again."""
    page.goto(page.url.split("?")[0], wait_until="load")
    plot = page.locator(".chart-plot").first
    lines = page.locator(".chart-summary li[data-series]").count()
    if lines < 3:
        page.visit.note(f"the cohort chart has {lines} lines: the walk needs three or more")
        return
    if plot.get_attribute("data-scale") != "return":
        page.visit.note(f"{lines} lines open on {plot.get_attribute('data-scale')!r}, not return")
    labels = plot.evaluate("e => e.forecasterLabels")
    if page.viewport_name == "desktop":
        if len(labels) != lines:
            page.visit.note(f"{len(labels)} line names drawn for {lines} lines")
        ys = sorted(label["y"] for label in labels)
        if any(b - a < 13.9 for a, b in zip(ys, ys[1:], strict=False)):
            page.visit.note(f"line names overlap: {ys}")
        if any(not label["top"] <= label["y"] <= label["bottom"] for label in labels):
            page.visit.note(f"a line name is outside the plot: {labels}")
    elif labels:
        page.visit.note(f"a phone's chart draws {len(labels)} names beside it: no room")
    key = page.locator(".chart-summary li[data-series]").nth(1)
    if page.viewport_name == "desktop":
        key.hover()
    else:
        key.click()  # a tap: it keeps the line forward
    alphas = plot.evaluate("e => e.forecasterPlot.series.slice(1).map(s => s.alpha)")
    if alphas[1] != 1 or not all(a < 1 for i, a in enumerate(alphas) if i != 1):
        page.visit.note(f"pointing at the key's second name brought forward {alphas}")
    arrive(page, shots, "03-cohort-chart-line-forward")
    page.locator(".chart-scales button[data-scale=linear]").click()
    if plot.get_attribute("data-scale") != "linear" or plot.locator("canvas").count() != 1:
        page.visit.note("USD did not draw the chart again, once")
    if page.viewport_name != "desktop":  # the tapped line stays forward on the new axis
        try:
            page.wait_for_function(
                "() => document.querySelector('.chart-plot').forecasterPlot.series[2].alpha === 1"
                " && document.querySelector('.chart-plot').forecasterPlot.series[1].alpha < 1",
                timeout=5_000,
            )
        except PlaywrightTimeout:
            page.visit.note("the line tapped forward fell back when the axis changed")
        # The pointer crossing the plot far from the lines, then leaving it, lets go of no pin.
        box = plot.bounding_box()
        if box is not None:
            page.mouse.move(box["x"] + 2, box["y"] + 2)
            page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2, steps=4)
            page.mouse.move(box["x"] + box["width"] / 2, max(box["y"] - 30, 1))  # not the key
        alphas = plot.evaluate("e => e.forecasterPlot.series.slice(1).map(s => s.alpha)")
        if alphas[1] != 1 or not all(a < 1 for i, a in enumerate(alphas) if i != 1):
            page.visit.note(f"the pointer crossing the plot let go of the tapped line: {alphas}")


def test_hostile_text_keeps_every_page_in_its_width_and_runs_nothing(
    tab: Any, site: Site, screenshots: Path | None
) -> None:
    world = site.hostile
    pages = {
        "cohort": reverse("arena:cohort", args=[world.cohort.number]),
        "agent": reverse("arena:agent", args=[world.cohort.number, world.agent.pk]),
        "decision": reverse("arena:decision", args=[world.decision.pk]),
        "market": reverse("arena:market", args=[world.market.polymarket_id]),
        "markets": reverse("markets:list") + "?q=script",
        "model": reverse("arena:model", args=[world.model.internal_id]),
        "leaderboard": "/",
        "status": "/status/",
    }
    for name, path in pages.items():
        arrive(tab, screenshots, f"hostile-{name}", site.url + path)
        if tab.locator("main b", has_text=re.compile("^x")).count():
            tab.visit.note("stored markup became an element")
    assert not tab.visit.problems, "\n".join(tab.visit.problems)
