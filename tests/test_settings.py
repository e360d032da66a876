"""Settings fail loudly: a bad environment stops start-up, naming the variable.

forecaster/environment.py's `read_environment` reads and checks the environment, so each case
calls it with the case's variables, in this process. The cases about Django's system checks
run the settings module and the check in this process too (tests/in_process.py). A few smoke
tests start real `manage.py` processes, to show that start-up reads the process's environment
through that function. Every variable the settings read has a malformed case here, or is
listed as free text (any value is a valid one).
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
from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import SystemCheckError

from forecaster import environment
from tests.in_process import collected_static_root, manage_in_process

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
    ("METHODOLOGY_VERSION", "v3"),
    ("MARKET_UNIVERSE_SIZE", "0"),
    ("MARKET_UNIVERSE_SIZE", "many"),
    ("HTTP_CONNECT_TIMEOUT", "0"),
    ("HTTP_READ_TIMEOUT", "soon"),
    ("HTTP_MAX_RETRIES", "-1"),
    ("HTTP_BACKOFF_SECONDS", "abc"),
    ("HTTP_BACKOFF_SECONDS", "nan"),
    ("HTTP_RETRY_AFTER_CAP_SECONDS", "-5"),
    ("DECISION_PARSE_RETRIES", "1.5"),
    ("DECISION_MAX_ROUNDS", "0"),
    ("DECISION_RETRY_DEADLINE_HOURS", "0"),
    ("REDIS_URL", "http://x"),
    ("API_RATE_LIMIT", "-1"),
    ("API_RATE_LIMIT", "lots"),
    ("API_RATE_WINDOW_SECONDS", "0"),
    ("PAGE_CACHE_SECONDS", "-1"),
    ("PAGE_CACHE_SECONDS", "an hour"),
    ("OUTSIDE_WINDOW_OPENS_MINUTES", "-1"),
    ("OUTSIDE_WINDOW_CLOSES_MINUTES", "0"),
    ("OUTSIDE_API_RATE_LIMIT", "0"),
    ("OUTSIDE_API_RATE_WINDOW_SECONDS", "soon"),
    ("OUTSIDE_API_MAX_BODY_BYTES", "0"),
    ("OUTSIDE_TOKEN_DAYS", "0"),
    ("RESOLUTION_STALL_DAYS", "0"),
    ("RESOLUTION_RECHECK_DAYS", "-1"),
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
# The smoke tests' processes: (manage.py arguments, the settings variables set).
PROCESSES: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    "two malformed": (("check",), {"HTTP_MAX_RETRIES": "x", "REDIS_URL": "mysql://y"}),
    "production without a key": (DEPLOY_CHECK, PRODUCTION_WITHOUT_KEY),
    "embedded default": (SHOW, {}),
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
    """Run each smoke test's manage.py in its own fresh process; return the outcomes by name."""
    base = {k: v for k, v in os.environ.items() if k not in SETTINGS_VARIABLES}
    jobs = {}
    with ThreadPoolExecutor(max_workers=len(PROCESSES)) as pool:
        for number, (case, (args, env)) in enumerate(PROCESSES.items()):
            # Each on a throwaway SQLite file: never the real database.
            database = tmp_path_factory.mktemp(f"case{number}") / "db.sqlite3"
            case_base = {**base, "DATABASE_URL": f"sqlite:///{database}"}
            jobs[case] = pool.submit(manage, *args, env=env, base=case_base)
        return {case: job.result() for case, job in jobs.items()}


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """DEBUG=0 serves collected static files only (forecaster.E002 otherwise)."""
    return collected_static_root(tmp_path_factory)


def refusal(environ: dict[str, str]) -> str:
    """Return the message start-up stops with under `environ` (failing if it would not stop)."""
    with pytest.raises(ImproperlyConfigured) as refused:
        environment.read_environment(environ)
    return str(refused.value)


# ------------------------------------------------------------------ the environment, read


def test_every_variable_has_a_malformed_case_or_is_free_text() -> None:
    read = set(environment.variable_names())
    assert {name for name, _ in MALFORMED} | FREE_TEXT == read


@pytest.mark.parametrize(("name", "value"), MALFORMED)
def test_malformed_variable_stops_start_up_and_names_the_variable(name: str, value: str) -> None:
    message = refusal({name: value})
    assert message.startswith("malformed environment variables")
    assert f"{name}={value!r}: " in message


def test_every_malformed_variable_is_named_at_once() -> None:
    message = refusal({"HTTP_MAX_RETRIES": "x", "REDIS_URL": "mysql://y"})
    assert "HTTP_MAX_RETRIES='x': Not a valid integer." in message
    assert "REDIS_URL='mysql://y': not a URL with scheme redis/rediss and a host" in message


def test_a_blank_variable_counts_as_unset() -> None:
    read = environment.read_environment(
        {"HTTP_MAX_RETRIES": " ", "ALLOWED_HOSTS": "", "REDIS_URL": ""}
    )
    assert read.http_max_retries == 3
    assert read.allowed_hosts == ["127.0.0.1", "localhost", "testserver"]
    assert read.redis_url == ""


def test_an_outside_window_that_closes_before_it_opens_stops_start_up() -> None:
    message = refusal({"OUTSIDE_WINDOW_CLOSES_MINUTES": "3"})
    assert "decision window must open before it closes" in message
    assert "OUTSIDE_WINDOW_CLOSES_MINUTES=3" in message


def test_a_retry_deadline_past_the_week_stops_start_up() -> None:
    message = refusal({"DECISION_RETRY_DEADLINE_HOURS": "169"})
    assert "retry deadline must fall within their week" in message
    assert "DECISION_RETRY_DEADLINE_HOURS=169" in message
    assert environment.read_environment({"DECISION_RETRY_DEADLINE_HOURS": "168"})


def test_the_retry_bounds_default_to_three_rounds_by_the_end_of_sunday() -> None:
    read = environment.read_environment({})
    assert (read.decision_max_rounds, read.decision_retry_deadline_hours) == (3, 24)


@pytest.mark.parametrize(
    ("url", "options"),
    [
        ("postgres://u@db:5432/arena", "-c jit=off"),
        ("postgres://u@db:5432/arena?options=-c%20statement_timeout%3D5000",
         "-c statement_timeout=5000 -c jit=off"),
        ("postgres://u@db:5432/arena?options=-c%20jit%3Don", "-c jit=on"),
        ("postgres://u@db:5432/arena?options=-c%20JIT%3Don", "-c JIT=on"),
        ("postgres://u@db:5432/arena?options=-c%20jit_above_cost%3D1",
         "-c jit_above_cost=1 -c jit=off"),
        ("postgres://u@db:5432/arena?currentSchema=jitter",
         "-c search_path=jitter -c jit=off"),
        ("postgres://u@db:5432/arena?options=-c%20a%3D1&options=-c%20b%3D2",
         "-c a=1 -c b=2 -c jit=off"),
    ],
    ids=[
        "default", "with other options", "jit chosen by the URL", "JIT in capitals",
        "another jit setting", "a schema named jitter", "options given twice",
    ],
)  # fmt: skip
def test_postgresql_connections_run_without_jit_unless_the_url_chooses(
    url: str, options: str
) -> None:
    """PostgreSQL's JIT compiles a statement past its cost threshold anew each time; the
    project's statements never repay it (0.4 s of a 0.55 s read of two years of bets)."""
    read = environment.read_environment({"DATABASE_URL": url})
    assert read.database["OPTIONS"]["options"] == options


def test_the_jit_option_keeps_the_urls_other_connection_options() -> None:
    read = environment.read_environment(
        {"DATABASE_URL": "postgres://u@db:5432/arena?sslmode=require"}
    )
    assert read.database["OPTIONS"] == {"sslmode": "require", "options": "-c jit=off"}


@pytest.mark.parametrize(
    "environ",
    [PRODUCTION_WITHOUT_KEY, {**PRODUCTION_WITHOUT_KEY, "OFFLINE_AGENTS": "0"}],
    ids=["production without a key", "production OFFLINE_AGENTS=0"],
)
def test_production_without_an_openrouter_key_refuses_to_start(environ: dict[str, str]) -> None:
    """Offline stand-ins must never be benchmarked in production by accident."""
    message = refusal(environ)
    assert "OPENROUTER_API_KEY is not set" in message
    assert "OFFLINE_AGENTS=1" in message  # how to opt in


def test_the_embedded_default_runs_offline_agents_without_a_key() -> None:
    read = environment.read_environment({})
    assert read.offline_agents is True
    assert not read.openrouter_api_key


def test_offline_agents_can_be_refused_with_debug_on() -> None:
    assert "OPENROUTER_API_KEY is not set" in refusal({"OFFLINE_AGENTS": "0"})


def test_the_readme_table_lists_every_variable_the_settings_read() -> None:
    readme = (ROOT / "README.md").read_text()
    listed = set(re.findall(r"^\| `([A-Z_]+)` \|", readme, flags=re.M))
    assert set(environment.variable_names()) <= listed


# ----------------------------------------------------- Django's system checks on the settings


def test_debug_off_with_the_development_secret_key_fails_the_check(collected: Path) -> None:
    environ = {"DEBUG": "0", "OPENROUTER_API_KEY": "x", "STATIC_ROOT": str(collected)}
    with pytest.raises(SystemCheckError, match=r"forecaster\.E001"):
        manage_in_process("check", environ=environ)


def test_production_settings_pass_the_deploy_check(collected: Path) -> None:
    printed = manage_in_process(
        *DEPLOY_CHECK, environ={**PRODUCTION, "STATIC_ROOT": str(collected)}
    )
    assert "System check identified no issues" in printed


def test_production_may_run_offline_agents_when_asked_on_purpose(collected: Path) -> None:
    environ = {**PRODUCTION_WITHOUT_KEY, "OFFLINE_AGENTS": "1", "STATIC_ROOT": str(collected)}
    printed = manage_in_process(*DEPLOY_CHECK, environ=environ)
    assert "System check identified no issues" in printed


# ------------------------------------------- smoke: manage.py reads the process's environment


@pytest.mark.drill
def test_smoke_a_malformed_variable_stops_manage_py_naming_every_one(runs: dict[str, Run]) -> None:
    run = runs["two malformed"]
    assert run.returncode != 0
    assert "ImproperlyConfigured: malformed environment variables" in run.stderr
    assert "HTTP_MAX_RETRIES='x': Not a valid integer." in run.stderr
    assert "REDIS_URL='mysql://y': not a URL with scheme redis/rediss and a host" in run.stderr


@pytest.mark.drill
def test_smoke_production_without_an_openrouter_key_stops_manage_py(runs: dict[str, Run]) -> None:
    run = runs["production without a key"]
    assert run.returncode != 0
    assert "ImproperlyConfigured" in run.stderr
    assert "OPENROUTER_API_KEY is not set" in run.stderr
    assert "OFFLINE_AGENTS=1" in run.stderr


@pytest.mark.drill
def test_smoke_manage_py_starts_with_the_embedded_default(runs: dict[str, Run]) -> None:
    run = runs["embedded default"]
    assert run.returncode == 0, run.stderr
    assert "offline agents: True key: False" in run.stdout
    assert "retries: 3 hosts: ['127.0.0.1', 'localhost', 'testserver'] redis: ''" in run.stdout


def test_pages_are_kept_in_production_and_rendered_each_time_with_debug_on() -> None:
    assert environment.read_environment({}).page_cache_seconds == 0
    assert environment.read_environment(PRODUCTION).page_cache_seconds == 600
    assert (
        environment.read_environment({**PRODUCTION, "PAGE_CACHE_SECONDS": "0"}).page_cache_seconds
        == 0
    )
