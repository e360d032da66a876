"""Arena fixtures: a cohort started for a real Sunday and a decision run frozen from the
project's real Gamma recordings (RecordedSource: the embedded demo source, no network)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest
from django.test.utils import override_settings

from agents.types import MarketView
from arena.models import Agent, Cohort, Decision, DecisionRun, SnapshotMarket, SystemEvent
from arena.services import frozen as frozen_services
from arena.services.cohorts import cohort_start
from arena.services.decisions.lifecycle import decision_claim
from arena.services.frozen import FrozenMarkets, run_prepare
from markets.models import Market, MarketSyncRun
from markets.sources import RecordedSource
from tests.conftest import METHODOLOGY_V1

WEEK = date(2026, 3, 8)  # a Sunday
COHORT_AT = datetime(2026, 3, 8, 0, 0, tzinfo=UTC)
RUN_AT = datetime(2026, 3, 8, 0, 5, tzinfo=UTC)

Reprice = Callable[[str, Sequence[str | None]], FrozenMarkets]

# No API key (offline agents answer) and the embedded demo market source: what every arena
# test runs with unless it asks for a replay server, and what a module's world is built with.
OFFLINE = {"OPENROUTER_API_KEY": "", "MARKET_SOURCE": "demo"}


@pytest.fixture(autouse=True)
def _offline(settings: Any) -> None:
    for name, value in OFFLINE.items():
        setattr(settings, name, value)


def snapshot_cache_clear() -> None:
    """Forget the snapshots FrozenMarkets.load keeps per process (by run id). Tests roll runs
    back, and SQLite then hands the same id to the next run: a kept snapshot would be stale."""
    cache = getattr(frozen_services, "_FROZEN_CACHE", None)
    if cache is not None:
        cache.clear()


@pytest.fixture(autouse=True)
def _fresh_snapshots() -> Iterator[None]:
    snapshot_cache_clear()
    yield
    snapshot_cache_clear()


@dataclass(frozen=True)
class World:
    cohort_id: int
    run_id: int


@pytest.fixture(scope="module")
def shared_world(django_db_setup: None, django_db_blocker: Any) -> Iterator[World]:
    """The cohort of WEEK and one run frozen from the recordings, committed once for a whole
    module (freezing 500 markets costs about a second) and deleted after it. Each test still
    runs in its own transaction, so what a test writes on top of it is rolled back.

    A module opts in with `cohort, run = shared_week()`: its `cohort` and `run` are then these."""
    with django_db_blocker.unblock():
        markets_before = set(Market.objects.values_list("pk", flat=True))
        syncs_before = set(MarketSyncRun.objects.values_list("pk", flat=True))
        events_before = set(SystemEvent.objects.values_list("pk", flat=True))
        # Built before any test's settings apply: the suite's methodology is pinned here too.
        with override_settings(**METHODOLOGY_V1):
            cohort, created = cohort_start(week_start=WEEK, now=COHORT_AT)
        assert created, "another test left a cohort behind"
        run = run_prepare(now=RUN_AT, source=RecordedSource())
    yield World(cohort.pk, run.pk)
    with django_db_blocker.unblock():
        DecisionRun.objects.filter(pk=run.pk).delete()  # and its snapshot rows
        Agent.objects.filter(cohort_id=cohort.pk).delete()
        Cohort.objects.filter(pk=cohort.pk).delete()
        Market.objects.exclude(pk__in=markets_before).delete()
        MarketSyncRun.objects.exclude(pk__in=syncs_before).delete()
        SystemEvent.objects.exclude(pk__in=events_before).delete()  # "cohort started", …


@pytest.fixture
def shared_cohort(db: None, shared_world: World) -> Cohort:
    return Cohort.objects.get(pk=shared_world.cohort_id)


@pytest.fixture
def shared_run(db: None, shared_world: World) -> DecisionRun:
    return DecisionRun.objects.get(pk=shared_world.run_id)


def shared_week() -> tuple[Any, Any]:
    """The `cohort` and `run` fixtures of a module whose tests all share the module's week
    (`shared_world`) rather than start one each: `cohort, run = shared_week()` at the top."""

    @pytest.fixture(name="cohort")
    def shared_week_cohort(shared_cohort: Cohort) -> Cohort:
        return shared_cohort

    @pytest.fixture(name="run")
    def shared_week_run(shared_run: DecisionRun) -> DecisionRun:
        return shared_run

    return shared_week_cohort, shared_week_run


@pytest.fixture
def cohort(db: None) -> Cohort:
    cohort, created = cohort_start(week_start=WEEK, now=COHORT_AT)
    assert created
    return cohort


@pytest.fixture
def run(cohort: Cohort) -> DecisionRun:
    return run_prepare(now=RUN_AT, source=RecordedSource())


@pytest.fixture
def frozen(run: DecisionRun) -> FrozenMarkets:
    return FrozenMarkets.load(run)


@pytest.fixture
def agent(cohort: Cohort) -> Agent:
    return cohort.agents.select_related("model").get(model__internal_id="gpt-5.1")


@pytest.fixture
def other_agent(cohort: Cohort) -> Agent:
    return cohort.agents.select_related("model").get(model__internal_id="claude-opus-4.5")


@pytest.fixture
def decision(agent: Agent, run: DecisionRun) -> Decision:
    claimed = decision_claim(agent=agent, week_start=WEEK, now=RUN_AT)
    assert claimed is not None
    return claimed


@pytest.fixture
def other_decision(other_agent: Agent, run: DecisionRun) -> Decision:
    claimed = decision_claim(agent=other_agent, week_start=WEEK, now=RUN_AT)
    assert claimed is not None
    return claimed


@pytest.fixture
def binary(frozen: FrozenMarkets) -> MarketView:
    """A real binary market of the snapshot whose YES price is well inside (0, 1)."""
    return next(
        view
        for view in frozen.universe
        if view.is_binary
        and view.yes_price is not None
        and Decimal("0.2") < view.yes_price < Decimal("0.8")
        and view.yes_price != view.yes_price.quantize(Decimal("0.01"))  # 3+ digits: rounding shows
    )


@pytest.fixture
def second_binary(frozen: FrozenMarkets, binary: MarketView) -> MarketView:
    return next(
        view
        for view in frozen.universe
        if view.is_binary
        and view.market_id != binary.market_id
        and view.yes_price is not None
        and Decimal("0.2") < view.yes_price < Decimal("0.8")
    )


@pytest.fixture
def multi(frozen: FrozenMarkets) -> MarketView:
    """A real multi-outcome market (named outcomes, not Yes/No) of the snapshot."""
    return next(view for view in frozen.universe if not view.is_binary)


@pytest.fixture
def reprice(run: DecisionRun) -> Reprice:
    """Set a snapshot market's stored outcome prices and return the snapshot reloaded."""

    def set_prices(market_id: str, prices: Sequence[str | None]) -> FrozenMarkets:
        updated = SnapshotMarket.objects.filter(run=run, polymarket_id=market_id).update(
            outcome_prices=list(prices)
        )
        assert updated == 1
        snapshot_cache_clear()  # the test rewrote a snapshot that never changes in production
        return FrozenMarkets.load(run)

    return set_prices
