"""`manage.py webhook_test URL`: send one signed sample event, to check a receiver's verification."""

from __future__ import annotations

import os
import uuid

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from donations.webhook_delivery import send
from donations.webhook_models import validate_webhook_url
from dws_project.redaction import redact_url, register_secrets

DEFAULT_SECRET_ENV = "DWS_WEBHOOK_TEST_SECRET"  # noqa: S105 - the name of a variable, not a secret


class Command(BaseCommand):
    help = (
        "POST a signed sample `donation.seen` event to URL. The secret is read from the environment "
        f"variable named by --secret-env (default {DEFAULT_SECRET_ENV}), never from the command line, "
        "and never printed. Exit 1 unless the receiver answers 2xx."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("url")
        parser.add_argument("--secret-env", default=DEFAULT_SECRET_ENV, help="name of the variable holding the secret")

    def handle(self, *args: object, **options: object) -> None:
        url, variable = str(options["url"]), str(options["secret_env"])
        try:
            validate_webhook_url(url)
        except ValidationError as exc:
            raise CommandError(f"{redact_url(url)}: {' '.join(exc.messages)}") from None
        secret = os.environ.get(variable, "")
        if not secret:
            raise CommandError(f"{variable} is not set: put the endpoint's secret there")
        register_secrets(secret)
        payload = {
            "id": f"test:{uuid.uuid4().hex}",
            "event": "donation.seen",
            "created": timezone.now().isoformat(),
            "data": {
                "test": True,
                "tx_hash": "0x" + "00" * 32,
                "asset": "eth",
                "amount": "0.1",
                "status": "unconfirmed",
            },
        }
        sent = send(url, secret, payload)
        shown = redact_url(url)
        if sent.accepted:
            self.stdout.write(f"{shown}: accepted (HTTP {sent.status_code}, {sent.duration_ms} ms)")
            return
        raise CommandError(f"{shown}: not accepted ({sent.error or sent.status_code})")
