# The Celery task holding a decision's claim, so that the same task delivered again after
# its worker was lost resumes the claim at once instead of waiting out CLAIM_TTL.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("arena", "0010_agent_snapshot_rollup"),
    ]

    operations = [
        migrations.AddField(
            model_name="decision",
            name="claimed_by",
            field=models.CharField(
                blank=True,
                help_text="The Celery task that holds (or last held) the claim; blank outside a "
                "task. The same task delivered again after its worker was lost takes its claim "
                "over at once.",
                max_length=64,
            ),
        ),
    ]
