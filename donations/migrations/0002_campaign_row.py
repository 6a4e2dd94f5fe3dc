"""Create the single donation_stats row every crediting write locks."""

from django.db import migrations


def create_campaign_row(apps, schema_editor):
    DonationStats = apps.get_model("donations", "DonationStats")
    if not DonationStats.objects.exists():
        DonationStats.objects.create()


class Migration(migrations.Migration):
    dependencies = [("donations", "0001_initial")]

    operations = [migrations.RunPython(create_campaign_row, migrations.RunPython.noop)]
