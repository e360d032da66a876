"""The benchmark's model lineup."""

from __future__ import annotations

from django.db import models


class BenchmarkModel(models.Model):
    """One slot of the lineup: a model family that gets an agent in every new cohort.

    `internal_id` is stable forever (joins, exports); `display_name` and `openrouter_id` may
    follow new releases without changing it (002: `gpt-5.1` shows as "GPT-5.2"). Baselines
    (a seeded random bettor, a market-follower) are lineup rows of kind BASELINE: they join
    cohorts and are shown, labelled, but never ranked among the LLMs.
    """

    class Kind(models.TextChoices):
        LLM = "llm", "LLM"
        BASELINE = "baseline", "Baseline"

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
    reasoning_max_tokens = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["kind", "display_order", "internal_id"]
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(kind="llm") | ~models.Q(openrouter_id=""),
                name="llm_has_openrouter_id",
            )
        ]

    def __str__(self) -> str:
        return self.display_name

    @property
    def is_baseline(self) -> bool:
        return self.kind == self.Kind.BASELINE
