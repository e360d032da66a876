"""The per-test time budget (registered by conftest.py as a plugin of its own: a conftest's
hooks see only the fixtures of its folder, and the test database is set up by the session's).

A test's setup, and its call, may each spend `budget` seconds of this process's CPU time (all
its threads: the live server's and the in-process worker's included), and WALL_FACTOR times
that of wall time, which catches a test that waits where it should not. CPU time is what a
test costs the suite, and it barely moves when the shards of `make test` share two cores: a
wall-time budget tight enough to matter failed tests at random there. Fixtures a module or the
session shares (the test database, a module's world) are left out of the setup's: whichever
test comes first would pay for all. A test over either budget fails unless it is marked
`slow` with a reason.

The budget is in seconds of the reference machine (the two-core machine it was calibrated on,
running nothing else). Machines differ, and two cores shared by the shards of `make test` run
each of them slower, in CPU time as in wall time: the same test was seen taking 1 s of CPU on
one such machine and 6 s on a slower one. So a test that looks over budget is judged again at
the machine's speed of that moment: a fixed piece of pure Python (`probe`) is timed, and its
CPU and wall seconds against REFERENCE_PROBE_SECONDS say how much slower than the reference
this machine runs now. The test fails only if it is over budget at the reference speed too.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import pytest

WALL_FACTOR = 4
# What `probe` takes on the reference machine with nothing else running, in CPU and in wall
# seconds alike (the median of many).
REFERENCE_PROBE_SECONDS = 0.037
PROBES = 5  # the median of these says how fast the machine runs now
# The most slowdown a budget allows for: past it a budget would stretch so far that it could
# no longer fail (a probe that ran while the machine was swapping, say).
MAX_SLOWDOWN = 8.0


def probe() -> None:
    """A fixed piece of pure Python, of the kind a test spends its time on (dicts, strings,
    a sort), about REFERENCE_PROBE_SECONDS long on the reference machine."""
    table: dict[int, str] = {}
    for i in range(400_000):
        table[i % 977] = f"{i}x"
    sorted(table.values())


@dataclass(frozen=True)
class Slowdown:
    """How many times slower than the reference machine this one runs at the moment, in CPU
    time and in wall time (never under 1: a faster machine gets no extra budget; never over
    MAX_SLOWDOWN)."""

    cpu: float
    wall: float

    @classmethod
    def of(cls, probe_cpu: float, probe_wall: float) -> Slowdown:
        """The slowdown of a machine on which `probe` took these seconds."""
        return cls(
            cpu=min(MAX_SLOWDOWN, max(1.0, probe_cpu / REFERENCE_PROBE_SECONDS)),
            wall=min(MAX_SLOWDOWN, max(1.0, probe_wall / REFERENCE_PROBE_SECONDS)),
        )

    @classmethod
    def now(cls) -> Slowdown:
        return cls.of(*probe_seconds(PROBES))


def probe_seconds(runs: int) -> tuple[float, float]:
    """The median CPU and wall seconds of `runs` probes. The CPU time is the probe's own
    thread's: a live server's or a worker's threads busy meanwhile would count in the
    process's time and make the machine look slower than it is."""
    cpu, wall = [], []
    for _ in range(runs):
        began_cpu, began_wall = time.thread_time(), time.perf_counter()
        probe()
        cpu.append(time.thread_time() - began_cpu)
        wall.append(time.perf_counter() - began_wall)
    return statistics.median(cpu), statistics.median(wall)


def overruns(cpu: float, wall: float, budget: float, slowdown: Slowdown) -> list[str]:
    """What a step that took `cpu` and `wall` seconds, on a machine running `slowdown` times
    slower than the reference, overran of `budget` (empty: nothing)."""
    over = []
    if cpu / slowdown.cpu > budget:
        over.append(
            f"{cpu:.1f} s of CPU time, {cpu / slowdown.cpu:.1f} s at the reference "
            f"machine's speed (budget {budget:g} s)"
        )
    if wall / slowdown.wall > budget * WALL_FACTOR:
        over.append(
            f"{wall:.1f} s of wall time, {wall / slowdown.wall:.1f} s at the reference "
            f"machine's speed (budget {budget * WALL_FACTOR:g} s)"
        )
    return over


class TimeBudget:
    def __init__(self, budget: float) -> None:
        self.budget = budget
        self.shared_cpu = 0.0  # of the test being set up: the fixtures it shares
        self.shared_wall = 0.0
        self.cpu: dict[str, float] = {}  # the phase's own CPU seconds

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        self.shared_cpu = self.shared_wall = 0.0
        self.cpu.clear()
        began = time.process_time()
        try:
            return (yield)
        finally:
            self.cpu["setup"] = time.process_time() - began

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        began = time.process_time()
        try:
            return (yield)
        finally:
            self.cpu["call"] = time.process_time() - began

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(
        self, fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest
    ) -> Generator[None, Any, Any]:
        if fixturedef.scope == "function":  # the test's own: counted in its setup
            return (yield)
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            return (yield)
        finally:
            self.shared_cpu += time.process_time() - cpu
            self.shared_wall += time.perf_counter() - wall

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if (
            call.when not in ("setup", "call")
            or not report.passed
            or item.get_closest_marker("slow") is not None
        ):
            return report
        setup = call.when == "setup"
        cpu = self.cpu.get(call.when, 0.0) - (self.shared_cpu if setup else 0.0)
        wall = report.duration - (self.shared_wall if setup else 0.0)
        if cpu <= self.budget and wall <= self.budget * WALL_FACTOR:
            return report
        slowdown = Slowdown.now()
        over = overruns(cpu, wall, self.budget, slowdown)
        if over:
            report.outcome = "failed"
            report.longrepr = (
                f"{call.when} took {' and '.join(over)}, over the suite's budget of a test "
                f"(this machine ran {slowdown.cpu:.1f}x slower than the reference in CPU time, "
                f"{slowdown.wall:.1f}x in wall time): make it faster, or mark it "
                "@pytest.mark.slow(reason=...) saying why it cannot be"
            )
        return report
