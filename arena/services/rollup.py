"""Hourly and daily rollups of each agent's snapshots, for the charts.

A rollup row sums up one agent's snapshots over one UTC hour or day: the first and last
snapshot's times, the last snapshot's figures (a chart bucket's value is its last snapshot's),
the lowest and highest total value and the number of snapshots. Hours and days are counted
in UTC, so they nest in the charts' buckets (whole hours and days counted from a Sunday,
1970-01-04 00:00 UTC) and a chart bucket's last snapshot is the last of its last non-empty
hour or day.

Every snapshot write merges its new rows into their hour and day (`rollup_upsert_sql`,
set-based: in the write's own statement on PostgreSQL, one more on SQLite, `rollup_merge`);
`rollup_rebuild` recomputes them from the snapshots (the migration that added them, and
`manage.py rebuild_snapshot_rollup`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from django.db import connection, transaction

from arena.models import AgentSnapshotRollup, PortfolioSnapshot

Resolution = AgentSnapshotRollup.Resolution
RESOLUTIONS = (Resolution.HOUR, Resolution.DAY)
# Agent ids per statement: well under SQLite's 32,766 bind parameters.
AGENTS_PER_STATEMENT = 5000

_COLUMNS = (
    "agent_id, resolution, bucket_start, first_at, last_at, total_value, total_pnl, "
    "total_pnl_percent, min_total_value, max_total_value, snapshots"
)


def bucket_start(at: datetime, resolution: str) -> datetime:
    """Return the start of the UTC hour or day `at` falls in."""
    moment = at.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    return moment.replace(hour=0) if resolution == Resolution.DAY else moment


def bucket_sql(column: str, resolution: str) -> str:
    """Return the SQL of the start of the UTC hour or day `column` falls in, as the column
    stores it (a timestamptz on PostgreSQL, Django's 'YYYY-MM-DD HH:MM:SS' text on SQLite).
    For statements with parameters (a literal % is doubled)."""
    if connection.vendor == "postgresql":
        width = "1 hour" if resolution == Resolution.HOUR else "1 day"
        return f"date_bin(INTERVAL '{width}', {column}, TIMESTAMPTZ '1970-01-04 00:00Z')"
    pattern = "%%Y-%%m-%%d %%H:00:00" if resolution == Resolution.HOUR else "%%Y-%%m-%%d 00:00:00"
    return f"strftime('{pattern}', {column})"


def _chunks(ids: Sequence[int]) -> Iterable[list[int]]:
    for at in range(0, len(ids), AGENTS_PER_STATEMENT):
        yield list(ids[at : at + AGENTS_PER_STATEMENT])


def rollup_upsert_sql(*, source: str, where: str) -> str:
    """Return the SQL that merges the snapshots `source` yields (a FROM item named `s` with
    agent_id, snapshot_timestamp, total_value, total_pnl and total_pnl_percent; `where`
    selects them) into their hour and day: an upsert on the bucket's unique row, whatever
    order the snapshots arrive in, each merged once. Its parameters are the hour's and the
    day's start (`rollup_bucket_params`), then those of `where`."""
    rollup = AgentSnapshotRollup._meta.db_table
    stamp = "CAST(%s AS TIMESTAMPTZ)" if connection.vendor == "postgresql" else "%s"

    def newer(column: str) -> str:  # the bucket's figures are its last snapshot's
        return (
            f"CASE WHEN excluded.last_at > {rollup}.last_at "
            f"THEN excluded.{column} ELSE {rollup}.{column} END"
        )

    # A WHERE even when nothing is filtered: SQLite would read ON CONFLICT as a join's ON.
    return f"""
        INSERT INTO {rollup} ({_COLUMNS})
        SELECT s.agent_id, b.resolution, b.bucket_start, s.snapshot_timestamp,
               s.snapshot_timestamp, s.total_value, s.total_pnl, s.total_pnl_percent,
               s.total_value, s.total_value, 1
        FROM {source} CROSS JOIN (
            SELECT 'hour' AS resolution, {stamp} AS bucket_start
            UNION ALL SELECT 'day', {stamp}
        ) b
        WHERE {where or "true"}
        ON CONFLICT (agent_id, resolution, bucket_start) DO UPDATE SET
            first_at = CASE WHEN excluded.first_at < {rollup}.first_at
                            THEN excluded.first_at ELSE {rollup}.first_at END,
            total_value = {newer("total_value")},
            total_pnl = {newer("total_pnl")},
            total_pnl_percent = {newer("total_pnl_percent")},
            last_at = {newer("last_at")},
            min_total_value = CASE WHEN excluded.min_total_value < {rollup}.min_total_value
                                   THEN excluded.min_total_value
                                   ELSE {rollup}.min_total_value END,
            max_total_value = CASE WHEN excluded.max_total_value > {rollup}.max_total_value
                                   THEN excluded.max_total_value
                                   ELSE {rollup}.max_total_value END,
            snapshots = {rollup}.snapshots + excluded.snapshots
    """  # noqa: S608 — the table names are ours, every value is a parameter  # nosec B608


def rollup_bucket_params(at: datetime) -> list[Any]:
    """Return the first two parameters of `rollup_upsert_sql` for snapshots stamped `at`."""
    adapt = connection.ops.adapt_datetimefield_value
    return [adapt(bucket_start(at, Resolution.HOUR)), adapt(bucket_start(at, Resolution.DAY))]


def rollup_merge(*, agent_ids: Sequence[int], at: datetime) -> None:
    """Merge the snapshots of `agent_ids` stamped `at` (just written: each is merged once)
    into their hour and day: one statement per 5,000 agents (`rollup_upsert_sql`). On
    PostgreSQL the tick's write merges in its own statement instead."""
    snapshot = PortfolioSnapshot._meta.db_table
    adapt = connection.ops.adapt_datetimefield_value
    for chunk in _chunks(agent_ids):
        sql = rollup_upsert_sql(
            source=f"{snapshot} s",
            where=f"s.snapshot_timestamp = %s AND s.agent_id IN ({', '.join(['%s'] * len(chunk))})",
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [*rollup_bucket_params(at), adapt(at), *chunk])


def rollup_rebuild(*, agent_ids: Sequence[int] | None = None) -> int:
    """Recompute the hourly and daily rollups of `agent_ids` (every agent when None) from
    their snapshots; return how many rollup rows were written. Set-based: one grouping
    statement per resolution (and per 5,000 agents)."""
    rollup = AgentSnapshotRollup._meta.db_table
    snapshot = PortfolioSnapshot._meta.db_table
    chunks: list[list[int] | None] = [None] if agent_ids is None else list(_chunks(agent_ids))
    written = 0
    with transaction.atomic(), connection.cursor() as cursor:
        for chunk in chunks:
            where, params = "", list[Any]()
            if chunk is not None:
                where = f"WHERE agent_id IN ({', '.join(['%s'] * len(chunk))})"
                params = list(chunk)
            cursor.execute(f"DELETE FROM {rollup} {where}", params)  # noqa: S608  # nosec B608
            for resolution in RESOLUTIONS:
                bucket = bucket_sql("snapshot_timestamp", resolution)
                sql = f"""
                    INSERT INTO {rollup} ({_COLUMNS})
                    SELECT g.agent_id, %s, g.bucket_start, g.first_at, g.last_at,
                           s.total_value, s.total_pnl, s.total_pnl_percent, g.low, g.high, g.n
                    FROM (
                        SELECT agent_id, {bucket} AS bucket_start,
                               MIN(snapshot_timestamp) AS first_at,
                               MAX(snapshot_timestamp) AS last_at,
                               MIN(total_value) AS low, MAX(total_value) AS high, COUNT(*) AS n
                        FROM {snapshot} {where}
                        GROUP BY agent_id, {bucket}
                    ) g
                    JOIN {snapshot} s
                      ON s.agent_id = g.agent_id AND s.snapshot_timestamp = g.last_at
                """  # noqa: S608 — the table names are ours, every value is a parameter  # nosec B608
                cursor.execute(sql, [str(resolution), *params])
                written += cursor.rowcount
    return written
