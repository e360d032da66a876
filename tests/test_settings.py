"""Settings fail loudly: a bad environment stops `manage.py` at start-up, naming the variable.

Settings are read once per process, so each case runs `manage.py check` in a fresh one; the
cases run side by side to keep the module fast.
"""

from __future__ import annotations

import os
import secrets
import string
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Every variable the settings read; a case starts from none of them set.
SETTINGS_VARIABLES = (
    "DJANGO_SETTINGS_MODULE",
    "DEBUG",
    "SECRET_KEY",
    "ALLOWED_HOSTS",
    "CSRF_TRUSTED_ORIGINS",
    "DATABASE_URL",
    "REDIS_URL",
    "MARKET_SOURCE",
    "MARKET_UNIVERSE_SIZE",
    "OPENROUTER_API_KEY",
    "OFFLINE_AGENTS",
    "OPENROUTER_BASE_URL",
    "POLYMARKET_GAMMA_URL",
    "SECURE_SSL_REDIRECT",
    "SECURE_HSTS_SECONDS",
)


ALPHABET = string.ascii_letters + string.digits + "!@#%^&*(-_=+)"
MALFORMED = (
    ("DATABASE_URL", "mysql://x"),
    ("DATABASE_URL", "not-a-url"),
    ("REDIS_URL", "http://x"),
    ("DEBUG", "maybe"),
    ("MARKET_SOURCE", "bogus"),
    ("OFFLINE_AGENTS", "maybe"),
)
PRODUCTION = {
    "DEBUG": "0",
    "SECRET_KEY": "".join(secrets.choice(ALPHABET) for _ in range(50)),
    "ALLOWED_HOSTS": "arena.example.org",
    "REDIS_URL": "redis://127.0.0.1:6379/0",
    "OPENROUTER_API_KEY": "x",
}
PRODUCTION_WITHOUT_KEY = {k: v for k, v in PRODUCTION.items() if k != "OPENROUTER_API_KEY"}
DEPLOY_CHECK = ("check", "--deploy", "--fail-level", "WARNING")
# Prints whether offline agents may answer, and whether a key is set.
SHOW_RESPONDERS = (
    "shell",
    "-c",
    "from django.conf import settings; "
    "print('offline agents:', settings.OFFLINE_AGENTS, 'key:', bool(settings.OPENROUTER_API_KEY))",
)
# Each case: (manage.py arguments, the settings variables set). They run side by side.
CASES: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    **{f"{name}={value}": (("check",), {name: value}) for name, value in MALFORMED},
    "dev key": (("check",), {"DEBUG": "0", "OPENROUTER_API_KEY": "x"}),
    "production": (DEPLOY_CHECK, PRODUCTION),
    "production without a key": (DEPLOY_CHECK, PRODUCTION_WITHOUT_KEY),
    "production offline on purpose": (
        DEPLOY_CHECK,
        {**PRODUCTION_WITHOUT_KEY, "OFFLINE_AGENTS": "1"},
    ),
    "production OFFLINE_AGENTS=0": (
        DEPLOY_CHECK,
        {**PRODUCTION_WITHOUT_KEY, "OFFLINE_AGENTS": "0"},
    ),
    "embedded default": (SHOW_RESPONDERS, {}),
    "debug, offline agents refused": (("check",), {"OFFLINE_AGENTS": "0"}),
}


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """Run every case's manage.py in its own fresh process, all at once; return the outcomes."""
    base = {k: v for k, v in os.environ.items() if k not in SETTINGS_VARIABLES}
    started = {}
    for number, (case, (args, env)) in enumerate(CASES.items()):
        # Each on a throwaway SQLite file: never the real database.
        database = tmp_path_factory.mktemp(f"case{number}") / "db.sqlite3"
        started[case] = subprocess.Popen(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env={**base, "DATABASE_URL": f"sqlite:///{database}", **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    outcomes = {}
    for case, process in started.items():
        stdout, stderr = process.communicate(timeout=120)
        outcomes[case] = Run(process.returncode, stdout, stderr)
    return outcomes


@pytest.mark.parametrize(("name", "value"), MALFORMED)
def test_malformed_variable_stops_start_up_and_names_the_variable(
    runs: dict[str, Run], name: str, value: str
) -> None:
    run = runs[f"{name}={value}"]
    assert run.returncode != 0
    assert "ImproperlyConfigured" in run.stderr
    assert f"{name}={value!r}" in run.stderr


def test_debug_off_with_the_development_secret_key_fails_the_check(runs: dict[str, Run]) -> None:
    run = runs["dev key"]
    assert run.returncode != 0
    assert "forecaster.E001" in run.stderr


def test_production_settings_pass_the_deploy_check(runs: dict[str, Run]) -> None:
    run = runs["production"]
    assert run.returncode == 0, run.stderr
    assert "System check identified no issues" in run.stdout


@pytest.mark.parametrize("case", ["production without a key", "production OFFLINE_AGENTS=0"])
def test_production_without_an_openrouter_key_refuses_to_start(
    runs: dict[str, Run], case: str
) -> None:
    """Offline stand-ins must never be benchmarked in production by accident."""
    run = runs[case]
    assert run.returncode != 0
    assert "ImproperlyConfigured" in run.stderr
    assert "OPENROUTER_API_KEY is not set" in run.stderr
    assert "OFFLINE_AGENTS=1" in run.stderr  # how to opt in


def test_production_may_run_offline_agents_when_asked_on_purpose(runs: dict[str, Run]) -> None:
    run = runs["production offline on purpose"]
    assert run.returncode == 0, run.stderr
    assert "System check identified no issues" in run.stdout


def test_the_embedded_default_runs_offline_agents_without_a_key(runs: dict[str, Run]) -> None:
    run = runs["embedded default"]
    assert run.returncode == 0, run.stderr
    assert "offline agents: True key: False" in run.stdout


def test_offline_agents_can_be_refused_with_debug_on(runs: dict[str, Run]) -> None:
    run = runs["debug, offline agents refused"]
    assert run.returncode != 0
    assert "OPENROUTER_API_KEY is not set" in run.stderr
