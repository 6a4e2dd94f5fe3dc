# Issue 32 (attack32): the campaign and donor totals widened from NUMERIC(14,2) and NUMERIC(12,2): a sum of
# usd_amounts that each fit their row overflowed them and failed the block writing it on every run.

from decimal import Decimal
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('donations', '0018_refund_exported'),
    ]

    operations = [
        migrations.AlterField(
            model_name='donationstats',
            name='total',
            field=models.DecimalField(db_default=Decimal('0'), decimal_places=2, default=Decimal('0'), max_digits=24),
        ),
        migrations.AlterField(
            model_name='userdata',
            name='total',
            field=models.DecimalField(db_default=Decimal('0'), decimal_places=2, default=Decimal('0'), max_digits=24),
        ),
    ]
