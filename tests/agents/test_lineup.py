"""The model lineup of 002, seeded by a data migration, with stable internal ids."""

from __future__ import annotations

import importlib

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from agents.models import BenchmarkModel

pytestmark = pytest.mark.django_db

LINEUP_002 = {
    "gpt-5.1": ("GPT-5.2", "openai/gpt-5.2"),
    "gemini-2.5-flash": ("Gemini 3 Pro", "google/gemini-3-pro-preview"),
    "grok-4": ("Grok 4.1", "x-ai/grok-4.1-fast"),
    "claude-opus-4.5": ("Claude Opus 4.5", "anthropic/claude-opus-4.5"),
    "deepseek-v3.1": ("DeepSeek V3.2", "deepseek/deepseek-v3.2"),
    "kimi-k2": ("Kimi K2", "moonshotai/kimi-k2-thinking"),
    "qwen-3-next": ("Qwen 3", "qwen/qwen3-235b-a22b-2507"),
}


def test_the_seven_models_of_002_are_seeded_with_their_stable_ids() -> None:
    llms = BenchmarkModel.objects.filter(kind=BenchmarkModel.Kind.LLM)
    assert {m.internal_id: (m.display_name, m.openrouter_id) for m in llms} == LINEUP_002
    assert [m.internal_id for m in llms.order_by("display_order")] == list(LINEUP_002)


def test_two_baselines_are_seeded_and_labelled_as_baselines() -> None:
    baselines = BenchmarkModel.objects.filter(kind=BenchmarkModel.Kind.BASELINE)
    assert sorted(b.internal_id for b in baselines) == ["baseline-market", "baseline-random"]
    assert all(b.is_baseline for b in baselines)


def test_a_new_release_changes_the_display_name_and_route_but_not_the_internal_id(
    admin_client: object,
) -> None:
    model = BenchmarkModel.objects.get(internal_id="gpt-5.1")
    response = admin_client.post(  # type: ignore[attr-defined]
        f"/admin/agents/benchmarkmodel/{model.pk}/change/",
        {
            "internal_id": "renamed",
            "display_name": "GPT-5.3",
            "provider": "OpenAI",
            "openrouter_id": "openai/gpt-5.3",
            "active": "on",
            "display_order": "1",
            "provider_order": "[]",
        },
    )
    assert response.status_code == 302
    model.refresh_from_db()
    assert (model.internal_id, model.display_name, model.openrouter_id) == (
        "gpt-5.1",
        "GPT-5.3",
        "openai/gpt-5.3",
    )


def test_the_reasoning_mode_agrees_with_the_budget_sent() -> None:
    model = BenchmarkModel.objects.get(internal_id="gpt-5.1")
    model.reasoning_mode = BenchmarkModel.ReasoningMode.BUDGET
    with pytest.raises(ValidationError, match="needs the budget"):
        model.clean()
    model.reasoning_max_tokens = 4000
    model.clean()
    model.reasoning_mode = BenchmarkModel.ReasoningMode.NONE
    with pytest.raises(ValidationError, match="does not run without one"):
        model.clean()
    # 0 tokens is no budget and not "none sent" either: whatever the mode, it is refused.
    for mode in BenchmarkModel.ReasoningMode:
        model.reasoning_mode, model.reasoning_max_tokens = mode, 0
        with pytest.raises(ValidationError, match="A budget of 0 tokens"):
            model.clean()
    # Nor does the database keep one written past the form.
    with pytest.raises(IntegrityError), transaction.atomic():
        BenchmarkModel.objects.filter(pk=model.pk).update(reasoning_max_tokens=0)
    BenchmarkModel.objects.filter(pk=model.pk).update(reasoning_max_tokens=1)


def test_the_migration_to_a_budget_of_one_token_or_more_refuses_rather_than_guesses() -> None:
    """A row already holding 0 stops the migration and is named: blank (no budget sent) and
    1 (a tiny one) are different runs, and which was meant is staff's call."""
    refuse = importlib.import_module(
        "agents.migrations.0005_reasoning_budget_at_least_one_token"
    ).refuse_a_budget_of_zero

    class Rows:
        def __init__(self, zero: list[str]) -> None:
            self.zero = zero

        def filter(self, **lookup: object) -> Rows:
            assert lookup == {"reasoning_max_tokens": 0}
            return self

        def values_list(self, *fields: str, flat: bool) -> list[str]:
            return self.zero

    class Registry:
        def __init__(self, zero: list[str]) -> None:
            self.model = type("BenchmarkModel", (), {"objects": Rows(zero)})

        def get_model(self, app: str, name: str) -> type:
            return self.model

    refuse(Registry([]), None)
    with pytest.raises(
        RuntimeError, match=r"saves: o3-mini, r1\. In the admin, leave the budget blank"
    ):
        refuse(Registry(["r1", "o3-mini"]), None)
