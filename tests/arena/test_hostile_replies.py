"""The hostile catalogue: whatever a model or OpenRouter sends back,
the weekly decision (002 "Decision run", "Retryable failures") ends in a recorded state and the
books balance.

Every example goes the real way: the OpenRouter client → the parser → the engine
(`decision_run`), against a 127.0.0.1 ReplayServer standing in for OpenRouter. The replies
come from the hypothesis strategies of tests/hostile.py, derandomized so a run is
reproducible. For every example:

- no exception escapes `decision_run`;
- the decision is DONE, or RETRYABLE with its error recorded, never RUNNING or PENDING; every
  attempt that was not valid says why; nothing reached the engine's safety net (no traceback);
- money reconciles to the cent for every agent of the cohort: cash + Σ cost basis of its open
  positions − Σ realized P/L of all its positions = the $10,000 starting balance, cash ≥ 0.

Each example runs in a savepoint rolled back at its end, so each finds the decision claimable.
One agent starts with $10,000 and nothing held; another holds three positions (so SELL replies
execute, duplicate and fail), and a third agent's position is there to be named by mistake.
HTTP_MAX_RETRIES is 0 (the client's own retries are tested in tests/agents) and
DECISION_PARSE_RETRIES keeps its default, so an invalid answer is asked again once.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import transaction
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from agents.types import MarketView
from arena import clock, money
from arena.models import (
    Agent,
    Cohort,
    Decision,
    DecisionAttempt,
    DecisionRun,
    PanelForecast,
    Position,
)
from arena.services.cohorts import cohort_start
from arena.services.decisions.lifecycle import CLAIM_TTL, decision_claim
from arena.services.decisions.run import decision_retry, decision_run
from arena.services.frozen import FrozenMarkets, outcome_index, run_prepare, side_price
from markets.models import Market
from markets.services import markets_refresh, markets_sync_top
from markets.sources import RecordedSource
from tests import hostile
from tests.arena.books import assert_books_balance
from tests.arena.conftest import COHORT_AT, RUN_AT, WEEK, snapshot_cache_clear
from tests.profiles import example_count
from tests.replay import OPENROUTER_RECORDINGS, ReplayServer, Reply

pytestmark = pytest.mark.django_db
# Each family of the catalogue is hundreds of examples, each a whole decision through the real
# client, parser and engine: seconds a family, over the suite's budget by design.
CATALOGUE_FAMILY = pytest.mark.slow(reason="a family of the hostile catalogue: whole decisions")

COMPLETIONS = "/chat/completions"
STARTING_BALANCE = Decimal("10000.00")
UNIVERSE = 25  # markets in the prompt: small prompts keep a thousand examples fast

FAMILIES = {
    "contents": 360,
    "sells": 120,
    "shapes": 180,
    "responses": 200,
    "pairs": 80,
    "usage": 60,
    "megabyte": 10,
    "paths": 90,
    "v2": 120,
}
"""Examples per family of the catalogue: at least 1,000 in all."""

EXECUTED: Counter[str] = Counter()
"""Examples run to their end, per family."""

FORECASTS: Counter[str] = Counter()
"""Panel forecast rows the v2 family's examples kept, stated or missing."""


MULTI_IDS = ("1340471", "1343791")
"""Recorded multi-outcome markets (Up/Down, a Dota match); ranked past the small universe,
they are frozen into the run because the agents hold them."""


@dataclass(frozen=True)
class World:
    server: ReplayServer
    cohort_id: int
    run_id: int
    fresh_agent_id: int  # $10,000 cash, nothing held
    holder_agent_id: int  # three open positions
    targets: hostile.Targets
    panel: tuple[str, ...] = ()  # the week's forecast panel (methodology v2)


def _hold(agent: Agent, market: Market, side: str, cost: Decimal) -> Position:
    """Give `agent` an open position bought at the market's price, paid from its cash."""
    view = MarketView(
        market_id=market.polymarket_id,
        question=market.question,
        category=market.category,
        outcomes=tuple(str(o) for o in market.outcomes),
        prices=tuple(Decimal(p) for p in market.outcome_prices),
        volume=market.volume,
        close_date=market.close_date,
    )
    price = side_price(view, side)
    assert price is not None
    assert 0 < price < 1
    position = Position.objects.create(
        agent=agent,
        market=market,
        side=side,
        outcome_index=outcome_index(view, side),
        shares=money.shares_down(cost / price),
        cost_basis=cost,
        last_price=price,
        opened_at=RUN_AT - timedelta(days=7),
    )
    Agent.objects.filter(pk=agent.pk).update(cash=agent.cash - cost)
    agent.refresh_from_db()
    return position


@pytest.fixture
def world(cohort: Cohort, openrouter_server: ReplayServer, settings: Any) -> World:
    """The cohort, its agents' positions, and a run frozen over a small universe."""
    return _world(cohort, openrouter_server, settings)


@pytest.fixture
def world_v2(openrouter_server: ReplayServer, settings: Any) -> World:
    """The same world, its cohort running methodology v2 (a panel to forecast)."""
    settings.METHODOLOGY_VERSION = "v2"
    cohort, _ = cohort_start(week_start=WEEK, now=COHORT_AT)
    world = _world(cohort, openrouter_server, settings)
    # The small universe holds no question the panel's rule admits (it picks from the top
    # 500): the run asks its binary markets instead. The rule has tests of its own.
    panel = list(world.targets.binary_ids[:6])
    DecisionRun.objects.filter(pk=world.run_id).update(panel=panel, panel_seed="hostile")
    snapshot_cache_clear()
    return dataclasses.replace(world, panel=tuple(panel))


def _world(cohort: Cohort, openrouter_server: ReplayServer, settings: Any) -> World:
    settings.MARKET_UNIVERSE_SIZE = UNIVERSE
    settings.HTTP_MAX_RETRIES = 0  # one HTTP request per call: the client's retries are tested
    source = RecordedSource()
    assert markets_sync_top(limit=UNIVERSE, source=source).ok
    assert markets_refresh(polymarket_ids=MULTI_IDS, source=source).ok
    binary = list(Market.objects.filter(closed=False).order_by("-volume")[:3])
    multi = list(Market.objects.filter(polymarket_id__in=MULTI_IDS).order_by("polymarket_id"))
    assert len(binary) == 3
    assert len(multi) == 2

    agents = cohort.agents.select_related("model")
    fresh, holder, other = (
        agents.get(model__internal_id=i) for i in ("gpt-5.1", "grok-4", "kimi-k2")
    )
    held = [
        _hold(holder, binary[0], "YES", Decimal("500.00")),
        _hold(holder, binary[1], "NO", Decimal("300.00")),
        _hold(holder, multi[0], str(multi[0].outcomes[0]), Decimal("200.00")),
    ]
    foreign = _hold(other, multi[1], str(multi[1].outcomes[1]), Decimal("400.00"))
    assert_books_balance(cohort_id=cohort.pk)

    run = run_prepare(now=RUN_AT, source=source)
    frozen = FrozenMarkets.load(run)
    assert len(frozen.universe) == UNIVERSE
    tradable = [
        view
        for view in frozen.views.values()
        if all(price is not None and 0 < price < 1 for price in view.prices)
    ]
    multi_views = [view for view in tradable if not view.is_binary]
    assert {view.market_id for view in multi_views} == set(MULTI_IDS)
    return World(
        server=openrouter_server,
        cohort_id=cohort.pk,
        run_id=run.pk,
        panel=tuple(run.panel),
        fresh_agent_id=fresh.pk,
        holder_agent_id=holder.pk,
        targets=hostile.Targets(
            binary_ids=tuple(view.market_id for view in tradable if view.is_binary),
            multi=tuple((view.market_id, view.outcomes) for view in multi_views),
            position_ids=tuple(str(p.pk) for p in held),
            foreign_position_ids=(str(foreign.pk),),
        ),
    )


# ------------------------------------------------------------------------------- checks


def _assert_recorded(agent_id: int) -> dict[str, Any]:
    """The decision ended DONE, or RETRYABLE with its error; each invalid attempt says why;
    nothing failed unexpectedly (a traceback means hostile input got past the typed paths —
    parse error, API error, rejected trade — into the engine's safety net).

    One query, of the fields checked only (prompts and raw responses are large)."""
    rows = list(
        DecisionAttempt.objects.filter(decision__agent_id=agent_id, decision__week_start=WEEK)
        .order_by("number")
        .values(
            "number",
            "valid",
            "api_error",
            "parse_error",
            "error",
            "decision_id",
            "decision__status",
            "decision__error",
            "decision__traceback",
        )
    )
    assert rows, "the decision exists and every call is recorded as an attempt"
    status, error = rows[0]["decision__status"], rows[0]["decision__error"]
    assert status in (Decision.Status.DONE, Decision.Status.RETRYABLE), status
    if status == Decision.Status.RETRYABLE:
        assert error.strip(), "a retryable decision says why"
    assert not rows[0]["decision__traceback"], f"{error}\n{rows[0]['decision__traceback']}"
    for row in rows:
        why = row["api_error"] or row["parse_error"] or row["error"]
        assert row["valid"] or why.strip(), f"attempt {row['number']} is invalid and silent"
    return {"pk": rows[0]["decision_id"], "status": status}


def _run_example(
    world: World, agent_id: int, replies: tuple[Reply, ...], panel: tuple[str, ...] = ()
) -> None:
    """Serve `replies` to the calls of one decision (in turn, the last repeating), run it and
    check what it left; roll everything back. With a `panel`, a decision that ended DONE
    keeps one forecast row per question, in the panel's order."""
    world.server.route("POST", COMPLETIONS, *replies)
    with transaction.atomic():
        decision_run(agent_id=agent_id, run_id=world.run_id, now=RUN_AT)
        recorded = _assert_recorded(agent_id)
        assert_books_balance(cohort_id=world.cohort_id)
        if panel and recorded["status"] == Decision.Status.DONE:
            kept = PanelForecast.objects.filter(decision_id=recorded["pk"]).order_by("position")
            assert list(kept.values_list("market__polymarket_id", flat=True)) == list(panel)
            for probability, problem in kept.values_list("probability", "problem"):
                assert (probability is None) == bool(problem), (probability, problem)
                assert probability is None or 0 < probability < 1
                FORECASTS["stated" if probability is not None else "missing"] += 1
        transaction.set_rollback(True)


def _catalogue(examples: int) -> Callable[[Any], Any]:
    return settings(
        max_examples=example_count(examples),
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: a failure is shown as drawn
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
        ],
    )


def _run_family(
    family: str,
    world: World,
    replies: st.SearchStrategy[tuple[Reply, ...]],
    panel: tuple[str, ...] = (),
) -> None:
    """Run the family's examples, each for the fresh agent or the one holding positions."""
    agents = st.sampled_from([world.fresh_agent_id, world.holder_agent_id])
    before = EXECUTED[family]

    @_catalogue(FAMILIES[family])
    @given(agent_id=agents, replies=replies)
    def examples(agent_id: int, replies: tuple[Reply, ...]) -> None:
        _run_example(world, agent_id, replies, panel)
        EXECUTED[family] += 1

    examples()
    assert EXECUTED[family] - before >= example_count(FAMILIES[family])


def _served(bodies: st.SearchStrategy[bytes]) -> st.SearchStrategy[tuple[Reply, ...]]:
    """The same 200 body for every call of the decision."""
    return bodies.map(lambda body: (Reply(body=body),))


# ----------------------------------------------------------------------------- catalogue


def test_the_catalogue_holds_at_least_a_thousand_hostile_replies() -> None:
    assert sum(FAMILIES.values()) >= 1000


@CATALOGUE_FAMILY
def test_hostile_contents_of_a_real_completion_end_recorded_with_balanced_books(
    world: World,
) -> None:
    _run_family("contents", world, _served(hostile.content_bodies(world.targets)))


@CATALOGUE_FAMILY
def test_hostile_sell_replies_of_an_agent_holding_positions_end_recorded_with_balanced_books(
    world: World,
) -> None:
    hostile_sells = st.fixed_dictionaries(
        {
            "action": st.just("SELL"),
            "sells": hostile.sell_lists(world.targets),
            "reasoning": st.just("Taking profit."),
        }
    )
    plausible = hostile.plausible_decisions(world.targets)
    contents = st.one_of(plausible, plausible, hostile_sells).map(hostile.render)
    bodies = contents.map(lambda text: hostile.encode(hostile.body_with_content(text)))
    _run_family("sells", world, _served(bodies))


@CATALOGUE_FAMILY
def test_bodies_of_the_wrong_shape_or_with_broken_bytes_end_recorded_with_balanced_books(
    world: World,
) -> None:
    bodies = st.one_of(
        hostile.broken_shapes().map(hostile.encode),
        hostile.mangled_bodies(world.targets),
        hostile.raw_bodies(),
    )
    _run_family("shapes", world, _served(bodies))


@CATALOGUE_FAMILY
def test_hostile_http_responses_end_recorded_with_balanced_books(world: World) -> None:
    responses = hostile.responses(world.targets)
    _run_family("responses", world, responses.map(lambda reply: (reply,)))


@CATALOGUE_FAMILY
def test_a_different_hostile_response_to_the_retry_ends_recorded_with_balanced_books(
    world: World,
) -> None:
    # The first answer and the one to the retry prompt differ: an invalid answer, then an
    # error status, a valid bet, a broken body...
    responses = hostile.responses(world.targets)
    _run_family("pairs", world, st.tuples(responses, responses))


@CATALOGUE_FAMILY
def test_hostile_usage_figures_next_to_a_valid_bet_end_recorded_with_balanced_books(
    world: World,
) -> None:
    def body(usage: Any, market_id: str) -> tuple[Reply, ...]:
        bet = {"market_id": market_id, "side": "YES", "amount": 100}
        recorded = hostile.body_with_content(
            hostile.render({"action": "BET", "bets": [bet], "reasoning": "Cheap."})
        )
        recorded["usage"] = usage
        return (Reply(body=hostile.encode(recorded)),)

    usages = hostile.usages()
    _run_family("usage", world, st.builds(body, usages, st.sampled_from(world.targets.binary_ids)))


@CATALOGUE_FAMILY
def test_hostile_v2_answers_end_recorded_with_balanced_books_and_every_question_kept(
    world_v2: World,
) -> None:
    # Methodology v2: probabilities of 0, 1, −0.1, 1.5, NaN, "70%" and null on bets and on
    # forecasts; forecasts of unknown and duplicated ids, more than K, none; a HOLD with
    # forecasts, a BET with none. Every answer ends recorded, and one that was kept keeps a
    # forecast row for each question of the panel, stated or missing.
    assert len(world_v2.panel) >= 3
    answers = hostile.v2_decisions(world_v2.targets, world_v2.panel)
    bodies = answers.map(lambda text: hostile.encode(hostile.body_with_content(text)))
    _run_family("v2", world_v2, _served(bodies), panel=world_v2.panel)
    assert FORECASTS["stated"], FORECASTS  # both kinds were kept
    assert FORECASTS["missing"], FORECASTS


@CATALOGUE_FAMILY
def test_megabyte_bodies_end_recorded_with_balanced_books(world: World) -> None:
    _run_family("megabyte", world, _served(hostile.megabyte_bodies(world.targets)))


# --------------------------------------------------- every way a decision is decided again
# The catalogue above answers a decision's first claim. A decision is also decided by a later
# run of its week (after a retryable failure), by staff's retry (`decision_retry`, on a fresh
# frozen snapshot) and by the run that reclaims it from a dead worker: each meets the same
# hostile replies, and each must end recorded with the books balanced.

OUT_OF_CREDITS = Reply(
    status=402, body=(OPENROUTER_RECORDINGS / "error_402_insufficient_credits.json").read_bytes()
)
PATHS = ("a later run", "staff retry", "reclaim")


def _decided_again(world: World, agent_id: int, path: str, replies: tuple[Reply, ...]) -> None:
    agent = Agent.objects.get(pk=agent_id)
    with transaction.atomic():
        if path == "reclaim":
            # A worker claimed the decision at 00:05 and died; the next run comes an hour on.
            assert decision_claim(agent=agent, week_start=WEEK, now=RUN_AT) is not None
            world.server.route("POST", COMPLETIONS, *replies)
            decision_run(agent_id=agent_id, run_id=world.run_id, now=RUN_AT + CLAIM_TTL * 2)
        else:
            world.server.route("POST", COMPLETIONS, OUT_OF_CREDITS)
            decision_run(agent_id=agent_id, run_id=world.run_id, now=RUN_AT)
            decision = Decision.objects.get(agent=agent, week_start=WEEK)
            assert decision.status == Decision.Status.RETRYABLE
            world.server.route("POST", COMPLETIONS, *replies)
            if path == "a later run":
                decision_run(
                    agent_id=agent_id, run_id=world.run_id, now=RUN_AT + timedelta(hours=1)
                )
            else:  # staff retry it within the week's retry deadline
                with clock.simulated(RUN_AT + timedelta(hours=1)):
                    decision_retry(decision_id=decision.pk, source=RecordedSource())
        recorded = _assert_recorded(agent_id)
        assert Decision.objects.get(pk=recorded["pk"]).tries >= 2
        assert_books_balance(cohort_id=world.cohort_id)
        transaction.set_rollback(True)


@CATALOGUE_FAMILY
def test_hostile_replies_on_every_path_of_deciding_again_end_recorded_with_balanced_books(
    world: World,
) -> None:
    agents = st.sampled_from([world.fresh_agent_id, world.holder_agent_id])
    replies = st.one_of(
        _served(hostile.content_bodies(world.targets)),
        hostile.responses(world.targets).map(lambda reply: (reply,)),
    )
    before = EXECUTED["paths"]

    @_catalogue(FAMILIES["paths"])
    @given(agent_id=agents, path=st.sampled_from(PATHS), replies=replies)
    def examples(agent_id: int, path: str, replies: tuple[Reply, ...]) -> None:
        _decided_again(world, agent_id, path, replies)
        EXECUTED["paths"] += 1

    examples()
    assert EXECUTED["paths"] - before >= example_count(FAMILIES["paths"])


# ------------------------------------------------------ the decision's totals of its attempts
# Each attempt's usage figures fit their columns; the decision's totals of two attempts at the
# columns' limits do not. The catalogue found it (PostgreSQL: "integer out of range", "numeric
# field overflow"; SQLite: a cost total no read could convert); such a total is unknown.


def _invalid_twice_with_usage(**usage: str) -> tuple[Reply, ...]:
    """An answer with no decision in it, reporting `usage` (JSON tokens), served to both calls."""
    body = hostile.body_with_content("I would rather not trade this week.")
    body["usage"] = {key: hostile.Raw(token) for key, token in usage.items()}
    return (Reply(body=hostile.encode(body)),)


@pytest.mark.parametrize("field", ["prompt_tokens", "completion_tokens"])
def test_two_attempts_reporting_the_most_tokens_a_column_holds_end_done_with_storable_totals(
    world: World, field: str
) -> None:
    replies = _invalid_twice_with_usage(**{field: "2147483647"})
    world.server.route("POST", COMPLETIONS, *replies)

    decision_run(agent_id=world.fresh_agent_id, run_id=world.run_id, now=RUN_AT)

    decision = _assert_recorded(world.fresh_agent_id)
    assert decision["status"] == Decision.Status.DONE  # two invalid answers: the HOLD default
    total = Decision.objects.values_list(field, flat=True).get(pk=decision["pk"])
    assert total is None or 0 <= total <= 2_147_483_647


def test_two_attempts_reporting_the_largest_storable_cost_end_done_with_a_storable_total(
    world: World,
) -> None:
    world.server.route("POST", COMPLETIONS, *_invalid_twice_with_usage(cost="999999.999999"))

    decision_run(agent_id=world.fresh_agent_id, run_id=world.run_id, now=RUN_AT)

    decision = _assert_recorded(world.fresh_agent_id)
    assert decision["status"] == Decision.Status.DONE
    total = Decision.objects.values_list("cost_usd", flat=True).get(pk=decision["pk"])
    assert total is None or 0 <= total < 1_000_000
