"""The weekly forecast panel's rule (arena/panel.py, methodology v2): eligible markets only,
spread across price levels, soonest to end first, and the same panel from the same snapshot
whatever order its markets come in."""

from __future__ import annotations

import hashlib
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.panel import (
    MIN_LIQUIDITY,
    PANEL_SIZE,
    PRICE_BANDS,
    Candidate,
    panel_eligible,
    panel_pick,
    panel_seed,
    price_band,
)
from markets.parsing import parse_markets
from markets.sources import demo_records
from tests.profiles import example_count

WEEK = date(2026, 3, 8)
WINDOW_CLOSES = datetime(2026, 3, 8, 1, 0, tzinfo=UTC)
EARLIEST_END = WINDOW_CLOSES + timedelta(days=1)
SEED = panel_seed(week_start=WEEK, snapshot=[])


def market(
    market_id: str,
    yes: str | None = "0.5",
    *,
    days: float = 7,
    liquidity: str | None = "50000",
    outcomes: tuple[str, ...] = ("Yes", "No"),
) -> Candidate:
    prices: tuple[str | None, ...] = (yes, "0.5")
    if len(outcomes) != 2:
        prices = tuple("0.3" for _ in outcomes)
    return Candidate(
        market_id=market_id,
        outcomes=outcomes,
        prices=prices,
        liquidity=None if liquidity is None else Decimal(liquidity),
        close_date=WINDOW_CLOSES + timedelta(days=days),
    )


def pick(candidates: list[Candidate], size: int = PANEL_SIZE, seed: str = SEED) -> list[str]:
    return panel_pick(candidates, seed=seed, earliest_end=EARLIEST_END, size=size)


# ------------------------------------------------------------------------- eligibility


@pytest.mark.parametrize(
    ("candidate", "eligible"),
    [
        (market("fair"), True),
        (market("floor", "0.03"), True),
        (market("ceiling", "0.97"), True),
        (market("near-certain-no", "0.029"), False),
        (market("near-certain-yes", "0.971"), False),
        (market("no-price", None), False),
        (market("not-a-number", "abc"), False),
        (market("not-finite", "NaN"), False),
        (market("thin", liquidity=str(MIN_LIQUIDITY - 1)), False),
        (market("just-liquid", liquidity=str(MIN_LIQUIDITY)), True),
        (market("liquidity-unknown", liquidity=None), False),
        (market("three-outcomes", outcomes=("A", "B", "C")), False),
        (
            Candidate(
                "closed", ("Yes", "No"), ("0.5", "0.5"), Decimal("50000"), EARLIEST_END, True
            ),
            False,
        ),
        (market("ends-a-day-after-the-window", days=1), True),
        (market("ends-within-the-day", days=0.99), False),
    ],
    ids=lambda value: value.market_id if isinstance(value, Candidate) else None,
)
def test_a_question_is_binary_liquid_not_near_certain_and_ends_after_the_window_and_a_day(
    candidate: Candidate, eligible: bool
) -> None:
    assert panel_eligible(candidate, earliest_end=EARLIEST_END) is eligible


def test_a_market_without_an_end_date_is_not_a_question() -> None:
    undated = Candidate("undated", ("Yes", "No"), ("0.5", "0.5"), Decimal("50000"), None)
    assert not panel_eligible(undated, earliest_end=EARLIEST_END)
    assert pick([undated]) == []


# ------------------------------------------------------------------- spread and soonest


def test_each_price_band_gives_a_question_in_turn_soonest_first() -> None:
    prices = ["0.10", "0.30", "0.50", "0.70", "0.90"]
    markets = [
        market(f"b{band}-d{days}", prices[band], days=days)
        for band in range(5)
        for days in (30, 2, 9, 5)
    ]

    panel = pick(markets, size=10)

    assert panel == [
        "b0-d2", "b1-d2", "b2-d2", "b3-d2", "b4-d2",
        "b0-d5", "b1-d5", "b2-d5", "b3-d5", "b4-d5",
    ]  # fmt: skip


def test_a_band_with_nothing_left_is_skipped() -> None:
    markets = [market(f"low-{k}", "0.10", days=2 + k) for k in range(6)]
    markets.append(market("high", "0.90", days=40))

    assert pick(markets, size=4) == ["low-0", "high", "low-1", "low-2"]


def test_fewer_eligible_markets_than_the_panel_holds_are_all_taken() -> None:
    markets = [market("a", "0.5"), market("b", "0.99"), market("c", "0.25")]
    assert sorted(pick(markets)) == ["a", "c"]


def test_the_bands_cover_every_eligible_price_once() -> None:
    assert PRICE_BANDS[0][0] == Decimal("0.03")
    assert PRICE_BANDS[-1][1] == Decimal("0.97")
    for (_, high), (low, _) in zip(PRICE_BANDS, PRICE_BANDS[1:], strict=False):
        assert high == low
    assert price_band(Decimal("0.03")) == 0
    assert price_band(Decimal("0.20")) == 1
    assert price_band(Decimal("0.97")) == len(PRICE_BANDS) - 1


def test_markets_ending_together_are_ordered_by_the_seed() -> None:
    markets = [market(f"m{k}", "0.5", days=3) for k in range(12)]
    orders = {
        tuple(
            pick(
                markets, size=12, seed=panel_seed(week_start=WEEK + timedelta(weeks=w), snapshot=[])
            )
        )
        for w in range(4)
    }
    assert all(sorted(order) == sorted(m.market_id for m in markets) for order in orders)
    assert len(orders) > 1  # another seed, another order among equals


def test_a_negative_size_is_refused() -> None:
    with pytest.raises(ValueError, match="no fewer than 0"):
        pick([market("a")], size=-1)


# ------------------------------------------------------------------------------- seed


def test_the_seed_is_the_week_and_the_frozen_prices_in_id_order() -> None:
    snapshot: list[tuple[str, list[str | None]]] = [("2", ["0.4", "0.6"]), ("1", [None, "0.9"])]
    seed = panel_seed(week_start=WEEK, snapshot=snapshot)
    assert seed == panel_seed(week_start=WEEK, snapshot=list(reversed(snapshot)))
    assert seed == hashlib.sha256(b"2026-03-08\n1  0.9\n2 0.4 0.6").hexdigest()
    assert seed != panel_seed(
        week_start=WEEK, snapshot=[("2", ["0.41", "0.59"]), ("1", [None, "0.9"])]
    )
    assert seed != panel_seed(week_start=WEEK + timedelta(weeks=1), snapshot=snapshot)


# ------------------------------------------------------------------------- properties

PRICES = st.decimals(min_value="0.001", max_value="0.999", places=3).map(str)
CANDIDATES = st.lists(
    st.builds(
        market,
        st.text("abcdef0123456789", min_size=1, max_size=4),
        PRICES,
        days=st.floats(min_value=0, max_value=60),
        liquidity=st.sampled_from(["0", "9999", "10000", "250000"]),
    ),
    max_size=60,
)


@settings(max_examples=example_count(150), deadline=None)
@given(candidates=CANDIDATES, size=st.integers(min_value=0, max_value=25), data=st.data())
def test_the_panel_is_eligible_unique_order_free_and_soonest_within_each_band(
    candidates: list[Candidate], size: int, data: st.DataObject
) -> None:
    panel = pick(candidates, size=size)
    latest = {c.market_id: c for c in candidates}  # a repeated id: its last record counts
    eligible = [c for c in latest.values() if panel_eligible(c, earliest_end=EARLIEST_END)]

    assert len(panel) == len(set(panel)) == min(size, len(eligible))
    assert set(panel) <= {c.market_id for c in eligible}
    shuffled = data.draw(st.permutations(list(latest.values())))
    assert pick(shuffled, size=size) == panel
    # Within a band, no market left out ends sooner than one taken.
    for band in range(len(PRICE_BANDS)):
        in_band = [c for c in eligible if price_band(c.yes_price or Decimal(0)) == band]
        taken_ends = [c.close_date or EARLIEST_END for c in in_band if c.market_id in panel]
        left_ends = [c.close_date or EARLIEST_END for c in in_band if c.market_id not in panel]
        if taken_ends and left_ends:
            assert max(taken_ends) <= min(left_ends)
    # Spread: no band gives two more questions than another, unless that one has run out.
    taken = Counter(price_band(latest[i].yes_price or Decimal(0)) for i in panel)
    available = Counter(price_band(c.yes_price or Decimal(0)) for c in eligible)
    for band in available:
        for other in available:
            assert taken[band] <= taken[other] + 1 or taken[other] == available[other]


# --------------------------------------------------------------------- real markets


def test_a_panel_from_the_recorded_top_markets_spreads_over_the_price_levels() -> None:
    """The recorded Polymarket catalogue, as of a Sunday before its markets end: twenty
    questions, every one eligible, from at least three price bands."""
    parsed = parse_markets(list(demo_records().values())).markets
    markets = [m for m in parsed if m.close_date is not None and not m.closed]
    closes = sorted(m.close_date for m in markets if m.close_date is not None)
    sunday = closes[len(closes) // 4] - timedelta(days=7)
    earliest_end = sunday + timedelta(hours=1, days=1)
    candidates = [
        Candidate(
            market_id=m.polymarket_id,
            outcomes=tuple(m.outcomes),
            prices=tuple(str(p) for p in m.prices),
            liquidity=m.liquidity,
            close_date=m.close_date,
        )
        for m in markets
    ]

    panel = panel_pick(candidates, seed=SEED, earliest_end=earliest_end)

    assert len(panel) == PANEL_SIZE
    chosen = [c for c in candidates if c.market_id in panel]
    assert all(panel_eligible(c, earliest_end=earliest_end) for c in chosen)
    assert len({price_band(c.yes_price or Decimal(0)) for c in chosen}) >= 3
