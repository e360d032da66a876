# A system event for a weekly cohort whose start was missed (issue 12's schedule drills).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("arena", "0011_decision_claim_holder"),
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
                    ("sync_failed", "Market sync failed"),
                    ("resolution_check_failed", "Resolution check failed"),
                    ("release_published", "Data release published"),
                    ("release_failed", "Data release failed"),
                    ("staff_action", "Staff action in the admin"),
                ],
                max_length=32,
            ),
        ),
    ]
