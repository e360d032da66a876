"""The site served as the Procfile serves it, for the drills on a real web server: gunicorn
with the Procfile's web command (its worker class, threads and counts), on a free port, with
the options a drill changes (a shorter worker timeout, one worker), against the PostgreSQL
test database and this test's broker (tests/workers.py's environment), with no API rate limit
(every client of a drill is 127.0.0.1, and the passes share Redis).

    with web_server(timeout=5, workers=1, env={...}) as site:
        site.url                  # http://127.0.0.1:<port>
        site.kill_workers()       # SIGKILL every worker: the master starts new ones
        site.wait_ready()

The server runs in a process group of its own and is always stopped when its block ends.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess  # the drills start the web server on purpose  # nosec B404
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.replay import ROOT
from tests.workers import worker_env


def as_defaults(text: str) -> str:
    """`text` with each `${VAR:-default}` read as its default: what runs when the operator
    sets nothing."""
    return re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", text)


def procfile_web() -> list[str]:
    """The Procfile's web command, each `${VAR:-default}` read as its default."""
    for line in (ROOT / "Procfile").read_text().splitlines():
        name, _, command = line.partition(":")
        if name.strip() == "web":
            return shlex.split(as_defaults(command))
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


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def status_of(url: str, *, timeout: float) -> int:
    """The status a GET of the drill's own server answers."""
    with urllib.request.urlopen(url, timeout=timeout) as answer:  # nosec B310  # http://127.0.0.1
        status: int = answer.status
        return status


@dataclass
class WebServer:
    url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def worker_pids(self) -> list[int]:
        """The master's children: its workers, from /proc."""
        children: list[int] = []
        for task in Path(f"/proc/{self.process.pid}/task").glob("*"):
            try:
                children += [int(p) for p in (task / "children").read_text().split()]
            except (FileNotFoundError, ProcessLookupError):
                continue
        return children

    def kill_workers(self) -> list[int]:
        """SIGKILL every worker (the machine's OOM killer, say); return their pids."""
        pids = self.worker_pids()
        assert pids, self.log()
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        return pids

    def wait_ready(self, *, timeout: float = 60) -> None:
        """Return once the status endpoint answers 200; fail with the log if it never does."""
        deadline = time.monotonic() + timeout
        while True:
            assert self.process.poll() is None, self.log()
            try:
                if status_of(f"{self.url}/api/v1/status", timeout=2) == 200:
                    return
            except OSError:  # not listening yet, or a worker just killed
                pass
            assert time.monotonic() < deadline, self.log()
            time.sleep(0.2)


@contextmanager
def web_server(*, timeout: int, workers: int, env: dict[str, str]) -> Iterator[WebServer]:
    """The Procfile's server with this worker timeout and number of workers, `env` over the
    drill processes' environment, ready when the block begins."""
    port = free_port()
    command = with_options(
        procfile_web(), bind=f"127.0.0.1:{port}", timeout=str(timeout), workers=str(workers)
    )
    assert command[0] == "gunicorn"
    log_path = Path(tempfile.mkstemp(prefix="gunicorn-", suffix=".log")[1])
    with log_path.open("wb") as log:
        process = subprocess.Popen(  # a fixed command line, no shell  # nosec B603
            [sys.executable, "-m", *command],
            cwd=ROOT, env={**worker_env(API_RATE_LIMIT="0"), **env}, stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    site = WebServer(url=f"http://127.0.0.1:{port}", process=process, log_path=log_path)
    try:
        site.wait_ready()
        yield site
    except BaseException:
        sys.stderr.write(f"--- gunicorn's log ---\n{site.log()[-6000:]}\n")
        raise
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        log_path.unlink(missing_ok=True)
