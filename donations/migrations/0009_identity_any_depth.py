# Issue #19: a donation identity of any call depth the EVM allows is storable: the path is text and the unique
# index keys its SHA-256 (a 1024-deep path is longer than a btree index row may be).

import django.db.models.functions.comparison
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('donations', '0008_webhook_secrets_sealed'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='donation',
            name='donation_tx_hash_log_index_key',
        ),
        migrations.AlterField(
            model_name='donation',
            name='trace_address',
            field=models.TextField(blank=True, null=True),
        ),
        migrations.AddConstraint(
            model_name='donation',
            constraint=models.UniqueConstraint(models.F('tx_hash'), models.F('log_index'), models.Func(django.db.models.functions.comparison.Cast('trace_address', output_field=models.BinaryField()), function='SHA256', output_field=models.BinaryField()), name='donation_tx_hash_log_index_key', nulls_distinct=False),
        ),
    ]
