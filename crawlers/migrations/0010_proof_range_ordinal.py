"""proof_range.ordinal: each range's place among its chain's ranges (the public proof's pages are cut by it),
given to the rows already published in block order."""

from django.db import migrations, models

NUMBER_EXISTING = """
UPDATE proof_range AS p SET ordinal = n.place
FROM (SELECT id, row_number() OVER (PARTITION BY chain ORDER BY first_block) - 1 AS place FROM proof_range) AS n
WHERE p.id = n.id
"""


class Migration(migrations.Migration):
    dependencies = [("crawlers", "0009_address_mode")]

    operations = [
        migrations.AddField(model_name="proofrange", name="ordinal", field=models.BigIntegerField(null=True)),
        migrations.RunSQL(NUMBER_EXISTING, migrations.RunSQL.noop),
        migrations.AlterField(
            model_name="proofrange",
            name="ordinal",
            field=models.BigIntegerField(help_text="its place among the chain's ranges, from 0"),
        ),
        migrations.AddConstraint(
            model_name="proofrange",
            constraint=models.UniqueConstraint(fields=("chain", "ordinal"), name="proof_range_chain_ordinal_key"),
        ),
    ]
