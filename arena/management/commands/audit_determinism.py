"""`manage.py audit_determinism`: re-send stored prompts and count repeated decisions."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from arena.services.audit import determinism_check, determinism_cost_estimate, determinism_sample


class Command(BaseCommand):
    help = (
        "Re-send a seeded sample of stored prompts to the same models at temperature 0 and "
        "record how often the parsed decision matches. Prints the estimated cost first and "
        "sends nothing without --yes."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--sample", type=int, default=10)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--yes", action="store_true", help="spend the money and run it")

    def handle(self, *args: Any, sample: int, seed: int, yes: bool, **options: Any) -> None:
        decisions = determinism_sample(size=sample, seed=seed)
        if not decisions:
            self.stdout.write(
                "no decision answered by OpenRouter to audit (offline agents are "
                "deterministic by construction)"
            )
            return
        cost = determinism_cost_estimate(decisions=decisions)
        self.stdout.write(
            f"{len(decisions)} prompts to re-send; they cost ${cost:.4f} the first time"
        )
        if not yes:
            self.stdout.write("nothing sent: run again with --yes to spend it")
            return
        if not settings.OPENROUTER_API_KEY:
            raise CommandError("OPENROUTER_API_KEY is not set")
        matches = 0
        for decision in decisions:
            check = determinism_check(decision=decision)
            matches += int(bool(check.matches))
            verdict = {True: "match", False: "differs"}.get(check.matches, check.error)  # type: ignore[arg-type]
            self.stdout.write(f"decision {decision.pk} ({decision.requested_model}): {verdict}")
        self.stdout.write(f"{matches}/{len(decisions)} repeated the stored decision")
