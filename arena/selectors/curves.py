"""Value curves for the charts: each agent's total value over a range, downsampled in the
database.

The ranges are 002's (intraday 10M and 1H for debugging valuation, up to ALL) with the
original's buckets: 10 minutes up to 1D, 1 hour for 1W, 6 hours for 1M, 1 day for 3M; ALL's
is the widest of those and a week that still gives its history ALL_MIN_POINTS points (weekly
past about three years, daily over one, finer over a few weeks), so ALL never draws fewer
points than any range. A range's window ends at the latest snapshot of the agents asked for, not
at now, so a completed cohort's 1D shows its last day, and the chart spans the whole window
(`arena.views.charts`). Each bucket keeps its last snapshot (the value at the bucket's end),
and each series keeps its first and last snapshots of the window; a bucket that would give a
series more than MAX_POINTS points is widened. A series with one snapshot in the window gets
the value it held when the window opened (its snapshot before) drawn at the window's start;
a series with none in the window is not drawn in it.

Two queries whatever the number of agents or snapshots: each agent's first and last two
snapshots (index lookups; they fix the window), then the window's buckets for all series at
once. Buckets are counted from a Sunday (1970-01-04 00:00 UTC; `date_bin` on PostgreSQL, epoch
seconds on SQLite), so a 1-week bucket is a cohort week and the shorter ones fall on round UTC
times. Buckets wider than the 10-minute slot (1W, 1M, 3M, ALL) are read by one index probe
per bucket on (agent, timestamp), so a model's year at ALL reads a few hundred rows rather
than every snapshot; the 10-minute ranges scan their short window (see bench/README.md).

A window of more than MAX_POINTS slots per series (1W and longer) is read from the hourly or
daily rollup instead (`AgentSnapshotRollup`, kept by every snapshot write): a rollup hour's
or day's row carries its last snapshot, and the buckets, whole hours or days counted from the
same Sunday, are unions of them, so the points are the snapshots' own — a row per hour or
day of the window, with no probe per bucket. A series is read this way only when its rollup
covers it, from its first snapshot to its latest (so the chart still ends at the latest
snapshot); otherwise its snapshots are read as above (a third query).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import connection

from agents.models import BenchmarkModel
from arena.models import Agent, AgentSnapshotRollup, PortfolioSnapshot
from arena.seal import sealed_from
from arena.selectors.standings import offline_agent_ids
from arena.weeks import SNAPSHOT_SLOT

MAX_POINTS = 1000
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
BUCKET_ORIGIN = datetime(1970, 1, 4, tzinfo=UTC)  # buckets are counted from this Sunday
# Bind parameters of one probe query, well under SQLite's 32,766.
MAX_PROBE_PARAMETERS = 30_000
# Buckets touched by a window: its span ÷ width, plus a partial bucket at each end, plus the
# series' first snapshot kept in its own right: widening to span ÷ (MAX_POINTS - 3) caps it.
_BUCKETS_PER_SPAN = MAX_POINTS - 3
_SUNDAY_EPOCH = 3 * 86400  # 1970-01-04 00:00 UTC, the first Sunday after the epoch


@dataclass(frozen=True)
class Range:
    key: str
    label: str
    span: timedelta | None  # None: everything
    bucket: timedelta


RANGES: dict[str, Range] = {
    r.key: r
    for r in (
        Range("10M", "10 minutes", timedelta(minutes=10), timedelta(minutes=10)),
        Range("1H", "1 hour", timedelta(hours=1), timedelta(minutes=10)),
        Range("1D", "1 day", timedelta(days=1), timedelta(minutes=10)),
        Range("1W", "1 week", timedelta(weeks=1), timedelta(hours=1)),
        Range("1M", "1 month", timedelta(days=30), timedelta(hours=6)),
        Range("3M", "3 months", timedelta(days=90), timedelta(days=1)),
        Range("ALL", "all", None, timedelta(weeks=1)),
    )
}
DEFAULT_RANGE = "ALL"

# One colour per lineup slot (display_order 1, 2, …), never per rank: the seeded LLMs get
# distinct colours, and a model keeps its colour on every page and in every cohort.
LLM_PALETTE = (
    "#2a5bd7",  # blue
    "#d7263d",  # red
    "#1b998b",  # teal
    "#f08a24",  # orange
    "#7b3fc4",  # purple
    "#3f8f29",  # green
    "#b08900",  # ochre (magenta here, next to red, would be too close to slot 2 to tell apart)
    "#c2185b",  # magenta
    "#0f6e8c",  # petrol
    "#8d5a3c",  # brown
)
BASELINE_PALETTE = ("#5b6475", "#9a7b4f")  # greys and browns, drawn dashed
COHORT_PALETTE = (
    "#2a5bd7",
    "#f08a24",
    "#1b998b",
    "#d7263d",
    "#7b3fc4",
    "#8d5a3c",
    "#c2185b",
    "#b08900",
)


@dataclass
class Series:
    key: str
    label: str
    colour: str
    dashed: bool
    points: list[tuple[datetime, Decimal]]


# ALL's bucket: the widest of the ranges' buckets that still gives its span this many points
# (a full 1W window's, the most of any range), so ALL never draws fewer points than a range.
ALL_MIN_POINTS = 168
_ALL_BUCKETS = (
    timedelta(weeks=1),
    timedelta(days=1),
    timedelta(hours=6),
    timedelta(hours=1),
    timedelta(minutes=10),
)


def all_bucket(span: timedelta) -> timedelta:
    """Return ALL's bucket over a history of `span`: weekly, or finer where a week would give
    under ALL_MIN_POINTS points (the 10-minute slot at the finest)."""
    for bucket in _ALL_BUCKETS:
        if span // bucket >= ALL_MIN_POINTS:
            return bucket
    return _ALL_BUCKETS[-1]


def range_from(value: str | None, *, covering: timedelta | None = None) -> str:
    """Return the range key `value` names (case-insensitive). Without a valid one: the
    shortest range from 1D up whose span covers `covering` (a young cohort opens on its
    week with hourly points, not on three weekly ones), else "ALL"."""
    key = (value or "").strip().upper()
    if key in RANGES:
        return key
    if covering is not None:
        for candidate in ("1D", "1W", "1M", "3M"):
            span = RANGES[candidate].span
            if span is not None and covering <= span:
                return candidate
    return DEFAULT_RANGE


def model_colour(model: BenchmarkModel) -> str:
    """Return the model's colour: fixed by its lineup slot (kind and display_order), the same
    on every page whatever the model's rank."""
    palette = BASELINE_PALETTE if model.is_baseline else LLM_PALETTE
    return palette[(model.display_order - 1) % len(palette)]


def cohort_colour(number: int) -> str:
    return COHORT_PALETTE[(number - 1) % len(COHORT_PALETTE)]


def value_series(
    *, agents: Sequence[Agent], range_key: str, label_by: str = "model"
) -> list[Series]:
    """Return a total-value series per agent (in the order given) over the range.

    label_by="model": labelled with the model's display name (" (offline)" when any of the
    agent's decisions was answered offline), in the model's colour, baselines dashed;
    label_by="cohort": labelled "Cohort n", in the cohort's colour (one model's cohorts
    overlaid). Agents need `model` (and `cohort` for label_by="cohort") loaded to avoid a
    query each. An agent without snapshots gets an empty series. Two queries, three with
    label_by="model", whatever the number of agents or snapshots.
    """
    if label_by not in ("model", "cohort"):
        raise ValueError(f"label_by must be 'model' or 'cohort', not {label_by!r}")
    agents = list(agents)
    if not agents:
        return []
    ids = [a.pk for a in agents]
    window = RANGES[range_from(range_key)]
    points = _downsampled(agent_ids=ids, window=window)
    offline = offline_agent_ids(ids) if label_by == "model" else set()
    series = []
    for agent in agents:
        if label_by == "cohort":
            label = f"Cohort {agent.cohort.number}"
            colour, dashed = cohort_colour(agent.cohort.number), False
        else:
            label = agent.model.display_name + (" (offline)" if agent.pk in offline else "")
            colour, dashed = model_colour(agent.model), agent.model.is_baseline
        series.append(Series(f"agent-{agent.pk}", label, colour, dashed, points.get(agent.pk, [])))
    return series


Points = list[tuple[datetime, Decimal]]


def _downsampled(*, agent_ids: list[int], window: Range) -> dict[int, Points]:
    """Each agent's points over the window. These reads are SQL of their own, which the
    managers' seal does not reach: under a seal (arena/seal.py) no point at or after it is
    kept, and the window ends before it."""
    seal = sealed_from()
    points = _downsampled_unsealed(agent_ids=agent_ids, window=window, seal=seal)
    if seal is None:
        return points
    return {agent_id: [p for p in pts if p[0] < seal] for agent_id, pts in points.items()}


def _downsampled_unsealed(
    *, agent_ids: list[int], window: Range, seal: datetime | None
) -> dict[int, Points]:
    # Under a seal the ends are read before it: filtering them after would drop a series'
    # last two marks (both sealed twenty minutes in) and leave its first as its "end".
    ends, covered = _ends(agent_ids, before=seal)
    if not ends:
        return {}
    end = max(pts[-1][0] for pts in ends.values())
    start = None if window.span is None else end - window.span
    first = min(pts[0][0] for pts in ends.values()) if start is None else start
    base = window.bucket if start is not None else all_bucket(end - first)
    # Widen the bucket when the window would need more than the cap's buckets: the window
    # spans every series, so no series gets more than MAX_POINTS.
    bucket = base * max(1, -(-(end - first) // (base * _BUCKETS_PER_SPAN)))
    points: dict[int, Points] = defaultdict(list)
    raw = dict(ends)
    resolution = _rollup_resolution(bucket, end - first)
    if resolution is not None:
        # A series whose rollup covers it, from its first snapshot to its latest, as the
        # snapshot writes keep it; the others (snapshots written by other means) are read
        # from their snapshots. Under a seal a series' rollup spans past its last mark before
        # the seal, so it is read from its snapshots: a rollup row holding the seal's start
        # would carry marks from after it.
        rolled = {
            agent_id: known
            for agent_id, known in ends.items()
            if covered.get(agent_id) == (known[0][0], known[-1][0])
        }
        if rolled:
            points.update(_from_rollup(rolled, bucket, start, resolution))
        raw = {agent_id: known for agent_id, known in ends.items() if agent_id not in rolled}
    if raw:
        query = None
        # A bucket wider than a snapshot slot: one index probe per bucket beats a scan.
        if bucket > SNAPSHOT_SLOT:
            query = _probe_sql(raw, bucket, start)
        if query is None:
            query = _bucket_sql(list(raw), bucket, start)
        for row in PortfolioSnapshot.objects.raw(*query):
            points[row.agent_id].append((row.snapshot_timestamp, row.total_value))
    for agent_id, known in ends.items():
        kept = points[agent_id]
        if start is not None and len(kept) == 1:
            # One mark in the window: the value the series held when the window opened (its
            # mark before it) is drawn at the window's start.
            before = [p for p in known if p[0] < start]
            if before:
                points[agent_id] = [(start, before[-1][1]), *kept]
    return {agent_id: kept for agent_id, kept in points.items() if kept}


def _rollup_resolution(bucket: timedelta, span: timedelta) -> str | None:
    """Return the rollup resolution (hour or day) a window is read from, or None to read the
    snapshots: the rollup serves when the window holds more than MAX_POINTS slots per series
    and its buckets are whole hours (days) — which, counted from the same Sunday, are unions
    of rollup hours (days), so a bucket's last snapshot is its last rollup row's."""
    if span <= SNAPSHOT_SLOT * MAX_POINTS or bucket % HOUR:
        return None
    if bucket % DAY == timedelta(0):
        return AgentSnapshotRollup.Resolution.DAY
    return AgentSnapshotRollup.Resolution.HOUR


def _from_rollup(
    ends: dict[int, Points], bucket: timedelta, start: datetime | None, resolution: str
) -> dict[int, Points]:
    """Return the kept points of series the rollup covers, read from it: per bucket, the last
    rollup row's figures (its last snapshot's), and each series' first snapshot in the window.
    The same points as the snapshots give; one query, reading a row per rollup hour or day of
    the window and one index probe per series."""
    rollup = AgentSnapshotRollup._meta.db_table
    table = PortfolioSnapshot._meta.db_table
    ids = list(ends)
    in_ids = ", ".join(["%s"] * len(ids))
    # Both reads of the rollup name the series and, with a window, the first bucket that can
    # end in it (a rollup row spans one hour or day): the (agent, resolution, bucket) index
    # reads the window's rows alone, where the planner once hashed the whole table.
    window, window_params = "", []
    if start is not None:
        width = DAY if resolution == AgentSnapshotRollup.Resolution.DAY else HOUR
        adapt = connection.ops.adapt_datetimefield_value
        window = "AND r.bucket_start >= %s"
        window_params = [adapt(start - width)]
    sql = f"""
        WITH kept AS (
            SELECT r.agent_id, MAX(r.bucket_start) AS bucket_start FROM {rollup} r
            WHERE r.resolution = %s AND r.agent_id IN ({in_ids}) {window} {{after}}
            GROUP BY r.agent_id, {_bucket("r.bucket_start", int(bucket.total_seconds()))}
        )
        SELECT r.agent_id, r.last_at, r.total_value FROM {rollup} r
        JOIN kept ON r.agent_id = kept.agent_id AND r.bucket_start = kept.bucket_start
        WHERE r.resolution = %s AND r.agent_id IN ({in_ids}) {window}
    """  # noqa: S608 — our tables and integers, every value is a parameter  # nosec B608
    params: list[Any] = [resolution, *ids, *window_params]
    if start is None:
        sql = sql.format(after="")
    else:  # the rows ending in the window; and each series' first snapshot in it
        sql = sql.format(after="AND r.last_at >= %s")
        params.append(connection.ops.adapt_datetimefield_value(start))
    params += [resolution, *ids, *window_params]
    if start is not None:
        sql += f"""
            UNION ALL
            SELECT s.agent_id, s.snapshot_timestamp, s.total_value FROM {table} s
            JOIN {Agent._meta.db_table} a ON s.id = (
                SELECT f.id FROM {table} f WHERE f.agent_id = a.id AND f.snapshot_timestamp >= %s
                ORDER BY f.snapshot_timestamp LIMIT 1)
            WHERE a.id IN ({in_ids})
        """  # noqa: S608  # nosec B608
        params += [connection.ops.adapt_datetimefield_value(start), *ids]
    kept: dict[int, set[tuple[datetime, Decimal]]] = defaultdict(set)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for agent_id, at, value in cursor.fetchall():
            kept[agent_id].add((_moment(at), _cents(value)))  # type: ignore[arg-type]
    if start is None:  # the series' first snapshot, from `_ends`
        for agent_id, known in ends.items():
            kept[agent_id].add(known[0])
    return {agent_id: sorted(kept[agent_id]) for agent_id in ends}


def _moment(value: datetime | str | None) -> datetime | None:
    """A timestamp as the cursor gives it (text on SQLite), aware in UTC like the ORM's."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _cents(value: object) -> Decimal:
    """A money figure as the cursor gives it (a float on SQLite), as the ORM reads it."""
    return Decimal(str(value)).quantize(Decimal("0.01"))


# Agents per query of `_ends`: two sub-selects each, and SQLite allows 500 in one compound
# SELECT (a model that played every week for five years has 260 agents).
ENDS_PER_QUERY = 200


def _ends(
    agent_ids: list[int], *, before: datetime | None = None
) -> tuple[dict[int, Points], dict[int, tuple[datetime, datetime]]]:
    """Return each agent's first and last two snapshots (of those before `before`, when
    given), oldest first: index lookups, in one query per ENDS_PER_QUERY agents (a window
    function would read every snapshot); and, from the same query, the span its daily rollup
    covers (its first row's first snapshot, its last row's last), for the agents with a
    rollup."""
    table = PortfolioSnapshot._meta.db_table
    rollup = AgentSnapshotRollup._meta.db_table
    until = "" if before is None else "AND snapshot_timestamp < %s "
    one = (
        "SELECT * FROM (SELECT 'end' AS kind, agent_id, snapshot_timestamp, total_value "
        "FROM {table} WHERE agent_id = %s {until}ORDER BY snapshot_timestamp {order} "
        "LIMIT {limit}) AS end_{n}"
    )
    ends: dict[int, set[tuple[datetime, Decimal]]] = defaultdict(set)
    covered: dict[int, tuple[datetime, datetime]] = {}
    for at in range(0, len(agent_ids), ENDS_PER_QUERY):
        chunk = agent_ids[at : at + ENDS_PER_QUERY]
        in_chunk = ", ".join(["%s"] * len(chunk))
        terms = [
            one.format(table=table, until=until, order=order, limit=limit, n=f"{n}_{limit}")
            for n in range(len(chunk))
            for order, limit in (("ASC", 1), ("DESC", 2))
        ]
        terms.append(  # a row per day of the agent's rollup, where one is kept: cheap
            f"SELECT 'rollup', agent_id, MIN(first_at), NULL FROM {rollup} "  # nosec B608
            f"WHERE resolution = %s AND agent_id IN ({in_chunk}) GROUP BY agent_id "
            f"UNION ALL SELECT 'rollup', agent_id, MAX(last_at), NULL FROM {rollup} "
            f"WHERE resolution = %s AND agent_id IN ({in_chunk}) GROUP BY agent_id"
        )
        bound = [] if before is None else [connection.ops.adapt_datetimefield_value(before)]
        params: list[Any] = [p for agent_id in chunk for _ in range(2) for p in (agent_id, *bound)]
        params += [AgentSnapshotRollup.Resolution.DAY, *chunk] * 2
        spans: dict[int, list[datetime]] = defaultdict(list)
        with connection.cursor() as cursor:
            cursor.execute(" UNION ALL ".join(terms), params)
            for kind, agent_id, moment, value in cursor.fetchall():
                if kind == "end":
                    ends[agent_id].add((_moment(moment), _cents(value)))  # type: ignore[arg-type]
                else:
                    spans[agent_id].append(_moment(moment))  # type: ignore[arg-type]
        covered.update((agent_id, (min(span), max(span))) for agent_id, span in spans.items())
    return {agent_id: sorted(known) for agent_id, known in ends.items()}, covered


def _bucket(column: str, width: int) -> str:
    """Return the SQL of the bucket `column` falls in: buckets of `width` seconds counted from
    a Sunday (1970-01-04 00:00 UTC)."""
    if connection.vendor == "postgresql":  # date_bin: plain integer arithmetic, no numeric
        return f"date_bin(INTERVAL '{width} seconds', {column}, TIMESTAMPTZ '1970-01-04 00:00Z')"
    return f"(CAST(strftime('%%s', {column}) AS INTEGER) - {_SUNDAY_EPOCH}) / {width}"


def _probe_sql(
    ends: dict[int, Points], bucket: timedelta, start: datetime | None
) -> tuple[str, list[object]] | None:
    """Return the query of the window's kept snapshots as index probes on (agent, timestamp):
    per series, the last snapshot of each bucket from its first in the window to its last,
    and its first snapshot in the window. The same rows as `_bucket_sql` (buckets counted from
    the same Sunday), without reading the snapshots between them: a model's year at ALL reads
    a few hundred rows instead of two hundred thousand. None when there would be too many
    probes for one statement; the scan serves then."""
    adapt = connection.ops.adapt_datetimefield_value
    buckets: list[object] = []
    firsts: list[object] = []
    for agent_id, known in ends.items():
        first, last = known[0][0], known[-1][0]
        low = first if start is None else max(first, start)
        if last < low:
            continue  # the window misses the series: `_downsampled` adds its last two
        firsts += [agent_id, adapt(low)]
        k = (low - BUCKET_ORIGIN) // bucket
        while (bucket_start := BUCKET_ORIGIN + k * bucket) <= last:
            buckets += [agent_id, adapt(max(bucket_start, low)), adapt(bucket_start + bucket)]
            k += 1
    if not firsts or len(buckets) + len(firsts) > MAX_PROBE_PARAMETERS:
        return None
    table = PortfolioSnapshot._meta.db_table
    probe = (
        f"SELECT p.id FROM {table} p WHERE p.agent_id = {{v}}.a "  # nosec B608 # our table name
        f"AND p.snapshot_timestamp >= {{v}}.lo {{upper}}"
        "ORDER BY p.snapshot_timestamp {order} LIMIT 1"
    )
    last_of_bucket = probe.format(v="b", upper="AND p.snapshot_timestamp < b.hi ", order="DESC")
    first_in_window = probe.format(v="f", upper="", order="ASC")
    sql = f"""
        WITH b(a, lo, hi) AS (VALUES {", ".join(["(%s, %s, %s)"] * (len(buckets) // 3))}),
             f(a, lo) AS (VALUES {", ".join(["(%s, %s)"] * (len(firsts) // 2))})
        SELECT s.id, s.agent_id, s.snapshot_timestamp, s.total_value FROM {table} s
        WHERE s.id IN (SELECT ({last_of_bucket}) FROM b UNION SELECT ({first_in_window}) FROM f)
        ORDER BY s.agent_id, s.snapshot_timestamp
    """  # noqa: S608 — the table name is ours, every value is a parameter  # nosec B608
    return sql, buckets + firsts


def _bucket_sql(
    agent_ids: list[int], bucket: timedelta, start: datetime | None
) -> tuple[str, list[object]]:
    """Return the query of the window's kept snapshots: the last of each bucket and each
    series' first, ordered by agent and time. Grouping (a hash aggregate) then joining back
    to the window's rows costs a fraction of ranking every row with a window function."""
    table = PortfolioSnapshot._meta.db_table
    width = int(bucket.total_seconds())
    params: list[object] = list(agent_ids)
    where = "agent_id IN (" + ", ".join(["%s"] * len(agent_ids)) + ")"
    if start is not None:  # compared as stored, so the (agent, timestamp) index serves it
        where += " AND snapshot_timestamp >= %s"
        params.append(connection.ops.adapt_datetimefield_value(start))
    sql = f"""
        WITH buckets AS (
            SELECT agent_id, MIN(snapshot_timestamp) AS first_at,
                   MAX(snapshot_timestamp) AS last_at
            FROM {table} WHERE {where}
            GROUP BY agent_id, {_bucket("snapshot_timestamp", width)}
        ), kept AS (
            SELECT agent_id, last_at AS at FROM buckets
            UNION
            SELECT agent_id, MIN(first_at) AS at FROM buckets GROUP BY agent_id
        )
        SELECT s.id, s.agent_id, s.snapshot_timestamp, s.total_value
        FROM {table} s JOIN kept ON s.agent_id = kept.agent_id AND s.snapshot_timestamp = kept.at
        WHERE {where.replace("agent_id", "s.agent_id").replace("snapshot_", "s.snapshot_")}
        ORDER BY s.agent_id, s.snapshot_timestamp
    """  # noqa: S608 — the table name and integers are ours, every value is a parameter  # nosec B608
    return sql, params * 2  # the window's condition, on the scan and on the join back
