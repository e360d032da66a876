"""A mark that moves whenever the arena's figures or records may have changed, so an answer
that is costly to compute (a whole page, the leaderboard, an export's manifest) can be kept
until it does."""

from __future__ import annotations

import hashlib

from django.contrib.admin.models import LogEntry
from django.db import connection

from agents.models import BenchmarkModel
from arena.models import (
    Agent,
    Cohort,
    DataRelease,
    Decision,
    DecisionAttempt,
    PortfolioSnapshot,
    Position,
    ResolutionCheck,
    SnapshotTick,
    SystemEvent,
    Trade,
)
from arena.seal import cache_part
from markets.models import MarketSyncRun

# The tables whose rows the public pages show, and those of the runs that record the updates
# made in place: catalogue syncs and ticks (prices, marking), resolution checks (settlement,
# scoring, completion), system events (staff operations) and the admin's log (a row added,
# changed or deleted there: a market's category, a model's name). Rows written with no mark of
# their own (a run's frozen markets, a panel's forecasts, an answer's commitment, a
# determinism check) are written with a decision, an attempt or an event that moves the mark:
# a writer added later that writes alone must add its table here.
GROWING = (
    Cohort,
    Agent,
    DataRelease,
    Decision,
    DecisionAttempt,
    Trade,
    Position,
    PortfolioSnapshot,
    SnapshotTick,
    ResolutionCheck,
    SystemEvent,
    MarketSyncRun,
    LogEntry,
)
# A decision changes in place as it is claimed, answered and finished (a HOLD adds no row
# anywhere): how many are at each of these moves with it.
UNFINISHED = (
    Decision.Status.PENDING,
    Decision.Status.RUNNING,
    Decision.Status.RETRYABLE,
    Decision.Status.AWAITING,
)


def data_watermark() -> str:
    """Return a digest of: the latest id of every GROWING table, which decisions are at each
    UNFINISHED status, the lineup's latest change and who of it is admitted to the main
    board, and the seal in force. One query of index reads. The ids are the tables' own,
    sealed rows included: a mark that moves when nothing shown did costs a page rendered
    again, never a stale one."""
    decision, lineup = Decision._meta.db_table, BenchmarkModel._meta.db_table
    # Only our own table names are formatted in; the values are parameters.
    terms = [f"(SELECT MAX(id) FROM {model._meta.db_table})" for model in GROWING]  # nosec B608
    # Which rows, not only how many: two decisions moving opposite ways (one team's claim,
    # another's reopened submission) would leave every count as it was.
    which = "COUNT(*) || ':' || COALESCE(SUM(id), 0)"
    terms += [
        f"(SELECT {which} FROM {decision} WHERE status = %s)"  # nosec B608
        for _ in UNFINISHED
    ]
    # The lineup's rows change in place (a name; an outside agent admitted to the main board,
    # which moves it between boards), a dozen rows.
    terms += [
        f"(SELECT MAX(updated_at) FROM {lineup})",  # nosec B608
        f"(SELECT {which} FROM {lineup} WHERE admitted_to_main_board = %s)",  # nosec B608
    ]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {', '.join(terms)}", [*UNFINISHED, True])
        row = cursor.fetchone()
    # An answer read under the seal is another answer than the same data's unsealed one.
    marks = "-".join([*("" if part is None else str(part) for part in row), cache_part()])
    # Hashed: the marks hold timestamps (spaces, colons), and the key suits every cache backend.
    return hashlib.sha256(marks.encode()).hexdigest()[:32]
