"""A past minute only one venue quoted is flagged and values no donation until a second venue agrees.

Rows the kline server already wrote from one venue carry `"single_venue": true` in their audit trail;
they are flagged too (donations already valued with them keep their price: a donation is never re-priced).
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("prices", "0002_price_req_poll_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="price",
            name="single_venue",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.RunSQL(
            "UPDATE price SET single_venue = true WHERE sources->>'single_venue' = 'true'",
            reverse_sql=migrations.RunSQL.noop,
        ),
    ]
