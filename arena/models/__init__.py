"""Cohorts, agents, decisions, positions, trades and snapshots: the benchmark's record. Money
is Decimal with 2 places, shares and prices 6; the invariants (cash ≥ 0, shares > 0, prices
in [0, 1]) are database constraints, so no code path can store a broken ledger.

One module a part of the record, each importing only those before it: `cohorts` (cohorts,
agents), `decisions` (runs, snapshots, decisions and their attempts), `books` (positions,
trades, portfolio snapshots) and `records` (checks, events, releases, outside agents' tokens).
Everything is imported from here: `from arena.models import Decision`."""

from __future__ import annotations

from arena.models.books import (
    AgentSnapshotRollup,
    PortfolioSnapshot,
    Position,
    SnapshotTick,
    Trade,
)
from arena.models.cohorts import (
    METHODOLOGY_VERSION,
    METHODOLOGY_VERSIONS,
    STARTING_BALANCE,
    Agent,
    Cohort,
)
from arena.models.decisions import (
    FIRST_ROUND,
    KEPT_ROUND,
    AnswerCommitment,
    Decision,
    DecisionAttempt,
    DecisionRun,
    DeterminismCheck,
    PanelForecast,
    SnapshotMarket,
)
from arena.models.records import (
    DataRelease,
    OutsideAgent,
    OutsideAgentToken,
    ResolutionCheck,
    SystemEvent,
)

__all__ = [
    "PanelForecast",
    "Agent",
    "AgentSnapshotRollup",
    "AnswerCommitment",
    "Cohort",
    "DataRelease",
    "Decision",
    "DecisionAttempt",
    "DecisionRun",
    "DeterminismCheck",
    "FIRST_ROUND",
    "KEPT_ROUND",
    "METHODOLOGY_VERSION",
    "METHODOLOGY_VERSIONS",
    "OutsideAgent",
    "OutsideAgentToken",
    "PortfolioSnapshot",
    "Position",
    "ResolutionCheck",
    "STARTING_BALANCE",
    "SnapshotMarket",
    "SnapshotTick",
    "SystemEvent",
    "Trade",
]
