# Issue 32, no amount wedges the others: a transfer the donation columns cannot hold (2^255 units of a coin)
# is set aside as an unexplained inflow of its raw amount; its amount in whole units needs 78 integer digits.
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('crawlers', '0012_reconcile_day'),
    ]

    operations = [
        migrations.AlterField(
            model_name='unexplainedinflow',
            name='amount',
            field=models.DecimalField(decimal_places=18, help_text="in the asset's own units", max_digits=96),
        ),
    ]
