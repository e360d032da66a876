"""The benchmark's model lineup."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models


class BenchmarkModel(models.Model):
    """One slot of the lineup: a model family that gets an agent in every new cohort.

    `internal_id` is stable forever (joins, exports); `display_name` and `openrouter_id` may
    follow new releases without changing it (002: `gpt-5.1` shows as "GPT-5.2"). Baselines
    (a seeded random bettor, a market-follower) are lineup rows of kind BASELINE: they join
    cohorts and are shown, labelled, but never ranked among the LLMs. An outside agent (kind
    OUTSIDE) is another team's forecaster, registered by staff: it joins cohorts like the
    lineup but decides through the API (arena/api/outside.py), is labelled "outside"
    everywhere, and is ranked on its own board unless staff admit it to the main one.
    """

    class Kind(models.TextChoices):
        LLM = "llm", "LLM"
        BASELINE = "baseline", "Baseline"
        OUTSIDE = "outside", "Outside agent"

    class ReasoningMode(models.TextChoices):
        NONE = "none", "no reasoning"
        DEFAULT = "default", "reasons at the provider's default effort"
        BUDGET = "budget", "reasons within the budget sent with each call"
        ALWAYS = "always", "always reasons (a thinking model)"

    internal_id = models.SlugField(max_length=64, unique=True)
    display_name = models.CharField(max_length=100)
    provider = models.CharField(max_length=100, blank=True)
    openrouter_id = models.CharField(max_length=200, blank=True)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.LLM)
    active = models.BooleanField(default=True)
    display_order = models.PositiveSmallIntegerField(default=0)
    provider_order = models.JSONField(
        default=list,
        blank=True,
        help_text="Pinned upstream providers, in order (sent to OpenRouter without fallbacks).",
    )
    reasoning_max_tokens = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="The reasoning budget sent with every call (OpenRouter's reasoning.max_tokens); "
        "blank sends none.",
    )
    # What the provider says of the model, kept by staff: the replies' own model names are
    # shown beside them on the model page.
    upstream_model_id = models.CharField(
        max_length=200,
        blank=True,
        help_text="The provider's exact, dated version behind the OpenRouter id, as the "
        "provider names it; blank when not known.",
    )
    release_date = models.DateField(
        null=True, blank=True, help_text="When the provider released that version."
    )
    reasoning_mode = models.CharField(
        max_length=16,
        choices=ReasoningMode.choices,
        blank=True,
        help_text="How the model reasons before answering, as the provider runs it here.",
    )
    # An outside agent's team: who answers for it and how it forecasts (shown on its pages).
    owner = models.CharField(max_length=200, blank=True, help_text="Outside agents: the team.")
    contact = models.CharField(
        max_length=200, blank=True, help_text="Outside agents: how staff reach the team."
    )
    method_description = models.TextField(
        blank=True, help_text="Outside agents: a short description of the method."
    )
    admitted_to_main_board = models.BooleanField(
        default=False,
        help_text="Outside agents only: ranked on the main leaderboard (which says so) instead "
        "of the outside agents' own board.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["kind", "display_order", "internal_id"]
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(kind="llm") | ~models.Q(openrouter_id=""),
                name="llm_has_openrouter_id",
            ),
            models.CheckConstraint(
                condition=~models.Q(kind="outside") | ~models.Q(owner=""),
                name="outside_has_owner",
            ),
            # Only an outside agent is admitted anywhere: the lineup is on the main board.
            models.CheckConstraint(
                condition=models.Q(kind="outside") | models.Q(admitted_to_main_board=False),
                name="only_outside_admitted",
            ),
            # 0 tokens is no budget and not "none sent" either (blank is that).
            models.CheckConstraint(
                condition=models.Q(reasoning_max_tokens__isnull=True)
                | models.Q(reasoning_max_tokens__gte=1),
                name="reasoning_budget_at_least_one_token",
            ),
        ]

    def __str__(self) -> str:
        return self.display_name

    def clean(self) -> None:
        """The reasoning mode agrees with the budget sent: a budget mode has one, and a model
        said not to reason is sent none. A budget of 0 tokens is neither: blank sends none."""
        if self.reasoning_max_tokens == 0:
            raise ValidationError(
                {"reasoning_max_tokens": "A budget of 0 tokens sends nothing to reason with: "
                 "leave it blank to send none, or give at least 1."}
            )  # fmt: skip
        budget = self.reasoning_max_tokens is not None
        if self.reasoning_mode == self.ReasoningMode.BUDGET and not budget:
            raise ValidationError(
                {"reasoning_max_tokens": "A budget reasoning mode needs the budget it sends."}
            )
        if self.reasoning_mode == self.ReasoningMode.NONE and budget:
            raise ValidationError(
                {"reasoning_mode": "A model sent a reasoning budget does not run without one."}
            )

    @property
    def is_baseline(self) -> bool:
        return self.kind == self.Kind.BASELINE

    @property
    def is_outside(self) -> bool:
        return self.kind == self.Kind.OUTSIDE

    @property
    def on_outside_board(self) -> bool:
        """Ranked on the outside agents' own board: an outside agent staff have not admitted
        to the main leaderboard."""
        return self.is_outside and not self.admitted_to_main_board
