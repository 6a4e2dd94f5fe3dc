"""Webhook secrets are stored encrypted with DWS_SECRETS_KEY, and redelivery gets a permission of its own.

Existing plain-text secrets are sealed in place; with endpoints on record and no DWS_SECRETS_KEY the
migration stops (naming the variable) rather than keep or lose them.
"""

from django.conf import settings
from django.db import migrations, models


def seal_existing(apps, schema_editor):
    from dws_project.secret_box import seal

    endpoints = apps.get_model("donations", "WebhookEndpoint")
    rows = list(endpoints.objects.all())
    if rows and not settings.CONFIG.secrets_key:
        raise RuntimeError(
            "DWS_SECRETS_KEY is not set: it is required to encrypt the webhook secrets already stored "
            "(see deploy/env.example)"
        )
    for row in rows:
        row.sealed_secret = seal(row.secret, settings.CONFIG.secrets_key)
        row.save(update_fields=["sealed_secret"])


def unseal_existing(apps, schema_editor):
    from dws_project.secret_box import unseal

    endpoints = apps.get_model("donations", "WebhookEndpoint")
    for row in endpoints.objects.all():
        row.secret = unseal(row.sealed_secret, settings.CONFIG.secrets_key)
        row.save(update_fields=["secret"])


class Migration(migrations.Migration):
    dependencies = [
        ("donations", "0007_credit_eth_price"),
    ]

    operations = [
        migrations.AddField(
            model_name="webhookendpoint",
            name="sealed_secret",
            field=models.TextField(default="", help_text="the shared HMAC-SHA256 key, encrypted with DWS_SECRETS_KEY"),
            preserve_default=False,
        ),
        migrations.RunPython(seal_existing, unseal_existing),
        migrations.RemoveField(model_name="webhookendpoint", name="secret"),
        migrations.AlterModelOptions(
            name="webhookdelivery",
            options={
                "permissions": [("redeliver_webhookdelivery", "Can redeliver webhook deliveries")],
                "verbose_name_plural": "webhook deliveries",
            },
        ),
    ]
