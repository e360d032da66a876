"""The bets export: one row per executed BUY with exactly the columns
`trade_id, model, cohort, decision_id, market_id, side, amount, implied_confidence,
stated_probability, market_price, live_price, status, brier`, so anyone can recompute the
leaderboard from it.

The fixture world: gpt-5.1 played two cohorts through OpenRouter (cohort A: a won bet, a lost
bet, a rejected order, a sell; cohort B: an open bet and a bet on a cancelled market) and a
third cohort answered by its offline stand-in (a won bet); claude-opus-4.5 played cohort A (a
lost bet on NO, an open bet); the market-following baseline played cohort A (a won bet).
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agents.models import BenchmarkModel
from agents.types import MarketView
from arena.api.exports import bets_filename, bets_stream
from arena.models import Agent, Cohort, Decision, Trade
from arena.selectors import standings
from arena.selectors.exports import BET_COLUMNS, BetRow, bet_rows
from arena.services.decisions.lifecycle import decision_execute
from arena.services.frozen import FrozenMarkets, side_price
from markets.models import Market
from scoring.aggregates import mean_brier
from tests.arena.factories import BetOrderFactory, CohortFactory, bet_decision

COLUMNS = [
    "trade_id", "model", "model_kind", "cohort", "decision_id", "market_id", "side",
    "first_outcome", "amount",
    "implied_confidence", "stated_probability", "market_price", "live_price", "status", "brier",
]  # fmt: skip

_markets = iter(range(10**6))


@dataclass(frozen=True)
class World:
    a: Cohort
    b: Cohort
    offline: Cohort
    executed_buys: list[Trade]


def market(*, won: bool | None = None, cancelled: bool = False) -> Market:
    """A binary market: resolved YES (`won`), NO (not `won`), cancelled, or open."""
    resolved = won is not None
    created: Market = Market.objects.create(
        polymarket_id=f"88{next(_markets)}",
        question="Will it happen?",
        outcomes=["Yes", "No"],
        outcome_prices=["0.5", "0.5"],
        closed=resolved or cancelled,
        resolution=(
            Market.Resolution.CANCELLED
            if cancelled
            else Market.Resolution.RESOLVED
            if resolved
            else Market.Resolution.OPEN
        ),
        winning_outcome=("Yes" if won else "No") if resolved else "",
    )
    return created


def decision_of(agent: Agent, responder: str = Decision.Responder.OPENROUTER) -> Decision:
    created: Decision = Decision.objects.create(
        agent=agent,
        cohort=agent.cohort,
        week_start=agent.cohort.week_start,
        status=Decision.Status.DONE,
        action=Decision.Action.BET,
        responder=responder,
    )
    return created


def trade(
    of: Decision,
    index: int,
    *,
    side: str = "YES",
    price: str = "0.4",
    confidence: float = 0.5,
    brier: float | None = None,
    won: bool | None = None,
    on: Market | None = None,
    kind: str = Trade.Kind.BUY,
    status: str = Trade.Status.EXECUTED,
    day: int = 0,
) -> Trade:
    executed = status == Trade.Status.EXECUTED
    created: Trade = Trade.objects.create(
        decision=of,
        agent=of.agent,
        order_index=index,
        kind=kind,
        status=status,
        reject_reason="" if executed else "bet under $50",
        market=(on or market()) if executed else None,
        side=side,
        price=Decimal(price) if executed else None,
        shares=Decimal("250") if executed else None,
        amount=Decimal("100.00") if executed else None,
        implied_confidence=confidence if executed else None,
        brier_score=brier,
        side_won=won,
        created_at=of.cohort.started_at + timedelta(days=day, minutes=5 + index),
    )
    return created


def model(internal_id: str) -> BenchmarkModel:
    found: BenchmarkModel = BenchmarkModel.objects.get(internal_id=internal_id)
    return found


def agent_of(of: BenchmarkModel, cohort: Cohort) -> Agent:
    created: Agent = Agent.objects.create(cohort=cohort, model=of, cash=Decimal("10000"))
    return created


@pytest.fixture
def world(db: None) -> World:
    a, b, c = CohortFactory.create_batch(3)
    gpt, claude = model("gpt-5.1"), model("claude-opus-4.5")
    buys = []

    first = decision_of(agent_of(gpt, a))
    buys.append(trade(first, 0, confidence=0.7, brier=0.09, won=True, on=market(won=True)))
    buys.append(trade(first, 1, confidence=0.7, brier=0.49, won=False, on=market(won=False)))
    trade(first, 2, status=Trade.Status.REJECTED)
    trade(first, 3, kind=Trade.Kind.SELL, day=1)

    second = decision_of(agent_of(gpt, b))
    buys.append(trade(second, 0, day=2))  # open
    buys.append(trade(second, 1, on=market(cancelled=True), day=3))

    offline = decision_of(agent_of(gpt, c), responder=Decision.Responder.OFFLINE)
    buys.append(trade(offline, 0, confidence=0.9, brier=0.01, won=True, on=market(won=True)))

    theirs = decision_of(agent_of(claude, a))
    no_loses = market(won=True)
    buys.append(trade(theirs, 0, side="NO", price="0.6", confidence=0.8, brier=0.64, won=False,
                      on=no_loses))  # fmt: skip
    buys.append(trade(theirs, 1, day=4))

    follower = decision_of(agent_of(model("baseline-market"), a), Decision.Responder.BASELINE)
    buys.append(trade(follower, 0, confidence=0.2, brier=0.04, won=True, on=market(won=True)))
    return World(a, b, c, buys)


def csv_rows(rows: list[BetRow]) -> list[dict[str, str]]:
    body = "".join(bets_stream(rows, "csv"))
    reader = csv.reader(io.StringIO(body))
    header = next(reader)
    assert header == COLUMNS
    return [dict(zip(header, line, strict=True)) for line in reader]


def export(**bounds: object) -> list[dict[str, str]]:
    return csv_rows(list(bet_rows(**bounds)))  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ the rows


def test_the_columns_are_exactly_these() -> None:
    assert list(BET_COLUMNS) == COLUMNS


def test_one_row_per_executed_buy_in_trade_order(world: World) -> None:
    rows = export()
    assert [int(r["trade_id"]) for r in rows] == sorted(t.pk for t in world.executed_buys)
    rejected_and_sells = Trade.objects.exclude(pk__in=[t.pk for t in world.executed_buys])
    assert rejected_and_sells.count() == 2  # the rejected order and the sell are left out


def test_each_row_names_the_stable_ids(world: World) -> None:
    by_id = {int(r["trade_id"]): r for r in export()}
    for buy in world.executed_buys:
        row = by_id[buy.pk]
        assert row["model"] == buy.agent.model.internal_id
        assert row["model_kind"] == buy.agent.model.kind
        assert row["cohort"] == str(buy.agent.cohort.number)
        assert row["decision_id"] == str(buy.decision_id)
        assert buy.market is not None
        assert row["market_id"] == buy.market.polymarket_id
        assert row["first_outcome"] == "Yes"  # every market here is Yes/No
        assert Decimal(row["amount"]) == buy.amount
        assert Decimal(row["market_price"]) == buy.price
        assert float(row["implied_confidence"]) == buy.implied_confidence


def test_status_is_open_won_lost_or_cancelled_and_brier_is_empty_until_scored(
    world: World,
) -> None:
    got = [(r["model"], r["side"], r["status"], r["brier"]) for r in export()]
    assert got == [
        ("gpt-5.1", "YES", "won", "0.09"),
        ("gpt-5.1", "YES", "lost", "0.49"),
        ("gpt-5.1", "YES", "open", ""),
        ("gpt-5.1", "YES", "cancelled", ""),
        ("gpt-5.1", "YES", "won", "0.01"),
        ("claude-opus-4.5", "NO", "lost", "0.64"),
        ("claude-opus-4.5", "YES", "open", ""),
        ("baseline-market", "YES", "won", "0.04"),
    ]


def test_market_price_is_the_frozen_side_correct_price_the_decision_saw(
    decision: Decision, frozen: FrozenMarkets, binary: MarketView, second_binary: MarketView
) -> None:
    """Real buys through the engine, on YES and on NO (1 − the stored YES price)."""
    orders = [
        BetOrderFactory.build(market_id=binary.market_id, side="YES", amount=Decimal("100")),
        BetOrderFactory.build(market_id=second_binary.market_id, side="NO", amount=Decimal("100")),
    ]
    decision_execute(decision=decision, parsed=bet_decision(*orders), frozen=frozen)
    rows = list(bet_rows(cohort=decision.cohort.number))
    assert [(r["market_id"], r["side"]) for r in rows] == [
        (binary.market_id, "YES"),
        (second_binary.market_id, "NO"),
    ]
    assert rows[0]["market_price"] == side_price(binary, "YES")
    assert rows[1]["market_price"] == side_price(second_binary, "NO")
    assert rows[1]["market_price"] == 1 - (second_binary.yes_price or 0)
    assert all(r["status"] == "open" and r["brier"] is None for r in rows)


# ------------------------------------------------------------------- recomputing the board


def pooled_from_file(rows: list[dict[str, str]]) -> dict[str, tuple[float | None, int, int]]:
    """Each model's (pooled Brier, resolved bets, wins), from the export's cells alone."""
    scores: dict[str, list[float]] = {}
    wins: dict[str, int] = {}
    for row in rows:
        scores.setdefault(row["model"], [])
        wins.setdefault(row["model"], 0)
        if row["brier"] != "":
            scores[row["model"]].append(float(row["brier"]))
            wins[row["model"]] += row["status"] == "won"
    return {m: (mean_brier(scores=s), len(s), wins[m]) for m, s in scores.items()}


def board(*, offline: bool) -> dict[str, tuple[float | None, int, int]]:
    llms, baselines = standings.leaderboard()
    return {
        r.model.internal_id: (r.brier, r.resolved_bets, r.wins)
        for r in llms + baselines
        if r.offline == offline and r.resolved_bets
    }


def assert_same_figures(
    got: dict[str, tuple[float | None, int, int]], want: dict[str, tuple[float | None, int, int]]
) -> None:
    assert set(got) == set(want)
    for model_id, figures in got.items():
        assert figures == pytest.approx(want[model_id]), model_id


def test_every_models_pooled_brier_recomputes_from_the_file(world: World) -> None:
    real = pooled_from_file(export(offline="exclude"))
    assert_same_figures(real, board(offline=False))
    assert real["gpt-5.1"] == pytest.approx((0.29, 2, 1))  # (0.09 + 0.49) / 2, across cohorts
    assert set(real) == {"gpt-5.1", "claude-opus-4.5", "baseline-market"}
    offline = pooled_from_file(export(offline="only"))
    assert_same_figures(offline, board(offline=True))
    assert offline["gpt-5.1"] == pytest.approx((0.01, 1, 1))


def test_the_offline_filter_splits_the_rows_and_include_is_the_default(world: World) -> None:
    every = export()
    assert every == export(offline="include")
    real, offline = export(offline="exclude"), export(offline="only")
    assert sorted(r["trade_id"] for r in real + offline) == sorted(r["trade_id"] for r in every)
    assert {r["cohort"] for r in offline} == {str(world.offline.number)}


# ------------------------------------------------------------------------------- bounds


def test_bounded_by_cohort(world: World) -> None:
    rows = export(cohort=world.b.number)
    assert [r["status"] for r in rows] == ["open", "cancelled"]
    assert export(cohort=999_999) == []


def test_bounded_by_the_day_the_bet_was_placed_both_ends_inclusive(world: World) -> None:
    start = world.a.week_start
    days = {(r["model"], r["cohort"]): r for r in export(since=start, until=start)}
    assert len(export(since=start, until=start)) == 4  # cohort A's buys of day 0
    assert ("claude-opus-4.5", str(world.a.number)) in days
    later = export(cohort=world.a.number, since=start + timedelta(days=4))
    assert [(r["model"], r["status"]) for r in later] == [("claude-opus-4.5", "open")]
    assert export(until=start - timedelta(days=1)) == []


def test_one_query_whatever_the_number_of_bets(world: World) -> None:
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            export(offline="exclude")
        return len(captured.captured_queries)

    before = queries()
    decision = decision_of(agent_of(model("grok-4"), world.b))
    for index in range(30):
        trade(decision, index)
    assert queries() == before == 1


# -------------------------------------------------------------------------------- formats


def test_json_lines_parse_line_by_line_to_the_same_rows(world: World) -> None:
    rows = list(bet_rows())
    lines = "".join(bets_stream(rows, "jsonl")).splitlines()
    parsed = [json.loads(line) for line in lines]
    assert len(parsed) == len(rows) == 8
    assert all(list(p) == COLUMNS for p in parsed)
    for got, row in zip(parsed, rows, strict=True):
        assert got["amount"] == str(row["amount"])  # money and prices as decimal strings
        assert got["market_price"] == str(row["market_price"])
        assert got["brier"] == row["brier"]  # null until scored
    as_cells = [
        {k: "" if v is None else str(v) for k, v in p.items()} for p in parsed
    ]  # the same cells as the CSV
    assert as_cells == csv_rows(rows)


def test_hostile_text_is_quoted_not_split() -> None:
    row: BetRow = {c: None for c in COLUMNS}
    row["side"] = 'Yes, "and"\nno'
    assert csv_rows([row])[0]["side"] == 'Yes, "and"\nno'


def test_the_filename_names_the_bounds() -> None:
    assert (
        bets_filename(cohort=None, since=None, until=None, offline="include", fmt="csv")
        == "bets-all.csv"
    )
    name = bets_filename(
        cohort=3, since=date(2026, 1, 4), until=date(2026, 2, 1), offline="exclude", fmt="jsonl"
    )
    assert name == "bets-cohort-3-from-2026-01-04-to-2026-02-01-offline-exclude.jsonl"


# ------------------------------------------------------------------------ over HTTP


def url_of(name: str) -> str:
    return reverse(f"api:{name}")


def test_the_csv_downloads_as_an_attachment_and_recomputes_the_board(
    world: World, client: Client
) -> None:
    response = client.get(url_of("bets_csv"), {"offline": "exclude"})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"] == 'attachment; filename="bets-all-offline-exclude.csv"'
    body = b"".join(response.streaming_content).decode()  # type: ignore[attr-defined]
    rows = list(csv.DictReader(io.StringIO(body)))
    assert_same_figures(pooled_from_file(rows), board(offline=False))


def test_the_jsonl_downloads_bounded_by_cohort(world: World, client: Client) -> None:
    response = client.get(url_of("bets_jsonl"), {"cohort": world.b.number})
    assert response.status_code == 200
    body = b"".join(response.streaming_content).decode()  # type: ignore[attr-defined]
    assert [json.loads(line)["status"] for line in body.splitlines()] == ["open", "cancelled"]


@pytest.mark.parametrize(
    "params",
    [
        {"cohort": "abc"},
        {"cohort": "-1"},
        {"cohort": "0"},
        {"cohort": str(10**30)},
        {"since": "2026-13-45"},
        {"until": "yesterday"},
        {"since": "2026-02-01", "until": "2026-01-01"},
        {"offline": "sometimes"},
        {"cohort": "1; DROP TABLE arena_trade"},
    ],
)
def test_hostile_parameters_get_a_4xx_with_a_json_body(
    db: None, client: Client, params: dict[str, str]
) -> None:
    for name in ("bets_csv", "bets_jsonl"):
        response = client.get(url_of(name), params)
        assert response.status_code in (400, 422), params
        assert response["Content-Type"].startswith("application/json")
        assert json.loads(response.content)


def test_noisy_scores_print_short_and_still_recompute_the_board(world: World) -> None:
    """A Brier computed in floats carries noise ((1 - 0.768)² is 0.05382399999999999); the
    file prints 15 significant digits, and the pooled mean read back is the board's to 1e-15."""
    first, second = world.executed_buys[:2]
    Trade.objects.filter(pk=first.pk).update(brier_score=(1 - 0.768) ** 2)
    Trade.objects.filter(pk=second.pk).update(brier_score=0.1 + 0.2)
    rows = {int(r["trade_id"]): r for r in export(offline="exclude")}
    assert rows[first.pk]["brier"] == "0.053824"
    assert rows[second.pk]["brier"] == "0.3"
    got, want = pooled_from_file(list(rows.values())), board(offline=False)
    assert set(got) == set(want)
    for model_id, (brier, resolved, wins) in got.items():
        assert (resolved, wins) == want[model_id][1:]
        assert brier == pytest.approx(want[model_id][0], rel=1e-15, abs=1e-15), model_id


@pytest.mark.parametrize(
    ("outcomes", "first"),
    [
        (["Yes", "No"], "Yes"),
        (["Lakers", "Celtics"], "Lakers"),  # two named outcomes: the first is the frame
        (["Red", "Green", "Blue"], ""),  # more than two: each bet in its own outcome's frame
        ([], ""),
        ({"not": "a list"}, ""),  # a malformed record says nothing, and breaks nothing
        ("Yes, No", ""),  # nor does a scalar, whose length no database can ask
        (2, ""),
    ],
)
def test_first_outcome_is_the_frame_of_a_two_outcome_market_only(
    world: World, outcomes: Any, first: str
) -> None:
    buy = world.executed_buys[0]
    assert buy.market is not None
    Market.objects.filter(pk=buy.market.pk).update(outcomes=outcomes)
    (row,) = [r for r in export() if int(r["trade_id"]) == buy.pk]
    assert row["first_outcome"] == first
