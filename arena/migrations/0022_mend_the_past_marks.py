from datetime import UTC, datetime

from django.db import migrations, models

# The migration that came with the kept-round method: checks made after it was applied here
# replayed the kept round; those made before, the first round.
KEPT_ROUND_SINCE = ("arena", "0017_attempt_request_parameters")


def checks_since_the_kept_round_method(apps, schema_editor):
    Check = apps.get_model("arena", "DeterminismCheck")
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT applied FROM django_migrations WHERE app = %s AND name = %s",
            list(KEPT_ROUND_SINCE),
        )
        row = cursor.fetchone()
    if row is None or row[0] is None:
        return
    applied = row[0]
    if isinstance(applied, str):  # SQLite's cursor gives the text it stores
        applied = datetime.fromisoformat(applied)
    if applied.tzinfo is None:
        applied = applied.replace(tzinfo=UTC)
    Check.objects.filter(checked_at__gte=applied).update(method="kept_round")


class Migration(migrations.Migration):
    """The marks `manage.py mend_past` sets. A determinism check stored before the kept-round
    method came (migration 0017 applied here) was made by the first-round method; those
    after, by the kept round's, which new checks default to."""

    dependencies = [
        ("arena", "0021_release_numbers_and_state"),
    ]

    operations = [
        migrations.AddField(
            model_name="determinismcheck",
            name="method",
            field=models.CharField(default="first_round", max_length=16),
        ),
        migrations.AlterField(
            model_name="determinismcheck",
            name="method",
            field=models.CharField(db_default="kept_round", default="kept_round", max_length=16),
        ),
        migrations.RunPython(checks_since_the_kept_round_method, migrations.RunPython.noop),
        migrations.AddField(
            model_name="determinismcheck",
            name="void_reason",
            field=models.TextField(blank=True, db_default=""),
        ),
        migrations.AddField(
            model_name="trade",
            name="before_fair_entry",
            field=models.BooleanField(db_default=False, default=False),
        ),
    ]
