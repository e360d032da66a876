from typing import Any

from django.db import migrations, models


def refuse_a_budget_of_zero(apps: Any, schema_editor: Any) -> None:
    """A row holding 0 is not rewritten: blank would send no budget at all, 1 a different
    one, and which the model was meant to run with is staff's call, not the migration's."""
    BenchmarkModel = apps.get_model("agents", "BenchmarkModel")
    zero = list(
        BenchmarkModel.objects.filter(reasoning_max_tokens=0).values_list("internal_id", flat=True)
    )
    if zero:
        raise RuntimeError(
            "These models' reasoning budget is 0 tokens, which no longer saves: "
            f"{', '.join(sorted(zero))}. In the admin, leave the budget blank to send none or "
            "give at least 1, then migrate again."
        )


class Migration(migrations.Migration):

    dependencies = [
        ("agents", "0004_lineup_provenance"),
    ]

    operations = [
        migrations.RunPython(refuse_a_budget_of_zero, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="benchmarkmodel",
            constraint=models.CheckConstraint(
                condition=models.Q(("reasoning_max_tokens__isnull", True))
                | models.Q(("reasoning_max_tokens__gte", 1)),
                name="reasoning_budget_at_least_one_token",
            ),
        ),
    ]
