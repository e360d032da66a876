"""The information pages: methodology, status and about."""

from __future__ import annotations

import functools
from pathlib import Path

import markdown
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.safestring import SafeString, mark_safe

from agents.prompts import PROMPT_VERSION
from arena.selectors import info as info_selectors
from arena.selectors import status as status_selectors

METHODOLOGY_PATH = Path(settings.BASE_DIR) / "docs" / "methodology.md"
PROMPT_DIR = Path(settings.BASE_DIR) / "agents" / "prompt_templates"
PROMPT_FILES = ("system.txt", "user.txt", "retry.txt")


@functools.lru_cache(maxsize=32)
def read_text(path: Path) -> str:
    """Return the file's text, read once per process (the repository does not change under a
    running process)."""
    return path.read_text(encoding="utf-8")


@functools.lru_cache(maxsize=8)
def render_markdown(path: Path) -> SafeString:
    """Return the Markdown file rendered to HTML, each heading with an id for anchors.

    Only for documents of the repository itself: never for stored or user text.
    """
    html: str = markdown.markdown(
        read_text(path), extensions=["tables", "fenced_code", "toc"], output_format="html"
    )
    # Tables scroll inside their own box on a narrow screen, never the page.
    html = html.replace("<table>", '<div class="table-scroll"><table class="data">')
    html = html.replace("</table>", "</table></div>")
    return mark_safe(html)  # noqa: S308 — our own docs/methodology.md, not stored text  # nosec B308 B703


def prompt_templates(version: str = PROMPT_VERSION) -> list[tuple[str, str]]:
    """Return (file name, verbatim text) of the prompt templates of `version`."""
    return [(name, read_text(PROMPT_DIR / version / name)) for name in PROMPT_FILES]


def methodology(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "arena/methodology.html",
        {
            "body": render_markdown(METHODOLOGY_PATH),
            "prompt_version": PROMPT_VERSION,
            "prompt_templates": prompt_templates(),
            "versions": info_selectors.methodology_versions(),
            "new_cohorts_version": settings.METHODOLOGY_VERSION,
            "max_rounds": settings.DECISION_MAX_ROUNDS,
            "retry_deadline_hours": settings.DECISION_RETRY_DEADLINE_HOURS,
        },
    )


def status(request: HttpRequest) -> HttpResponse:
    return render(request, "arena/status.html", {"status": status_selectors.system_status()})


def about(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "arena/about.html",
        {
            "site_url": request.build_absolute_uri("/"),
            "lineup": info_selectors.lineup(),
            "versions": info_selectors.methodology_versions(),
            "new_cohorts_version": settings.METHODOLOGY_VERSION,
            "prompt_version": PROMPT_VERSION,
        },
    )
