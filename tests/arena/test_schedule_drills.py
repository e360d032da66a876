"""Schedule and infrastructure fault drills, through real Redis, real Celery workers
(never eager), real `celery beat` processes and a real PostgreSQL connection drop:

- the beat fires the same schedule twice, or two beats run at once: one cohort a week, one
  decision per agent a week, no trade twice;
- Redis is down when the Sunday schedules fire: the sends fail loudly; once Redis is back
  the hourly retry run makes the missed week's cohort and decisions exactly once; past the
  cohort's first day a missed cohort is not started behind the operators' backs, the status
  page reports it with the command to run;
- the database connection drops in the middle of a snapshot tick or of a settlement: the
  service raises, nothing is half-written, and the next tick or check completes it.

After each drill every agent's books balance to the cent.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import InterfaceError, OperationalError, connection
from django.test import Client

from agents.models import BenchmarkModel
from arena import clock
from arena.models import (
    Agent,
    Cohort,
    Decision,
    DecisionRun,
    PortfolioSnapshot,
    Position,
    ResolutionCheck,
    SnapshotTick,
    SystemEvent,
    Trade,
)
from arena.services.cohorts import cohort_start
from arena.services.decisions.run import run_open
from arena.services.marking import snapshots_take
from arena.services.settlement import resolutions_check
from arena.weeks import COHORT_START_GRACE, cohort_week_start, week_opens
from markets.models import Market
from markets.sources import RecordedSource
from tests.arena.books import assert_books_balance
from tests.arena.test_settlement import (
    RESOLVED_YES,
    Gamma,
    agent_named,
    bet,
    decision_for,
    list_and_freeze,
    trading,
)
from tests.markets.conftest import gamma_json
from tests.replay import ReplayServer

ROOT = Path(__file__).resolve().parents[2]
on_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="needs PostgreSQL: worker and beat processes share the test database with this one "
    "(SQLite's in-memory test database is private to this process), and a connection drop "
    "is a server killing the backend",
)


# ------------------------------------------------------------------------------ helpers


def lineup() -> int:
    return BenchmarkModel.objects.filter(active=True).count()


def one_decision_per_agent(week: date) -> None:
    """Every agent of the week's active cohorts has exactly one decision, and it is final."""
    agents = Agent.objects.filter(cohort__week_start__lte=week)
    decisions = Decision.objects.filter(week_start=week)
    assert decisions.count() == agents.count()
    assert decisions.values("agent").distinct().count() == agents.count()
    assert not decisions.exclude(status__in=Decision.DECIDED).exists(), list(
        decisions.values_list("status", "error")
    )


def one_run_for_the_week(week: date) -> None:
    """The week was not split between two frozen snapshots: one run decided every agent.
    Otherwise the week's runs and what each decided are shown, to tell how a second came."""
    runs = list(
        DecisionRun.objects.filter(week_start=week)
        .order_by("pk")
        .values("pk", "started_at", "queued_at", "finished_at", "sync_summary")
    )
    decided = list(
        Decision.objects.filter(week_start=week)
        .order_by("run_id", "status")
        .values_list("run_id", "status", "tries", "claimed_by")
    )
    assert len(runs) == 1, {"runs": runs, "decisions": decided}
    assert {run_id for run_id, *_ in decided} == {runs[0]["pk"]}, decided


def no_trade_twice() -> None:
    """No order of an answer executed twice: one trade per (decision, try, order)."""
    keys = list(Trade.objects.values_list("decision_id", "try_number", "order_index"))
    assert len(keys) == len(set(keys))


def database_url() -> str:
    """The test database this process uses, for the processes it starts."""
    db = connection.settings_dict
    password = f":{db['PASSWORD']}" if db["PASSWORD"] else ""
    return (
        f"postgres://{db['USER']}{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
        f"/{db['NAME']}"
    )


def process_env(*, redis_url: str, now: datetime | None = None) -> dict[str, str]:
    """The environment of a drill's Celery process; `now` moves its clock there (running)."""
    env = dict(os.environ)
    if now is not None:
        env["DRILL_NOW"] = now.isoformat()
    env.update(
        # The project's settings with the test pass's own Celery queue, the one this
        # process sends to and its worker thread consumes (tests/conftest.py).
        DJANGO_SETTINGS_MODULE="tests.worker_settings",
        DATABASE_URL=database_url(),
        REDIS_URL=redis_url,
        DEBUG="1",
        OPENROUTER_API_KEY="",
        MARKET_SOURCE="demo",
        PYTHONUNBUFFERED="1",
    )
    return env


@contextmanager
def celery_process(
    kind: str, *args: str, redis_url: str, log: Path, now: datetime | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """A real `celery -A forecaster <kind>` process (a worker or a beat), its output in `log`,
    its clock moved to `now` if given; stopped (TERM, then KILL) when the block ends."""
    command = [sys.executable, "-m", "celery", "-A", "forecaster", kind, "--loglevel=INFO", *args]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=process_env(redis_url=redis_url, now=now),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            yield process
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def wait_for(condition: Callable[[], bool], *, timeout: float, what: str) -> None:
    """Poll `condition` until it holds; fail naming `what` at the deadline."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.2)


def free_port() -> int:
    """A port no one listens on, as the kernel hands them out: the two database passes run at
    once, and a fixed range would let both pick the same port for their private Redis."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@contextmanager
def redis_server(port: int, log: Path) -> Iterator[None]:
    """A private, throwaway redis-server on `port` (nothing saved); killed when the block ends."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed")
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
            ],  # fmt: skip
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:

            def answers() -> bool:
                with socket.socket() as probe:
                    return probe.connect_ex(("127.0.0.1", port)) == 0

            wait_for(answers, timeout=10, what=f"redis-server on {port}")
            yield
        finally:
            process.kill()
            process.wait(timeout=10)


# ------------------------------------------------------------- connection drops (drill 3)


@contextmanager
def backend_killed_after(matches: Callable[[str], bool]) -> Iterator[list[str]]:
    """Terminate this connection's PostgreSQL backend from a second connection right after the
    first statement `matches` accepts has executed, as a server restart or a network cut
    would; yield the statements that were killed after (one at most)."""
    import psycopg

    killed: list[str] = []
    pid = connection.connection.info.backend_pid

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        result = execute(sql, params, many, context)
        if not killed and matches(sql):
            killed.append(sql)
            with psycopg.connect(database_url(), autocommit=True) as admin:
                # With a timeout, pg_terminate_backend waits until the backend has gone.
                admin.execute("SELECT pg_terminate_backend(%s, 5000)", [pid])
        return result

    with connection.execute_wrapper(wrapper):
        yield killed


def writes_to(model: type[Any], verb: str) -> Callable[[str], bool]:
    """Whether a statement writes `model`'s table with `verb` (INSERT, UPDATE), wherever the
    verb stands in it (an INSERT … SELECT behind a WITH too), the table quoted or not."""
    table = model._meta.db_table
    written = re.compile(rf'\b{verb}(\s+OR\s+IGNORE)?(\s+INTO)?\s+"?{table}\b', re.I)

    def matches(sql: str) -> bool:
        return written.search(sql) is not None

    return matches


def reconnect() -> None:
    """What a worker does before its next task: drop the dead connection; Django opens a new
    one at the next query."""
    connection.close()


@on_postgresql
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_connection_dropping_in_a_snapshot_tick_writes_nothing_and_the_next_tick_does_it(
    cohort: Cohort,
) -> None:
    slot = datetime(2026, 3, 8, 0, 10, tzinfo=UTC)
    connection.ensure_connection()

    with (
        clock.simulated(slot),
        backend_killed_after(writes_to(PortfolioSnapshot, "INSERT")) as killed,
        pytest.raises((OperationalError, InterfaceError)),
    ):
        snapshots_take()
    assert killed, "the tick never wrote its snapshots"

    reconnect()
    assert not SnapshotTick.objects.filter(slot=slot).exists()
    assert not PortfolioSnapshot.objects.exists()

    with clock.simulated(slot + timedelta(minutes=3)):
        tick = snapshots_take()  # a retry of the task, in the same slot
    assert not tick.skipped
    assert tick.written == cohort.agents.count() == lineup()
    assert SnapshotTick.objects.get(slot=slot).snapshots_written == tick.written
    assert PortfolioSnapshot.objects.filter(snapshot_timestamp=slot).count() == tick.written
    assert_books_balance()


@on_postgresql
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_connection_dropping_in_a_settlement_settles_nothing_and_the_next_check_does(
    cohort: Cohort, gamma_server: ReplayServer
) -> None:
    gamma = Gamma(gamma_server)
    frozen = list_and_freeze(gamma, trading(RESOLVED_YES, ["0.4", "0.6"]))
    pid = "522900"
    bettors = [agent_named(cohort, name) for name in ("gpt-5.1", "claude-opus-4.5", "grok-4")]
    for agent, side in zip(bettors, ("YES", "NO", "YES"), strict=True):
        bet(decision_for(agent), frozen, pid, side, "1000.00")
    positions = Position.objects.filter(market__polymarket_id=pid)
    assert positions.count() == 3
    cash_before = dict(Agent.objects.values_list("pk", "cash"))
    gamma.serve(gamma_json(RESOLVED_YES))
    settle_at = datetime(2026, 3, 11, 9, 30, tzinfo=UTC)
    connection.ensure_connection()

    with backend_killed_after(writes_to(Position, "UPDATE")) as killed:
        failed = resolutions_check(now=settle_at)
    assert killed, "the settlement never updated a position"

    # The settlement's transaction could not even roll back on the dead connection: Django
    # closed it, and the check went on on a new one, recording the market as failed to settle
    # (one market's failure never stops the check) with the server's own words.
    assert failed.failed == [pid]
    assert failed.resolved == []
    event = SystemEvent.objects.get(kind=SystemEvent.Kind.SETTLEMENT_FAILED)
    assert "terminating connection" in event.message
    assert ResolutionCheck.objects.get(checked_at=settle_at).failed == [pid]
    market = Market.objects.get(polymarket_id=pid)
    assert market.resolution == Market.Resolution.OPEN
    assert market.resolved_at is None
    assert positions.filter(status=Position.Status.OPEN).count() == 3
    assert not positions.filter(settlement_value__isnull=False).exists()
    assert dict(Agent.objects.values_list("pk", "cash")) == cash_before
    assert not Trade.objects.filter(brier_score__isnull=False).exists()
    assert_books_balance()

    retried = resolutions_check(now=settle_at + timedelta(hours=1))

    assert retried.resolved == [pid]
    assert Market.objects.get(polymarket_id=pid).resolution == Market.Resolution.RESOLVED
    assert positions.filter(status=Position.Status.SETTLED).count() == 3
    yes_agent, no_agent, _ = bettors
    assert Agent.objects.get(pk=yes_agent.pk).cash == Decimal("9000.00") + Decimal("2500.00")
    assert Agent.objects.get(pk=no_agent.pk).cash == Decimal("9000.00")
    assert_books_balance()


# ------------------------------------------------------------ a missed cohort (drill 2b)

MISSED_SUNDAY = date(2026, 3, 15)
MISSED_MIDNIGHT = datetime(2026, 3, 15, tzinfo=UTC)


def missed_cohort_notice(client: Client) -> str | None:
    """The status page's notice of a missed cohort, as text, or None when it shows none."""
    response = client.get("/status/")
    assert response.status_code == 200
    page = response.content.decode()
    start = page.find('id="status-missed-cohort"')
    if start == -1:
        return None
    notice = page[start : page.index("</p>", start)]
    return " ".join(re.sub(r"<[^>]+>", "", notice.split(">", 1)[1]).split())


def test_past_its_first_day_a_missed_cohort_is_not_started_silently_the_status_page_says_how(
    db: None, client: Client, time_machine: Any
) -> None:
    # Last week's cohort ran; this Sunday the scheduler sent nothing (Redis was down through
    # the whole first day). Redis is back on Monday 00:30: the hourly retry run serves last
    # week's agents, and starts no cohort a day late behind the operators' backs.
    last_week, _ = cohort_start(week_start=MISSED_SUNDAY - timedelta(weeks=1))
    time_machine.move_to(MISSED_MIDNIGHT + timedelta(hours=12), tick=False)
    assert missed_cohort_notice(client) is None  # still its first day

    late = MISSED_MIDNIGHT + COHORT_START_GRACE + timedelta(minutes=30)
    time_machine.move_to(late, tick=False)
    run, agent_ids = run_open(retry=True, source=RecordedSource())
    assert run is not None
    assert sorted(agent_ids) == sorted(last_week.agents.values_list("pk", flat=True))
    assert not Cohort.objects.filter(week_start=MISSED_SUNDAY).exists()
    time_machine.move_to(late + timedelta(hours=1), tick=False)
    run_open(retry=True, source=RecordedSource())  # the next hour's: said once, not hourly
    missed = SystemEvent.objects.get(kind=SystemEvent.Kind.COHORT_MISSED)
    assert missed.level == SystemEvent.Level.WARNING
    assert "manage.py start_cohort --week 2026-03-15" in missed.message

    notice = missed_cohort_notice(client)
    assert notice is not None
    assert notice.startswith("No cohort was started for the week of 2026-03-15.")
    assert notice.endswith("To start it now, run manage.py start_cohort --week 2026-03-15.")

    # The operator runs the command the page gives: the cohort starts once, the page is quiet.
    call_command("start_cohort", "--week", "2026-03-15")
    call_command("start_cohort", "--week", "2026-03-15")
    assert Cohort.objects.filter(week_start=MISSED_SUNDAY).count() == 1
    assert Cohort.objects.get(week_start=MISSED_SUNDAY).agents.count() == lineup()
    assert missed_cohort_notice(client) is None
    assert_books_balance()


# -------------------------------------------------------- Redis down at Sunday (drill 2a)


@contextmanager
def broker_at(url: str) -> Iterator[None]:
    """Point this process's Celery app (its producers, and a worker started inside the block)
    at the broker `url`, as REDIS_URL would; the results stay on the test Redis."""
    from forecaster.celery import app

    # The app, its producers and its remote-control mailbox each keep a connection pool for
    # the broker they were first used with: set aside for the block, then put back.
    mailbox_cache = app.control.mailbox.__dict__  # its producer_pool is a cached property
    kept = (app.conf.broker_url, app._pool, app.amqp._producer_pool)
    app.conf.broker_url = url
    app._pool = app.amqp._producer_pool = None
    mailbox_cache.pop("producer_pool", None)
    try:
        yield
    finally:
        if app._pool is not None:
            app._pool.force_close_all()
        app.conf.broker_url, app._pool, app.amqp._producer_pool = kept
        mailbox_cache.pop("producer_pool", None)


@on_postgresql
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.celery_worker
@pytest.mark.drill  # celery and redis-server processes
@pytest.mark.slow(reason="waits on real beat, worker and redis-server processes")
def test_redis_down_when_sunday_fires_then_back_the_missed_run_happens_once(
    settings: Any, time_machine: Any, tmp_path: Path
) -> None:
    from celery.contrib.testing.worker import start_worker
    from django_celery_beat.models import IntervalSchedule, PeriodicTask
    from kombu.exceptions import OperationalError as BrokerUnavailable

    from arena.tasks import retry_decisions, run_decisions, start_cohort
    from forecaster.celery import app

    settings.MARKET_SOURCE = "demo"
    settings.OPENROUTER_API_KEY = ""
    port = free_port()
    broker = f"redis://127.0.0.1:{port}/0"
    sunday = cohort_week_start(datetime.now(UTC)) - timedelta(weeks=1)
    midnight = datetime(sunday.year, sunday.month, sunday.day, tzinfo=UTC)

    every = IntervalSchedule.objects.create(every=2, period=IntervalSchedule.SECONDS)
    PeriodicTask.objects.create(
        name="drill-start-cohort", task="arena.start_cohort", interval=every
    )
    beat_log = tmp_path / "beat.log"
    with (
        broker_at(broker),
        celery_process(
            "beat", "--max-interval=1", f"--pidfile={tmp_path / 'beat.pid'}",
            redis_url=broker, log=beat_log,
        ),
    ):  # fmt: skip
        # Sunday 00:00 and 00:05: the schedules fire, Redis is down: the sends fail loudly —
        # the beat logs the error, a send raises — and nothing was queued or started.
        wait_for(
            lambda: "beat: Connection error" in beat_log.read_text(),
            timeout=60,
            what="the beat to report that it cannot reach Redis",
        )
        time_machine.move_to(midnight, tick=True)
        with pytest.raises(BrokerUnavailable):
            start_cohort.apply_async()
        time_machine.move_to(midnight + timedelta(minutes=5), tick=True)
        with pytest.raises(BrokerUnavailable):
            run_decisions.apply_async()
        assert sends(beat_log, "drill-start-cohort") == 0
        assert not Cohort.objects.exists()

        # Redis is back before 01:00: the beat reconnects and sends again; the hourly retry
        # run starts the week's cohort (its first day) if the late start has not, and queues
        # every agent's decision; a worker decides each once.
        with (
            redis_server(port, tmp_path / "redis.log"),
            start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10),
        ):
            time_machine.move_to(midnight + timedelta(hours=1), tick=True)
            queued = retry_decisions.delay().get(timeout=120)
            assert f"queued {lineup()} agent decisions" in queued, queued
            wait_for(partial(chains_finished, sunday), timeout=300, what="the week's run")

            # The next hour's retry, and a late start, change nothing.
            time_machine.move_to(midnight + timedelta(hours=2), tick=True)
            assert retry_decisions.delay().get(timeout=60) == "no decision is due: no run"
            assert start_cohort.delay().get(timeout=60).endswith("already exists")
            wait_for(
                lambda: sends(beat_log, "drill-start-cohort") >= 2,
                timeout=90,
                what="the beat to send its schedule again once Redis is back",
            )
            wait_for(lambda: drained_in_process(app), timeout=60, what="the beat's deliveries")

    cohort = Cohort.objects.get()
    assert cohort.week_start == sunday
    assert cohort.agents.count() == lineup()
    assert DecisionRun.objects.count() == 1
    one_decision_per_agent(sunday)
    no_trade_twice()
    assert_books_balance()


def drained_in_process(app: Any) -> bool:
    """The in-process worker holds no task and the private broker's queue is empty."""
    with app.connection_for_write() as conn:
        waiting = conn.default_channel.client.llen("celery")
    inspect = app.control.inspect(timeout=1)
    active, reserved = inspect.active(), inspect.reserved()
    if waiting or not active or reserved is None:
        return False
    return not any(active.values()) and not any(reserved.values())


# ----------------------------------------------- the same schedule fired twice (drill 1)


@pytest.fixture
def empty_broker(settings: Any) -> Iterator[str]:
    """The test Redis database, emptied before and after: no message of another test is
    delivered to this one's workers."""
    import redis

    if not settings.CELERY_BROKER_URL:
        pytest.fail("REDIS_URL must be set: Celery drills run against a real Redis broker")
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    client.flushdb()
    yield settings.CELERY_BROKER_URL
    client.flushdb()


@contextmanager
def two_workers(broker: str, tmp_path: Path) -> Iterator[list[Path]]:
    """Two real worker processes on `broker`, each running one task at a time, so two
    deliveries of a task really run at the same time; yield their log files once both are
    ready. Their clocks run from a minute past this week's Sunday midnight, so that the weekly
    start falls on the cohort's first day (COHORT_START_GRACE) on any day of the week."""
    logs = [tmp_path / "worker-a.log", tmp_path / "worker-b.log"]
    sunday_night = week_opens(cohort_week_start(datetime.now(UTC))) + timedelta(minutes=1)
    with (
        celery_process(
            "worker", "--pool=solo", "-n", "drill-a@%h", "--without-mingle", "--without-gossip",
            redis_url=broker, log=logs[0], now=sunday_night,
        ),
        celery_process(
            "worker", "--pool=solo", "-n", "drill-b@%h", "--without-mingle", "--without-gossip",
            redis_url=broker, log=logs[1], now=sunday_night,
        ),
    ):  # fmt: skip
        for log in logs:
            wait_for(partial(is_ready, log), timeout=60, what=f"{log.name} to be ready")
        yield logs


def is_ready(log: Path) -> bool:
    return "ready." in log.read_text()


def chains_finished(week: date) -> bool:
    """Every run of the week finished and no decision is waiting or under a claim."""
    return (
        DecisionRun.objects.filter(week_start=week).exists()
        and not DecisionRun.objects.filter(week_start=week, finished_at__isnull=True).exists()
        and not Decision.objects.filter(week_start=week)
        .exclude(status__in=Decision.DECIDED)
        .exists()
    )


@on_postgresql
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.celery_worker
@pytest.mark.drill  # celery and redis-server processes
@pytest.mark.slow(reason="waits on real beat, worker and redis-server processes")
def test_start_and_run_delivered_twice_at_once_make_one_cohort_and_one_decision_per_agent(
    empty_broker: str, tmp_path: Path
) -> None:
    from celery import group

    from arena.tasks import run_decisions, start_cohort

    week = cohort_week_start(datetime.now(UTC))
    with two_workers(empty_broker, tmp_path):
        starts = group(start_cohort.si(), start_cohort.si()).apply_async().get(timeout=60)
        assert sorted(s.split(" ", 1)[0] for s in starts) == ["Cohort", "started"], starts
        runs = group(run_decisions.si(), run_decisions.si()).apply_async().get(timeout=120)
        assert [r for r in runs if "queued" in r], runs
        wait_for(partial(chains_finished, week), timeout=300, what="the week's run to finish")
        wait_for(partial(drained, empty_broker), timeout=120, what="every task to be handled")

    one_run_for_the_week(week)
    assert Cohort.objects.count() == 1
    assert Cohort.objects.get().week_start == week
    assert Cohort.objects.get().agents.count() == lineup()
    one_decision_per_agent(week)
    no_trade_twice()
    assert_books_balance()


def sends(log: Path, entry: str) -> int:
    """How many times the beat whose output is `log` sent the schedule entry `entry`."""
    return log.read_text().count(f"Sending due task {entry} ")


def drained(broker: str) -> bool:
    """Nothing waits in the queue and no worker holds a task."""
    import redis

    from forecaster.celery import app

    if redis.Redis.from_url(broker).llen("celery"):
        return False
    inspect = app.control.inspect(timeout=1)
    active, reserved = inspect.active(), inspect.reserved()
    if not active or not reserved or len(active) < 2:
        return False  # a worker did not answer
    return not any(active.values()) and not any(reserved.values())


@on_postgresql
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.celery_worker
@pytest.mark.drill  # celery and redis-server processes
@pytest.mark.slow(reason="waits on real beat, worker and redis-server processes")
def test_two_beats_firing_the_weekly_schedules_again_and_again_make_one_cohort_and_one_run(
    empty_broker: str, tmp_path: Path
) -> None:
    from django.utils import timezone
    from django_celery_beat.models import IntervalSchedule, PeriodicTask

    # Schedules that fire within seconds, through django-celery-beat's DatabaseScheduler as
    # in production: the cohort start, then the decision run, every 2 seconds.
    every = IntervalSchedule.objects.create(every=2, period=IntervalSchedule.SECONDS)
    PeriodicTask.objects.create(
        name="drill-start-cohort", task="arena.start_cohort", interval=every
    )
    PeriodicTask.objects.create(
        name="drill-run-decisions",
        task="arena.run_decisions",
        interval=every,
        start_time=timezone.now() + timedelta(seconds=4),
    )
    week = cohort_week_start(datetime.now(UTC))
    beat_logs = [tmp_path / "beat-a.log", tmp_path / "beat-b.log"]
    with two_workers(empty_broker, tmp_path):
        with (
            celery_process(
                "beat", "--max-interval=1", f"--pidfile={tmp_path / 'beat-a.pid'}",
                redis_url=empty_broker, log=beat_logs[0],
            ),
            celery_process(
                "beat", "--max-interval=1", f"--pidfile={tmp_path / 'beat-b.pid'}",
                redis_url=empty_broker, log=beat_logs[1],
            ),
        ):  # fmt: skip
            # Both beats send each schedule, and each of them more than once.
            wait_for(
                lambda: all(
                    sends(log, entry) >= 2
                    for log in beat_logs
                    for entry in ("drill-start-cohort", "drill-run-decisions")
                ),
                timeout=90,
                what="both beats sending both schedules twice",
            )
        wait_for(lambda: chains_finished(week), timeout=300, what="the week's run to finish")
        wait_for(lambda: drained(empty_broker), timeout=120, what="every delivery to be handled")

    assert Cohort.objects.count() == 1
    assert Cohort.objects.get().week_start == week
    assert Cohort.objects.get().agents.count() == lineup()
    one_run_for_the_week(week)
    one_decision_per_agent(week)
    no_trade_twice()
    assert_books_balance()
