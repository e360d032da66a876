# A market whose final record no longer names the outcomes its positions were bought on is
# not settled: an event of its own kind tells staff.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("arena", "0014_snapshot_and_brier_indexes"),
    ]

    operations = [
        migrations.AlterField(
            model_name="systemevent",
            name="kind",
            field=models.CharField(
                choices=[
                    ("run_started", "Decision run started"),
                    ("run_finished", "Decision run finished"),
                    ("cohort_started", "Cohort started"),
                    ("cohort_completed", "Cohort completed"),
                    ("cohort_missed", "Cohort start missed"),
                    ("decision_failed", "Decision failed"),
                    ("decision_retried", "Decision retried"),
                    ("decision_reclaimed", "Decision reclaimed after a dead claim"),
                    ("market_settled", "Market settled"),
                    ("market_cancelled", "Market cancelled (refunded)"),
                    ("settlement_failed", "Settlement failed"),
                    ("outcomes_changed", "Market's outcomes changed: not settled"),
                    ("sync_failed", "Market sync failed"),
                    ("resolution_check_failed", "Resolution check failed"),
                    ("release_published", "Data release published"),
                    ("release_failed", "Data release failed"),
                    ("staff_action", "Staff action in the admin"),
                    ("outside_refused", "Outside agent request refused"),
                ],
                max_length=32,
            ),
        ),
    ]
