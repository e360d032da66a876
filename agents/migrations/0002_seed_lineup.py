"""Seed the v1 lineup of 002's table, and the two baselines."""

from django.db import migrations

LINEUP = [
    # internal id, display name, provider, OpenRouter id
    ("gpt-5.1", "GPT-5.2", "OpenAI", "openai/gpt-5.2"),
    ("gemini-2.5-flash", "Gemini 3 Pro", "Google", "google/gemini-3-pro-preview"),
    ("grok-4", "Grok 4.1", "xAI", "x-ai/grok-4.1-fast"),
    ("claude-opus-4.5", "Claude Opus 4.5", "Anthropic", "anthropic/claude-opus-4.5"),
    ("deepseek-v3.1", "DeepSeek V3.2", "DeepSeek", "deepseek/deepseek-v3.2"),
    ("kimi-k2", "Kimi K2", "Moonshot AI", "moonshotai/kimi-k2-thinking"),
    ("qwen-3-next", "Qwen 3", "Alibaba", "qwen/qwen3-235b-a22b-2507"),
]
BASELINES = [
    ("baseline-random", "Random bettor", "Baseline"),
    ("baseline-market", "Market follower", "Baseline"),
]


def seed(apps, schema_editor):
    BenchmarkModel = apps.get_model("agents", "BenchmarkModel")
    for order, (internal_id, name, provider, openrouter_id) in enumerate(LINEUP, start=1):
        BenchmarkModel.objects.update_or_create(
            internal_id=internal_id,
            defaults={"display_name": name, "provider": provider, "openrouter_id": openrouter_id,
                      "kind": "llm", "display_order": order, "active": True},
        )
    for order, (internal_id, name, provider) in enumerate(BASELINES, start=1):
        BenchmarkModel.objects.update_or_create(
            internal_id=internal_id,
            defaults={"display_name": name, "provider": provider, "kind": "baseline",
                      "display_order": order, "active": True},
        )


def unseed(apps, schema_editor):
    BenchmarkModel = apps.get_model("agents", "BenchmarkModel")
    ids = [row[0] for row in LINEUP] + [row[0] for row in BASELINES]
    BenchmarkModel.objects.filter(internal_id__in=ids).delete()


class Migration(migrations.Migration):
    dependencies = [("agents", "0001_initial")]
    operations = [migrations.RunPython(seed, unseed)]
