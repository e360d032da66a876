# Prompt-cache token counts of each decision and attempt (issue 12: the cost of a weekly run).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("arena", "0008_staff_action_event_kind"),
    ]

    operations = [
        migrations.AddField(
            model_name="decision",
            name="cached_prompt_tokens",
            field=models.PositiveIntegerField(
                blank=True,
                help_text="Of the prompt tokens: read from the provider's cache.",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="decision",
            name="cache_write_tokens",
            field=models.PositiveIntegerField(
                blank=True,
                help_text="Of the prompt tokens: written to the provider's cache.",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="decisionattempt",
            name="cached_prompt_tokens",
            field=models.PositiveIntegerField(
                blank=True,
                help_text="Of the prompt tokens: read from the provider's cache.",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="decisionattempt",
            name="cache_write_tokens",
            field=models.PositiveIntegerField(
                blank=True,
                help_text="Of the prompt tokens: written to the provider's cache.",
                null=True,
            ),
        ),
    ]
