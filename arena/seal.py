"""The seal: no agent sees another's week before its own decision is final.

The lineup answers at 00:05 on Sunday; an outside team may answer until its window closes
(OUTSIDE_WINDOW_CLOSES_MINUTES, by default 01:00). Whatever the public could read in between
(a lineup model's bet, a trade, a cash drop in a snapshot, an event) would be a free option
for whoever answers last. So from the week's start (Sunday 00:00 UTC) until the window
closes, every public read shows the arena **as it stood at Sunday 00:00**:

- nothing recorded since: the week's decisions and their attempts, trades, snapshots and
  their hourly and daily rollups, audits, and the events about an agent, a decision or a run;
- an agent's cash and its positions as they were at 00:00 (`as_of`): the week's trades
  taken back out of the rows read (a position opened since is not there at all). What the
  markets did (a price, a settlement) is not an agent's to hide and shows as it is.

This is one rule, applied where the rows are read: the models' default managers
(`SealedManager`) consult `sealed_from()`, and apply what the seal covers of each table
(arena/seal_rules.py, one table of rules). The seal is set for a public request
(forecaster.middleware.SealMiddleware: every page, API answer and download, except the staff
admin and an outside agent's own books under /api/v1/outside/). A surface added later reads
through the same managers and inherits it. The engine, tasks, commands and the admin run
with no seal and see everything. It applies every week, whether or not an outside team takes
part. Every cache of public reads is keyed by `cache_part()`, so an answer computed under
the seal is never served after it lifts (nor the other way round).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from typing import Any, TypeVar

from django.db import models
from django.db.models import Q
from django.db.models.query import ModelIterable

from arena import clock
from arena.weeks import cohort_week_start, outside_window, week_opens

_SEALED_FROM: ContextVar[datetime | None] = ContextVar("sealed_from", default=None)


def seal_at(now: datetime) -> datetime | None:
    """The instant the public view is sealed at, at `now`: the week's start (Sunday 00:00
    UTC) while the outside window of the week has not closed; None otherwise."""
    week_start = cohort_week_start(now)
    opens = week_opens(week_start)
    closes = outside_window(week_start)[1]
    return opens if opens <= now < closes else None


def sealed_from() -> datetime | None:
    """The seal in force for the read under way: set only inside `public_view`."""
    return _SEALED_FROM.get()


@contextmanager
def public_view(now: datetime | None = None) -> Iterator[datetime | None]:
    """Read as the public does at `now` (default: the clock): inside, the default managers
    hide what the seal covers. Yields the seal, None when nothing is sealed."""
    token = _SEALED_FROM.set(seal_at(now or clock.now()))
    try:
        yield _SEALED_FROM.get()
    finally:
        _SEALED_FROM.reset(token)


@contextmanager
def unsealed() -> Iterator[None]:
    """Read everything, inside a public request: for a read that is the reader's own (an
    outside agent's books) or that only counts rows to key a cache."""
    token = _SEALED_FROM.set(None)
    try:
        yield
    finally:
        _SEALED_FROM.reset(token)


def cache_part() -> str:
    """What a cache key of a public read must carry: the seal it was read under."""
    seal = sealed_from()
    return "open" if seal is None else f"sealed@{seal:%Y%m%dT%H%M}"


_M = TypeVar("_M", bound=models.Model)
SealedRows = Callable[[datetime], Q]
AsOf = Callable[[list[Any], datetime], None]


class SealedQuerySet(models.QuerySet[_M]):
    """A queryset that reads as the public may at the moment: made under a seal, it leaves
    out the rows the seal covers and shows the rows it reads as they stood when the seal
    began. Outside a public read it is a plain queryset."""

    _seal: datetime | None = None
    _as_of: AsOf | None = None

    def _clone(self) -> Any:
        clone = super()._clone()  # type: ignore[misc]
        clone._seal, clone._as_of = self._seal, self._as_of
        return clone

    def _fetch_all(self) -> None:
        fresh = self._result_cache is None
        super()._fetch_all()
        if fresh and self._seal and self._as_of and self._iterable_class is ModelIterable:
            self._as_of(self._result_cache or [], self._seal)


class SealedManager(models.Manager[_M]):
    """The default manager of every table an agent's week shows in: its querysets apply the
    seal in force when they are made, with the model's rules (`seal_rules.RULES`: a filter
    of the rows that stay visible, and `as_of` for the rows read). The rules are read from
    the model, so the related managers Django derives from this one (`agent.trades`) apply
    them too; the base manager, which follows a foreign key, stays plain."""

    def get_queryset(self) -> SealedQuerySet[_M]:
        queryset: SealedQuerySet[_M] = SealedQuerySet(self.model, using=self._db)
        seal = sealed_from()
        if seal is None:
            return queryset
        rows, as_of = getattr(self.model, "seal_rules", (None, None))
        if rows is None and as_of is None:
            # A model whose rules were never installed would show everything: refuse.
            raise RuntimeError(f"no seal rules for {self.model.__name__} (seal_rules.install)")
        queryset._seal, queryset._as_of = seal, as_of
        return queryset.filter(rows(seal)) if rows else queryset
