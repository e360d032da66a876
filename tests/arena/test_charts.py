"""Value charts: the ranges of 002 (10M to ALL), downsampled in the database with the
original's buckets to at most ~1,000 points a series, windows ending at the agents' latest
snapshot, one fixed colour per model whatever its rank, and the page's chart: range links,
the series as escaped JSON, a text summary.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils.html import escape

from agents.models import BenchmarkModel
from arena.models import Agent, Cohort, Decision, PortfolioSnapshot
from arena.seal import public_view
from arena.selectors import curves
from arena.selectors.curves import MAX_POINTS, RANGES, Series, range_from, value_series
from arena.views import charts
from tests.arena.factories import AgentFactory, CohortFactory

pytestmark = pytest.mark.django_db

TEN_MINUTES = timedelta(minutes=10)
WEEK = timedelta(weeks=1)
SUNDAY = datetime(2030, 1, 6, tzinfo=UTC)  # the factories' first cohort week
SCRIPT = "</script><script>alert(1)</script>"


def new_cohort() -> Cohort:
    cohort: Cohort = CohortFactory.create()
    return cohort


def new_agent(cohort: Cohort, internal_id: str = "gpt-5.1") -> Agent:
    agent: Agent = AgentFactory.create(
        cohort=cohort, model=BenchmarkModel.objects.get(internal_id=internal_id)
    )
    return agent


def snapshots(agent: Agent, times: Sequence[datetime], start_value: int = 10000) -> None:
    """Store a snapshot of `agent` at each time, its value moving by a cent each time."""
    PortfolioSnapshot.objects.bulk_create(
        PortfolioSnapshot(
            agent=agent,
            snapshot_timestamp=ts,
            cash=Decimal(start_value),
            positions_value=Decimal(0),
            total_value=Decimal(start_value) + Decimal(n) / 100,
            total_pnl=Decimal(n) / 100,
            total_pnl_percent=Decimal(0),
        )
        for n, ts in enumerate(times)
    )


def every_ten_minutes(start: datetime, days: float) -> list[datetime]:
    return [start + TEN_MINUTES * n for n in range(int(days * 144))]


def one_series(agent: Agent, range_key: str) -> list[tuple[datetime, Decimal]]:
    (series,) = value_series(agents=[agent], range_key=range_key)
    return series.points


# --- ranges and buckets ---------------------------------------------------------------------


def test_the_ranges_are_002s_in_order_and_anything_else_means_all() -> None:
    assert list(RANGES) == ["10M", "1H", "1D", "1W", "1M", "3M", "ALL"]
    assert [RANGES[k].bucket for k in RANGES] == [
        TEN_MINUTES,
        TEN_MINUTES,
        TEN_MINUTES,
        timedelta(hours=1),
        timedelta(hours=6),
        timedelta(days=1),
        timedelta(weeks=1),
    ]
    assert curves.range_from("1w") == "1W"
    assert curves.range_from(None) == "ALL"
    assert curves.range_from("") == "ALL"
    assert curves.range_from("5Y") == "ALL"
    assert curves.range_from("<script>") == "ALL"


@pytest.mark.slow(
    reason="100 days of 10-minute snapshots (14,400 rows) read through all seven ranges: the "
    "scale the downsampling exists for; measured at 6.1 s of CPU on a loaded machine"
)
def test_each_range_keeps_the_last_snapshot_of_each_bucket_and_the_window_ends_at_the_latest() -> (
    None
):
    """100 days of 10-minute snapshots: the kept points are the windows' bucket ends, spaced
    by exactly the range's bucket, never more than MAX_POINTS, first and last kept."""
    agent = new_agent(new_cohort())
    times = every_ten_minutes(SUNDAY, days=100)
    snapshots(agent, times)
    values = {ts: Decimal(10000) + Decimal(n) / 100 for n, ts in enumerate(times)}
    latest = times[-1]
    # ALL over 100 days: six-hourly (daily would draw 100 points, under 1W's 169).
    expected = {"10M": 2, "1H": 7, "1D": 145, "1W": 169, "1M": 121, "3M": 91, "ALL": 401}
    for range_key, window in RANGES.items():
        points = one_series(agent, range_key)
        start = times[0] if window.span is None else latest - window.span
        bucket = window.bucket if window.span else curves.all_bucket(latest - times[0])
        in_window = [t for t in times if t >= start]
        assert len(points) == expected[range_key] <= MAX_POINTS, range_key
        assert points[0][0] == in_window[0], range_key  # the window's first snapshot
        assert points[-1][0] == latest, range_key  # the window ends at the latest snapshot
        interior = [ts for ts, _ in points[1:-1]]
        for earlier, later in zip(interior, interior[1:], strict=False):
            assert later - earlier == bucket, range_key
        for ts in interior:  # each is the last snapshot before a (Sunday-aligned) boundary
            assert ((ts + TEN_MINUTES) - SUNDAY) % bucket == timedelta(0), range_key
        assert all(value == values[ts] for ts, value in points)  # each point is its snapshot


def test_all_is_in_buckets_counted_from_sunday_fine_enough_for_its_history() -> None:
    agent = new_agent(new_cohort())
    times = every_ten_minutes(SUNDAY + timedelta(days=2), days=30)
    snapshots(agent, times)
    points = one_series(agent, "ALL")
    # Thirty days: weeks would draw 4 points, days 29 and six hours 119, so hourly buckets:
    # the first snapshot, then the last before each hour counted from a Sunday (720).
    interior = [ts for ts, _ in points[1:-1]]
    assert len(points) == 721
    assert all(
        ((ts + TEN_MINUTES) - SUNDAY) % timedelta(hours=1) == timedelta(0) for ts in interior
    )
    assert points[0][0] == times[0]
    assert points[-1][0] == times[-1]


@pytest.mark.parametrize(
    ("history", "bucket"),
    [
        (timedelta(weeks=200), timedelta(weeks=1)),
        (timedelta(days=365), timedelta(days=1)),
        (timedelta(weeks=6), timedelta(hours=6)),
        (timedelta(days=10), timedelta(hours=1)),
        (timedelta(days=3), timedelta(minutes=10)),
    ],
)
def test_alls_bucket_is_the_widest_that_still_draws_a_1w_windows_points(
    history: timedelta, bucket: timedelta
) -> None:
    assert curves.all_bucket(history) == bucket
    assert history // bucket >= curves.ALL_MIN_POINTS


def test_a_bucket_that_would_give_more_than_the_cap_is_widened() -> None:
    """A daily snapshot for 25 years is 1,300 weeks: ALL widens its buckets to 2 weeks."""
    agent = new_agent(new_cohort())
    times = [SUNDAY + timedelta(days=d) for d in range(25 * 365)]
    snapshots(agent, times)
    points = one_series(agent, "ALL")
    assert MAX_POINTS // 2 < len(points) <= MAX_POINTS
    interior = [ts for ts, _ in points[1:-1]]
    assert {b - a for a, b in zip(interior, interior[1:], strict=False)} == {timedelta(weeks=2)}
    assert points[0][0] == times[0]
    assert points[-1][0] == times[-1]


def test_a_completed_cohorts_day_is_its_last_day_not_an_empty_now() -> None:
    cohort = new_cohort()
    agents = [new_agent(cohort, "gpt-5.1"), new_agent(cohort, "claude-opus-4.5")]
    times = every_ten_minutes(SUNDAY, days=7)  # in 2030, long before or after "now"
    for agent in agents:
        snapshots(agent, times)
    for series in value_series(agents=agents, range_key="1D"):
        assert series.points[0][0] == times[-1] - timedelta(days=1)
        assert series.points[-1][0] == times[-1]
        assert len(series.points) == 145


def test_a_window_with_one_mark_of_a_series_draws_it_from_the_windows_start() -> None:
    """A series with one snapshot in the window gets the value it held when the window opened
    (its snapshot before) at the window's start; one with none in the window is not drawn in
    it, nor one with no snapshot at all."""
    cohort = new_cohort()
    running, sparse, stopped, empty = (
        new_agent(cohort, m) for m in ("gpt-5.1", "grok-4", "kimi-k2", "qwen-3-next")
    )
    times = every_ten_minutes(SUNDAY, days=3)
    end = times[-1]
    snapshots(running, times)
    snapshots(sparse, [end - timedelta(hours=12), end], 10250)  # marked twice a day
    snapshots(stopped, times[:144])  # its last snapshot is two days before the window's end
    by_key = {
        s.key: s.points
        for s in value_series(agents=[running, sparse, stopped, empty], range_key="1H")
    }
    assert [ts for ts, _ in by_key[f"agent-{running.pk}"]] == times[-7:]
    assert by_key[f"agent-{sparse.pk}"] == [
        (end - timedelta(hours=1), Decimal("10250.00")),  # held since its mark 12 hours earlier
        (end, Decimal("10250.01")),
    ]
    assert by_key[f"agent-{stopped.pk}"] == []
    assert by_key[f"agent-{empty.pk}"] == []
    assert value_series(agents=[], range_key="ALL") == []


def _reference(
    times: list[datetime], window: curves.Range, first: datetime, end: datetime
) -> list[datetime]:
    """The downsampling rule in plain Python, to hold both databases to the same answer: the
    window [end − span, end] (everything from `first`, the earliest of all series, for ALL, in
    ALL's bucket for that history), buckets widened when the window would need more than the
    cap, the last snapshot of each bucket and the series' first; with one snapshot in the
    window, the window's start before it where the series was marked before."""
    start = first if window.span is None else end - window.span
    inside = [t for t in times if t >= start]
    base = window.bucket if window.span else curves.all_bucket(end - first)
    bucket = int(base.total_seconds())
    per_span = bucket * (MAX_POINTS - 3)
    width = bucket * max(1, -(-int((end - start).total_seconds()) // per_span))
    sunday = datetime(1970, 1, 4, tzinfo=UTC)
    last_of: dict[int, datetime] = {}
    for t in inside:
        last_of[int((t - sunday).total_seconds()) // width] = t
    kept = sorted({*inside[:1], *last_of.values()})
    if len(kept) == 1 and times[0] < start:
        return [start, *kept]
    return kept


def test_irregular_snapshots_downsample_to_the_same_points_on_every_database() -> None:
    """Missed ticks, odd seconds and agents of different lengths: the database's buckets are
    the plain-Python rule's, on SQLite and PostgreSQL alike (the suite runs on both)."""
    rng = random.Random(9)
    cohort = new_cohort()
    agents = [new_agent(cohort, m) for m in ("gpt-5.1", "grok-4", "kimi-k2")]
    all_times = []
    for n, agent in enumerate(agents):
        times = [
            t + timedelta(seconds=rng.randrange(0, 59))
            for t in every_ten_minutes(SUNDAY + timedelta(hours=7 * n), days=40 - 10 * n)
            if rng.random() > 0.2
        ]
        snapshots(agent, times)
        all_times.append(times)
    first, end = min(t[0] for t in all_times), max(t[-1] for t in all_times)
    for range_key, window in RANGES.items():
        series = value_series(agents=agents, range_key=range_key)
        for agent, times, one in zip(agents, all_times, series, strict=True):
            assert one.key == f"agent-{agent.pk}"
            assert [ts for ts, _ in one.points] == _reference(times, window, first, end), range_key


def test_index_probes_and_the_scan_keep_the_same_snapshots(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Wide buckets are read by one index probe per bucket; with too many probes for one
    statement the scan serves instead. Both keep the same snapshots."""
    rng = random.Random(3)
    cohort = new_cohort()
    agents = [new_agent(cohort, m) for m in ("gpt-5.1", "grok-4")]
    for n, agent in enumerate(agents):
        snapshots(
            agent,
            [
                t + timedelta(seconds=rng.randrange(0, 59))
                for t in every_ten_minutes(SUNDAY + timedelta(days=3 * n), days=50 - 20 * n)
                if rng.random() > 0.3
            ],
        )
    probed = {key: value_series(agents=agents, range_key=key) for key in RANGES}
    monkeypatch.setattr(curves, "MAX_PROBE_PARAMETERS", 0)
    scanned = {key: value_series(agents=agents, range_key=key) for key in RANGES}
    assert probed == scanned
    # a series drawn in a window has its two ends there (a window that misses it leaves it out)
    assert all(len(s.points) != 1 for series in probed.values() for s in series)


def test_a_model_of_many_cohorts_reads_its_ends_in_chunks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """SQLite allows 500 terms in a compound SELECT: a model with more agents than a chunk
    (five years of weekly cohorts) is read in several queries, with the same result."""
    agents = []
    for n in range(5):
        agent = new_agent(new_cohort())
        snapshots(agent, every_ten_minutes(SUNDAY + timedelta(days=n), days=1))
        agents.append(agent)
    whole = value_series(agents=agents, range_key="ALL")
    monkeypatch.setattr(curves, "ENDS_PER_QUERY", 2)
    assert value_series(agents=agents, range_key="ALL") == whole


def test_the_series_take_a_constant_number_of_queries() -> None:
    def count(agents: list[Agent], range_key: str) -> int:
        agents = list(Agent.objects.filter(pk__in=[a.pk for a in agents]).select_related("model"))
        with CaptureQueriesContext(connection) as queries:
            value_series(agents=agents, range_key=range_key)
        return len(queries)

    small_cohort = new_cohort()
    small = [new_agent(small_cohort)]
    snapshots(small[0], every_ten_minutes(SUNDAY, days=1))
    big_cohort = new_cohort()
    big = [new_agent(big_cohort, m.internal_id) for m in BenchmarkModel.objects.all()]
    for agent in big:
        snapshots(agent, every_ten_minutes(SUNDAY, days=5))
    for range_key in ("1D", "ALL"):
        assert count(small, range_key) == count(big, range_key) == 3  # tails, buckets, offline


# --- labels and colours ---------------------------------------------------------------------


def test_every_model_has_its_own_fixed_colour_whatever_its_rank() -> None:
    models = list(BenchmarkModel.objects.all())
    llm_colours = [curves.model_colour(m) for m in models if not m.is_baseline]
    assert len(set(llm_colours)) == len(llm_colours)  # the seeded lineup: all distinct
    baseline_colours = {curves.model_colour(m) for m in models if m.is_baseline}
    assert len(baseline_colours) == 2
    assert not baseline_colours & set(llm_colours)

    # Two cohorts where the two models finish in opposite orders: same colours in both.
    first, second = new_cohort(), new_cohort()
    for cohort, (gpt_value, grok_value) in ((first, (12000, 8000)), (second, (8000, 12000))):
        gpt, grok = new_agent(cohort, "gpt-5.1"), new_agent(cohort, "grok-4")
        snapshots(gpt, every_ten_minutes(SUNDAY, days=1), gpt_value)
        snapshots(grok, every_ten_minutes(SUNDAY, days=1), grok_value)
    colours: dict[str, set[str]] = {}
    client = Client()
    for cohort in (first, second):
        for url in [f"/cohorts/{cohort.number}/"] + [
            f"/cohorts/{cohort.number}/agents/{a.pk}/" for a in cohort.agents.all()
        ]:
            for series in chart_data(client.get(url).content.decode())["series"]:
                colours.setdefault(series["label"], set()).add(series["colour"])
    gpt_model = BenchmarkModel.objects.get(internal_id="gpt-5.1")
    grok_model = BenchmarkModel.objects.get(internal_id="grok-4")
    assert colours == {
        gpt_model.display_name: {curves.model_colour(gpt_model)},
        grok_model.display_name: {curves.model_colour(grok_model)},
    }


def test_baselines_are_dashed_and_offline_agents_labelled() -> None:
    cohort = new_cohort()
    llm, baseline = new_agent(cohort, "gpt-5.1"), new_agent(cohort, "baseline-random")
    Decision.objects.create(
        agent=llm, cohort=cohort, week_start=cohort.week_start, responder="offline"
    )
    for agent in (llm, baseline):
        snapshots(agent, every_ten_minutes(SUNDAY, days=1))
    llm_series, baseline_series = value_series(agents=[llm, baseline], range_key="ALL")
    assert llm_series.label == f"{llm.model.display_name} (offline)"
    assert not llm_series.dashed
    assert baseline_series.label == baseline.model.display_name
    assert baseline_series.dashed


def test_one_models_cohorts_are_labelled_and_coloured_by_cohort() -> None:
    agents = [new_agent(new_cohort()) for _ in range(3)]
    for n, agent in enumerate(agents):
        snapshots(agent, every_ten_minutes(SUNDAY + timedelta(weeks=n), days=2))
    agents = list(Agent.objects.filter(pk__in=[a.pk for a in agents]).select_related("cohort"))
    series = value_series(agents=agents, range_key="ALL", label_by="cohort")
    assert [s.label for s in series] == [f"Cohort {a.cohort.number}" for a in agents]
    assert len({s.colour for s in series}) == 3
    assert all(len(s.points) >= 2 for s in series)


# --- the chart on the page ------------------------------------------------------------------


def chart_data(html: str, element_id: str = "value-chart") -> dict[str, Any]:
    match = re.search(
        rf'<script id="{element_id}-data" type="application/json">(.*?)</script>', html, re.S
    )
    assert match, "no chart data on the page"
    data: dict[str, Any] = json.loads(match.group(1))
    return data


def test_the_cohort_page_has_range_links_with_the_active_one_marked(client: Client) -> None:
    cohort = new_cohort()
    snapshots(new_agent(cohort), every_ten_minutes(SUNDAY, days=10))
    html = client.get(f"/cohorts/{cohort.number}/?range=1W").content.decode()
    links = re.findall(r'<a href="\?range=(\w+)#value-chart"[^>]*>(\w+)</a>', html)
    assert [key for key, _ in links] == list(RANGES)
    assert re.search(
        r'<a href="\?range=1W#value-chart"[^>]*class="active" aria-current="true"', html
    )
    assert html.count('aria-current="true"') == 1
    data = chart_data(html)
    assert data["kind"] == "money"
    assert data["baseline"] == 10000.0
    xs = data["x"]
    assert isinstance(xs, list)
    assert len(xs) == 169
    # no JavaScript: the links still work, a note says so, the last values are written out
    assert "<noscript>" in html
    assert "$10,014.39" in html
    unknown = client.get(f"/cohorts/{cohort.number}/?range=bogus").content.decode()
    assert unknown.count('aria-current="true"') == 1  # an unknown range falls back to a default


@pytest.mark.parametrize(
    ("ran_for", "default"),
    [
        (timedelta(hours=5), "1D"),
        (timedelta(days=3), "1W"),
        (timedelta(days=10), "1M"),
        (timedelta(days=45), "3M"),
        (timedelta(days=200), "ALL"),
    ],
)
def test_a_cohort_page_opens_on_the_shortest_range_covering_the_cohorts_life(
    client: Client, ran_for: timedelta, default: str
) -> None:
    cohort = new_cohort()
    start = datetime.combine(cohort.week_start, datetime.min.time(), tzinfo=UTC)
    Cohort.objects.filter(pk=cohort.pk).update(completed_at=start + ran_for)
    snapshots(new_agent(cohort), every_ten_minutes(start, days=1))
    html = client.get(f"/cohorts/{cohort.number}/").content.decode()
    assert re.search(
        rf'<a href="\?range={default}#value-chart"[^>]*class="active" aria-current="true"', html
    )
    assert range_from("bogus", covering=ran_for) == default
    assert range_from("1h", covering=ran_for) == "1H"  # an asked-for range always wins
    assert range_from(None) == "ALL"


def test_the_agent_page_draws_its_agents_curve(client: Client) -> None:
    cohort = new_cohort()
    agent = new_agent(cohort)
    snapshots(agent, every_ten_minutes(SUNDAY, days=2))
    html = client.get(f"/cohorts/{cohort.number}/agents/{agent.pk}/?range=1D").content.decode()
    data = chart_data(html)
    (series,) = data["series"]
    assert series["label"] == agent.model.display_name
    assert series["colour"] == curves.model_colour(agent.model)
    assert len(series["y"]) == 145
    assert "static/vendor/uplot/uPlot.iife.min.js" in html
    assert "static/js/charts.js" in html


def test_a_model_name_with_a_script_tag_stays_inside_the_json(client: Client) -> None:
    model = BenchmarkModel.objects.get(internal_id="gpt-5.1")
    model.display_name = SCRIPT
    model.save()
    cohort = new_cohort()
    snapshots(new_agent(cohort), every_ten_minutes(SUNDAY, days=1))
    html = client.get(f"/cohorts/{cohort.number}/").content.decode()
    assert SCRIPT not in html
    assert "\\u003C/script\\u003E\\u003Cscript\\u003Ealert(1)" in html  # json_script's escape
    assert escape(SCRIPT) in html  # the summary, as text
    (series,) = chart_data(html)["series"]
    assert series["label"] == SCRIPT


def test_a_page_without_snapshots_says_so(client: Client) -> None:
    cohort = new_cohort()
    new_agent(cohort)
    html = client.get(f"/cohorts/{cohort.number}/").content.decode()
    assert "No snapshots" in html  # "yet", or "in this range" for the default range
    assert 'id="value-chart-data"' not in html


def test_the_cohort_page_takes_a_constant_number_of_queries(client: Client) -> None:
    def count(cohort: Cohort, range_key: str) -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(f"/cohorts/{cohort.number}/?range={range_key}").status_code == 200
        return len(queries)

    small = new_cohort()
    snapshots(new_agent(small), every_ten_minutes(SUNDAY, days=1))
    big = new_cohort()
    for model in BenchmarkModel.objects.all():
        snapshots(new_agent(big, model.internal_id), every_ten_minutes(SUNDAY, days=4))
    for range_key in ("1D", "ALL"):
        assert count(small, range_key) == count(big, range_key)


def test_a_price_chart_runs_from_0_to_1_without_the_start_line() -> None:
    at = SUNDAY
    series = [
        Series(
            "yes",
            "Yes",
            "#2a5bd7",
            False,
            [(at, Decimal("0.4")), (at + TEN_MINUTES, Decimal("0.45"))],
        )
    ]
    chart = charts.price_chart(series)
    assert chart.kind == "price"
    assert chart.data["baseline"] is None
    assert chart.ranges == []
    assert not chart.empty
    assert chart.data["series"][0]["y"] == [0.4, 0.45]
    ranged = charts.price_chart(series, range_key="1W")
    assert [r.key for r in ranged.ranges if r.active] == ["1W"]
    assert charts.price_chart([Series("no", "No", "#000", False, [])]).empty


def test_series_with_different_times_share_one_x_axis_with_gaps() -> None:
    a = Series(
        "a", "A", "#111", False, [(SUNDAY, Decimal(1)), (SUNDAY + 2 * TEN_MINUTES, Decimal(3))]
    )
    b = Series(
        "b",
        "B",
        "#222",
        True,
        [(SUNDAY + TEN_MINUTES, Decimal(2)), (SUNDAY + 2 * TEN_MINUTES, Decimal(4))],
    )
    chart = charts.value_chart([a, b], range_key="ALL")
    start = int(SUNDAY.timestamp())
    assert chart.data["x"] == [start, start + 600, start + 1200]
    assert [s["y"] for s in chart.data["series"]] == [[1.0, None, 3.0], [None, 2.0, 4.0]]
    assert chart.last_at == SUNDAY + 2 * TEN_MINUTES


def test_each_ranges_chart_spans_its_own_window_however_few_marks_it_holds(
    client: Client,
) -> None:
    # Marked twice a day: 10M and 1H hold one mark each, yet show windows of their own length.
    cohort = new_cohort()
    snapshots(new_agent(cohort), [SUNDAY + timedelta(hours=12 * n) for n in range(8)])
    spans = {}
    for range_key in ("10M", "1H", "1D", "ALL"):
        data = chart_data(
            client.get(f"/cohorts/{cohort.number}/?range={range_key}").content.decode()
        )
        spans[range_key] = None if data["from"] is None else data["to"] - data["from"]
        assert data["to"] is None or data["to"] == data["x"][-1]  # it ends at the latest mark
    assert spans == {"10M": 600, "1H": 3600, "1D": 86400, "ALL": None}


def test_a_window_longer_than_the_cohort_opens_where_the_cohort_began(client: Client) -> None:
    # Five weeks of marks: 3M's window would be two-thirds empty; nothing was marked before
    # the cohort's Sunday, so its chart opens there. 1D's window is inside the cohort: kept.
    cohort = new_cohort()
    agent = new_agent(cohort)
    snapshots(agent, [SUNDAY + timedelta(hours=6 * n) for n in range(5 * 28)])
    for path in (f"/cohorts/{cohort.number}/", f"/cohorts/{cohort.number}/agents/{agent.pk}/"):
        three_months = chart_data(client.get(f"{path}?range=3M").content.decode())
        assert three_months["from"] == int(SUNDAY.timestamp())
        one_day = chart_data(client.get(f"{path}?range=1D").content.decode())
        assert one_day["to"] - one_day["from"] == 86400


def line(n: int) -> Series:
    return Series(f"s{n}", f"Line {n}", "#111", False, [(SUNDAY, Decimal(10_000 + n))])


def test_a_value_chart_of_three_lines_or_more_opens_on_the_return_axis() -> None:
    # One agent that doubled flattens nine others into a band in USD; on a log return axis a
    # doubling and a halving are the same height. One or two lines read well in USD.
    assert charts.RETURN_AXIS_FROM == 3
    assert charts.value_chart([line(1)], range_key="ALL").data["scale"] == "linear"
    assert charts.value_chart([line(1), line(2)], range_key="ALL").data["scale"] == "linear"
    ten = charts.value_chart([line(n) for n in range(10)], range_key="ALL")
    assert ten.data["scale"] == "return"
    assert ten.data["baseline"] == 10000.0  # the return is against the $10,000 start
    prices = [Series(f"p{n}", "P", "#111", False, [(SUNDAY, Decimal("0.5"))]) for n in range(5)]
    assert charts.price_chart(prices).data["scale"] == "linear"  # a price has no return axis


def test_under_the_seal_a_series_ends_at_its_last_mark_before_it() -> None:
    # Sunday 00:55: the week's first marks (00:00 to 00:50) are sealed until the outside
    # window closes. The chart ends at Saturday 23:50, its week behind it, not at the
    # series' first mark (which is all that would be left of its last two, both sealed).
    agent = new_agent(new_cohort())
    snapshots(agent, every_ten_minutes(SUNDAY, days=7) + every_ten_minutes(SUNDAY + WEEK, 1 / 24))
    with public_view(now=SUNDAY + WEEK + timedelta(minutes=55)) as seal:
        assert seal == SUNDAY + WEEK
        points = one_series(agent, "1W")
    assert points[-1][0] == SUNDAY + WEEK - TEN_MINUTES
    assert points[0][0] <= SUNDAY + timedelta(hours=1)  # the whole week before the seal
    assert all(at < SUNDAY + WEEK for at, _ in points)
