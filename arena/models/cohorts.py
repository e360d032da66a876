"""The cohorts and their agents: who plays a week, with what money."""

from __future__ import annotations

from decimal import Decimal

from django.db import models
from django.db.models import Q

from agents.models import BenchmarkModel
from arena.money import money_field
from arena.seal import SealedManager

STARTING_BALANCE = Decimal("10000.00")

METHODOLOGY_VERSION = "v1"
"""The methodology a cohort row records unless told otherwise: spec 002's protocol ("Version:
v1") with 001's formulas. New cohorts take settings.METHODOLOGY_VERSION (`cohort_start`).
Distinct from the prompt's wording (PROMPT_VERSION, agents/prompts.py, stored per decision)."""
METHODOLOGY_VERSIONS = ("v1", "v2")
"""v1 reads a bet's confidence off its size; v2 also asks for stated probabilities, on every
bet and on the week's forecast panel (docs/methodology.md)."""


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
