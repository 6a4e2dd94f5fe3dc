# Issue #24, one campaign across chains: the chain becomes part of every record's identity. Adding the column
# with its default `eth` is the data migration of the rows from before: they were all recorded on chain eth
# (the single-chain variables' chain), and PostgreSQL fills the default into every existing row.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('crawlers', '0007_internal_movement'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='internalmovement',
            name='internal_movement_block_tx_asset_key',
        ),
        migrations.RemoveConstraint(
            model_name='unexplainedinflow',
            name='unexplained_inflow_block_asset_key',
        ),
        migrations.RemoveIndex(
            model_name='internalmovement',
            name='internal_movement_block_idx',
        ),
        migrations.AddField(
            model_name='completeness',
            name='chain',
            field=models.CharField(db_default='eth', default='eth', max_length=16),
        ),
        migrations.AddField(
            model_name='internalmovement',
            name='chain',
            field=models.CharField(db_default='eth', default='eth', max_length=16),
        ),
        migrations.AddField(
            model_name='reconcilerun',
            name='chain',
            field=models.CharField(db_default='eth', default='eth', max_length=16),
        ),
        migrations.AddField(
            model_name='unexplainedinflow',
            name='chain',
            field=models.CharField(db_default='eth', default='eth', max_length=16),
        ),
        migrations.AlterField(
            model_name='completeness',
            name='label',
            field=models.CharField(max_length=32),
        ),
        migrations.AddIndex(
            model_name='internalmovement',
            index=models.Index(fields=['chain', 'block_number'], name='internal_movement_chain_idx'),
        ),
        migrations.AddIndex(
            model_name='reconcilerun',
            index=models.Index(fields=['chain', '-finished_at'], name='reconcile_run_chain_idx'),
        ),
        migrations.AddConstraint(
            model_name='completeness',
            constraint=models.UniqueConstraint(fields=('chain', 'label'), name='completeness_chain_label_key'),
        ),
        migrations.AddConstraint(
            model_name='internalmovement',
            constraint=models.UniqueConstraint(fields=('chain', 'block_hash', 'tx_hash', 'asset', 'kind'), name='internal_movement_chain_block_tx_asset_key'),
        ),
        migrations.AddConstraint(
            model_name='unexplainedinflow',
            constraint=models.UniqueConstraint(fields=('chain', 'block_hash', 'asset'), name='unexplained_inflow_chain_block_asset_key'),
        ),
    ]
