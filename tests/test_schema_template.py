"""Every test database is the migrated one (tests/schema_template.py): the copies of the
template a kind's first process kept are as migrated as a database Django migrated itself."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from django.apps import apps as django_apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from agents.models import BenchmarkModel
from tests import schema_template


@pytest.mark.django_db
def test_the_test_database_has_every_migration_of_every_app_applied_and_its_seeded_rows() -> None:
    executor = MigrationExecutor(connection)
    assert executor.migration_plan(executor.loader.graph.leaf_nodes()) == []
    assert BenchmarkModel.objects.filter(kind=BenchmarkModel.Kind.LLM).count() >= 7
    # Stamped as if seeded by this run, not when (or on whatever clock) the template was built:
    # a change to the lineup now must move the pages' data watermark.
    assert not BenchmarkModel.objects.filter(updated_at__gt=timezone.now()).exists()


def test_the_template_is_keyed_by_every_installed_apps_migration_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    migrations = tmp_path / "migrations"
    migrations.mkdir()
    first = migrations / "0001_initial.py"
    first.write_text("operations = []\n")
    app: Any = SimpleNamespace(label="someapp", path=str(tmp_path))
    monkeypatch.setattr(django_apps, "get_app_configs", lambda: [app])

    digest = schema_template.schema_digest()
    assert schema_template.schema_digest() == digest

    first.write_text("operations = ['changed']\n")
    changed = schema_template.schema_digest()
    assert changed != digest

    (migrations / "0002_more.py").write_text("operations = []\n")
    assert schema_template.schema_digest() not in (digest, changed)
