"""Quality bars: hostile text renders escaped on every public page that shows it.

Market questions come from Polymarket and reasoning, raw responses and rejection reasons from
models: all of it is stored verbatim and may hold markup meant to break out of the page — a
script tag, a `</textarea>` closing an element we never opened, right-to-left overrides,
emoji, a 100 KB unbroken string. Every page shows it as text: escaped, never raw, with a 200.
(That the layout holds — no sideways scroll at 390 px — is checked in a browser by
tests/browser/test_walk.py over the same world.)
"""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import NoReverseMatch, reverse
from django.utils.html import escape

from arena.models import SystemEvent
from tests.page_world import World, build_world

SCRIPT = "<script>alert(1)</script>"
TEXTAREA = "</textarea><b>x"
RTL = "\u202edesrever\u202c \u200fמימין\u200f"  # RIGHT-TO-LEFT OVERRIDE, RIGHT-TO-LEFT MARK
EMOJI = "🦄🔥👩🏽‍💻"
BIG = "W" * 100_000  # one unbroken 100 KB word

# The markup comes first, so it survives every truncation a page applies (names: 100 chars).
HOSTILE = f"{SCRIPT}{TEXTAREA} {RTL} {EMOJI} {BIG}"
assert "\x00" not in HOSTILE  # NUL-free: PostgreSQL text cannot hold it

RAW_MARKUP = (SCRIPT, TEXTAREA, "<b>x", "<script>alert")
ESCAPED_SCRIPT = "&lt;script&gt;alert(1)&lt;/script&gt;"
ESCAPED_TEXTAREA = "&lt;/textarea&gt;&lt;b&gt;x"


@pytest.fixture
def hostile(db: None) -> World:
    world = build_world(scale=1, text=HOSTILE)
    # An event of the system's own, quoting what it failed on (the status page lists them).
    SystemEvent.objects.filter(decision=world.decision).update(message=f"failed: {HOSTILE}")
    return world


# page → (URL name, arguments, whether the page must show the hostile text)
def pages(w: World) -> dict[str, tuple[str, list[object], bool]]:
    return {
        "leaderboard": ("arena:leaderboard", [], True),  # the model's display name
        "cohorts": ("arena:cohorts", [], False),
        "cohort": ("arena:cohort", [w.cohort.number], True),  # name, reasoning
        "agent": ("arena:agent", [w.cohort.number, w.agent.pk], True),  # questions, reasons
        "decision": ("arena:decision", [w.decision.pk], True),  # everything the model said
        "markets": ("markets:list", [], True),  # questions
        "market": ("arena:market", [w.market.polymarket_id], True),  # question, title
        "models": ("arena:models", [], True),  # display name
        "model": ("arena:model", [w.model.internal_id], True),
        "status": ("arena:status", [], True),  # the event's message
    }


def get_page(client: Client, name: str, args: list[object]) -> str:
    try:
        url = reverse(name, args=args)
    except NoReverseMatch:
        pytest.fail(f"no page named {name!r}")
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def assert_shown_escaped(html: str, *, shown: bool) -> None:
    for raw in RAW_MARKUP:
        assert raw not in html
    if shown:
        assert ESCAPED_SCRIPT in html
        assert ESCAPED_TEXTAREA in html


PAGE_NAMES = [
    *("leaderboard", "cohorts", "cohort", "agent", "decision"),
    *("markets", "market", "models", "model", "status"),
]


@pytest.mark.parametrize("page", PAGE_NAMES)
def test_hostile_text_renders_escaped_never_raw(hostile: World, client: Client, page: str) -> None:
    name, args, shown = pages(hostile)[page]
    assert_shown_escaped(get_page(client, name, args), shown=shown)


def test_the_decision_page_shows_every_hostile_field_whole_and_escaped(
    hostile: World, client: Client
) -> None:
    html = get_page(client, "arena:decision", [hostile.decision.pk])
    assert_shown_escaped(html, shown=True)
    whole = escape(HOSTILE)
    # reasoning (with linebreaks), system and user prompts, each attempt's raw response
    assert html.count(whole) >= 2 + hostile.decision.attempts.count()
    assert escape(f"system {HOSTILE}") in html
    assert escape(f"user {HOSTILE}") in html
    # the rejection reason, whole: it is the evidence of why the order failed
    assert f'<span class="neg">rejected:</span> {whole}' in html
    # right-to-left marks and emoji pass through as text, unmangled
    assert RTL in html
    assert EMOJI in html


def test_the_page_still_closes_its_elements_after_hostile_text(
    hostile: World, client: Client
) -> None:
    """A `</textarea>` or `</pre>` in stored text cannot end an element early: after the
    hostile raw responses the page goes on to its own closing tags."""
    html = get_page(client, "arena:decision", [hostile.decision.pk])
    assert html.rstrip().endswith("</html>")
    assert html.count("<pre") == html.count("</pre>")
    assert html.count("<table") == html.count("</table>")


def test_the_status_page_shows_the_hostile_event_message_escaped(
    hostile: World, client: Client
) -> None:
    html = get_page(client, "arena:status", [])
    assert_shown_escaped(html, shown=True)
    assert escape("failed: " + SCRIPT) in html
