"""Real Celery worker processes for the fault drills.

A drill that kills a worker, or runs several at once, needs workers that are processes of
their own: `celery -A forecaster worker`, started with the environment the drill gives it,
consuming from the Redis broker in REDIS_URL and writing to the test database. They share
that database with the test only on PostgreSQL (SQLite's in-memory test database lives in
the test process), so drills that use them skip on SQLite (`needs_worker_processes`).

    with worker_process("w1", env=worker_env(OPENROUTER_BASE_URL=server.url)) as worker:
        ...                       # worker.pool_pids(), worker.kill(), worker.log()
    with worker_processes("w1", "w2", env=worker_env()) as (w1, w2):
        ...

Every worker runs in a process group of its own, so that `kill()` takes the pool with it,
and is always stopped (or killed) when its `with` block ends, whatever happened inside.
"""

from __future__ import annotations

import os
import signal
import subprocess  # the drills start celery workers on purpose  # nosec B404
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection

from tests.replay import ROOT

needs_worker_processes = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="needs PostgreSQL: a worker process cannot reach SQLite's in-memory test database",
)


def test_database_url() -> str:
    """The URL of the test database pytest-django created (a worker process connects to it)."""
    db: dict[str, Any] = connection.settings_dict
    user = db.get("USER") or "postgres"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    host = db.get("HOST") or "127.0.0.1"
    port = db.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{db['NAME']}"


def worker_env(**overrides: str) -> dict[str, str]:
    """The environment of a worker process: this one's, pointed at the test database and
    this test's broker, with `overrides` (settings read from the environment) on top."""
    redis_url = os.environ.get("REDIS_URL", "")
    if not redis_url:
        pytest.fail("REDIS_URL must be set: worker drills run against a real Redis broker")
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="tests.worker_settings",
        DATABASE_URL=test_database_url(),
        REDIS_URL=redis_url,
        PYTHONUNBUFFERED="1",
        # The methodology new cohorts run, as this test runs it (v1 unless it asks for v2).
        METHODOLOGY_VERSION=str(settings.METHODOLOGY_VERSION),
    )
    env.update(overrides)
    return env


@dataclass
class WorkerProcess:
    """One `celery worker` process (and its pool), named <name>@drill."""

    name: str
    process: subprocess.Popen[bytes]
    log_path: Path

    @property
    def hostname(self) -> str:
        """The worker's node name, as results (`worker`) and control commands know it."""
        return f"{self.name}@drill"

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def pool_pids(self) -> list[int]:
        """The worker's child processes (its prefork pool), from /proc."""
        children: list[int] = []
        for task in Path(f"/proc/{self.pid}/task").glob("*"):
            try:
                children += [int(p) for p in (task / "children").read_text().split()]
            except (FileNotFoundError, ProcessLookupError):
                continue
        return children

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        """SIGKILL the worker and its whole pool at once: a machine lost, an OOM kill."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(timeout=10)

    def stop(self, timeout: float = 20) -> None:
        """Warm shutdown (SIGTERM: finish the running task); kill if it takes longer."""
        if not self.alive():
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
        else:
            try:  # a pool process left behind by a killed parent
                os.killpg(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def worker_spawn(
    name: str, *, env: dict[str, str], pool: str = "prefork", concurrency: int = 1
) -> WorkerProcess:
    """Start `celery -A forecaster worker` as <name>@drill, in a process group of its own,
    its output in a temporary log file; do not wait for it (see `worker_wait_ready`)."""
    log_path = Path(tempfile.mkstemp(prefix=f"worker-{name}-", suffix=".log")[1])
    with log_path.open("wb") as log:
        process = subprocess.Popen(  # a fixed command line, no shell  # nosec B603
            [
                sys.executable, "-m", "celery", "-A", "forecaster", "worker",
                "--hostname", f"{name}@drill",
                "--pool", pool, "--concurrency", str(concurrency),
                "--loglevel", "INFO", "--without-gossip", "--without-mingle",
            ],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    return WorkerProcess(name=name, process=process, log_path=log_path)


def worker_wait_ready(worker: WorkerProcess, *, timeout: float = 90) -> None:
    """Return once the worker answers a ping through the broker (it consumes from then on);
    raise, with its log, if it exits first or stays silent for `timeout` seconds."""
    from forecaster.celery import app

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not worker.alive():
            raise RuntimeError(f"worker {worker.name} exited at start:\n{worker.log()}")
        if app.control.ping(destination=[worker.hostname], timeout=0.5):
            return
    raise RuntimeError(f"worker {worker.name} not ready in {timeout} s:\n{worker.log()}")


@contextmanager
def worker_processes(
    *names: str, env: dict[str, str], ready_timeout: float = 90, **options: Any
) -> Iterator[list[WorkerProcess]]:
    """Worker processes for the `with` block, one per name, started together and ready when
    it begins; every one is stopped (or killed) and its log removed when it ends."""
    workers: list[WorkerProcess] = []
    try:
        for name in names:
            workers.append(worker_spawn(name, env=env, **options))
        for worker in workers:
            worker_wait_ready(worker, timeout=ready_timeout)
        yield workers
    except BaseException:
        for worker in workers:  # shown with the failure: what each worker did
            sys.stderr.write(f"--- log of worker {worker.name} ---\n{worker.log()[-6000:]}\n")
        raise
    finally:
        for worker in workers:
            worker.stop()
            worker.log_path.unlink(missing_ok=True)


@contextmanager
def worker_process(name: str, *, env: dict[str, str], **options: Any) -> Iterator[WorkerProcess]:
    """One worker process for the `with` block (see `worker_processes`)."""
    with worker_processes(name, env=env, **options) as (worker,):
        yield worker
