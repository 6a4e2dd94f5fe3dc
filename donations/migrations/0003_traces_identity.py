# Issue #10: internal ETH donations are identified by (tx_hash, trace_address); the old-unconfirmed crawler
# orders its batch by a next-look time so rows that cannot resolve do not starve the others.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('donations', '0002_campaign_row'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='donation',
            name='donation_tx_hash_log_index_key',
        ),
        migrations.AddField(
            model_name='donation',
            name='next_look_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='donation',
            name='trace_address',
            field=models.CharField(blank=True, max_length=200, null=True),
        ),
        migrations.AddIndex(
            model_name='donation',
            index=models.Index(condition=models.Q(('status', 'unconfirmed')), fields=['next_look_at', 'block_time'], name='donation_unconfirmed_look_idx'),
        ),
        migrations.AddConstraint(
            model_name='donation',
            constraint=models.UniqueConstraint(fields=('tx_hash', 'log_index', 'trace_address'), name='donation_tx_hash_log_index_key', nulls_distinct=False),
        ),
        migrations.AddConstraint(
            model_name='donation',
            constraint=models.CheckConstraint(condition=models.Q(('trace_address__isnull', True), models.Q(('asset', 'eth'), ('log_index__isnull', True)), _connector='OR'), name='donation_trace_address_eth_only'),
        ),
    ]
