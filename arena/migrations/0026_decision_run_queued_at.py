"""When a run had sent every due agent's decision task. Runs before it were all queued (a run
whose queueing died was not told apart): each is taken as queued when it started."""

from django.db import migrations, models
from django.db.models import F


def queued_when_started(apps, schema_editor):  # type: ignore[no-untyped-def]
    DecisionRun = apps.get_model("arena", "DecisionRun")
    DecisionRun.objects.update(queued_at=F("started_at"))


class Migration(migrations.Migration):
    dependencies = [
        ("arena", "0025_decision_claim_help_as_comments"),
    ]

    operations = [
        migrations.AddField(
            model_name="decisionrun",
            name="queued_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(queued_when_started, migrations.RunPython.noop),
    ]
