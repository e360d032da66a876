"""Settings fail loudly: a bad environment stops `manage.py` at start-up, naming the variable.

Settings are read once per process, so each case runs `manage.py check` in a fresh one; the
cases run a few at a time to keep the module fast. Every variable the settings read has a
malformed case here, or is listed as free text (any value is a valid one).
"""

from __future__ import annotations

import os
import re
import secrets
import string
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from forecaster import environment

ROOT = Path(__file__).resolve().parent.parent
# Every variable the settings read, plus Django's own.
SETTINGS_VARIABLES = ("DJANGO_SETTINGS_MODULE", *environment.variable_names())
# Any value of these is a valid one: there is nothing to call malformed.
FREE_TEXT = {"SECRET_KEY", "ALLOWED_HOSTS", "OPENROUTER_API_KEY", "OPENROUTER_APP_NAME"}
MALFORMED = (
    ("DEBUG", "maybe"),
    ("CSRF_TRUSTED_ORIGINS", "arena.example.org"),  # an origin needs its scheme
    ("DATABASE_URL", "mysql://x"),
    ("DATABASE_URL", "not-a-url"),
    ("DATABASE_URL", "postgres://127.0.0.1:5432"),  # no database name
    ("STATIC_ROOT", "staticfiles"),  # relative: would depend on the working directory
    ("RELEASES_ROOT", "var/releases"),  # relative
    ("SECURE_SSL_REDIRECT", "sometimes"),
    ("SECURE_HSTS_SECONDS", "a year"),
    ("SECURE_HSTS_SECONDS", "-1"),
    ("LOG_LEVEL", "loud"),
    ("POLYMARKET_GAMMA_URL", "ftp://gamma.example.org"),
    ("OPENROUTER_BASE_URL", "openrouter.ai/api/v1"),
    ("OPENROUTER_REFERER", "arena.example.org"),
    ("OFFLINE_AGENTS", "maybe"),
    ("MARKET_SOURCE", "bogus"),
    ("MARKET_UNIVERSE_SIZE", "0"),
    ("MARKET_UNIVERSE_SIZE", "many"),
    ("HTTP_CONNECT_TIMEOUT", "0"),
    ("HTTP_READ_TIMEOUT", "soon"),
    ("HTTP_MAX_RETRIES", "-1"),
    ("HTTP_BACKOFF_SECONDS", "abc"),
    ("HTTP_BACKOFF_SECONDS", "nan"),
    ("HTTP_RETRY_AFTER_CAP_SECONDS", "-5"),
    ("DECISION_PARSE_RETRIES", "1.5"),
    ("REDIS_URL", "http://x"),
    ("API_RATE_LIMIT", "-1"),
    ("API_RATE_LIMIT", "lots"),
    ("API_RATE_WINDOW_SECONDS", "0"),
    ("OUTSIDE_WINDOW_OPENS_MINUTES", "-1"),
    ("OUTSIDE_WINDOW_CLOSES_MINUTES", "0"),
    ("OUTSIDE_API_RATE_LIMIT", "0"),
    ("OUTSIDE_API_RATE_WINDOW_SECONDS", "soon"),
    ("OUTSIDE_API_MAX_BODY_BYTES", "0"),
    ("OUTSIDE_TOKEN_DAYS", "0"),
)
ALPHABET = string.ascii_letters + string.digits + "!@#%^&*(-_=+)"
PRODUCTION = {
    "DEBUG": "0",
    "SECRET_KEY": "".join(secrets.choice(ALPHABET) for _ in range(50)),
    "ALLOWED_HOSTS": "arena.example.org",
    "REDIS_URL": "redis://127.0.0.1:6379/0",
    "OPENROUTER_API_KEY": "x",
}
PRODUCTION_WITHOUT_KEY = {k: v for k, v in PRODUCTION.items() if k != "OPENROUTER_API_KEY"}
DEPLOY_CHECK = ("check", "--deploy", "--fail-level", "WARNING")
# Prints the settings a case wants to look at.
SHOW = (
    "shell",
    "-c",
    "from django.conf import settings as s; "
    "print('offline agents:', s.OFFLINE_AGENTS, 'key:', bool(s.OPENROUTER_API_KEY)); "
    "print('retries:', s.HTTP_MAX_RETRIES, 'hosts:', s.ALLOWED_HOSTS, 'redis:', repr(s.REDIS_URL))",
)
# Each case: (manage.py arguments, the settings variables set).
CASES: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    **{f"{name}={value}": (("check",), {name: value}) for name, value in MALFORMED},
    "two malformed": (("check",), {"HTTP_MAX_RETRIES": "x", "REDIS_URL": "mysql://y"}),
    "outside window backwards": (("check",), {"OUTSIDE_WINDOW_CLOSES_MINUTES": "3"}),
    "blank is unset": (SHOW, {"HTTP_MAX_RETRIES": " ", "ALLOWED_HOSTS": "", "REDIS_URL": ""}),
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
    "embedded default": (SHOW, {}),
    "debug, offline agents refused": (("check",), {"OFFLINE_AGENTS": "0"}),
}


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str


def manage(*args: str, env: dict[str, str], base: dict[str, str]) -> Run:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=180,
    )
    return Run(done.returncode, done.stdout, done.stderr)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """Run every case's manage.py in its own fresh process; return the outcomes by case."""
    base = {k: v for k, v in os.environ.items() if k not in SETTINGS_VARIABLES}
    # DEBUG=0 serves collected static files only (forecaster.E002 otherwise): collect them once.
    static_root = tmp_path_factory.mktemp("static")
    collected = manage(
        "collectstatic",
        "--noinput",
        env={**PRODUCTION, "STATIC_ROOT": str(static_root)},
        base={**base, "DATABASE_URL": "sqlite:///:memory:"},
    )
    assert collected.returncode == 0, collected.stderr
    jobs = {}
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        for number, (case, (args, env)) in enumerate(CASES.items()):
            # Each on a throwaway SQLite file: never the real database.
            database = tmp_path_factory.mktemp(f"case{number}") / "db.sqlite3"
            case_base = {
                **base,
                "DATABASE_URL": f"sqlite:///{database}",
                "STATIC_ROOT": str(static_root),
            }
            jobs[case] = pool.submit(manage, *args, env=env, base=case_base)
        return {case: job.result() for case, job in jobs.items()}


def test_every_variable_has_a_malformed_case_or_is_free_text() -> None:
    read = set(environment.variable_names())
    assert {name for name, _ in MALFORMED} | FREE_TEXT == read


@pytest.mark.parametrize(("name", "value"), MALFORMED)
def test_malformed_variable_stops_start_up_and_names_the_variable(
    runs: dict[str, Run], name: str, value: str
) -> None:
    run = runs[f"{name}={value}"]
    assert run.returncode != 0
    assert "ImproperlyConfigured: malformed environment variables" in run.stderr
    assert f"{name}={value!r}: " in run.stderr


def test_every_malformed_variable_is_named_at_once(runs: dict[str, Run]) -> None:
    run = runs["two malformed"]
    assert run.returncode != 0
    assert "HTTP_MAX_RETRIES='x': Not a valid integer." in run.stderr
    assert "REDIS_URL='mysql://y': not a URL with scheme redis/rediss and a host" in run.stderr


def test_a_blank_variable_counts_as_unset(runs: dict[str, Run]) -> None:
    run = runs["blank is unset"]
    assert run.returncode == 0, run.stderr
    assert "retries: 3 hosts: ['127.0.0.1', 'localhost', 'testserver'] redis: ''" in run.stdout


def test_debug_off_with_the_development_secret_key_fails_the_check(runs: dict[str, Run]) -> None:
    run = runs["dev key"]
    assert run.returncode != 0
    assert "forecaster.E001" in run.stderr


def test_an_outside_window_that_closes_before_it_opens_stops_start_up(
    runs: dict[str, Run],
) -> None:
    run = runs["outside window backwards"]
    assert run.returncode != 0
    assert "decision window must open before it closes" in run.stderr
    assert "OUTSIDE_WINDOW_CLOSES_MINUTES=3" in run.stderr


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


def test_the_readme_table_lists_every_variable_the_settings_read() -> None:
    readme = (ROOT / "README.md").read_text()
    listed = set(re.findall(r"^\| `([A-Z_]+)` \|", readme, flags=re.M))
    assert set(environment.variable_names()) <= listed
