"""The price request poll index under seed 000's name (too long for Meta.indexes)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("prices", "0001_initial")]

    operations = [
        migrations.RunSQL(
            "CREATE INDEX IF NOT EXISTS price_req_status_modified_at_idx ON price_req (status, modified_at);",
            reverse_sql="DROP INDEX IF EXISTS price_req_status_modified_at_idx;",
        ),
    ]
