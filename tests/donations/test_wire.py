"""One shape per public thing: the API's SQL rendering of a donation and the webhooks' rendering of the
same row in memory agree field for field, and the schema documents exactly those fields."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.conf import settings

from donations.apis import DonationSerializer
from donations.models import Donation, DonationStatus
from donations.selectors import user_donations
from donations.webhooks import donation_data
from donations.wire import DONATION_FIELDS, RECORDING_TIMES, REFUND_FIELD, donation_public, donation_values

pytestmark = pytest.mark.django_db

DONOR = "0x" + "d0" * 20


def _row(**fields) -> Donation:
    values = {
        "tx_hash": "0x" + "ab" * 32,
        "address": DONOR,
        "asset": "eth",
        "amount": Decimal("0.25"),
        "usd_amount": Decimal("500.03"),
        "price": Decimal("0.001"),
        "eth_price": Decimal("2000.12"),
        "tokens": 500030,
        "status": DonationStatus.UNCONFIRMED,  # (a confirmed row would need the totals beside it)
        "block_number": 12,
        "block_hash": "0x" + "cd" * 32,
        "block_time": datetime(2026, 12, 1, 7, 38, 36, tzinfo=UTC),
        "confirmed_at": datetime(2026, 12, 1, 7, 53, 1, 654321, tzinfo=UTC),
    } | fields
    return Donation.objects.create(**values)


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"asset": "usdt", "amount": Decimal("100"), "eth_price": None, "log_index": 3},
        {"status": DonationStatus.FAILED, "confirmed_at": None, "amount": Decimal("0.0000000001")},
    ],
)
def test_the_api_and_a_webhook_render_the_same_row_the_same_way(fields) -> None:
    in_memory = _row(**fields)
    [from_sql] = user_donations(address=DONOR)
    assert from_sql.pop(REFUND_FIELD) is None  # the API's own addition (none owed for these rows)
    assert from_sql == donation_public(donation_values(in_memory))
    assert from_sql == donation_public(donation_values(Donation.objects.get(pk=in_memory.pk)))
    webhook = donation_data(in_memory)
    shown = {k: v for k, v in from_sql.items() if k not in RECORDING_TIMES}
    assert {k: webhook[k] for k in shown} == shown  # the webhook extends the API's shape
    assert not set(RECORDING_TIMES) & set(webhook)  # the same event re-emitted after a restore is the same
    assert webhook["chain_id"] == settings.CONFIG.first_chain.chain_id


def test_the_schema_documents_exactly_the_donation_shape() -> None:
    assert tuple(DonationSerializer().fields) == (*DONATION_FIELDS, REFUND_FIELD)
