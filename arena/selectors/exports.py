"""Reads for the bulk exports: each dataset's columns, and its rows streamed from the database.

A dataset is a table of the benchmark's record with a fixed, documented column list
(`DATASETS`): decisions (prompts, reasoning, the parsed answer), attempts (every call to a
model with its raw response), trades, positions, snapshots and bets. `Dataset.rows()` yields
plain tuples in column order, ordered by id, from one query read in chunks of `CHUNK_SIZE`
(a server-side cursor on PostgreSQL): memory stays flat whatever the number of rows, and the
same data always gives the same rows in the same order.

Every dataset takes the same bounds: `cohort` (its number), `since`/`until` (UTC days, both
inclusive, on the row's natural day: a trade's execution, a position's opening, a snapshot's
slot, a decision's week start — an attempt goes with its decision), `offline`, and
`still_held`: "exclude" leaves out the snapshots taken after its cohort completed of an agent
that still holds an open position (a baseline's or outside agent's long-dated bet, which the
ticks keep marking every 10 minutes until it settles). A data release reads its cohort so,
for its files to hold nothing that changes with every tick (arena/services/releases.py).

The bets dataset has one row per executed BUY, ordered by trade id, with exactly the columns of
`BET_COLUMNS`, enough to recompute the leaderboard's pooled Brier, its win rate and the
analytics (docs/exports.md says how). `market_price` is the stored `Trade.price`, the
side-correct price the bet executed at (`FrozenMarkets.quote`, or for an outside agent the
worse for it of that and `live_price`); `status` is `cancelled` for a cancelled market, else
`won`/`lost` from `Trade.side_won` once scored, else `open`; `brier` is empty until scored.

Offline stand-ins are never pooled with the real models (arena/selectors/standings.py), and the
columns are fixed, so the split is a filter: `offline="exclude"` keeps the rows of agents no
offline stand-in ever answered for, `"only"` the others, `"include"` (the default) both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any, Literal

from django.db import connection
from django.db.models import (
    BooleanField,
    CharField,
    Exists,
    F,
    OuterRef,
    Q,
    QuerySet,
    Value,
)
from django.db.models.expressions import Case, Combinable, When

from arena.models import (
    Decision,
    DecisionAttempt,
    PanelForecast,
    PortfolioSnapshot,
    Position,
    Trade,
)
from arena.selectors.export_cells import JSON_VALUE, FirstOfTwo, copied, pg_cell
from arena.selectors.standings import ANSWERED_OFFLINE
from markets.models import Market

Offline = Literal["include", "exclude", "only"]
OFFLINE_CHOICES: tuple[Offline, ...] = ("include", "exclude", "only")
StillHeld = Literal["include", "exclude"]
ColumnType = Literal[
    "integer", "string", "decimal", "float", "boolean", "timestamp", "date", "json"
]
CHUNK_SIZE = 5000
WIDE_CHUNK_ROWS = 100  # decisions and attempts: ~40 KB of prompt or response a row

MONEY, PRICE, SHARES = 2, 6, 6  # decimal places, as arena/models stores them


@dataclass(frozen=True)
class Column:
    """One column of a dataset: its name, value type and meaning.

    `scale` is a decimal column's number of places (every value has exactly that many), so
    a typed format (Parquet) can declare it; None for the other types.
    """

    name: str
    type: ColumnType
    description: str
    scale: int | None = None


@dataclass(frozen=True)
class Dataset:
    """A table of the export: its columns and how to read its rows under the bounds."""

    name: str
    description: str
    columns: tuple[Column, ...]
    # How the rows are read: the model's base queryset, one ORM path or expression per column,
    # the path from a row to its agent, and the row's natural day (a date or datetime field).
    base: Callable[[], QuerySet[Any]] = field(repr=False, compare=False)
    sources: tuple[str | Combinable, ...] = field(repr=False, compare=False)
    agent_path: str = field(default="agent", repr=False, compare=False)
    day_field: str = field(default="created_at", repr=False, compare=False)
    day_is_date: bool = field(default=False, repr=False, compare=False)
    # Rows read (and encoded) at a time: fewer for the datasets whose rows carry prompts and
    # raw responses (tens of KB each), so memory stays flat in bytes, not only in rows.
    chunk_rows: int = field(default=CHUNK_SIZE, repr=False, compare=False)
    # The rows are marks the ticks add (snapshots): what `still_held="exclude"` bounds.
    marks: bool = field(default=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if len(self.columns) != len(self.sources):
            raise ValueError(
                f"{self.name}: {len(self.columns)} columns, {len(self.sources)} sources"
            )

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def queryset(
        self,
        *,
        cohort: int | None = None,
        since: date | None = None,
        until: date | None = None,
        offline: Offline = "include",
        still_held: StillHeld = "include",
    ) -> QuerySet[Any]:
        """Return the bounded rows' queryset, ordered by id (no columns chosen yet)."""
        rows = self.base()
        if cohort is not None:
            rows = rows.filter(**{f"{self.agent_path}__cohort__number": cohort})
        if self.day_is_date:
            if since is not None:
                rows = rows.filter(**{f"{self.day_field}__gte": since})
            if until is not None:
                rows = rows.filter(**{f"{self.day_field}__lte": until})
        else:
            if since is not None:
                rows = rows.filter(**{f"{self.day_field}__gte": _day_start(since)})
            if until is not None and until < date.max:  # date.max: no day after it to stop at
                rows = rows.filter(
                    **{f"{self.day_field}__lt": _day_start(until + timedelta(days=1))}
                )
        if offline != "include":
            answered_offline = Decision.objects.filter(ANSWERED_OFFLINE).values("agent_id")
            offline_agents = Q(**{f"{self.agent_path}_id__in": answered_offline})
            rows = (
                rows.filter(offline_agents) if offline == "only" else rows.exclude(offline_agents)
            )
        if still_held == "exclude" and self.marks:
            holding = Position.objects.filter(
                agent=OuterRef(self.agent_path), status=Position.Status.OPEN
            )
            rows = rows.filter(
                Q(**{f"{self.agent_path}__cohort__completed_at__isnull": True})
                | Q(**{f"{self.day_field}__lte": F(f"{self.agent_path}__cohort__completed_at")})
                | ~Exists(holding)
            )
        return rows.order_by("pk")

    def rows(
        self,
        *,
        cohort: int | None = None,
        since: date | None = None,
        until: date | None = None,
        offline: Offline = "include",
        still_held: StillHeld = "include",
    ) -> Iterator[tuple[Any, ...]]:
        """Yield the bounded rows as tuples in column order, ordered by id.

        One query, read in chunks (flat memory). Decimals come as `Decimal`, timestamps as
        aware UTC datetimes, JSON as decoded values, a missing value as None.
        """
        bounded = self.queryset(
            cohort=cohort, since=since, until=until, offline=offline, still_held=still_held
        )
        return bounded.values_list(*self.sources).iterator(chunk_size=self.chunk_rows)

    def formatted_batches(
        self,
        fmt: str,
        *,
        batch_rows: int,
        cohort: int | None = None,
        since: date | None = None,
        until: date | None = None,
        offline: Offline = "include",
        still_held: StillHeld = "include",
    ) -> Iterator[tuple[int, bytes]] | None:
        """Return the bounded rows already written as CSV or JSON Lines by the database, in
        chunks of up to `batch_rows` lines (each with its count), or None where it cannot.

        PostgreSQL formats the cells itself and sends the lines with `COPY ... TO STDOUT`,
        several times faster than Python, in the same cell formats as
        arena/services/exports.py (a test compares the bytes). Only there, and only for
        datasets without JSON columns (PostgreSQL prints nested JSON with other spacing and key
        order); elsewhere the caller formats `rows()`.
        """
        if connection.vendor != "postgresql" or any(c.type == "json" for c in self.columns):
            return None
        if fmt not in ("csv", "jsonl"):
            return None
        bounded = self.queryset(
            cohort=cohort, since=since, until=until, offline=offline, still_held=still_held
        )
        cells = [pg_cell(c.type, s, fmt) for c, s in zip(self.columns, self.sources, strict=True)]
        sql, params = bounded.values_list(*cells).query.sql_with_params()
        if fmt == "jsonl":
            # Each line concatenated in SQL (measured twice as fast as row_to_json); strings
            # go through to_json, which escapes them as Python's json module does.
            aliases = [f"c{i}" for i in range(len(self.columns))]
            pieces = []
            for i, column in enumerate(self.columns):
                opener = "{" if i == 0 else ","
                pieces.append(f"'{opener}\"{column.name}\":'")
                pieces.append(JSON_VALUE[column.type].format(f"t.c{i}"))
            pieces.append("'}'")
            sql = (
                f"SELECT {' || '.join(pieces)} FROM ({sql}) AS t({', '.join(aliases)}) "
                "ORDER BY t.c0"  # the id: the order of the rows  # nosec B608
            )
            # One column written verbatim: CSV with a quote and a delimiter JSON text never
            # holds raw (it escapes control characters), so nothing is quoted or escaped.
            options = "FORMAT csv, QUOTE e'\\x01', DELIMITER e'\\x02'"
        else:
            options = "FORMAT csv"
        # COPY takes no bind parameters: psycopg binds them client-side, quoted.
        statement = connection.ops.compose_sql(sql, params)  # type: ignore[attr-defined]
        return copied(f"COPY ({statement}) TO STDOUT WITH ({options})", batch_rows)

    def count(
        self,
        *,
        cohort: int | None = None,
        since: date | None = None,
        until: date | None = None,
        offline: Offline = "include",
        still_held: StillHeld = "include",
    ) -> int:
        """Return how many rows `rows()` yields under the same bounds (one query)."""
        return self.queryset(
            cohort=cohort, since=since, until=until, offline=offline, still_held=still_held
        ).count()


def _day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def _decisions() -> QuerySet[Decision]:
    return Decision.objects.all()


def _attempts() -> QuerySet[DecisionAttempt]:
    return DecisionAttempt.objects.all()


def _trades() -> QuerySet[Trade]:
    return Trade.objects.all()


def _buys() -> QuerySet[Trade]:
    return Trade.objects.filter(kind=Trade.Kind.BUY, status=Trade.Status.EXECUTED)


def _positions() -> QuerySet[Position]:
    return Position.objects.all()


def _snapshots() -> QuerySet[PortfolioSnapshot]:
    return PortfolioSnapshot.objects.all()


def _forecasts() -> QuerySet[PanelForecast]:
    return PanelForecast.objects.all()


_IMPUTED = Case(
    When(probability__isnull=True, then=Value(True)),
    default=Value(False),
    output_field=BooleanField(),
)


def _dataset(
    name: str,
    description: str,
    base: Callable[[], QuerySet[Any]],
    columns: list[tuple[Column, str | Combinable]],
    **reading: Any,
) -> Dataset:
    return Dataset(
        name=name,
        description=description,
        columns=tuple(c for c, _ in columns),
        base=base,
        sources=tuple(s for _, s in columns),
        **reading,
    )


def _model(path: str = "agent") -> tuple[Column, str]:
    return Column("model", "string", "The model's stable id."), f"{path}__model__internal_id"


def _model_kind(path: str = "agent") -> tuple[Column, str]:
    return (
        Column(
            "model_kind",
            "string",
            "llm, baseline, or outside: an outside team's agent, deciding through the API.",
        ),
        f"{path}__model__kind",
    )


def _cohort(path: str = "agent") -> tuple[Column, str]:
    return Column("cohort", "integer", "The cohort's number."), f"{path}__cohort__number"


# The bet's status, computed in the query so each row comes out of the cursor ready to write.
BET_STATUS = Case(
    When(market__resolution=Market.Resolution.CANCELLED, then=Value("cancelled")),
    When(brier_score__isnull=True, then=Value("open")),
    When(side_won=True, then=Value("won")),
    default=Value("lost"),
    output_field=CharField(),
)


_SALT = (
    "The secret salt of the response's commitment, 64 hex digits; empty when it has none "
    "(no body, or stored before commitments were made)."
)
_COMMITMENT = (
    "The commitment published when the response was stored: the SHA-256 (hex) of the UTF-8 "
    "of commitment_salt, a newline and raw_response. Empty when none."
)
_LIVE_PRICE = (
    "An outside agent's order: the side-correct price on Polymarket at its submission; price "
    "is the worse of it and snapshot_price for the agent. Empty for the lineup."
)
_SNAPSHOT_PRICE = "The side-correct price in the run's frozen snapshot."
_BEFORE_FAIR_ENTRY = "An outside order executed at the snapshot's price, before fair entry."

BETS = _dataset(
    "bets",
    "One row per executed BUY: enough to recompute every model's pooled Brier and win rate.",
    _buys,
    [
        (Column("trade_id", "integer", "The trade's id."), "pk"),
        _model(),
        _model_kind(),
        _cohort(),
        (Column("decision_id", "integer", "The decision that placed the bet."), "decision_id"),
        (Column("market_id", "string", "Polymarket's id of the market."), "market__polymarket_id"),
        (Column("side", "string", "YES, NO, or the outcome's name."), "side"),
        (
            Column(
                "first_outcome",
                "string",
                "The market's first outcome (Yes of a Yes/No market) when it has exactly two, "
                "else empty. The frame of the Murphy terms: a bet whose side is not it "
                "(compared without case) forecasts 1 − implied_confidence that it wins.",
            ),
            FirstOfTwo(F("market__outcomes")),
        ),
        (Column("amount", "decimal", "USD paid.", MONEY), "amount"),
        (
            Column(
                "implied_confidence",
                "float",
                "amount / (25% of cash before the bet), in (0, 1]: the forecast scored.",
            ),
            "implied_confidence",
        ),
        (
            Column(
                "stated_probability",
                "decimal",
                "Methodology v2: the probability the bet stated that its side wins; empty "
                "under v1.",
                PRICE,
            ),
            "stated_probability",
        ),
        (
            Column(
                "market_price",
                "decimal",
                "The side-correct price the bet executed at: the run's frozen snapshot "
                "price, or for an outside agent the worse of it and live_price.",
                PRICE,
            ),
            "price",
        ),
        (Column("live_price", "decimal", _LIVE_PRICE, PRICE), "live_price"),
        (
            Column("status", "string", "open, won, lost or cancelled (refunded, never scored)."),
            BET_STATUS,
        ),
        (Column("brier", "float", "The bet's Brier score; empty until scored."), "brier_score"),
    ],
)

BET_COLUMNS = BETS.column_names

DECISIONS = _dataset(
    "decisions",
    "One row per agent and week: the prompts it was sent, its reasoning and parsed answer.",
    _decisions,
    [
        (Column("decision_id", "integer", "The decision's id."), "pk"),
        (Column("agent_id", "integer", "The agent (a model in a cohort)."), "agent_id"),
        _model(),
        _model_kind(),
        _cohort(),
        (Column("week_start", "date", "The Sunday (UTC) of the decision's week."), "week_start"),
        (Column("run_id", "integer", "The decision run whose frozen markets it saw."), "run_id"),
        (
            Column(
                "status",
                "string",
                "pending, running, done, retryable or skipped; awaiting: an outside agent's "
                "decision awaiting its submission.",
            ),
            "status",
        ),
        (Column("action", "string", "BET, SELL or HOLD; empty until decided."), "action"),
        (
            Column(
                "responder",
                "string",
                "Who answered: openrouter, offline, baseline, or outside (an outside team's "
                "agent, through the API).",
            ),
            "responder",
        ),
        (Column("prompt_version", "string", "The prompt template's version."), "prompt_version"),
        (Column("system_prompt", "string", "The system prompt sent."), "system_prompt"),
        (Column("user_prompt", "string", "The user prompt sent."), "user_prompt"),
        (Column("reasoning", "string", "The model's stated reasoning."), "reasoning"),
        (Column("parsed", "json", "The valid decision parsed from the answer."), "parsed"),
        (
            Column("parse_failed", "boolean", "Still invalid after the retries: a default HOLD."),
            "parse_failed",
        ),
        (Column("requested_model", "string", "The model id requested."), "requested_model"),
        (Column("response_model", "string", "The model id that answered."), "response_model"),
        (
            Column("upstream_provider", "string", "The provider that served it."),
            "upstream_provider",
        ),
        (Column("prompt_tokens", "integer", "Prompt tokens, all attempts."), "prompt_tokens"),
        (
            Column("completion_tokens", "integer", "Completion tokens, all attempts."),
            "completion_tokens",
        ),
        (Column("cost_usd", "decimal", "USD spent, all attempts.", 6), "cost_usd"),
        (Column("latency_ms", "integer", "Milliseconds waited, all attempts."), "latency_ms"),
        (Column("error", "string", "Why it failed, if it did."), "error"),
        (Column("tries", "integer", "Times the decision was claimed."), "tries"),
        (Column("parsed_try", "integer", "The try whose answer was executed."), "parsed_try"),
        (Column("finished_at", "timestamp", "When it was decided."), "finished_at"),
        (Column("created_at", "timestamp", "When the row was created."), "created_at"),
    ],
    day_field="week_start",
    day_is_date=True,
    chunk_rows=WIDE_CHUNK_ROWS,
)

ATTEMPTS = _dataset(
    "attempts",
    "One row per call to a model for a decision: the messages sent and the raw response.",
    _attempts,
    [
        (Column("attempt_id", "integer", "The attempt's id."), "pk"),
        (Column("decision_id", "integer", "The decision it answered."), "decision_id"),
        (Column("number", "integer", "1 for the first call, then each retry."), "number"),
        _model("decision__agent"),
        _model_kind("decision__agent"),
        _cohort("decision__agent"),
        (
            Column("responder", "string", "openrouter, offline, baseline or outside."),
            "responder",
        ),
        (Column("requested_model", "string", "The model id requested."), "requested_model"),
        (Column("request_messages", "json", "The chat messages sent."), "request_messages"),
        (
            Column(
                "request_parameters",
                "json",
                "The request's other body fields as sent to OpenRouter (model, temperature, "
                "max_tokens, reasoning budget, provider, usage), and cache_breakpoint: which "
                "message's first chars went marked cache_control. With request_messages, "
                "enough to replay the request. Empty when none went to OpenRouter.",
            ),
            "request_parameters",
        ),
        (Column("raw_response", "string", "The response body as received."), "raw_response"),
        (Column("commitment_salt", "string", _SALT), "commitment_salt"),
        (Column("commitment_sha256", "string", _COMMITMENT), "commitment__sha256"),
        (Column("response_text", "string", "The text that was parsed."), "response_text"),
        (
            Column("used_reasoning", "boolean", "The answer was read from the reasoning field."),
            "used_reasoning",
        ),
        (Column("response_model", "string", "The model id that answered."), "response_model"),
        (
            Column("upstream_provider", "string", "The provider that served it."),
            "upstream_provider",
        ),
        (Column("finish_reason", "string", "Why the model stopped."), "finish_reason"),
        (Column("prompt_tokens", "integer", "Prompt tokens."), "prompt_tokens"),
        (Column("completion_tokens", "integer", "Completion tokens."), "completion_tokens"),
        (Column("reasoning_tokens", "integer", "Reasoning tokens."), "reasoning_tokens"),
        (Column("cost_usd", "decimal", "USD spent.", 6), "cost_usd"),
        (Column("latency_ms", "integer", "Milliseconds waited."), "latency_ms"),
        (Column("api_error", "string", "The upstream's error, if any."), "api_error"),
        (Column("parse_error", "string", "Why the answer was invalid, if it was."), "parse_error"),
        (Column("parsed", "json", "The valid decision it gave."), "parsed"),
        (Column("valid", "boolean", "The answer parsed into a valid decision."), "valid"),
        (Column("started_at", "timestamp", "When the call was made."), "started_at"),
    ],
    agent_path="decision__agent",
    day_field="decision__week_start",
    day_is_date=True,
    chunk_rows=WIDE_CHUNK_ROWS,
)

TRADES = _dataset(
    "trades",
    "One row per order of a decision: BUYs and SELLs, executed or rejected with the reason.",
    _trades,
    [
        (Column("trade_id", "integer", "The trade's id."), "pk"),
        (Column("decision_id", "integer", "The decision that ordered it."), "decision_id"),
        (Column("agent_id", "integer", "The agent."), "agent_id"),
        _model(),
        _model_kind(),
        _cohort(),
        (Column("order_index", "integer", "The order's place in the answer."), "order_index"),
        (Column("try_number", "integer", "The decision's try that executed it."), "try_number"),
        (Column("kind", "string", "BUY or SELL."), "kind"),
        (Column("status", "string", "executed or rejected."), "status"),
        (Column("reject_reason", "string", "Why it was rejected."), "reject_reason"),
        (Column("market_id", "string", "Polymarket's id of the market."), "market__polymarket_id"),
        (
            Column("position_id", "integer", "The position it opened, added to or sold."),
            "position_id",
        ),
        (
            Column("requested_market_id", "string", "The market id as the model wrote it."),
            "requested_market_id",
        ),
        (
            Column("requested_position_id", "string", "The position id as the model wrote it."),
            "requested_position_id",
        ),
        (Column("side", "string", "YES, NO, or the outcome's name."), "side"),
        (
            Column("requested_amount", "decimal", "USD asked for (a BUY).", MONEY),
            "requested_amount",
        ),
        (
            Column("requested_percentage", "decimal", "Percent asked to sell (a SELL).", 4),
            "requested_percentage",
        ),
        (
            Column(
                "price",
                "decimal",
                "The side-correct price the order executed at; every figure uses it.",
                PRICE,
            ),
            "price",
        ),
        (Column("snapshot_price", "decimal", _SNAPSHOT_PRICE, PRICE), "snapshot_price"),
        (Column("before_fair_entry", "boolean", _BEFORE_FAIR_ENTRY), "before_fair_entry"),
        (Column("live_price", "decimal", _LIVE_PRICE, PRICE), "live_price"),
        (Column("shares", "decimal", "Shares bought or sold.", SHARES), "shares"),
        (
            Column("amount", "decimal", "Cash moved: paid (BUY) or received (SELL).", MONEY),
            "amount",
        ),
        (Column("cash_before", "decimal", "The agent's cash before.", MONEY), "cash_before"),
        (Column("cash_after", "decimal", "The agent's cash after.", MONEY), "cash_after"),
        (
            Column("implied_confidence", "float", "A BUY's implied confidence."),
            "implied_confidence",
        ),
        (
            Column("cost_basis_released", "decimal", "A SELL's share of cost basis.", MONEY),
            "cost_basis_released",
        ),
        (Column("realized_pnl", "decimal", "A SELL's realized P/L.", MONEY), "realized_pnl"),
        (Column("brier", "float", "A BUY's Brier score once scored."), "brier_score"),
        (Column("side_won", "boolean", "Whether the side won, once scored."), "side_won"),
        (Column("scored_at", "timestamp", "When it was scored."), "scored_at"),
        (Column("created_at", "timestamp", "When it was executed or rejected."), "created_at"),
    ],
)

POSITIONS = _dataset(
    "positions",
    "One row per position: shares an agent held in one side of one market, and its outcome.",
    _positions,
    [
        (Column("position_id", "integer", "The position's id."), "pk"),
        (Column("agent_id", "integer", "The agent."), "agent_id"),
        _model(),
        _model_kind(),
        _cohort(),
        (Column("market_id", "string", "Polymarket's id of the market."), "market__polymarket_id"),
        (Column("side", "string", "YES, NO, or the outcome's name."), "side"),
        (
            Column(
                "outcome_index",
                "integer",
                "The side's index in the market's outcomes when it was opened (settlement and "
                "valuation find the outcome by its name).",
            ),
            "outcome_index",
        ),
        (Column("status", "string", "open, closed (sold), settled or cancelled."), "status"),
        (
            Column(
                "shares",
                "decimal",
                "Shares held: those a sell left (0 once sold out); a settled or refunded "
                "position keeps the shares it held.",
                SHARES,
            ),
            "shares",
        ),
        (
            Column(
                "cost_basis",
                "decimal",
                "USD paid for the shares held: a sell takes off the cost basis it releases; a "
                "settled or refunded position keeps it.",
                MONEY,
            ),
            "cost_basis",
        ),
        (
            Column(
                "realized_pnl",
                "decimal",
                "P/L realized: each sell's proceeds − the cost basis it released, and at "
                "settlement the payout − the cost basis held.",
                MONEY,
            ),
            "realized_pnl",
        ),
        (
            Column(
                "last_price",
                "decimal",
                "Side-correct price of its last trade, a buy or a sell.",
                PRICE,
            ),
            "last_price",
        ),
        (
            Column(
                "settlement_value",
                "decimal",
                "USD paid out at settlement: $1 a winning share (cents down), $0 a losing one, "
                "the cost basis when refunded; empty before.",
                MONEY,
            ),
            "settlement_value",
        ),
        (Column("opened_at", "timestamp", "When it was opened."), "opened_at"),
        (
            Column("closed_at", "timestamp", "When it was sold out, settled or refunded."),
            "closed_at",
        ),
    ],
    day_field="opened_at",
)

SNAPSHOTS = _dataset(
    "snapshots",
    "One row per agent and 10-minute slot: the portfolio marked to market.",
    _snapshots,
    [
        (Column("snapshot_id", "integer", "The snapshot's id."), "pk"),
        (Column("agent_id", "integer", "The agent."), "agent_id"),
        _model(),
        _model_kind(),
        _cohort(),
        (Column("snapshot_timestamp", "timestamp", "The slot."), "snapshot_timestamp"),
        (Column("cash", "decimal", "USD in cash.", MONEY), "cash"),
        (
            Column("positions_value", "decimal", "Open positions at market.", MONEY),
            "positions_value",
        ),
        (Column("total_value", "decimal", "cash + positions_value.", MONEY), "total_value"),
        (Column("total_pnl", "decimal", "total_value − starting balance.", MONEY), "total_pnl"),
        (Column("total_pnl_percent", "decimal", "total_pnl in percent.", 4), "total_pnl_percent"),
        (Column("brier", "float", "Mean Brier of the bets resolved so far."), "brier_score"),
        (Column("resolved_bets", "integer", "Bets resolved so far."), "resolved_bets"),
        (
            Column("prices_stale", "boolean", "The refresh failed: valued at last known prices."),
            "prices_stale",
        ),
    ],
    day_field="snapshot_timestamp",
    marks=True,
)

FORECASTS = _dataset(
    "forecasts",
    "Methodology v2: one row per agent, week and question of the week's forecast panel: the "
    "stated probability of YES, its reference price b and, once resolved, its scores.",
    _forecasts,
    [
        (Column("forecast_id", "integer", "The forecast's id."), "pk"),
        (Column("run_id", "integer", "The run whose snapshot the prompt showed."), "run_id"),
        (Column("decision_id", "integer", "The decision whose answer gave it."), "decision_id"),
        (Column("agent_id", "integer", "The agent."), "agent_id"),
        _model(),
        _model_kind(),
        _cohort(),
        (Column("week_start", "date", "The week (its Sunday, UTC)."), "week_start"),
        (
            Column("market_id", "string", "Polymarket's id of the question."),
            "market__polymarket_id",
        ),
        (Column("question_index", "integer", "Its place in the week's panel, from 0."), "position"),
        (
            Column(
                "probability",
                "decimal",
                "The stated probability that the market resolves YES (its first outcome), "
                "strictly between 0 and 1; empty when missing or invalid (imputed at b).",
                PRICE,
            ),
            "probability",
        ),
        (Column("imputed", "boolean", "No valid forecast was stated: b stands in."), _IMPUTED),
        (
            Column("problem", "string", "Why none was stated: missing, or what was wrong."),
            "problem",
        ),
        (
            Column(
                "b",
                "decimal",
                "The reference price: the YES price when the prompt froze (the run's snapshot; "
                "for an outside agent, live at its submission). Empty: not scored.",
                PRICE,
            ),
            "reference_price",
        ),
        (Column("b_source", "string", "snapshot or live."), "reference"),
        (
            Column("outcome", "integer", "1 when YES happened, 0 when not; empty until resolved."),
            "outcome",
        ),
        (
            Column("brier", "float", "(p − outcome)², p the probability or, imputed, b."),
            "brier_score",
        ),
        (Column("log_score", "float", "−ln of p's likelihood of the outcome."), "log_score"),
    ],
    day_field="week_start",
    day_is_date=True,
)

DATASETS: dict[str, Dataset] = {
    d.name: d for d in (DECISIONS, ATTEMPTS, TRADES, POSITIONS, SNAPSHOTS, BETS, FORECASTS)
}

BetRow = dict[str, int | str | Decimal | float | None]


def bet_rows(
    *,
    cohort: int | None = None,
    since: date | None = None,
    until: date | None = None,
    offline: Offline = "include",
) -> Iterator[BetRow]:
    """Yield a row per executed BUY as a dict keyed by `BET_COLUMNS`, ordered by trade id.

    The bets dataset's rows (`DATASETS["bets"].rows`), keyed for callers that read cells by
    name. Bounded by the cohort number and/or by the UTC day the bet was placed.
    """
    for row in BETS.rows(cohort=cohort, since=since, until=until, offline=offline):
        yield dict(zip(BET_COLUMNS, row, strict=True))
