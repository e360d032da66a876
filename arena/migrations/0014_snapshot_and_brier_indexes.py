# The snapshot table loses its index on agent alone (the unique (agent, snapshot_timestamp)
# index serves every read by agent), and the scored buys get a partial index for the
# snapshot write's Brier aggregate (issue 12).

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("arena", "0013_outside_agents"),
    ]

    operations = [
        migrations.AlterField(
            model_name="portfoliosnapshot",
            name="agent",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="snapshots",
                to="arena.agent",
            ),
        ),
        migrations.AddIndex(
            model_name="trade",
            index=models.Index(
                condition=models.Q(
                    ("brier_score__isnull", False), ("kind", "BUY"), ("status", "executed")
                ),
                fields=["agent", "brier_score"],
                name="trade_agent_brier",
            ),
        ),
    ]
