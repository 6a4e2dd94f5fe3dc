from django.db import migrations, models


class Migration(migrations.Migration):
    """Why a failed row failed, on the row (issue #19: a row the chain proves absent is failed with the reason)."""

    dependencies = [
        ("donations", "0010_donation_held_at"),
    ]

    operations = [
        migrations.AddField(
            model_name="donation",
            name="failed_reason",
            field=models.TextField(blank=True, db_default="", default=""),
        ),
    ]
