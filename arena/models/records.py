"""What the arena records about itself: resolution checks, system events, data releases,
and the outside agents' tokens."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from agents.models import BenchmarkModel
from arena.models.cohorts import Agent, Cohort
from arena.models.decisions import Decision, DecisionRun
from arena.seal import SealedManager
from markets.models import Market


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
