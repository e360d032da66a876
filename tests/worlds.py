"""Worlds built once a module: Django's `TestCase.setUpTestData`, for pytest.

Many tests of a module read the same expensive state (a cohort started and its weekly run
done) and write a little on top of it. `module_world` builds that state once for the module:

    @module_world(settings=OFFLINE)
    def week_world() -> WeekIds:
        cohort, _ = cohort_start(week_start=WEEK, now=COHORT_AT)
        decisions_run_all(now=RUN_AT, source=RecordedSource())
        return WeekIds(cohort_id=cohort.pk)

    @pytest.fixture
    def week(db: None, week_world: ModuleWorld[WeekIds]) -> Cohort:
        return Cohort.objects.get(pk=week_world.value.cohort_id)

How it works: the module-scoped fixture opens an outer `transaction.atomic()` on every
database, runs the build in it and keeps it open; at the module's end it rolls it back, so
nothing is ever committed. Each test keeps the ordinary (non-transactional) `django_db`:
pytest-django wraps it in Django's TestCase atomics, which inside the outer one are
savepoints, rolled back after the test. So every test starts from the same world whatever
the tests before it wrote. Tests re-fetch what they use from the ids the build returned
(`ModuleWorld.value`): a Python object kept from the build would not see a test's writes, nor
forget them after the test's rollback.

A world is there only for the tests that ask for it (its fixture is in their closure):
before any other test of the module that uses the database it is rolled back, and it is built
again before the next test that asks. A transactional test (`transaction=True`,
`transactional_db`, `live_server`) could not run inside an outer transaction at all, and a
test that did not ask must see the database it always saw. pytest-django runs transactional
tests after all others, and `WorldsPlugin` runs the tests of a module that ask for no world
first, then those of each world together, so a world is normally built once (a run that
reorders them, `--ff`, may build it again: it is still right). One world is open at a time.

The build sees the settings every test gets (`WorldsPlugin`'s, from tests/conftest.py) and
those given to `module_world`; a build that needs the clock somewhere sets it itself
(`time_machine.travel`). What outlives a rollback is emptied when a world is rolled back:
Django's cache and the decision runs' frozen snapshots kept by id (SQLite hands a rolled-back
id out again). Tests clear them before and after each test as well (the autouse fixtures).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
from typing import Any, Generic, TypeVar

import pytest

T = TypeVar("T")

WORLD_MARK = "builds_a_module_world"  # set on a world fixture's function, read at collection

TRANSACTIONAL_FIXTURES = frozenset({"transactional_db", "live_server", "django_db_reset_sequences"})


def transactional(item: pytest.Item) -> bool:
    """Whether pytest-django runs the test as a TransactionTestCase (commits for real)."""
    marker = item.get_closest_marker("django_db")
    if marker is not None and (
        marker.kwargs.get("transaction") or marker.kwargs.get("reset_sequences")
    ):
        return True
    return bool(set(getattr(item, "fixturenames", ())) & TRANSACTIONAL_FIXTURES)


def forget_caches() -> None:
    """Empty what outlives a rollback: Django's caches and the frozen snapshots by run id."""
    from django.core.cache import cache

    from arena.services import frozen

    cache.clear()
    frozen._FROZEN_CACHE.clear()


class ModuleWorld(Generic[T]):
    """One module's world: built in an outer transaction, rolled back when done."""

    _open: ModuleWorld[Any] | None = None  # at most one world is open at a time, in any module

    def __init__(
        self, *, name: str, build: Callable[[], T], settings: Mapping[str, Any], blocker: Any
    ) -> None:
        self.name = name
        self.build = build
        self.settings = dict(settings)
        self.blocker = blocker
        self._built: tuple[T] | None = None  # what `build` returned, while the world is open
        self._failure: BaseException | None = None
        self._atomics: ExitStack | None = None

    @property
    def is_open(self) -> bool:
        return ModuleWorld._open is self

    @property
    def value(self) -> T:
        """What the build returned, for the test being run."""
        if self._failure is not None:
            raise RuntimeError(f"the world {self.name} could not be built") from self._failure
        if not self.is_open or self._built is None:
            raise RuntimeError(f"the world {self.name} is not open for this test")
        return self._built[0]

    def open(self) -> None:
        """Build the world in a new outer transaction (rolling back any other world first).
        A failed build is rolled back and raised, and raised again by `value`."""
        if self.is_open:
            return
        if ModuleWorld._open is not None:
            ModuleWorld._open.close()
        from django.db import connections, transaction
        from django.test.utils import override_settings

        self._failure = None
        with self.blocker.unblock():
            atomics = ExitStack()
            for alias in connections:
                atomics.enter_context(transaction.atomic(using=alias))
            self._atomics, ModuleWorld._open = atomics, self
            try:
                with override_settings(**self.settings):
                    self._built = (self.build(),)
            except BaseException as failure:
                self._failure = failure
                self.close()
                raise

    def close(self) -> None:
        """Roll the world back: nothing it built or a test wrote on it is left."""
        if not self.is_open or self._atomics is None:
            return
        from django.db import connections, transaction

        with self.blocker.unblock():
            for alias in connections:
                transaction.set_rollback(True, using=alias)
            self._atomics.close()
        self._atomics, self._built, ModuleWorld._open = None, None, None
        forget_caches()


class WorldsPlugin:
    """Runs a module's tests that do not ask for its world before those that do, and puts the
    world in the state each test asks for. Registered by tests/conftest.py with the settings
    every test runs with and its test of whether a test uses the database."""

    def __init__(
        self, *, settings: Mapping[str, Any], uses_database: Callable[[pytest.Item], bool]
    ) -> None:
        self.settings = dict(settings)
        self.uses_database = uses_database
        self.worlds: dict[str, dict[str, ModuleWorld[Any]]] = {}  # module node id → name → world

    @staticmethod
    def worlds_asked(item: pytest.Item) -> tuple[str, ...]:
        """The names of the module worlds in the test's fixture closure."""
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            return ()
        return tuple(
            sorted(
                name
                for name, definitions in info.name2fixturedefs.items()
                if definitions and getattr(definitions[-1].func, WORLD_MARK, False)
            )
        )

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Within each run of one module's tests (pytest-django has sorted them: those
        sharing the database's transaction, then the transactional, then those using none),
        the tests that ask for no world first, then those of each world together."""
        for item in items:
            if transactional(item) and self.worlds_asked(item):
                raise pytest.UsageError(
                    f"{item.nodeid}: a transactional test commits, so it cannot run in a "
                    "module's world (an outer transaction): it builds its own"
                )

        def run_of(item: pytest.Item) -> tuple[Any, bool, bool]:
            return item.parent, transactional(item), self.uses_database(item)

        start = 0
        while start < len(items):
            end = start + 1
            while end < len(items) and run_of(items[end]) == run_of(items[start]):
                end += 1
            items[start:end] = sorted(items[start:end], key=self.worlds_asked)
            start = end

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        """Before the test's setup (whose time is the test's own): its module's world open
        if the test asks for it, rolled back if the test uses the database without asking."""
        module = item.getparent(pytest.Module)
        worlds = self.worlds.get(module.nodeid, {}) if module is not None else {}
        for name, world in worlds.items():
            if name in getattr(item, "fixturenames", ()):
                with contextlib.suppress(Exception):  # ModuleWorld.value raises it in the test
                    world.open()
            elif self.uses_database(item):
                world.close()

    def world_fixture(
        self,
        request: pytest.FixtureRequest,
        build: Callable[[], T],
        settings: Mapping[str, Any],
        blocker: Any,
    ) -> Iterator[ModuleWorld[T]]:
        module, name = request.node.nodeid, build.__name__
        world = ModuleWorld(
            name=name, build=build, settings={**self.settings, **settings}, blocker=blocker
        )
        self.worlds.setdefault(module, {})[name] = world
        try:
            world.open()
            yield world
        finally:
            world.close()
            self.worlds[module].pop(name, None)


def module_world(*, settings: Mapping[str, Any] | None = None) -> Callable[[Callable[[], T]], Any]:
    """Make `build` a module-scoped fixture of its name yielding its `ModuleWorld`: built once, in
    an outer transaction rolled back at the module's end (the module docstring says how)."""

    def decorate(build: Callable[[], T]) -> Any:
        def world(
            request: pytest.FixtureRequest, django_db_setup: None, django_db_blocker: Any
        ) -> Iterator[ModuleWorld[T]]:
            plugin = request.config.pluginmanager.get_plugin("worlds")
            assert isinstance(plugin, WorldsPlugin), "tests/conftest.py registers it"
            yield from plugin.world_fixture(request, build, settings or {}, django_db_blocker)

        setattr(world, WORLD_MARK, True)
        world.__doc__ = build.__doc__
        return pytest.fixture(scope="module", name=build.__name__)(world)

    return decorate
