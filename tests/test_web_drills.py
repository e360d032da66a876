"""Drills on the site served as the Procfile serves it (tests/web_server.py: gunicorn with the
Procfile's worker class and threads), with a single worker, the harshest case: nothing else
could answer for a worker that is held or lost.

- A slow client: with the worker timeout lowered to 5 s, a client reads a multi-megabyte
  export at 100 KB/s, for eight times as long as the timeout; it gets every byte, the bytes the
  export gives in-process, and the site answers other requests meanwhile, each at once.
  Streamed straight from the database by a sync worker, the download held the worker: the
  pages waited, and the worker timeout killed it part-way (the client saw a 200 and part of
  the file). arena/services/downloads.py says how it no longer does; docs/deploy.md, the
  server it runs.
- A web worker killed mid-submission: an outside team's submission is under way (its answer
  stored, its live prices being read from Polymarket) when its worker is SIGKILLed. The team
  submits again within its window and is served: the stored answer resumes, each order
  executes once, and the books balance.
"""

from __future__ import annotations

import socket
import threading
import time
from datetime import timedelta
from http import client as http_client
from typing import Any

import pytest

from arena import clock
from arena.models import Agent, Decision, SystemEvent, Trade
from arena.seal import seal_at
from arena.selectors.exports import DATASETS
from arena.services.cohorts import cohort_start
from arena.services.decisions.run import decisions_run_all
from arena.services.exports import export_stream
from arena.services.outside import outside_token_issue
from markets.sources import RecordedSource, demo_records
from tests.api.test_outside_api import IN_WINDOW, OUTSIDE, a_bet, http, outside_model
from tests.arena.books import assert_books_balance
from tests.arena.conftest import COHORT_AT, OFFLINE, RUN_AT, WEEK
from tests.page_world import build_world
from tests.replay import ReplayServer, Reply
from tests.web_server import status_of, web_server
from tests.workers import needs_worker_processes

pytestmark = [
    needs_worker_processes,  # the server reads the PostgreSQL test database
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.drill,
]

WORKER_TIMEOUT = 5  # seconds: the download takes eight times as long
READ_RATE = 100 * 1024  # bytes a second
# At least: over the 2 MB a first probe used, since loopback's socket buffers take about 3 MB
# at once, and a smaller file would be handed to them before the timeout, freeing the worker.
EXPORT_BYTES = 4 * 1000 * 1000
PAGE_SECONDS = 3  # what a page may take while the download runs


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


@pytest.mark.slow(reason="a client reads a download at 100 KB/s for 40 s")
def test_a_slow_client_gets_a_whole_export_while_the_site_answers_at_once() -> None:
    world = build_world(scale=1, text="slow client " * 6800)
    path = f"/api/v1/exports/decisions.csv?cohort={world.cohort.number}"
    expected = b"".join(export_stream(DATASETS["decisions"], "csv", cohort=world.cohort.number))
    assert len(expected) >= EXPORT_BYTES

    env = {}
    now = clock.now()
    if seal_at(now) is not None:  # downloads pause while the week is sealed: run on a Wednesday
        env["DRILL_NOW"] = (now + timedelta(days=3)).isoformat()
    with web_server(timeout=WORKER_TIMEOUT, workers=1, env=env) as site:
        url = site.url
        workers = site.worker_pids()
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
        # Held by a thread, never killed: the same worker served it all (whatever the socket
        # buffers of the machine could have taken off its hands).
        assert site.worker_pids() == workers
        assert "WORKER TIMEOUT" not in site.log()

    status, headers, body = download["answer"]
    assert status == "HTTP/1.1 200 OK"
    assert len(page_seconds) >= 10
    assert max(page_seconds) < PAGE_SECONDS, page_seconds
    assert len(body) == len(expected)
    assert body == expected
    assert took > 3 * WORKER_TIMEOUT  # the download outlived the worker timeout, whole
    assert int(headers["content-length"]) == len(expected)


@pytest.mark.slow(reason="waits on a real web server: a worker killed, a new one started")
def test_a_team_whose_web_worker_died_mid_submission_resubmits_and_nothing_executes_twice(
    settings: Any,
) -> None:
    for name, value in OFFLINE.items():
        setattr(settings, name, value)
    team = outside_model("team-drill")
    cohort, _ = cohort_start(week_start=WEEK, now=COHORT_AT)
    decisions_run_all(now=RUN_AT, source=RecordedSource())
    _, token = outside_token_issue(model=team, actor_id=None, now=COHORT_AT)
    agent = Agent.objects.get(cohort=cohort, model=team)
    decision = Decision.objects.get(agent=agent)
    assert decision.status == Decision.Status.AWAITING

    held, let_go = threading.Event(), threading.Event()
    live_reads: list[str] = []

    def gamma(request: Any) -> Reply:
        """Polymarket's live prices at submission: the first read never comes back before its
        worker is killed."""
        live_reads.append(request.path)
        if len(live_reads) == 1:
            held.set()
            let_go.wait(timeout=30)
        records = demo_records()
        return Reply.json([records[i] for i in request.query.get("id", []) if i in records])

    with ReplayServer() as gamma_server:
        gamma_server.route("GET", "/markets", gamma)
        env = {
            "MARKET_SOURCE": "gamma",
            "POLYMARKET_GAMMA_URL": gamma_server.url,
            "OPENROUTER_API_KEY": "",
            "HTTP_MAX_RETRIES": "0",
            "DRILL_NOW": IN_WINDOW.isoformat(),
            "DRILL_NOW_SET_AT": str(time.time()),
            "DRILL_SUBMISSION_CLAIM_SECONDS": "3",
        }
        with web_server(timeout=60, workers=1, env=env) as site:
            base = f"{site.url}{OUTSIDE}/cohorts/{cohort.number}"
            status, prompt, _ = http("GET", f"{base}/prompt", token)
            assert status == 200
            bet = a_bet(prompt, amount=700)
            cut_off: list[BaseException] = []

            def submit_and_lose_the_worker() -> None:
                try:
                    http("POST", f"{base}/decision", token, bet)
                except (OSError, http_client.HTTPException) as lost:
                    cut_off.append(lost)

            first = threading.Thread(target=submit_and_lose_the_worker)
            first.start()
            assert held.wait(timeout=30), site.log()
            site.kill_workers()
            let_go.set()
            first.join(timeout=30)
            assert cut_off, "the first submission got an answer from a killed worker"

            decision.refresh_from_db()
            assert (decision.status, decision.claimed_by) == (
                Decision.Status.RUNNING,
                "outside-api",
            )
            assert decision.attempts.filter(valid=True).count() == 1  # its answer was stored
            assert not Trade.objects.filter(decision=decision).exists()

            site.wait_ready()  # the master has started a new worker
            time.sleep(3.5)  # past DRILL_SUBMISSION_CLAIM_SECONDS: the claim is a dead one's
            status, result, _ = http("POST", f"{base}/decision", token, bet)
            assert status == 200, result
            assert result["resumed"] is True
            assert (result["status"], result["action"]) == ("done", "BET")
            [trade] = result["trades"]
            assert (trade["status"], trade["amount"]) == ("executed", "700.00")

            status, again, _ = http("POST", f"{base}/decision", token, bet)
            assert status == 409, again

    assert Trade.objects.filter(decision=decision).count() == 1
    assert Trade.objects.filter(agent=agent, status=Trade.Status.EXECUTED).count() == 1
    event = SystemEvent.objects.get(kind=SystemEvent.Kind.DECISION_RECLAIMED, decision=decision)
    assert event.data["reason"] == "dead_submission"
    assert_books_balance(cohort_id=cohort.pk)
