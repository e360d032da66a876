"""Audit the locked dependencies (requirements.lock) for known vulnerabilities with pip-audit.

Run by `make audit`, which `make test` calls. Three outcomes, each stated plainly:

- a dependency has a known vulnerability not justified in IGNORED below: exit 1, listing
  each with its id and the versions that fix it;
- every dependency was looked up: exit 0, "N audited, no known vulnerabilities";
- the vulnerability service could not be reached for some or all of them (pip-audit asks
  PyPI's JSON API, which machines without network answer with 404s or not at all): exit 0
  with a loud NOT AUDITED line naming how many went unchecked. An unreachable service says
  nothing about the code, so it must not fail CI; it must never read as a pass either.

pip-audit's own exit status cannot tell these apart (every skipped dependency still ends in
"No known vulnerabilities found"), so the JSON report is read here.
"""

from __future__ import annotations

import json

# Runs pip-audit from this venv with fixed arguments.
import subprocess  # nosec B404
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements.lock"

# Vulnerabilities judged not to affect the project: id -> why. Empty until one is.
IGNORED: dict[str, str] = {}


@dataclass
class Audit:
    audited: int = 0
    unchecked: list[str] = field(default_factory=list)
    vulnerable: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.vulnerable)

    def lines(self) -> list[str]:
        out = [f"VULNERABLE {line}" for line in self.vulnerable]
        out += [f"ignored (justified in .ci/audit.py) {line}" for line in self.ignored]
        total = self.audited + len(self.unchecked)
        if self.unchecked:
            out.append(
                f"NOT AUDITED: {len(self.unchecked)} of {total} locked dependencies could not be "
                "looked up (vulnerability service unreachable from this machine); "
                f"{self.audited} audited. Run `make audit` where PyPI is reachable."
            )
        if self.audited and not self.vulnerable:
            out.append(f"pip-audit: {self.audited} audited, no known vulnerabilities")
        return out


def audit_read(report: dict[str, Any], *, ignored: dict[str, str] | None = None) -> Audit:
    """Classify a pip-audit JSON report (`--format json`)."""
    ignored = IGNORED if ignored is None else ignored
    audit = Audit()
    for dependency in report.get("dependencies", []):
        name = f"{dependency.get('name')} {dependency.get('version', '')}".strip()
        if dependency.get("skip_reason"):
            audit.unchecked.append(f"{name}: {dependency['skip_reason']}")
            continue
        audit.audited += 1
        for vuln in dependency.get("vulns", []):
            ids = {vuln.get("id", "?"), *vuln.get("aliases", [])}
            fixes = ", ".join(vuln.get("fix_versions", [])) or "no fixed release"
            line = f"{name}: {vuln.get('id', '?')} (fixed in {fixes})"
            reason = next((ignored[i] for i in sorted(ids) if i in ignored), None)
            if reason:
                audit.ignored.append(f"{line}: {reason}")
            else:
                audit.vulnerable.append(line)
    return audit


# What requests and urllib3 say when no connection to the service can be made at all.
UNREACHABLE = (
    "ConnectionError",
    "ProxyError",
    "ConnectTimeout",
    "Max retries exceeded",
    "NameResolutionError",
    "Failed to resolve",
    "Temporary failure in name resolution",
)


def unreachable(stderr: str) -> bool:
    """Whether pip-audit stopped because it could not connect at all (no network)."""
    return any(sign in stderr for sign in UNREACHABLE)


def main() -> int:
    command = [
        sys.executable,
        "-m",
        "pip_audit",
        "--requirement",
        str(LOCK),
        "--no-deps",  # the lock pins every dependency, transitive ones included
        "--disable-pip",
        "--progress-spinner",
        "off",
        "--format",
        "json",
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)  # nosec B603
    except subprocess.TimeoutExpired:
        print("NOT AUDITED: pip-audit found no answer from the vulnerability service in 10 min")
        return 0
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        if unreachable(done.stderr):
            last = done.stderr.strip().splitlines()[-1][:300]
            print(f"NOT AUDITED: the vulnerability service could not be reached ({last})")
            return 0
        print(f"pip-audit gave no report (exit {done.returncode}):\n{done.stderr[-2000:]}")
        return 1
    audit = audit_read(report)
    print("\n".join(audit.lines()))
    return 1 if audit.failed else 0


if __name__ == "__main__":
    sys.exit(main())
