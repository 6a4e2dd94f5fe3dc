"""`manage.py rotate_secrets`: re-encrypt every stored webhook secret with DWS_SECRETS_KEY's first key.

Rotation: put the new key first in DWS_SECRETS_KEY (new,old), restart, run this, then drop the old key.
"""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from donations.webhook_models import WebhookEndpoint
from dws_project.secret_box import SecretUnreadable, reseal


class Command(BaseCommand):
    help = "Re-encrypt the stored webhook secrets with the first key of DWS_SECRETS_KEY (after adding a new key)."

    def handle(self, *args: object, **options: object) -> None:
        keys = settings.CONFIG.secrets_key
        if not keys:
            raise CommandError("DWS_SECRETS_KEY is not set")
        count = 0
        with transaction.atomic():
            for endpoint in WebhookEndpoint.objects.select_for_update().order_by("id"):
                try:
                    endpoint.sealed_secret = reseal(endpoint.sealed_secret, keys)
                except SecretUnreadable:
                    raise CommandError(
                        f"endpoint {endpoint.pk}: its secret decrypts with none of the DWS_SECRETS_KEY keys"
                    ) from None
                endpoint.save(update_fields=["sealed_secret", "modified_at"])
                count += 1
        self.stdout.write(f"{count} webhook secret(s) re-encrypted with the first DWS_SECRETS_KEY key")
