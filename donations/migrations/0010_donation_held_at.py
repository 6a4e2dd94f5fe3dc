from django.db import migrations, models


class Migration(migrations.Migration):
    """The pause's backlog, marked on the row (donation_confirm's HELD_PAUSED), so the old-unconfirmed
    crawler and reconcile see it whether the pause was lifted by the admin or by SQL."""

    dependencies = [
        ("donations", "0009_identity_any_depth"),
    ]

    operations = [
        migrations.AddField(
            model_name="donation",
            name="held_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
