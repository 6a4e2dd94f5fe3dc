from django.db import migrations, models


class Migration(migrations.Migration):
    """When each donation was confirmed, for the donor's receipt (issue #23). A row confirmed before the
    column existed gets its last change: a confirmed row is never written again (DESIGN.md invariant 4)."""

    dependencies = [
        ("donations", "0011_donation_failed_reason"),
    ]

    operations = [
        migrations.AddField(
            model_name="donation",
            name="confirmed_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunSQL(
            "UPDATE donation SET confirmed_at = modified_at WHERE status = 'confirmed' AND confirmed_at IS NULL",
            reverse_sql=migrations.RunSQL.noop,
        ),
    ]
