"""Start-up under another environment, in this process: what a fresh `manage.py` would do,
without the seconds each fresh process spends importing Django and every app.

`settings_from(environ)` executes forecaster/settings.py again with `environ` as the whole
environment and returns the settings it makes; `manage_in_process(name, *args, environ=...)`
runs a management command with those settings in place, system checks first, as `manage.py`
does. A few tests still start real processes, so the wiring to the process's environment stays
tested (tests/test_settings.py, tests/test_production.py).
"""

from __future__ import annotations

import io
import os
import runpy
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from django.conf import settings
from django.core.management import get_commands, load_command_class
from django.test.utils import override_settings

import forecaster.settings
from forecaster import environment

SETTINGS_FILE = Path(forecaster.settings.__file__)
# Settings this process acted on when it started, which a command cannot be given afresh: its
# database connections, and the Celery app's configuration (read once, when first used).
STARTED_WITH = ("DATABASES", "CELERY_")


def settings_from(environ: Mapping[str, str]) -> dict[str, Any]:
    """Return every setting forecaster/settings.py makes when `environ` holds all the variables
    it reads. Raises what start-up would stop with (ImproperlyConfigured)."""
    read = {"DJANGO_SETTINGS_MODULE", *environment.variable_names()}
    rest = {name: value for name, value in os.environ.items() if name not in read}
    with mock.patch.dict(os.environ, {**rest, **environ}, clear=True):
        module = runpy.run_path(str(SETTINGS_FILE))
    return {name: value for name, value in module.items() if name.isupper()}


def manage_in_process(name: str, *args: str, environ: Mapping[str, str]) -> str:
    """Run `manage.py name *args` with the settings `environ` makes; return its standard output.

    As `manage.py` does, the command parses `args` and runs its system checks before its work.
    What would stop the process is raised instead: ImproperlyConfigured from the settings,
    SystemCheckError (a CommandError) from the checks.
    """
    made = settings_from(environ)
    changed = {
        setting: value
        for setting, value in made.items()
        if not setting.startswith(STARTED_WITH)
        and (not hasattr(settings, setting) or getattr(settings, setting) != value)
    }
    command = load_command_class(get_commands()[name], name)
    options = vars(command.create_parser("manage.py", name).parse_args(list(args)))
    positional = options.pop("args", ())
    stdout = io.StringIO()
    with override_settings(**changed):
        command.execute(*positional, **options, stdout=stdout, stderr=io.StringIO())
    return stdout.getvalue()


def collected_static_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Return a STATIC_ROOT that `collectstatic --noinput` filled with DEBUG=0.

    Collecting compresses every file (seconds of work), so a test run collects once: the first
    module that asks collects into the run's temporary folder, the next finds the manifest
    (written last) there. DEBUG=0 makes the storage whitenoise's manifest storage; the key only
    lets start-up go on, and nothing else in the environment changes what is collected.
    """
    static_root = tmp_path_factory.getbasetemp() / "collected-static"
    if not (static_root / "staticfiles.json").exists():
        production = {"DEBUG": "0", "OPENROUTER_API_KEY": "x", "STATIC_ROOT": str(static_root)}
        manage_in_process("collectstatic", "--noinput", "-v0", environ=production)
    return static_root
