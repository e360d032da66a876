# Attempts stored before this keep an empty salt and get no commitment: one made now would
# prove nothing about when their responses were stored (docs/engine.md, "Commitments").

from typing import Any

import django.db.models.deletion
from django.db import migrations, models


def viewers_may_view_commitments(apps: Any, schema_editor: Any) -> None:
    """Viewers and Operators see every arena model (0007); this one is new."""
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    content_type, _ = ContentType.objects.get_or_create(app_label="arena", model="answercommitment")
    view, _ = Permission.objects.get_or_create(
        content_type=content_type,
        codename="view_answercommitment",
        defaults={"name": "Can view answer commitment"},
    )
    for group in apps.get_model("auth", "Group").objects.filter(name__in=["Viewers", "Operators"]):
        group.permissions.add(view)


class Migration(migrations.Migration):
    dependencies = [
        ("arena", "0022_mend_the_past_marks"),
    ]

    operations = [
        migrations.AddField(
            model_name="decisionattempt",
            name="commitment_salt",
            field=models.CharField(
                blank=True,
                help_text="The secret of the response's commitment (AnswerCommitment): 32 random bytes, hex. Revealed with the response; blank for one with no body or stored before commitments were made.",
                max_length=64,
            ),
        ),
        migrations.CreateModel(
            name="AnswerCommitment",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("week_start", models.DateField()),
                ("attempt_number", models.PositiveSmallIntegerField()),
                (
                    "sha256",
                    models.CharField(
                        help_text="Hex SHA-256 of salt, newline, response.", max_length=64
                    ),
                ),
                ("committed_at", models.DateTimeField(help_text="When the response was stored.")),
                (
                    "agent",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="arena.agent",
                    ),
                ),
                (
                    "attempt",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="commitment",
                        to="arena.decisionattempt",
                    ),
                ),
                (
                    "cohort",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="arena.cohort",
                    ),
                ),
                (
                    "decision",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="commitments",
                        to="arena.decision",
                    ),
                ),
            ],
            options={
                "ordering": ["-committed_at", "-pk"],
                "indexes": [
                    models.Index(fields=["week_start", "-committed_at"], name="commitment_week")
                ],
            },
        ),
        migrations.RunPython(viewers_may_view_commitments, migrations.RunPython.noop),
    ]
