"""The dependency audit (.ci/audit.py, run by `make test`): a known vulnerability fails it, an
unreachable vulnerability service is reported as NOT AUDITED (never as a pass), and the lock
it audits pins every dependency the project declares."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def audit() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ci_audit", ROOT / ".ci" / "audit.py")
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    # Its dataclasses look their module up by name while the class is built.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# The shape of `pip-audit --format json` (pip-audit 2.10).
VULNERABLE = {
    "dependencies": [
        {"name": "django", "version": "5.2", "vulns": []},
        {
            "name": "requests",
            "version": "2.31.0",
            "vulns": [
                {
                    "id": "GHSA-9wx4-h78v-vm56",
                    "fix_versions": ["2.32.0"],
                    "aliases": ["CVE-2024-35195"],
                    "description": "Session verify=False persists",
                }
            ],
        },
    ],
    "fixes": [],
}
UNREACHABLE = {
    "dependencies": [
        {
            "name": "amqp",
            "skip_reason": "Dependency not found on PyPI and could not be audited: amqp (5.4.2)",
        },
        {
            "name": "celery",
            "skip_reason": "Dependency not found on PyPI and could not be audited: celery (5.5)",
        },
    ],
    "fixes": [],
}


def test_a_known_vulnerability_fails_the_audit_naming_its_id_and_fix(audit: ModuleType) -> None:
    result = audit.audit_read(VULNERABLE, ignored={})
    assert result.failed
    assert result.audited == 2
    assert result.lines() == ["VULNERABLE requests 2.31.0: GHSA-9wx4-h78v-vm56 (fixed in 2.32.0)"]


def test_a_vulnerability_justified_by_any_of_its_aliases_is_listed_not_failed(
    audit: ModuleType,
) -> None:
    result = audit.audit_read(VULNERABLE, ignored={"CVE-2024-35195": "we never set verify"})
    assert not result.failed
    assert any("we never set verify" in line for line in result.lines())


def test_an_unreachable_service_is_reported_as_not_audited_never_as_a_pass(
    audit: ModuleType,
) -> None:
    result = audit.audit_read(UNREACHABLE, ignored={})
    assert not result.failed
    assert result.audited == 0
    # One line, and it is not a pass: nothing was looked up.
    (line,) = result.lines()
    assert line.startswith("NOT AUDITED: 2 of 2 locked dependencies")


def test_the_lock_pins_every_declared_dependency_to_one_version() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        declared += extra
    names = {re.split(r"[\[<>=!~; ]", spec, maxsplit=1)[0].lower() for spec in declared}
    pinned: dict[str, str] = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        requirement = line.split("#", 1)[0].strip()
        if requirement:
            name, _, version = requirement.partition("==")
            assert version, f"not pinned to one version: {line}"
            pinned[name.lower().replace("_", "-")] = version
    normalised = {name.replace("_", "-") for name in names}
    assert normalised <= set(pinned), f"missing from the lock: {normalised - set(pinned)}"


@pytest.mark.drill  # the real pip-audit, in a process of its own
def test_no_connection_at_all_is_reported_as_not_audited_by_the_real_pip_audit() -> None:
    """With every connection refused (a proxy on a closed port), pip-audit raises instead of
    reporting; the audit says NOT AUDITED and does not fail `make test`."""
    environment = {
        **os.environ,
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "",
    }
    done = subprocess.run(
        [sys.executable, str(ROOT / ".ci" / "audit.py")],
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("NOT AUDITED: the vulnerability service could not be reached")


def test_an_error_that_is_not_a_lost_connection_still_fails(audit: ModuleType) -> None:
    assert audit.unreachable("requests.exceptions.ProxyError: Max retries exceeded with url")
    assert not audit.unreachable("pip_audit: error: invalid requirement 'django==='")
