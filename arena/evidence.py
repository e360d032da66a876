"""Text from models and providers made storable: hostile input is kept, never lost to a crash.

PostgreSQL's text and jsonb refuse NUL characters, and neither it nor SQLite's UTF-8 encoder
accepts a lone surrogate (a JSON string may carry `"\\ud800"`). Those characters are written
as the escapes a reader would recognise (`\\u0000`, `\\ud800`), everything else is kept as it
is, so stored evidence is lossless wherever the database can hold the text and safe always.
"""

from __future__ import annotations

import re
import traceback as _traceback
from typing import Any

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
TRACEBACK_FRAMES = 8


def storable_text(text: str) -> str:
    """Return `text` with NUL and lone surrogates written as \\uXXXX escapes."""
    if not _UNSTORABLE.search(text):
        return text
    return _UNSTORABLE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def storable_json(value: Any) -> Any:
    """Return a JSON value whose every string (keys too) is storable_text."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, dict):
        return {storable_text(str(k)): storable_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [storable_json(v) for v in value]
    return value


def clipped(text: str | None, length: int) -> str:
    """Return `text` storable and at most `length` characters (a CharField's limit)."""
    return storable_text(text or "")[:length]


def traceback_summary(exc: BaseException) -> str:
    """Return the exception and its last TRACEBACK_FRAMES frames, storable."""
    frames = _traceback.format_exception(exc, limit=-TRACEBACK_FRAMES)
    return storable_text("".join(frames))[-8000:]


def error_text(exc: BaseException) -> str:
    """Return "ExceptionType: message", storable and bounded."""
    return storable_text(f"{type(exc).__name__}: {exc}")[:2000]
