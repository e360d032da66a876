"""The deployment files (Procfile, compose.yaml, Dockerfile) and the runbook, docs/deploy.md,
agree with each other and with the code: the processes the runbook names, one beat, real module
paths, the production settings passed to every app container, and every setting documented."""

from __future__ import annotations

import importlib
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from celery import Celery
from django.conf import settings

from forecaster import environment
from tests.web_server import as_defaults

ROOT = Path(settings.BASE_DIR)
PYPROJECT = ROOT / "pyproject.toml"
RUNBOOK = (ROOT / "docs" / "deploy.md").read_text()
COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text())
SERVICES: dict[str, Any] = COMPOSE["services"]

# What forecaster/environment.py needs set when DEBUG=0 (its docstring and README's production
# steps): without these the site refuses hosts, runs tasks in-process, or calls no model.
PRODUCTION_REQUIRED = {
    "DEBUG",
    "SECRET_KEY",
    "ALLOWED_HOSTS",
    "DATABASE_URL",
    "REDIS_URL",
    "OPENROUTER_API_KEY",
}
APP_SERVICES = ("release", "web", "worker", "beat")


def procfile() -> dict[str, str]:
    """Return the Procfile's process name -> command."""
    processes = {}
    for line in (ROOT / "Procfile").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, command = line.partition(":")
            processes[name.strip()] = command.strip()
    return processes


def runbook_table(heading: str) -> list[str]:
    """Return the first-column names (in backticks) of the table under `## heading`."""
    section = RUNBOOK.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([^`]+)` \|", section, flags=re.MULTILINE)


def command_words(service: dict[str, Any]) -> list[str]:
    command = service.get("command", [])
    return shlex.split(command) if isinstance(command, str) else [str(w) for w in command]


def is_beat(words: list[str]) -> bool:
    return words[:1] == ["celery"] and "beat" in words


def settings_read_from_environment() -> set[str]:
    return set(environment.variable_names())


def test_every_process_the_runbook_names_is_in_the_procfile_and_compose() -> None:
    processes = runbook_table("The processes")
    assert set(processes) == {"release", "web", "worker", "beat"}
    assert set(processes) <= set(procfile())
    assert set(processes) <= set(SERVICES)


def test_compose_runs_postgres_and_redis_with_health_checks_on_every_long_running_service() -> None:
    assert {"postgres", "redis"} <= set(SERVICES)
    for name in ("postgres", "redis", "web", "worker", "beat"):
        assert "healthcheck" in SERVICES[name], name


def test_exactly_one_beat_in_the_procfile() -> None:
    beats = [name for name, command in procfile().items() if is_beat(shlex.split(command))]
    assert beats == ["beat"]


def test_exactly_one_beat_in_compose_and_workers_scale() -> None:
    beats = [name for name, service in SERVICES.items() if is_beat(command_words(service))]
    assert beats == ["beat"]
    assert SERVICES["beat"].get("deploy", {}).get("replicas", 1) == 1
    # N workers: a replica count the operator sets, not a fixed one.
    assert "WORKER_REPLICAS" in str(SERVICES["worker"]["deploy"]["replicas"])


def test_the_web_process_serves_the_real_wsgi_application() -> None:
    module_name, attribute = "forecaster.wsgi", "application"
    assert f"gunicorn {module_name}:{attribute}" in procfile()["web"]
    assert command_words(SERVICES["web"])[:2] == ["gunicorn", f"{module_name}:{attribute}"]
    assert settings.WSGI_APPLICATION == f"{module_name}.{attribute}"
    assert callable(getattr(importlib.import_module(module_name), attribute))


@pytest.mark.parametrize("process", ["worker", "beat"])
def test_celery_processes_load_the_app_of_forecaster_celery(process: str) -> None:
    # `celery -A forecaster` imports forecaster.celery and takes its `app`.
    assert isinstance(importlib.import_module("forecaster.celery").app, Celery)
    assert procfile()[process].startswith(f"celery -A forecaster {process} ")
    assert command_words(SERVICES[process])[:4] == ["celery", "-A", "forecaster", process]


def test_the_release_step_migrates_and_syncs_the_beat_schedules() -> None:
    assert "manage.py migrate" in procfile()["release"]
    assert "manage.py sync_schedules" in procfile()["release"]
    release = " ".join(command_words(SERVICES["release"]))
    assert "manage.py migrate" in release
    assert "manage.py sync_schedules" in release
    for name in ("web", "worker", "beat"):
        condition = SERVICES[name]["depends_on"]["release"]["condition"]
        assert condition == "service_completed_successfully", name


@pytest.mark.parametrize("service", APP_SERVICES)
def test_every_app_container_gets_the_settings_production_requires(service: str) -> None:
    environment = SERVICES[service]["environment"]
    assert PRODUCTION_REQUIRED <= set(environment)
    assert environment["DEBUG"] == "0"
    assert environment["REDIS_URL"].startswith("redis://redis:")
    assert environment["DATABASE_URL"].startswith("postgres://")
    assert PRODUCTION_REQUIRED <= settings_read_from_environment()


def test_web_and_workers_share_the_releases_volume_at_releases_root() -> None:
    for name in ("web", "worker"):
        root = SERVICES[name]["environment"]["RELEASES_ROOT"]
        assert f"releases:{root}" in SERVICES[name]["volumes"], name


def test_the_runbook_documents_exactly_the_settings_read_from_the_environment() -> None:
    assert set(runbook_table("Settings")) == settings_read_from_environment()


def test_the_runbook_names_only_management_commands_that_exist() -> None:
    shipped = {
        path.stem
        for path in ROOT.glob("*/management/commands/*.py")
        if not path.stem.startswith("_")
    }
    named = set(re.findall(r"manage\.py (\w+)", RUNBOOK))
    from_django_and_axes = {
        "migrate",
        "collectstatic",
        "check",
        "createsuperuser",
        "axes_reset_username",
    }
    assert named - from_django_and_axes <= shipped
    # Every operations command is in the runbook; demo_fill fills a demo database, not this one.
    assert shipped - {"demo_fill"} <= named


def test_the_image_is_python_3_11_slim_and_installs_the_project_with_gunicorn() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim$", dockerfile, flags=re.MULTILINE)
    assert re.search(r'^RUN pip install -e "\.\[deploy\]"', dockerfile, flags=re.MULTILINE)
    assert '"gunicorn' in PYPROJECT.read_text()  # the deploy extra brings it
    assert "manage.py collectstatic --noinput" in dockerfile


def test_the_runbook_opens_by_saying_the_docker_files_are_untried() -> None:
    opening = " ".join(RUNBOOK.split("\n## ", 1)[0].split())
    assert "Untried in Docker" in opening
    assert "Docker is not available" in opening


def server_options(words: list[str]) -> dict[str, str]:
    """gunicorn's `--name value` and `--name=value` options, each `${VAR:-default}` read as its
    default (what runs when the operator sets nothing)."""
    options: dict[str, str] = {}
    rest = iter(words[2:])
    for word in rest:
        name, equals, value = word.partition("=")
        if not equals:
            value = next(rest)
        options[name] = as_defaults(value)
    return options


def dockerfile_command() -> list[str]:
    line = re.search(r"^CMD (\[.*\])$", (ROOT / "Dockerfile").read_text(), flags=re.MULTILINE)
    assert line is not None
    words: list[str] = yaml.safe_load(line.group(1))
    return words


def test_the_web_server_runs_alike_in_the_procfile_compose_and_the_image() -> None:
    """Threaded workers (a slow download holds a thread, never the worker, and the worker
    timeout does not cut it off), the same counts and timeout everywhere, and more threads
    than downloads a process sends at once, so the pages always have some."""
    procfile_options = server_options(shlex.split(procfile()["web"]))
    compose_options = server_options(command_words(SERVICES["web"]))
    image_options = server_options(dockerfile_command())
    for options in (procfile_options, compose_options, image_options):
        for name in ("--bind", "--access-logfile"):
            options.pop(name)
    assert procfile_options == compose_options == image_options
    assert procfile_options["--worker-class"] == "gthread"
    assert int(procfile_options["--threads"]) > settings.DOWNLOADS_PER_PROCESS
    assert "--worker-class gthread --threads 8" in RUNBOOK
    assert f"--timeout {procfile_options['--timeout']}" in RUNBOOK
