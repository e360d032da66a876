"""What every benchmark script shares: run itself once per database in a child process, and
create or drop its own PostgreSQL database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def run_child(script: str, database_url: str, *args: str) -> dict[str, Any]:
    """Run `script` with `args` under DATABASE_URL=`database_url` (settings are read at
    django.setup(), so each database needs its own process); return the JSON figures it
    prints on its last line."""
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "DJANGO_SETTINGS_MODULE": "forecaster.settings",
        "LOG_LEVEL": "ERROR",  # the sync logs one warning per refused record
    }
    done = subprocess.run(
        [sys.executable, str(Path(script).resolve()), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        raise SystemExit(f"benchmark on {database_url} failed (exit {done.returncode})")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def postgres_database(url: str, action: str) -> None:
    """Create (after dropping) or drop the benchmark's own PostgreSQL database at `url`."""
    import psycopg
    from psycopg import sql

    base, _, name = url.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        if action == "create":
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
