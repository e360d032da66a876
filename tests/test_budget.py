"""The per-test budget (tests/budget.py) is in seconds of the reference machine: a step over it
fails on any machine, and a step a slower or busier machine merely took longer passes."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from tests.budget import (
    MAX_SLOWDOWN,
    REFERENCE_PROBE_SECONDS,
    WALL_FACTOR,
    Slowdown,
    overruns,
    probe_seconds,
)

ROOT = Path(__file__).resolve().parent.parent

BUDGET = 6.0
REFERENCE = Slowdown(cpu=1.0, wall=1.0)


def test_a_step_within_the_budget_overruns_nothing() -> None:
    assert overruns(5.9, 5.9 * WALL_FACTOR, BUDGET, REFERENCE) == []


def test_a_step_over_the_budget_on_the_reference_machine_overruns_it_in_cpu_and_wall() -> None:
    over = overruns(6.5, 30.0, BUDGET, REFERENCE)
    assert len(over) == 2
    assert over[0].startswith("6.5 s of CPU time, 6.5 s at the reference machine's speed")
    assert over[1].startswith("30.0 s of wall time, 30.0 s at the reference machine's speed")


def test_a_machine_running_four_times_slower_gives_four_times_the_seconds() -> None:
    busy = Slowdown(cpu=4.0, wall=4.0)
    # The CI run that failed a 1 s test at 6.0 s of CPU time, on a slower machine.
    assert overruns(6.0, 17.2, BUDGET, busy) == []
    # Still over at the reference speed: fails, saying both figures.
    assert overruns(30.0, 40.0, BUDGET, busy) == [
        "30.0 s of CPU time, 7.5 s at the reference machine's speed (budget 6 s)"
    ]


def test_a_faster_machine_gets_no_extra_budget() -> None:
    probe = REFERENCE_PROBE_SECONDS
    assert Slowdown.of(probe / 2, probe / 3) == REFERENCE
    assert Slowdown.of(probe * 3, probe * 5) == Slowdown(cpu=3.0, wall=5.0)


def test_no_slowdown_stretches_a_budget_past_the_most_it_allows() -> None:
    probe = REFERENCE_PROBE_SECONDS
    assert Slowdown.of(probe * 50, probe * 100) == Slowdown(cpu=MAX_SLOWDOWN, wall=MAX_SLOWDOWN)
    over = overruns(cpu=7 * MAX_SLOWDOWN, wall=1, budget=6, slowdown=Slowdown.of(probe * 50, 0))
    assert len(over) == 1
    assert "CPU time" in over[0]


def _speed_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ci_speed", ROOT / ".ci" / "speed.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_machines_speed_is_stated_as_times_the_reference_probes_seconds() -> None:
    speed = _speed_script()
    stated = speed.describe(cpu=2 * REFERENCE_PROBE_SECONDS, wall=3 * REFERENCE_PROBE_SECONDS)
    assert "2.0 times the reference machine's" in stated
    assert stated.endswith("3.0 times")
    cpu, wall = probe_seconds(3)
    assert 0 < cpu <= wall * 1.5
