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
"""

from __future__ import annotations

import time
from collections.abc import Generator
from typing import Any

import pytest

WALL_FACTOR = 4


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
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            return (yield)
        finally:
            if fixturedef.scope != "function":
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
        over = []
        if cpu > self.budget:
            over.append(f"{cpu:.1f} s of CPU time (budget {self.budget:g} s)")
        if wall > self.budget * WALL_FACTOR:
            over.append(f"{wall:.1f} s of wall time (budget {self.budget * WALL_FACTOR:g} s)")
        if over:
            report.outcome = "failed"
            report.longrepr = (
                f"{call.when} took {' and '.join(over)}, over the suite's budget of a test: "
                "make it faster, or mark it @pytest.mark.slow(reason=...) saying why it cannot be"
            )
        return report
