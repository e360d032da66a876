"""The migrated test database, built once and copied: every shard of a pass starts from it.

Creating a test database runs all the migrations (three dozen of them, seeds included), about
five seconds of CPU a process, most of it Django rebuilding the models' state after each
operation. `make test` starts four test processes at once, so the first process of a database
kind migrates as usual and keeps what the migrations left as a template; the others, waiting
on a lock meanwhile, copy the template instead of migrating. What every test then finds is
the same database the migrations build: the copy is of that database, tables, rows (the
lineup, content types, groups) and all, the rows' automatic stamps set to the copy's moment as
migrating then would have. Only a database with every migration applied is kept.

The template is keyed by a digest of every installed app's migration files and Django's
version, so any change to a migration (or an upgrade bringing new ones) builds a new one:
- SQLite: a file under the pytest cache folder, read into the test's in-memory database
  with SQLite's backup API;
- PostgreSQL: a database `test_template_<digest>`, the source of `CREATE DATABASE …
  TEMPLATE`; templates of other digests are dropped when a new one is built.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import django
from django.apps import apps
from django.conf import settings
from django.core.management import call_command
from django.db import models
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

TEMPLATE_PREFIX = "test_template_"
# pg_advisory_lock key of the template's build (arbitrary, far from the product's own keys)
BUILD_LOCK_KEY = 0x7E57_0000_5C4E


def schema_digest() -> str:
    """A digest of what decides the migrated database: Django's version and the migration
    files of every installed app (the project's and its dependencies', such as the beat
    schedules' and the sign-in lockouts')."""
    digest = hashlib.sha256(django.get_version().encode())
    for app in sorted(apps.get_app_configs(), key=lambda app: app.label):
        for path in sorted(Path(app.path).glob("migrations/*.py")):
            digest.update(f"{app.label}/{path.name}".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def templates_install(connection: Any, cache_dir: Path, *, migrations: bool = True) -> None:
    """Make the connection's test database a copy of the template when there is one; the
    first to create one migrates as usual and keeps the result as the template. Without
    `migrations` (pytest-django's --no-migrations) nothing changes: such a database is built
    from the models, and is no template for a migrated one."""
    if not migrations:
        return
    creation = connection.creation
    creation.create_test_db = _templated(creation, cache_dir)


def _templated(creation: Any, cache_dir: Path) -> Callable[..., str]:
    original = creation.create_test_db
    connection = creation.connection
    digest = schema_digest()

    def create_test_db(
        verbosity: int = 1,
        autoclobber: bool = False,
        serialize: bool = True,
        keepdb: bool = False,
    ) -> str:
        build: _SqliteTemplate | _PostgresTemplate
        if keepdb:
            return str(original(verbosity, autoclobber, serialize, keepdb))
        if connection.vendor == "sqlite" and creation.is_in_memory_db(creation._get_test_db_name()):
            build = _SqliteTemplate(creation, cache_dir / f"schema-{digest}.sqlite3")
        elif connection.vendor == "postgresql":
            build = _PostgresTemplate(creation, TEMPLATE_PREFIX + digest)
        else:
            return str(original(verbosity, autoclobber, serialize, keepdb))
        with build.locked():
            if build.exists():
                name = build.copy(verbosity, autoclobber)
                _finish_without_migrating(creation, name, serialize)
                return name
            name = str(original(verbosity, autoclobber, serialize, keepdb))
            if _fully_migrated(connection):
                build.keep()
            return name

    return create_test_db


def _fully_migrated(connection: Any) -> bool:
    """Whether every migration of every app is applied: only such a database is kept."""
    executor = MigrationExecutor(connection)
    applied = executor.recorder.applied_migrations()
    return bool(applied) and not executor.migration_plan(executor.loader.graph.leaf_nodes())


def _finish_without_migrating(creation: Any, name: str, serialize: bool) -> None:
    """What `create_test_db` does after its migrations, for a database copied from them."""
    connection = creation.connection
    connection.close()
    settings.DATABASES[connection.alias]["NAME"] = name
    connection.settings_dict["NAME"] = name
    connection.ensure_connection()
    _stamped_now(connection)
    if serialize:
        connection._test_serialized_contents = creation.serialize_db_to_string()
    call_command("createcachetable", database=connection.alias)


def _stamped_now(connection: Any) -> None:
    """Stamp the `auto_now` and `auto_now_add` fields of the rows the migrations wrote (the
    lineup's, say) with the clock of now, as migrating now would have: the template was
    built at another moment (another run's, or a moved suite clock's), and what reads those
    stamps (the pages' data watermark) must see this run's."""
    now = timezone.now()
    today = timezone.localdate(now)
    for model in apps.get_models():
        meta = model._meta
        if not meta.managed or meta.proxy:
            continue
        stamps = {
            field.attname: now if isinstance(field, models.DateTimeField) else today
            for field in meta.concrete_fields
            if isinstance(field, models.DateField)
            and (getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False))
        }
        if stamps:
            model._base_manager.using(connection.alias).update(**stamps)


class _SqliteTemplate:
    def __init__(self, creation: Any, path: Path) -> None:
        self.creation = creation
        self.path = path

    @contextmanager
    def locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def exists(self) -> bool:
        return self.path.exists()

    def copy(self, verbosity: int, autoclobber: bool) -> str:
        connection = self.creation.connection
        name = str(self.creation._create_test_db(verbosity, autoclobber, False))
        connection.close()
        connection.settings_dict["NAME"] = name
        connection.ensure_connection()
        # Read-only: a template deleted meanwhile must fail here, not be made anew, empty.
        source = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        try:
            source.backup(connection.connection)
        finally:
            source.close()
        return name

    def keep(self) -> None:
        for stale in self.path.parent.glob("schema-*.sqlite3"):  # other digests': done with
            if stale != self.path:
                stale.unlink(missing_ok=True)
        partial = self.path.with_name(f"{self.path.name}.{os.getpid()}")
        target = sqlite3.connect(partial)
        try:
            self.creation.connection.ensure_connection()
            self.creation.connection.connection.backup(target)
        finally:
            target.close()
        os.replace(partial, self.path)


class _PostgresTemplate:
    def __init__(self, creation: Any, name: str) -> None:
        self.creation = creation
        self.name = name

    @contextmanager
    def locked(self) -> Iterator[None]:
        with self.creation._nodb_cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [BUILD_LOCK_KEY])
            try:
                yield
            finally:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [BUILD_LOCK_KEY])

    def exists(self) -> bool:
        with self.creation._nodb_cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [self.name])
            return cursor.fetchone() is not None

    def copy(self, verbosity: int, autoclobber: bool) -> str:
        test = self.creation.connection.settings_dict.setdefault("TEST", {})
        before = test.get("TEMPLATE")
        test["TEMPLATE"] = self.name
        try:
            return str(self.creation._create_test_db(verbosity, autoclobber, False))
        finally:
            test["TEMPLATE"] = before

    def keep(self) -> None:
        connection = self.creation.connection
        source = connection.settings_dict["NAME"]
        connection.close()  # a template is copied only while nobody is connected to it
        quote = connection.ops.quote_name
        with self.creation._nodb_cursor() as cursor:
            cursor.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE %s AND datname <> %s",
                [TEMPLATE_PREFIX + "%", self.name],
            )
            for (stale,) in cursor.fetchall():
                cursor.execute(f"DROP DATABASE IF EXISTS {quote(stale)}")
            cursor.execute(f"CREATE DATABASE {quote(self.name)} TEMPLATE {quote(source)}")
            # Nobody connects to it (a session on it, a psql left open, would stop every copy).
            cursor.execute(f"ALTER DATABASE {quote(self.name)} WITH ALLOW_CONNECTIONS false")
        connection.ensure_connection()
