"""Production serves collected static files: with DEBUG=0 the storage is whitenoise's manifest
storage, so every page links hashed file names that `collectstatic` wrote to STATIC_ROOT.

`collectstatic` runs once, in this process with DEBUG=0 (tests/in_process.py). The deploy check
then runs in a fresh process with production variables, as start-up does; the checks that stop
start-up before `collectstatic` run in this process, with the settings those variables make.
The pages render in this process with DEBUG off and the manifest storage, over a small world
of rows.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.core.management.base import SystemCheckError
from django.test import Client
from django.test.utils import override_settings
from django.urls import NoReverseMatch, reverse

from forecaster import environment
from tests.in_process import collected_static_root, manage_in_process
from tests.page_world import World, build_world

# Rendering with DEBUG off and the start-up checks test the site's own files, not the
# database's behaviour: the first (SQLite) pass runs them, the second does not (tests/conftest.py).
pytestmark = pytest.mark.one_pass

ROOT = Path(__file__).resolve().parent.parent
PRODUCTION = {
    "DEBUG": "0",
    "SECRET_KEY": "production-like-key-for-the-test-" + "x7Q!p2#Lm9@zR4&k" * 3,
    "ALLOWED_HOSTS": "arena.example.org",
    "OPENROUTER_API_KEY": "x",
}
MANIFEST_STORAGE = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
# The stylesheet every page links, under its hashed name: site.<12 hex digits>.css.
HASHED_CSS = re.compile(r'href="(/static/css/site\.[0-9a-f]{12}\.css)"')


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str


def manage(*args: str, static_root: Path, database: Path) -> Run:
    """Run manage.py in a fresh process with production variables and this STATIC_ROOT."""
    base = {k: v for k, v in os.environ.items() if k not in set(environment.variable_names())}
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={
            **base,
            **PRODUCTION,
            "STATIC_ROOT": str(static_root),
            "DATABASE_URL": f"sqlite:///{database}",
        },
        capture_output=True,
        text=True,
        timeout=300,
    )
    return Run(done.returncode, done.stdout, done.stderr)


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Return a STATIC_ROOT that `collectstatic --noinput` filled with DEBUG=0."""
    static_root = collected_static_root(tmp_path_factory)
    assert (static_root / "staticfiles.json").exists()
    return static_root


@pytest.fixture
def production(collected: Path) -> Iterator[None]:
    """DEBUG off and the manifest storage over the collected files, as DEBUG=0 configures."""
    with override_settings(DEBUG=False, STATIC_ROOT=collected, STORAGES=MANIFEST_STORAGE):
        yield


@pytest.fixture
def world(db: None) -> World:
    return build_world(scale=1)


def page_urls(world: World) -> dict[str, str]:
    """Return every public page by name, with the world's ids where the page takes one."""
    return {
        "leaderboard": reverse("arena:leaderboard"),
        "models": reverse("arena:models"),
        "model": reverse("arena:model", args=[world.model.internal_id]),
        "cohorts": reverse("arena:cohorts"),
        "cohort": reverse("arena:cohort", args=[world.cohort.number]),
        "agent": reverse("arena:agent", args=[world.cohort.number, world.agent.pk]),
        "decision": reverse("arena:decision", args=[world.decision.pk]),
        "markets": reverse("markets:list"),
        "market": reverse("arena:market", args=[world.market.polymarket_id]),
        "admin login": reverse("admin:login"),
    }


PAGES = (
    "leaderboard",
    "models",
    "model",
    "cohorts",
    "cohort",
    "agent",
    "decision",
    "markets",
    "market",
    "admin login",
)
# The info pages, by URL name; each is tested where its URL name resolves.
INFO_PAGES = ("arena:methodology", "arena:status", "arena:about")


# ------------------------------------------------------------------------ start-up checks


@pytest.mark.drill
@pytest.mark.slow(
    reason="a fresh manage.py process, as start-up is: it imports Django and every app"
)
def test_collectstatic_then_the_deploy_check_passes(collected: Path, tmp_path: Path) -> None:
    run = manage(
        "check", "--deploy", "--fail-level", "WARNING",
        static_root=collected, database=tmp_path / "db.sqlite3",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "System check identified no issues" in run.stdout


def test_debug_off_without_collectstatic_stops_start_up_naming_collectstatic(
    tmp_path: Path,
) -> None:
    empty = tmp_path / "staticfiles"
    with pytest.raises(SystemCheckError) as stopped:
        manage_in_process("check", environ={**PRODUCTION, "STATIC_ROOT": str(empty)})
    assert "forecaster.E002" in str(stopped.value)
    assert "Static files are not collected" in str(stopped.value)
    assert "manage.py collectstatic --noinput" in str(stopped.value)


def test_migrate_also_refuses_to_run_before_collectstatic(db: None, tmp_path: Path) -> None:
    """Every command but collectstatic runs the check, so the README's order is the one.
    (migrate's checks also look at the database, so the test may reach it, as the command may.)"""
    environ = {**PRODUCTION, "STATIC_ROOT": str(tmp_path / "static")}
    with pytest.raises(SystemCheckError, match=r"forecaster\.E002"):
        manage_in_process("migrate", "--noinput", environ=environ)


# ----------------------------------------------------------------------------- the pages


@pytest.mark.parametrize("name", PAGES)
def test_page_renders_with_debug_off_and_links_hashed_static_files(
    production: None, world: World, client: Client, name: str
) -> None:
    response = client.get(page_urls(world)[name])
    assert response.status_code == 200
    html = response.content.decode()
    if name == "admin login":
        assert re.search(r'/static/admin/css/base\.[0-9a-f]{12}\.css"', html)
    else:
        assert HASHED_CSS.search(html)
        assert 'href="/static/css/site.css"' not in html


@pytest.mark.parametrize("url_name", INFO_PAGES)
def test_info_page_renders_with_debug_off_and_links_hashed_static_files(
    production: None, db: None, client: Client, url_name: str
) -> None:
    try:
        url = reverse(url_name)
    except NoReverseMatch:
        pytest.skip(f"{url_name} is not routed in this build")
    response = client.get(url)
    assert response.status_code == 200
    assert HASHED_CSS.search(response.content.decode())


def test_api_docs_render_with_debug_off(production: None, db: None, client: Client) -> None:
    response = client.get("/api/v1/docs")
    assert response.status_code == 200


def test_the_hashed_stylesheet_is_served_with_a_long_cache_life(
    production: None, world: World, client: Client
) -> None:
    match = HASHED_CSS.search(client.get(reverse("arena:leaderboard")).content.decode())
    assert match
    response = Client().get(match.group(1))  # a fresh client: whitenoise reads STATIC_ROOT now
    assert response.status_code == 200
    assert "immutable" in response.headers["Cache-Control"]
    # A static file no page may frame either: WhiteNoise answers before the site's views.
    assert response.headers["X-Frame-Options"] == "DENY"
