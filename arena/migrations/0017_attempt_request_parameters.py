# Every attempt keeps the parameters its request was sent with (model, temperature, token
# limits, reasoning budget, provider pinning, cache breakpoint), so the determinism audit and
# anyone reading the export can send the same request again.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('arena', '0016_snapshot_percent_widened'),
    ]

    operations = [
        migrations.AddField(
            model_name='decisionattempt',
            name='request_parameters',
            field=models.JSONField(blank=True, help_text='Every other field of the request body sent to OpenRouter (model, temperature, max_tokens, reasoning, provider, usage) and where its cache breakpoint went: with the messages, the request exactly as sent. None when no request went to OpenRouter.', null=True),
        ),
    ]
