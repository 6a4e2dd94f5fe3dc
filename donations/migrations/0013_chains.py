# Issue #24, one campaign across chains: the chain becomes part of every record's identity. Adding the column
# with its default `eth` is the data migration of the rows from before: they were all recorded on chain eth
# (the single-chain variables' chain), and PostgreSQL fills the default into every existing row.

import django.db.models.functions.comparison
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('donations', '0012_donation_confirmed_at'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='donation',
            name='donation_tx_hash_log_index_key',
        ),
        migrations.RemoveIndex(
            model_name='donation',
            name='donation_block_number_idx',
        ),
        migrations.AddField(
            model_name='donation',
            name='chain',
            field=models.CharField(db_default='eth', default='eth', max_length=16),
        ),
        migrations.AddIndex(
            model_name='donation',
            index=models.Index(fields=['chain', 'block_number'], name='donation_chain_block_idx'),
        ),
        migrations.AddConstraint(
            model_name='donation',
            constraint=models.UniqueConstraint(models.F('chain'), models.F('tx_hash'), models.F('log_index'), models.Func(django.db.models.functions.comparison.Cast('trace_address', output_field=models.BinaryField()), function='SHA256', output_field=models.BinaryField()), name='donation_tx_hash_log_index_key', nulls_distinct=False),
        ),
        migrations.AddConstraint(
            model_name='donation',
            constraint=models.CheckConstraint(condition=models.Q(('chain__regex', '^[a-z][a-z0-9]{0,15}$')), name='donation_chain_name'),
        ),
    ]
