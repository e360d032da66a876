"""The slow-client drill: the site served as the Procfile serves it, by gunicorn with the
Procfile's worker class and threads, its worker timeout lowered to 5 s and a single worker
(the harshest case: nothing else could answer for a worker held by a download). A client reads
a multi-megabyte export at 100 KB/s, four times as long as the timeout; it gets every byte, the
bytes the export gives in-process, and the site answers other requests meanwhile, each at once.

Streamed straight from the database by a sync worker, the download held the worker: the pages
waited, and the worker timeout killed it part-way (the client saw a 200 and part of the file).
arena/services/downloads.py says how it no longer does; docs/deploy.md, the server it runs.
"""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess  # the drill starts the web server on purpose  # nosec B404
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest

from arena import clock
from arena.seal import seal_at
from arena.selectors.exports import DATASETS
from arena.services.exports import export_stream
from tests.page_world import build_world
from tests.replay import ROOT
from tests.workers import needs_worker_processes, worker_env

pytestmark = [
    needs_worker_processes,  # the server reads the PostgreSQL test database
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.drill,
    pytest.mark.slow(reason="a client reads a download at 100 KB/s for 40 s"),
]

WORKER_TIMEOUT = 5  # seconds: the download takes four times as long
READ_RATE = 100 * 1024  # bytes a second
# At least: over the 2 MB a first probe used, since loopback's socket buffers take about 3 MB
# at once, and a smaller file would be handed to them before the timeout, freeing the worker.
EXPORT_BYTES = 4 * 1000 * 1000
PAGE_SECONDS = 3  # what a page may take while the download runs


def procfile_web() -> list[str]:
    """The Procfile's web command, each `${VAR:-default}` read as its default."""
    for line in (ROOT / "Procfile").read_text().splitlines():
        name, _, command = line.partition(":")
        if name.strip() == "web":
            return shlex.split(re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", command))
    raise AssertionError("the Procfile has no web process")


def with_options(words: list[str], **options: str) -> list[str]:
    """`words` with each `--name value` of `options` (underscores as dashes) replaced."""
    given = {f"--{name.replace('_', '-')}": value for name, value in options.items()}
    kept: list[str] = []
    rest = iter(words)
    for word in rest:
        if word in given:
            next(rest)
        else:
            kept.append(word)
    return kept + [part for name, value in given.items() for part in (name, value)]


def status_of(url: str, *, timeout: float) -> int:
    """The status a GET of the drill's own server answers."""
    with urllib.request.urlopen(url, timeout=timeout) as answer:  # nosec B310  # http://127.0.0.1
        status: int = answer.status
        return status


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def web_server() -> Iterator[str]:
    """The Procfile's server on a free port, with the drill's timeout and one worker; its URL."""
    port = free_port()
    command = with_options(
        procfile_web(), bind=f"127.0.0.1:{port}", timeout=str(WORKER_TIMEOUT), workers="1"
    )
    assert command[0] == "gunicorn"
    env = worker_env()
    now = clock.now()
    if seal_at(now) is not None:  # downloads pause while the week is sealed: run on a Wednesday
        env["DRILL_NOW"] = (now + timedelta(days=3)).isoformat()
    log_path = Path(tempfile.mkstemp(prefix="gunicorn-", suffix=".log")[1])
    with log_path.open("wb") as log:
        server = subprocess.Popen(  # a fixed command line, no shell  # nosec B603
            [sys.executable, "-m", *command],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, log_path.read_text()
            try:
                if status_of(f"{url}/api/v1/status", timeout=2) == 200:
                    break
            except OSError:  # not listening yet
                pass
            assert time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.2)
        yield url
    except BaseException:
        sys.stderr.write(f"--- gunicorn's log ---\n{log_path.read_text()[-6000:]}\n")
        raise
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, 9)
            server.wait(timeout=10)
        log_path.unlink(missing_ok=True)


def read_slowly(url: str, path: str) -> tuple[str, dict[str, str], bytes]:
    """GET `path` over a socket with a small receive buffer, reading at READ_RATE; return the
    status line, the headers and the body as received."""
    host, port = url.removeprefix("http://").split(":")
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
        sock.connect((host, int(port)))
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        received = bytearray()
        began = time.monotonic()
        while chunk := sock.recv(8192):
            received += chunk
            ahead = len(received) / READ_RATE - (time.monotonic() - began)
            if ahead > 0:
                time.sleep(ahead)
    head, _, body = bytes(received).partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    if headers.get("transfer-encoding") == "chunked":
        body = dechunked(body)
    return status, headers, body


def dechunked(body: bytes) -> bytes:
    """The bytes of a chunked body, as far as they came (a cut-off one ends early)."""
    data = bytearray()
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        data += rest[:size]
        body = rest[size + 2 :]
    return bytes(data)


def test_a_slow_client_gets_a_whole_export_while_the_site_answers_at_once() -> None:
    world = build_world(scale=1, text="slow client " * 6800)
    path = f"/api/v1/exports/decisions.csv?cohort={world.cohort.number}"
    expected = b"".join(export_stream(DATASETS["decisions"], "csv", cohort=world.cohort.number))
    assert len(expected) >= EXPORT_BYTES

    with web_server() as url:
        download: dict[str, tuple[str, dict[str, str], bytes]] = {}

        def read() -> None:
            download["answer"] = read_slowly(url, path)

        reader = threading.Thread(target=read)
        began = time.monotonic()
        reader.start()
        page_seconds: list[float] = []
        while reader.is_alive():
            asked = time.monotonic()
            assert status_of(f"{url}/api/v1/status", timeout=PAGE_SECONDS + 5) == 200
            page_seconds.append(time.monotonic() - asked)
            reader.join(timeout=1)
        took = time.monotonic() - began

    status, headers, body = download["answer"]
    assert status == "HTTP/1.1 200 OK"
    assert len(page_seconds) >= 10
    assert max(page_seconds) < PAGE_SECONDS, page_seconds
    assert len(body) == len(expected)
    assert body == expected
    assert took > 3 * WORKER_TIMEOUT  # the download outlived the worker timeout, whole
    assert int(headers["content-length"]) == len(expected)
