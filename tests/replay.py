"""A real HTTP server on 127.0.0.1 that replays recorded upstream responses.

Tests point the real clients (markets/clients.py, agents/clients.py) at it through settings;
nothing in a client is patched. Anything not recorded answers 404 with Gamma's error shape.

A route is matched on method and path; a `Reply` (or a list of them, served in turn, the last
one repeating) gives the status, body, headers and an optional delay. Every request received
is kept in `server.requests` so a test can check what the client sent.
"""

from __future__ import annotations

import json
import selectors
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

ROOT = Path(__file__).resolve().parent.parent
GAMMA_RECORDINGS = ROOT / "markets" / "recordings" / "gamma"
OPENROUTER_RECORDINGS = ROOT / "agents" / "recordings" / "openrouter"


def recording(path: Path | str) -> bytes:
    """Return the bytes of a recorded body, by absolute path or path under the project."""
    return (path if isinstance(path, Path) else ROOT / path).read_bytes()


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (to provoke read timeouts)
    content_type: str = "application/json"

    @classmethod
    def json(cls, value: Any, status: int = 200, **kw: Any) -> Reply:
        return cls(status=status, body=json.dumps(value).encode(), **kw)


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


Handler = Callable[[Request], Reply]


class ReplayServer:
    """Serve recorded replies; use as a context manager or call start()/stop()."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], list[Reply] | Handler] = {}
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _serve(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                request = Request(
                    method=self.command,
                    path=parts.path,
                    query=parse_qs(parts.query),
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=self.rfile.read(length) if length else b"",
                )
                reply = server._reply_for(request)
                if reply.delay:
                    time.sleep(reply.delay)
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    self.send_header("Content-Length", str(len(reply.body)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(reply.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test); nothing to answer

            do_GET = _serve  # noqa: N815
            do_POST = _serve  # noqa: N815

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        # serve_forever notices a shutdown only at its next poll: a few hundred servers a pass
        # each waited up to a poll interval to stop. A byte on this pair stops it at once.
        self._wake, self._waker = socket.socketpair()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def route(self, method: str, path: str, *replies: Reply | Handler) -> None:
        """Answer `method path` with `replies` in turn (the last repeats), or a handler."""
        if len(replies) == 1 and callable(replies[0]) and not isinstance(replies[0], Reply):
            self.routes[(method.upper(), path)] = replies[0]
        else:
            self.routes[(method.upper(), path)] = [r for r in replies if isinstance(r, Reply)]

    def requests_to(self, path: str) -> list[Request]:
        return [r for r in self.requests if r.path == path]

    def _reply_for(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
            entry = self.routes.get((request.method, request.path))
            if entry is None:
                return Reply.json({"type": "not found error", "error": "id not found"}, 404)
            if callable(entry):
                handler = entry
            else:
                return entry.pop(0) if len(entry) > 1 else entry[0]
        return handler(request)

    def _serve(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._httpd, selectors.EVENT_READ)
            selector.register(self._wake, selectors.EVENT_READ)
            while True:
                for key, _ in selector.select():
                    if key.fileobj is self._wake:
                        return
                    self._httpd.handle_request()  # ready: accepts and hands off at once

    def start(self) -> ReplayServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self._waker.send(b"stop")
            self._thread.join()
        self._httpd.server_close()
        self._wake.close()
        self._waker.close()

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
