"""Downloads that never hold the site: an export is written to a file at the database's speed,
then sent from that file at the client's, in one of a few slots a web process keeps for them.

A client may read at any speed, however slow. Streamed straight from the database, a slow one
kept a worker (and a database cursor) busy for the whole download, and the server's worker
timeout cut it off part-way under a 200. Now:

- the whole file is written first (`export_spooled`, in TMPDIR), so the database is done with
  the request before its first byte leaves, and the response says its length (a cut-off
  download shows);
- the sending holds one thread of the web process (gunicorn's `gthread` workers, docs/deploy.md),
  which the worker timeout does not watch, for as long as the client takes;
- a process sends at most `DOWNLOADS_PER_PROCESS` files at once (settings; fewer than its
  threads), so slow clients can take the download slots but never the threads the pages need.
  A download past the slots is answered 503 with `Retry-After` (`DownloadsBusy`).

A release's files are already files; they take a slot the same way.
"""

from __future__ import annotations

import io
import tempfile
import threading
from collections.abc import Callable
from datetime import date
from typing import IO, Any

from django.conf import settings

from arena.selectors.exports import Dataset, Offline
from arena.services.exports import export_stream

RETRY_AFTER_SECONDS = 30  # a slot frees when a download ends: ask again in a while

_slots_lock = threading.Lock()
_slots: dict[str, Any] = {"size": None, "semaphore": None}


class DownloadsBusy(Exception):
    """Every download slot of this process is sending a file."""

    def __init__(self, slots: int) -> None:
        super().__init__(
            f"This server is sending {slots} downloads at once, its most; "
            f"ask again in {RETRY_AFTER_SECONDS} seconds."
        )
        self.retry_after = RETRY_AFTER_SECONDS


def _semaphore() -> tuple[int, threading.BoundedSemaphore]:
    """The process's slots, sized by the setting in force (a test may change it)."""
    size = int(settings.DOWNLOADS_PER_PROCESS)
    with _slots_lock:
        if _slots["size"] != size:
            _slots["size"], _slots["semaphore"] = size, threading.BoundedSemaphore(size)
        return size, _slots["semaphore"]


def download_slot() -> Callable[[], None]:
    """Take a download slot and return what gives it back (safe to call more than once).
    Raise DownloadsBusy when every slot is taken."""
    size, semaphore = _semaphore()
    if not semaphore.acquire(blocking=False):
        raise DownloadsBusy(size)
    lock = threading.Lock()
    held = [True]

    def give_back() -> None:
        with lock:  # two closers at once must not release twice (an extra slot)
            if held[0]:
                held[0] = False
                semaphore.release()

    return give_back


class SlotFile(io.RawIOBase):
    """A file being sent that gives its download slot back when the response closes it (the
    server closes a response when it is sent, or when the client went away). It keeps the
    file's descriptor, so the server can hand it to `sendfile`."""

    def __init__(self, file: IO[bytes], give_back: Callable[[], None]) -> None:
        super().__init__()
        self._file = file
        self._give_back = give_back

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        return self._file.readinto(buffer)  # type: ignore[attr-defined, no-any-return]

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._file.seek(offset, whence)

    def tell(self) -> int:
        return self._file.tell()

    def fileno(self) -> int:
        return self._file.fileno()

    def write_through(self, data: bytes) -> None:
        """Write to the file underneath (a SlotFile is read-only to its readers)."""
        self._file.write(data)

    def close(self) -> None:
        try:
            if not self.closed:
                self._file.close()
        finally:
            self._give_back()
            super().close()


def export_spooled(
    dataset: Dataset,
    fmt: str,
    give_back: Callable[[], None],
    *,
    cohort: int | None,
    since: date | None,
    until: date | None,
    offline: Offline,
) -> SlotFile:
    """Write the bounded export (the bytes `export_stream` gives) to a temporary file, which
    no other process can name and which goes when it is closed (in the system's temporary
    folder, TMPDIR); return it at its start, holding the download slot `give_back` returns.
    Whatever fails on the way gives the slot back."""
    try:
        spooled = SlotFile(tempfile.TemporaryFile(), give_back)  # noqa: SIM115
    except BaseException:
        give_back()
        raise
    try:
        for chunk in export_stream(
            dataset, fmt, cohort=cohort, since=since, until=until, offline=offline
        ):
            spooled.write_through(chunk)
        spooled.seek(0)
    except BaseException:
        spooled.close()
        raise
    return spooled
