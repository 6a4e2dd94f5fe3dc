"""One wallet connection per address: the newest row of each address is kept, the older ones (a code
replaced by a later one, or the same code recorded again) are dropped, then the address becomes unique."""

from django.db import migrations, models

KEEP_NEWEST = """
DELETE FROM wallet_connection AS older
USING wallet_connection AS newer
WHERE older.address = newer.address AND older.id < newer.id
"""


class Migration(migrations.Migration):
    dependencies = [
        ("affiliates", "0004_used_signature"),
    ]

    operations = [
        migrations.RunSQL(KEEP_NEWEST, reverse_sql=migrations.RunSQL.noop),
        migrations.RemoveIndex(
            model_name="walletconnection",
            name="wallet_connection_address_idx",
        ),
        migrations.AddConstraint(
            model_name="walletconnection",
            constraint=models.UniqueConstraint(fields=("address",), name="wallet_connection_address_key"),
        ),
    ]
