"""Migration 0008 seals the webhook secrets already stored in plain text, in place."""

from __future__ import annotations

import pytest
from django.db import connection

from donations.models import DonationStats
from donations.webhook_models import WebhookEndpoint
from tests.migrations import latest_schema_after, migrate  # noqa: F401 - latest_schema_after: a fixture

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("latest_schema_after")]

BEFORE = [("donations", "0007_credit_eth_price")]
AFTER = [("donations", "0008_webhook_secrets_sealed")]
PLAIN = "whsec-plain-0123456789abcdef"


def test_plain_text_secrets_are_sealed_by_the_migration():
    DonationStats.objects.get_or_create()  # the ledger check after the test reads it; a flush removes it
    migrate(BEFORE)
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO webhook_endpoint (url, secret, events, active, description, created_at, modified_at) "
                "VALUES (%s, %s, %s, true, '', now(), now()) RETURNING id",
                ["https://93.184.215.14/hooks", PLAIN, '["donation.seen"]'],
            )
            endpoint_id = cursor.fetchone()[0]
    finally:
        migrate(AFTER)

    with connection.cursor() as cursor:
        cursor.execute("SELECT sealed_secret FROM webhook_endpoint WHERE id = %s", [endpoint_id])
        (stored,) = cursor.fetchone()
    assert PLAIN not in stored
    assert WebhookEndpoint.objects.get(id=endpoint_id).secret == PLAIN
