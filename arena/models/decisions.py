"""The weekly runs, their frozen snapshots, and every decision: its attempts, the
commitments to them, and the checks that replay them."""

from __future__ import annotations

from django.db import models

from arena.models.cohorts import Agent, Cohort
from arena.seal import SealedManager
from markets.models import Market


class DecisionRun(models.Model):
    """One decision run and the frozen market snapshot every decision of it saw."""

    week_start = models.DateField()
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    queued_at = models.DateTimeField(null=True, blank=True)  # every due agent's task sent
    source = models.CharField(max_length=16)
    universe_size = models.PositiveIntegerField(default=0)
    sync_summary = models.TextField(blank=True)
    # The week's forecast panel (arena/panel.py), picked when the snapshot froze: its seed, and
    # its questions' market ids in the order the rule took them.
    panel_seed = models.CharField(max_length=64, blank=True)
    panel = models.JSONField(default=list, blank=True)

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
    liquidity = models.DecimalField(max_digits=20, decimal_places=6, null=True, blank=True)
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


class PanelForecast(models.Model):
    """Methodology v2: an agent's forecast of one question of its week's panel, as its answer
    for the week gave it: the probability that the market resolves to its first outcome (YES).

    One row per question of the panel for each answer: a forecast the answer left out, or gave
    invalid, has no `probability` (and `problem` says which) and is scored as the reference
    price `b` (imputed: Alpha 0), as ForecastBench imputes a missing forecast at the market
    price. `b` is the YES price when the agent's prompt froze: the round's snapshot for a lineup
    agent; for an outside agent, who answers up to an hour later, the live price read at its
    submission (`reference` says which). Written with the answer that carries it; a new round
    of the same decision replaces them."""

    class Reference(models.TextChoices):
        SNAPSHOT = "snapshot", "The round's frozen snapshot"
        LIVE = "live", "Live, at the outside agent's submission"

    decision = models.ForeignKey(Decision, on_delete=models.CASCADE, related_name="forecasts")
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="forecasts")
    run = models.ForeignKey(DecisionRun, on_delete=models.PROTECT, related_name="forecasts")
    week_start = models.DateField()
    market = models.ForeignKey(Market, on_delete=models.PROTECT, related_name="forecasts")
    position = models.PositiveSmallIntegerField(help_text="The question's place in the panel.")
    probability = models.DecimalField(
        max_digits=7,
        decimal_places=6,
        null=True,
        blank=True,
        help_text="Stated P(YES); empty when missing or invalid (imputed at b).",
    )
    problem = models.CharField(max_length=300, blank=True)
    reference_price = models.DecimalField(
        max_digits=7, decimal_places=6, null=True, blank=True, help_text="b: the YES price."
    )
    reference = models.CharField(max_length=8, choices=Reference.choices)
    # On resolution (never for a cancelled market, nor without b): whether YES happened, and
    # the forecast's scores, of the stated probability or, imputed, of b (scoring/panel.py).
    outcome = models.PositiveSmallIntegerField(null=True, blank=True)
    brier_score = models.FloatField(null=True, blank=True)
    log_score = models.FloatField(null=True, blank=True)
    scored_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()

    objects = SealedManager["PanelForecast"]()

    class Meta:
        ordering = ["decision_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["decision", "market"], name="one_forecast_a_question"),
            models.CheckConstraint(
                condition=models.Q(probability__isnull=True)
                | (models.Q(probability__gt=0) & models.Q(probability__lt=1)),
                name="forecast_strictly_inside_unit_interval",
            ),
        ]
        indexes = [models.Index(fields=["week_start", "market"], name="forecast_week_market")]

    def __str__(self) -> str:
        return f"forecast of market {self.market_id} by agent {self.agent_id}"

    @property
    def imputed(self) -> bool:
        return self.probability is None
