"""Widen the snapshots' and their rollups' total_pnl_percent from numeric(9, 4) to
numeric(24, 4).

A return of +100,000% or more (an agent worth about $10 M: a winning $2,500 bet at 0.0002
pays $12.5 M) overflowed numeric(9, 4), and the tick writes every agent's snapshot in one
INSERT, so one windfall cost every agent its snapshot. The figure is never clamped: the
column is as wide as the money it is read from (`arena.models.percent_field`).

On PostgreSQL this rewrites nothing: raising a numeric's precision with its scale unchanged
is binary compatible (numeric's length coercion is then a no-op), so ALTER COLUMN TYPE only
updates the catalogue, keeping the table's file, under a brief ACCESS EXCLUSIVE lock; and
neither column is indexed, so no index is rebuilt. Checked on PostgreSQL 15: the table's
relfilenode is the same before and after (a change of scale would rewrite it). So it is
safe on a table of millions of rows. SQLite stores a decimal column without a precision,
so nothing changes there (Django's AlterField would copy the whole table to say so).
"""

from django.db import migrations, models

TABLES = ("arena_portfoliosnapshot", "arena_agentsnapshotrollup")


def _retype(precision: int):
    def retype(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return  # SQLite's column is "decimal", whatever its precision
        for table in TABLES:
            schema_editor.execute(
                f'ALTER TABLE "{table}" ALTER COLUMN "total_pnl_percent" '
                f"TYPE numeric({precision}, 4)"
            )

    return retype


class Migration(migrations.Migration):

    dependencies = [
        ("arena", "0015_outcomes_changed_event_kind"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(_retype(24), _retype(9))],
            state_operations=[
                migrations.AlterField(
                    model_name="agentsnapshotrollup",
                    name="total_pnl_percent",
                    field=models.DecimalField(decimal_places=4, max_digits=24),
                ),
                migrations.AlterField(
                    model_name="portfoliosnapshot",
                    name="total_pnl_percent",
                    field=models.DecimalField(decimal_places=4, max_digits=24),
                ),
            ],
        ),
    ]
