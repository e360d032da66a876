"""Whole public pages kept until the data they may show changes.

A page of the year's arena (a model's 52 cohorts, the leaderboard's figures) takes a hundred
milliseconds and more to render, and between two ticks every visitor would be shown the same
bytes. So a page is kept whole, per process, under a key of its path and query and of the data
watermark (arena/selectors/watermark.py: the tables whose rows the pages show, the runs that
record the updates made in place, the admin's log, the decisions still under way, the
lineup's changes and the seal in force), for at most PAGE_CACHE_SECONDS. A request reads the
watermark (one query of index reads) and, when nothing moved, is answered with the kept
bytes. What changes with no mark moving (a row changed from a shell, say) shows within
PAGE_CACHE_SECONDS; the analytics' figures a page shows are kept apart, until their own
watermark moves (arena/selectors/analytics/cache.py).

Only a GET answered 200 is kept, with its headers; the middleware (security headers, the seal)
runs on every request as before.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.http import HttpRequest, HttpResponse
from django.urls import get_script_prefix

from arena import clock
from arena.selectors.watermark import data_watermark

View = Callable[..., HttpResponse]
# Moves when what is kept changes shape.
VERSION = 1


def page_key(request: HttpRequest, *, clock_seconds: int | None = None) -> str:
    """The key of the page `request` asks for, as the data stands now (and, with
    `clock_seconds`, as the clock stands, to that many seconds): its path and its query's
    parameters, in name order."""
    query = sorted(request.GET.lists())
    mark = f"{get_script_prefix()}|{request.path}|{query}|{data_watermark()}"
    if clock_seconds:
        mark += f"|{int(clock.now().timestamp()) // clock_seconds}"
    return f"page:v{VERSION}:{hashlib.sha256(mark.encode()).hexdigest()}"


def kept_until_the_data_moves(view: View, *, reads: tuple[str, ...] = ()) -> View:
    """The view, its pages kept whole until the data watermark moves (module docstring).
    `reads` names the query parameters the view reads: a request with any other (a tracking
    tag, a typo), or with one of them twice, is rendered and not kept, so that made-up
    queries cannot push the pages visitors ask for out of the cache."""
    return _kept(view, reads=reads, clock_seconds=None)


def kept_for_a_minute_or_until_the_data_moves(view: View, *, reads: tuple[str, ...] = ()) -> View:
    """The view of a page that reads the clock as well as the data (the status page's overdue
    jobs): kept until the watermark moves or the clock's minute turns, whichever is first."""
    return _kept(view, reads=reads, clock_seconds=60)


def _kept(view: View, *, reads: tuple[str, ...], clock_seconds: int | None) -> View:
    @wraps(view)
    def kept(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        seconds = settings.PAGE_CACHE_SECONDS
        if not seconds or request.method not in ("GET", "HEAD") or not _keepable(request, reads):
            return view(request, *args, **kwargs)
        if clock_seconds:
            seconds = min(seconds, clock_seconds)
        cache = caches["pages"]
        key = page_key(request, clock_seconds=clock_seconds)
        found = cache.get(key)
        if found is not None:
            packed, headers = found
            response = HttpResponse(zlib.decompress(packed))
            for name, value in headers:
                response[name] = value
            return response
        response = view(request, *args, **kwargs)
        if response.status_code == 200 and not response.streaming and not response.cookies:
            # Packed: a page shrinks to a quarter or less (1 ms for the largest), so a cache full
            # of the largest pages (a query string can make any number of keys) stays ~30 MB.
            packed = zlib.compress(response.content, 1)
            cache.set(key, (packed, list(response.items())), seconds)
        return response

    return kept


def _keepable(request: HttpRequest, reads: tuple[str, ...]) -> bool:
    return all(name in reads and len(values) == 1 for name, values in request.GET.lists())
