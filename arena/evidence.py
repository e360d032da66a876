"""Text from models and providers made storable: hostile input is kept, never lost to a crash.

PostgreSQL's text and jsonb refuse NUL characters, and neither it nor SQLite's UTF-8 encoder
accepts a lone surrogate (a JSON string may carry `"\\ud800"`). Those characters are written
as the escapes a reader would recognise (`\\u0000`, `\\ud800`), everything else is kept as it
is, so stored evidence is lossless wherever the database can hold the text and safe always.

A stored response is committed to as it is stored (`commitment_sha256`), so that while it is
hidden anyone can see it exists and, once it is shown, check it was not changed since.
"""

from __future__ import annotations

import hashlib
import re
import traceback as _traceback
from pathlib import Path
from typing import Any

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
TRACEBACK_FRAMES = 8
_PROJECT = str(Path(__file__).resolve().parent.parent)


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
    """Return where `exc` happened, storable: the last TRACEBACK_FRAMES frames of the
    project's own code (a database error's innermost frames are all Django's and psycopg's,
    which would hide the line that failed), the innermost two frames, and the exception."""
    frames = _traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if _PROJECT in f.filename and "site-packages" not in f.filename]
    kept = ours[-TRACEBACK_FRAMES:]
    for frame in frames[-2:]:
        if frame not in kept:
            kept.append(frame)
    lines = ["Traceback (project frames, then the innermost):\n"]
    lines += _traceback.format_list(kept)
    lines += _traceback.format_exception_only(type(exc), exc)
    return storable_text("".join(lines))[-8000:]


def error_text(exc: BaseException) -> str:
    """Return "ExceptionType: message", storable and bounded."""
    return storable_text(f"{type(exc).__name__}: {exc}")[:2000]


def commitment_sha256(raw_response: str, salt: str) -> str:
    r"""Return the commitment to a stored response: the SHA-256, as 64 lowercase hex digits,
    of the UTF-8 bytes of `salt + "\n" + raw_response`.

    `raw_response` is the response body exactly as stored (`DecisionAttempt.raw_response`,
    already storable: every character encodes to UTF-8); `salt` is the attempt's
    `commitment_salt`, 64 hex digits (32 random bytes), secret until the response is shown,
    so a commitment published early reveals nothing of a short or guessable response. In a
    shell, with the response saved byte for byte in a file:
    `{ printf '%s\n' "$salt"; cat response.txt; } | sha256sum`.
    """
    return hashlib.sha256(f"{salt}\n{raw_response}".encode()).hexdigest()


def commitment_check(raw_response: str, salt: str, sha256: str) -> bool:
    """Return whether `raw_response` with `salt` gives the commitment `sha256` (hex, either
    case): True only for the very response and salt that were committed to."""
    return commitment_sha256(raw_response, salt) == sha256.lower()
