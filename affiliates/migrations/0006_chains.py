# Issue #24, one campaign across chains: the chain becomes part of every record's identity. Adding the column
# with its default `eth` is the data migration of the rows from before: they were all recorded on chain eth
# (the single-chain variables' chain), and PostgreSQL fills the default into every existing row.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('affiliates', '0005_one_wallet_connection_per_address'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='affiliatedonation',
            name='affiliate_donation_tx_signer_key',
        ),
        migrations.RemoveConstraint(
            model_name='affiliatedonation',
            name='affiliate_donation_one_attribution',
        ),
        migrations.AddField(
            model_name='affiliatedonation',
            name='chain',
            field=models.CharField(db_default='eth', default='eth', max_length=16),
        ),
        migrations.AddConstraint(
            model_name='affiliatedonation',
            constraint=models.UniqueConstraint(fields=('chain', 'tx_hash', 'signer'), name='affiliate_donation_chain_tx_signer_key'),
        ),
        migrations.AddConstraint(
            model_name='affiliatedonation',
            constraint=models.UniqueConstraint(condition=models.Q(('status', 'attributed')), fields=('chain', 'tx_hash'), name='affiliate_donation_one_attribution'),
        ),
    ]
