# Hourly and daily rollups of each agent's snapshots, for the charts (issue 12: a year of
# snapshots drawn without reading every one). The tick fills them from now on; an existing
# database's snapshots are rolled up by `manage.py rebuild_snapshot_rollup` (docs/deploy.md:
# until then the charts read those agents' raw snapshots, as before). Not from here: a
# migration that called today's services would break once they change.

from typing import Any

import django.db.models.deletion
from django.db import migrations, models


def viewers_may_view_rollups(apps: Any, schema_editor: Any) -> None:
    """Viewers and Operators see every arena model (0007); this one is new."""
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    content_type, _ = ContentType.objects.get_or_create(
        app_label="arena", model="agentsnapshotrollup"
    )
    view, _ = Permission.objects.get_or_create(
        content_type=content_type,
        codename="view_agentsnapshotrollup",
        defaults={"name": "Can view agent snapshot rollup"},
    )
    for group in apps.get_model("auth", "Group").objects.filter(name__in=["Viewers", "Operators"]):
        group.permissions.add(view)


class Migration(migrations.Migration):
    dependencies = [
        ("arena", "0009_decision_cached_tokens"),
    ]

    operations = [
        migrations.CreateModel(
            name="AgentSnapshotRollup",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "resolution",
                    models.CharField(choices=[("hour", "Hour"), ("day", "Day")], max_length=4),
                ),
                ("bucket_start", models.DateTimeField()),
                ("first_at", models.DateTimeField(help_text="The bucket's first snapshot.")),
                (
                    "last_at",
                    models.DateTimeField(
                        help_text="The bucket's last snapshot: the figures below."
                    ),
                ),
                ("total_value", models.DecimalField(decimal_places=2, max_digits=14)),
                ("total_pnl", models.DecimalField(decimal_places=2, max_digits=14)),
                ("total_pnl_percent", models.DecimalField(decimal_places=4, max_digits=9)),
                ("min_total_value", models.DecimalField(decimal_places=2, max_digits=14)),
                ("max_total_value", models.DecimalField(decimal_places=2, max_digits=14)),
                ("snapshots", models.PositiveIntegerField()),
                (
                    "agent",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="snapshot_rollups",
                        to="arena.agent",
                    ),
                ),
            ],
            options={
                "ordering": ["agent", "resolution", "bucket_start"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("agent", "resolution", "bucket_start"),
                        name="one_rollup_per_agent_bucket",
                    )
                ],
            },
        ),
        migrations.RunPython(viewers_may_view_rollups, migrations.RunPython.noop),
    ]
