# Issue 32, no amount wedges the others: some providers number synthetic logs near 2^32 (0xffffffe2), past the
# signed 32-bit column, and writing such a Transfer's block failed on every run. bigint holds any index a
# node gives; one past it too is set aside for the operator (donations/sightings.py donation_unholdable).
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('donations', '0016_refund_register'),
    ]

    operations = [
        migrations.AlterField(
            model_name='donation',
            name='log_index',
            field=models.BigIntegerField(blank=True, help_text='NULL for a native ETH transfer', null=True),
        ),
    ]
