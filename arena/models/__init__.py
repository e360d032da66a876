"""Cohorts, agents, decisions, positions, trades and snapshots: the benchmark's record. Money
is Decimal with 2 places, shares and prices 6; the invariants (cash ≥ 0, shares > 0, prices
in [0, 1]) are database constraints, so no code path can store a broken ledger."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import Q

from agents.models import BenchmarkModel
from arena.money import money_field, percent_field, price_field, shares_field
from arena.seal import SealedManager
from markets.models import Market

STARTING_BALANCE = Decimal("10000.00")

METHODOLOGY_VERSION = "v1"
"""The methodology new cohorts run: spec 002's protocol ("Version: v1") with 001's formulas, as
docs/methodology.md states them. Stored on each cohort; bumped only for a change 002 says needs
it, never for the prompt's wording (PROMPT_VERSION, agents/prompts.py, stored per decision)."""


class Cohort(models.Model):
    """One weekly competition: starts Sunday 00:00 UTC, one per normalized UTC week start."""

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        COMPLETED = "completed", "Completed"

    number = models.PositiveIntegerField(unique=True)
    week_start = models.DateField(unique=True, help_text="The Sunday (UTC) the cohort starts.")
    started_at = models.DateTimeField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    completed_at = models.DateTimeField(null=True, blank=True)
    methodology_version = models.CharField(max_length=8, default=METHODOLOGY_VERSION)
    starting_balance = money_field(default=STARTING_BALANCE)
    release_state = models.CharField(
        max_length=64,
        blank=True,
        help_text="SHA-256 of what can still change in the completed cohort's data (its "
        "positions' settlement, its trades' scores, its markets' resolutions, its decisions' "
        "status) when it was last compared with its latest data release; a publish run reads "
        "a released cohort again only when this differs (arena.selectors.releases).",
    )

    class Meta:
        ordering = ["-week_start"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status="active") | Q(completed_at__isnull=False),
                name="cohort_completed_has_time",
            )
        ]

    def __str__(self) -> str:
        return f"Cohort {self.number} ({self.week_start:%Y-%m-%d})"


class Agent(models.Model):
    """One lineup model's participant in one cohort, with its own cash."""

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        BANKRUPT = "bankrupt", "Bankrupt"

    cohort = models.ForeignKey(Cohort, on_delete=models.PROTECT, related_name="agents")
    model = models.ForeignKey(BenchmarkModel, on_delete=models.PROTECT, related_name="agents")
    cash = money_field(default=STARTING_BALANCE)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = SealedManager["Agent"]()

    class Meta:
        ordering = ["cohort", "-model__kind", "model__display_order"]
        constraints = [
            models.UniqueConstraint(
                fields=["cohort", "model"], name="one_agent_per_model_per_cohort"
            ),
            models.CheckConstraint(condition=Q(cash__gte=0), name="agent_cash_not_negative"),
        ]

    def __str__(self) -> str:
        return f"{self.model.display_name} in cohort {self.cohort.number}"


class DecisionRun(models.Model):
    """One decision run and the frozen market snapshot every decision of it saw."""

    week_start = models.DateField()
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    queued_at = models.DateTimeField(null=True, blank=True)  # every due agent's task sent
    source = models.CharField(max_length=16)
    universe_size = models.PositiveIntegerField(default=0)
    sync_summary = models.TextField(blank=True)

    class Meta:
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["week_start", "-started_at"], name="run_week")]

    def __str__(self) -> str:
        return f"run {self.pk} for week {self.week_start:%Y-%m-%d}"


class SnapshotMarket(models.Model):
    """A market as it stood when a run froze it. `rank` 1..500 is the top-by-volume universe
    shown to agents; markets held by agents outside it are frozen too (rank null) so every
    price a decision saw is kept."""

    run = models.ForeignKey(DecisionRun, on_delete=models.CASCADE, related_name="markets")
    market = models.ForeignKey(Market, on_delete=models.PROTECT, related_name="+")
    rank = models.PositiveIntegerField(null=True, blank=True)
    polymarket_id = models.CharField(max_length=32)
    question = models.TextField()
    category = models.CharField(max_length=64)
    outcomes = models.JSONField()
    outcome_prices = models.JSONField()
    volume = models.DecimalField(max_digits=20, decimal_places=6)
    close_date = models.DateTimeField(null=True, blank=True)
    closed = models.BooleanField(default=False)

    class Meta:
        ordering = ["run", "rank"]
        constraints = [
            models.UniqueConstraint(fields=["run", "market"], name="snapshot_market_once_per_run")
        ]

    def __str__(self) -> str:
        return f"{self.polymarket_id} in run {self.run_id}"


class Decision(models.Model):
    """An agent's decision for one week: claimed before any network call, kept whole."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        RETRYABLE = "retryable", "Retryable failure"
        SKIPPED = "skipped", "Skipped"
        # An outside agent's decision between the run that froze its prompt and its
        # submission through the API (or the window's close): no run claims it.
        AWAITING = "awaiting", "Awaiting submission"

    class Action(models.TextChoices):
        BET = "BET", "Bet"
        SELL = "SELL", "Sell"
        HOLD = "HOLD", "Hold"

    class Responder(models.TextChoices):
        OPENROUTER = "openrouter", "OpenRouter"
        OFFLINE = "offline", "Offline agent"
        BASELINE = "baseline", "Baseline"
        OUTSIDE = "outside", "Outside agent (API)"

    CLAIMABLE = (Status.PENDING, Status.RETRYABLE)
    # After these an agent owes nothing more for the week.
    DECIDED = (Status.DONE, Status.SKIPPED)

    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="decisions")
    cohort = models.ForeignKey(Cohort, on_delete=models.PROTECT, related_name="decisions")
    week_start = models.DateField()
    run = models.ForeignKey(
        DecisionRun, on_delete=models.PROTECT, null=True, blank=True, related_name="decisions"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    action = models.CharField(max_length=8, choices=Action.choices, blank=True)
    reasoning = models.TextField(blank=True)
    parsed = models.JSONField(null=True, blank=True)
    parse_failed = models.BooleanField(
        default=False, help_text="Still invalid after the retries: stored as a default HOLD."
    )
    no_submission = models.BooleanField(
        default=False,
        help_text="An outside agent submitted nothing in the decision window: a default HOLD.",
    )
    responder = models.CharField(max_length=16, choices=Responder.choices, blank=True)
    prompt_version = models.CharField(max_length=16, blank=True)
    system_prompt = models.TextField(blank=True)
    user_prompt = models.TextField(blank=True)
    requested_model = models.CharField(max_length=200, blank=True)
    response_model = models.CharField(max_length=200, blank=True)
    upstream_provider = models.CharField(max_length=100, blank=True)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    cached_prompt_tokens = models.PositiveIntegerField(
        null=True, blank=True, help_text="Of the prompt tokens: read from the provider's cache."
    )
    cache_write_tokens = models.PositiveIntegerField(
        null=True, blank=True, help_text="Of the prompt tokens: written to the provider's cache."
    )
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    traceback = models.TextField(
        blank=True, help_text="Where an unexpected failure happened (last frames), if one did."
    )
    tries = models.PositiveSmallIntegerField(default=0, help_text="Times this row was claimed.")
    # The claim (try) whose valid answer `parsed` holds: its orders execute once, as trades
    # with this try number, and a reclaim after a crash resumes them.
    parsed_try = models.PositiveSmallIntegerField(null=True, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    # The Celery task that holds (or last held) the claim; blank outside a task. The same
    # task delivered again after its worker was lost takes its claim over at once.
    claimed_by = models.CharField(max_length=64, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = SealedManager["Decision"]()

    class Meta:
        ordering = ["-week_start", "agent"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "cohort", "week_start"], name="one_decision_per_agent_week"
            )
        ]
        indexes = [models.Index(fields=["status", "week_start"], name="decision_status_week")]

    def __str__(self) -> str:
        return f"{self.agent} week {self.week_start:%Y-%m-%d}: {self.action or self.status}"

    @property
    def is_offline(self) -> bool:
        return self.responder == self.Responder.OFFLINE


class DecisionAttempt(models.Model):
    """One call to a model for a decision: what was sent, what came back, what was wrong."""

    decision = models.ForeignKey(Decision, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveSmallIntegerField()
    run = models.ForeignKey(DecisionRun, on_delete=models.PROTECT, null=True, related_name="+")
    responder = models.CharField(max_length=16)
    requested_model = models.CharField(max_length=200, blank=True)
    request_messages = models.JSONField()
    request_parameters = models.JSONField(
        null=True,
        blank=True,
        help_text=(
            "Every other field of the request body sent to OpenRouter (model, temperature, "
            "max_tokens, reasoning, provider, usage) and where its cache breakpoint went: with "
            "the messages, the request exactly as sent. None when no request went to OpenRouter."
        ),
    )
    raw_response = models.TextField(blank=True, help_text="The response body as received.")
    response_text = models.TextField(blank=True, help_text="The text that was parsed.")
    used_reasoning = models.BooleanField(default=False)
    response_model = models.CharField(max_length=200, blank=True)
    upstream_provider = models.CharField(max_length=100, blank=True)
    finish_reason = models.CharField(max_length=32, blank=True)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    cached_prompt_tokens = models.PositiveIntegerField(
        null=True, blank=True, help_text="Of the prompt tokens: read from the provider's cache."
    )
    cache_write_tokens = models.PositiveIntegerField(
        null=True, blank=True, help_text="Of the prompt tokens: written to the provider's cache."
    )
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    reasoning_tokens = models.PositiveIntegerField(null=True, blank=True)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    api_error = models.TextField(blank=True)
    parse_error = models.TextField(blank=True)
    error = models.TextField(
        blank=True, help_text="An unexpected failure while handling this attempt, if any."
    )
    traceback = models.TextField(blank=True)
    parsed = models.JSONField(null=True, blank=True, help_text="The valid decision it gave.")
    valid = models.BooleanField(default=False)
    started_at = models.DateTimeField()
    commitment_salt = models.CharField(
        max_length=64,
        blank=True,
        help_text="The secret of the response's commitment (AnswerCommitment): 32 random "
        "bytes, hex. Revealed with the response; blank for one with no body or stored before "
        "commitments were made.",
    )

    objects = SealedManager["DecisionAttempt"]()

    class Meta:
        ordering = ["decision", "number"]
        constraints = [
            models.UniqueConstraint(fields=["decision", "number"], name="attempt_number_unique")
        ]

    def __str__(self) -> str:
        return f"attempt {self.number} of decision {self.decision_id}"


class AnswerCommitment(models.Model):
    """The public commitment to a stored response, made in the transaction that stored it:
    `sha256` of the attempt's salt and raw response (`evidence.commitment_sha256`). Public while
    the week's attempts are sealed; once shown, anyone recomputes it from salt and response."""

    attempt = models.OneToOneField(
        DecisionAttempt, on_delete=models.CASCADE, related_name="commitment"
    )
    decision = models.ForeignKey(Decision, on_delete=models.CASCADE, related_name="commitments")
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="+")
    cohort = models.ForeignKey(Cohort, on_delete=models.PROTECT, related_name="+")
    week_start = models.DateField()
    attempt_number = models.PositiveSmallIntegerField()
    sha256 = models.CharField(max_length=64, help_text="Hex SHA-256 of salt, newline, response.")
    committed_at = models.DateTimeField(help_text="When the response was stored.")

    class Meta:
        ordering = ["-committed_at", "-pk"]
        indexes = [models.Index(fields=["week_start", "-committed_at"], name="commitment_week")]

    def __str__(self) -> str:
        return f"commitment {self.sha256[:12]} to attempt {self.attempt_id}"


class Position(models.Model):
    """Shares an agent holds in one side of one market. One OPEN position per market per side;
    a new bet after a full sell opens a new position."""

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        CLOSED = "closed", "Closed (sold)"
        SETTLED = "settled", "Settled"
        CANCELLED = "cancelled", "Cancelled (refunded)"

    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="positions")
    market = models.ForeignKey(Market, on_delete=models.PROTECT, related_name="positions")
    side = models.CharField(max_length=255, help_text="YES, NO, or the outcome name.")
    outcome_index = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    shares = shares_field()
    cost_basis = money_field()
    realized_pnl = money_field(default=Decimal("0"))
    last_price = price_field(null=True, blank=True, help_text="Last usable side-correct price.")
    settlement_value = money_field(null=True, blank=True)
    opened_at = models.DateTimeField()
    closed_at = models.DateTimeField(null=True, blank=True)

    objects = SealedManager["Position"]()

    class Meta:
        ordering = ["agent", "opened_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "market", "side"],
                condition=Q(status="open"),
                name="one_open_position_per_market_side",
            ),
            models.CheckConstraint(
                condition=~Q(status="open") | Q(shares__gt=0), name="open_position_has_shares"
            ),
            models.CheckConstraint(condition=Q(shares__gte=0), name="position_shares_not_negative"),
            models.CheckConstraint(
                condition=Q(cost_basis__gte=0), name="position_cost_not_negative"
            ),
            models.CheckConstraint(
                condition=Q(last_price__isnull=True)
                | (Q(last_price__gte=0) & Q(last_price__lte=1)),
                name="position_price_in_unit_interval",
            ),
        ]
        indexes = [models.Index(fields=["status", "market"], name="position_status_market")]

    def __str__(self) -> str:
        return f"{self.side} {self.shares} of {self.market.polymarket_id}"

    @property
    def avg_entry_price(self) -> Decimal | None:
        return (
            (self.cost_basis / self.shares).quantize(Decimal("0.000001")) if self.shares else None
        )


class Trade(models.Model):
    """One order of a decision, executed or rejected with its reason, with every input kept."""

    class Kind(models.TextChoices):
        BUY = "BUY", "Buy"
        SELL = "SELL", "Sell"

    class Status(models.TextChoices):
        EXECUTED = "executed", "Executed"
        REJECTED = "rejected", "Rejected"

    decision = models.ForeignKey(Decision, on_delete=models.PROTECT, related_name="trades")
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="trades")
    order_index = models.PositiveSmallIntegerField()
    try_number = models.PositiveSmallIntegerField(default=1)
    kind = models.CharField(max_length=4, choices=Kind.choices)
    status = models.CharField(max_length=16, choices=Status.choices)
    reject_reason = models.TextField(blank=True)
    market = models.ForeignKey(
        Market, on_delete=models.PROTECT, null=True, blank=True, related_name="trades"
    )
    position = models.ForeignKey(
        Position, on_delete=models.PROTECT, null=True, blank=True, related_name="trades"
    )
    requested_market_id = models.CharField(max_length=64, blank=True)
    requested_position_id = models.CharField(max_length=64, blank=True)
    side = models.CharField(max_length=255, blank=True)
    requested_amount = money_field(null=True, blank=True)
    requested_percentage = models.DecimalField(
        max_digits=7, decimal_places=4, null=True, blank=True
    )
    # The side-correct prices: executed at (every figure uses it), frozen in the run's
    # snapshot, and (an outside order's) live at submission; it executed at the worse of those.
    price = price_field(null=True, blank=True, help_text="Executed at: every figure uses it.")
    snapshot_price = price_field(null=True, blank=True, help_text="In the frozen snapshot.")
    live_price = price_field(null=True, blank=True, help_text="An outside order's, at submission.")
    shares = shares_field(null=True, blank=True)
    # An outside order executed at the snapshot's price before fair entry (`mend_past`).
    before_fair_entry = models.BooleanField(default=False, db_default=False)
    amount = money_field(
        null=True, blank=True, help_text="Cash moved: paid for a buy, received for a sell."
    )
    cash_before = money_field(null=True, blank=True)
    cash_after = money_field(null=True, blank=True)
    implied_confidence = models.FloatField(null=True, blank=True)
    cost_basis_released = money_field(null=True, blank=True)
    realized_pnl = money_field(null=True, blank=True)
    brier_score = models.FloatField(null=True, blank=True)
    side_won = models.BooleanField(null=True, blank=True)
    scored_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()

    objects = SealedManager["Trade"]()

    class Meta:
        ordering = ["created_at", "order_index"]
        constraints = [
            # Each order of a decision's answer executes (or is rejected) once: the key that
            # makes a reclaim after a crash unable to execute an order twice.
            models.UniqueConstraint(
                fields=["decision", "try_number", "order_index"], name="trade_once_per_order"
            ),
            models.CheckConstraint(
                condition=Q(price__isnull=True) | (Q(price__gte=0) & Q(price__lte=1)),
                name="trade_price_in_unit_interval",
            ),
            models.CheckConstraint(
                condition=~Q(status="executed") | Q(shares__gt=0), name="executed_trade_has_shares"
            ),
            models.CheckConstraint(
                condition=Q(cash_after__isnull=True) | Q(cash_after__gte=0),
                name="trade_cash_after_not_negative",
            ),
        ]
        indexes = [
            models.Index(fields=["agent", "status"], name="trade_agent_status"),
            models.Index(fields=["market", "kind", "status"], name="trade_market_kind"),
            # The analytics' watermark reads the latest scoring time
            # (arena/selectors/analytics/cache.py).
            models.Index(fields=["scored_at"], name="trade_scored_at"),
            # Every snapshot's Brier aggregate reads the scored buys of the agents it marks
            # (arena/services/marking.py, `_SCORED_BUYS`) from this index alone.
            models.Index(
                fields=["agent", "brier_score"],
                name="trade_agent_brier",
                condition=Q(kind="BUY", status="executed", brier_score__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.side} {self.status}"


class PortfolioSnapshot(models.Model):
    """An agent's marked-to-market portfolio at one 10-minute slot (`snapshot_timestamp`)."""

    # No index of its own: the unique (agent, snapshot_timestamp) index serves every read by
    # agent, and a second index on agent alone misled the planner into scanning an agent's
    # whole history for a day's window (and cost every tick's insert a third index).
    agent = models.ForeignKey(
        Agent, on_delete=models.CASCADE, related_name="snapshots", db_index=False
    )
    snapshot_timestamp = models.DateTimeField()
    cash = money_field()
    positions_value = money_field()
    total_value = money_field()
    total_pnl = money_field()
    total_pnl_percent = percent_field()
    brier_score = models.FloatField(
        null=True, blank=True, help_text="Mean of resolved bets so far."
    )
    resolved_bets = models.PositiveIntegerField(default=0)
    prices_stale = models.BooleanField(
        default=False, help_text="The price refresh failed: valued at the last known prices."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = SealedManager["PortfolioSnapshot"]()

    class Meta:
        ordering = ["agent", "snapshot_timestamp"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "snapshot_timestamp"], name="one_snapshot_per_agent_slot"
            )
        ]
        # The unique index (agent, snapshot_timestamp) also serves the chart's range scans.

    def __str__(self) -> str:
        return f"{self.agent_id} @ {self.snapshot_timestamp:%Y-%m-%d %H:%M}"


class AgentSnapshotRollup(models.Model):
    """An agent's snapshots over one UTC hour or day, summed up for the charts: the last
    snapshot's figures (a bucket's value is its last, as the charts draw it), the range of
    values and how many snapshots. Kept by every snapshot write (arena.services.rollup) and
    rebuilt from the snapshots by `manage.py rebuild_snapshot_rollup`."""

    class Resolution(models.TextChoices):
        HOUR = "hour", "Hour"
        DAY = "day", "Day"

    # No index of its own: the unique (agent, resolution, bucket_start) index serves.
    agent = models.ForeignKey(
        Agent, on_delete=models.CASCADE, related_name="snapshot_rollups", db_index=False
    )
    resolution = models.CharField(max_length=4, choices=Resolution.choices)
    bucket_start = models.DateTimeField()
    first_at = models.DateTimeField(help_text="The bucket's first snapshot.")
    last_at = models.DateTimeField(help_text="The bucket's last snapshot: the figures below.")
    total_value = money_field()
    total_pnl = money_field()
    total_pnl_percent = percent_field()
    min_total_value = money_field()
    max_total_value = money_field()
    snapshots = models.PositiveIntegerField()

    objects = SealedManager["AgentSnapshotRollup"]()

    class Meta:
        ordering = ["agent", "resolution", "bucket_start"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "resolution", "bucket_start"], name="one_rollup_per_agent_bucket"
            )
        ]

    def __str__(self) -> str:
        return f"{self.agent_id} {self.resolution} @ {self.bucket_start:%Y-%m-%d %H:%M}"


class SnapshotTick(models.Model):
    """One mark-to-market tick: what it refreshed, whether the refresh failed, and when it heard
    the held markets, once, not on each market's row (`selectors.markets.market_heard_at`)."""

    slot = models.DateTimeField(unique=True)
    markets_refreshed = models.PositiveIntegerField(default=0)
    snapshots_written = models.PositiveIntegerField(default=0)
    refresh_error = models.TextField(blank=True)
    # When the refresh heard the held markets, changed or not (empty: it failed, or nothing
    # was held); and the held markets it did not bring back (not returned, or refused).
    refreshed_at = models.DateTimeField(null=True, blank=True)
    not_refreshed = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-slot"]

    def __str__(self) -> str:
        return f"tick {self.slot:%Y-%m-%d %H:%M}"


class ResolutionCheck(models.Model):
    """One resolution check: how many markets it asked about and what became of them, so the
    status page can say what the last check did even when it settled nothing."""

    checked_at = models.DateTimeField()
    markets_checked = models.PositiveIntegerField(default=0)
    resolved = models.JSONField(default=list, blank=True)  # Polymarket ids settled
    cancelled = models.JSONField(default=list, blank=True)  # refunded as ambiguous
    failed = models.JSONField(default=list, blank=True)  # left open for the next check
    completed_cohorts = models.JSONField(default=list, blank=True)  # cohort ids
    error = models.TextField(blank=True)  # the fetch failed: nothing was settled
    missing = models.JSONField(
        default=list,
        blank=True,
        help_text="[{id, reason}] for every market asked for that the source did not return",
    )
    still_open = models.JSONField(
        default=list,
        blank=True,
        help_text="[{id, why, reason}] for every market returned and left open, and why",
    )

    class Meta:
        ordering = ["-checked_at", "-pk"]
        indexes = [models.Index(fields=["-checked_at"], name="resolution_check_recent")]

    def __str__(self) -> str:
        return f"resolution check {self.checked_at:%Y-%m-%d %H:%M}"

    @property
    def ok(self) -> bool:
        return not self.error and not self.failed


# How a determinism check replays a decision (DeterminismCheck.method).
KEPT_ROUND = "kept_round"
FIRST_ROUND = "first_round"


class DeterminismCheck(models.Model):
    """A stored prompt re-sent to the same model at temperature 0: did the decision repeat?"""

    decision = models.ForeignKey(
        Decision, on_delete=models.CASCADE, related_name="determinism_checks"
    )
    requested_model = models.CharField(max_length=200)
    response_model = models.CharField(max_length=200, blank=True)
    matches = models.BooleanField(null=True, help_text="Null when the call or the parse failed.")
    original = models.JSONField(null=True)
    repeated = models.JSONField(null=True)
    raw_response = models.TextField(blank=True)
    error = models.TextField(blank=True)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    checked_at = models.DateTimeField()
    # kept_round: the kept round's request re-sent exactly; first_round: the first attempt's
    # prompt against the final answer (the earlier method, which measured nothing: void).
    method = models.CharField(max_length=16, default=KEPT_ROUND, db_default=KEPT_ROUND)
    void_reason = models.TextField(blank=True, db_default="")  # why it counts for nothing

    objects = SealedManager["DeterminismCheck"]()

    class Meta:
        ordering = ["-checked_at"]

    def __str__(self) -> str:
        return f"determinism check of decision {self.decision_id}: {self.matches}"


class SystemEvent(models.Model):
    """One thing the system did or suffered, kept for operators and the status page: runs
    started and finished, an agent's failure with its reason, retries, reclaims,
    settlements, cancellations, sync failures."""

    class Kind(models.TextChoices):
        RUN_STARTED = "run_started", "Decision run started"
        RUN_FINISHED = "run_finished", "Decision run finished"
        COHORT_STARTED = "cohort_started", "Cohort started"
        COHORT_COMPLETED = "cohort_completed", "Cohort completed"
        COHORT_MISSED = "cohort_missed", "Cohort start missed"
        DECISION_FAILED = "decision_failed", "Decision failed"
        DECISION_RETRIED = "decision_retried", "Decision retried"
        DECISION_RECLAIMED = "decision_reclaimed", "Decision reclaimed after a dead claim"
        MARKET_SETTLED = "market_settled", "Market settled"
        MARKET_CANCELLED = "market_cancelled", "Market cancelled (refunded)"
        SETTLEMENT_FAILED = "settlement_failed", "Settlement failed"
        OUTCOMES_CHANGED = "outcomes_changed", "Market's outcomes changed: not settled"
        RESOLUTION_CHANGED = "resolution_changed", "Settled market's resolution changed upstream"
        SYNC_FAILED = "sync_failed", "Market sync failed"
        RESOLUTION_CHECK_FAILED = "resolution_check_failed", "Resolution check failed"
        MARKET_MISSING = "market_missing", "Market not returned by the resolution check"
        RELEASE_PUBLISHED = "release_published", "Data release published"
        RELEASE_FAILED = "release_failed", "Data release failed"
        STAFF_ACTION = "staff_action", "Staff action in the admin"
        OUTSIDE_REFUSED = "outside_refused", "Outside agent request refused"

    class Level(models.TextChoices):
        INFO = "info", "Info"
        WARNING = "warning", "Warning"
        ERROR = "error", "Error"

    kind = models.CharField(max_length=32, choices=Kind.choices)
    level = models.CharField(max_length=8, choices=Level.choices, default=Level.INFO)
    message = models.TextField()
    cohort = models.ForeignKey(
        Cohort, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    agent = models.ForeignKey(
        Agent, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    decision = models.ForeignKey(
        Decision, on_delete=models.SET_NULL, null=True, blank=True, related_name="events"
    )
    run = models.ForeignKey(
        DecisionRun, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    market = models.ForeignKey(
        Market, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()

    objects = SealedManager["SystemEvent"]()

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [
            models.Index(fields=["-created_at"], name="event_recent"),
            models.Index(fields=["kind", "-created_at"], name="event_kind_recent"),
        ]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.kind}: {self.message[:80]}"


class DataRelease(models.Model):
    """A frozen, numbered release of one completed cohort's data: the folder
    `RELEASES_ROOT/<name>/` with the exports, their schema, checksums and a citation.

    A row exists only for a folder written in full; neither the folder nor the row changes
    afterwards. When the cohort's data changes later (a position of a baseline or outside
    agent settles, a market is settled again), the next release of the same cohort is a new
    row, whose `changes` says what differs from the release before it (empty for the first).
    Release numbers are `r1`, `r2`, … (`label`), never `v…`: that is how methodology versions
    are written. Releases published before that rule keep their names (`cohort-12-v1`).
    """

    cohort = models.ForeignKey(Cohort, on_delete=models.PROTECT, related_name="releases")
    version = models.PositiveIntegerField(help_text="The release's number in its cohort: 1 is r1.")
    name = models.CharField(
        max_length=64,
        unique=True,
        help_text="cohort-<number>-r<version>, e.g. cohort-12-r2 (cohort-12-v1 for a release "
        "published before the r names, kept as published)",
    )
    published_at = models.DateTimeField()
    methodology_version = models.CharField(max_length=8)
    manifest = models.JSONField(help_text="The export's manifest.json, as written.")
    files = models.JSONField(
        help_text="Every file of the folder: name, bytes, sha256, and for a data file its "
        "dataset, format and rows. Only these names are ever served."
    )
    sha256 = models.CharField(
        max_length=64, help_text="SHA-256 of the release's SHA256SUMS: one digest for it all."
    )
    total_bytes = models.PositiveBigIntegerField()
    changes = models.TextField(blank=True, help_text="What differs from the release before.")
    open_at_release = models.JSONField(
        default=dict,
        blank=True,
        help_text="What was still open when it was published, in its files as open: the "
        "positions and unscored bets of baseline and outside agents ({positions: [...], bets: "
        "[...]}). Empty for a release published before this was recorded.",
    )

    class Meta:
        ordering = ["-published_at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["cohort", "version"], name="one_release_per_version"),
            models.CheckConstraint(condition=Q(version__gte=1), name="release_version_from_1"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def label(self) -> str:
        """The release's number as the pages write it: `r2`."""
        return f"r{self.version}"

    @property
    def has_older_name(self) -> bool:
        """Published before the r names (`cohort-12-v1`): its name does not say its label."""
        return not self.name.endswith(f"-{self.label}")


class OutsideAgent(BenchmarkModel):
    """The outside agents of the lineup table, for their own admin (registration, tokens,
    admission to the main board)."""

    class Meta:
        proxy = True
        verbose_name = "outside agent"


class OutsideAgentToken(models.Model):
    """An API token acting for one outside agent (its lineup row, so every cohort's agent).

    Only the SHA-256 of the token is stored: the token is `fa_<prefix>_<secret>` with 256
    bits of secret, shown once when issued. `prefix` finds the row and names the token to
    staff and in the operations record; it is not secret and grants nothing."""

    model = models.ForeignKey(
        BenchmarkModel, on_delete=models.PROTECT, related_name="outside_tokens"
    )
    prefix = models.CharField(max_length=16, unique=True)
    digest = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the token, hex.")
    created_at = models.DateTimeField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"token fa_{self.prefix}_… of {self.model_id}"
