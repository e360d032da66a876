"""The arena's clock: real time, or a simulated moment while the embedded demo runs.

Services read `now()` rather than the wall clock, so the demo can drive the real engine
through weeks of simulated time and every stored timestamp is the simulated one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime

from django.utils import timezone

_simulated: ContextVar[datetime | None] = ContextVar("simulated_now", default=None)


def now() -> datetime:
    return _simulated.get() or timezone.now()


@contextmanager
def simulated(moment: datetime) -> Iterator[None]:
    token = _simulated.set(moment)
    try:
        yield
    finally:
        _simulated.reset(token)
