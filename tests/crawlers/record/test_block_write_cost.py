"""A block with donations costs a few statements, not a few per donation (issue #12)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext

from donations.finalized import finalized_block_record
from donations.models import Donation, DonationStats, UserData
from donations.services import block_record_unconfirmed
from donations.sightings import Sighting, Transfer
from donations.webhook_models import WebhookEvent
from tests.webhook_receiver import registered_endpoint

pytestmark = [pytest.mark.django_db]


def coin_donations(count: int, block: int) -> list[Sighting]:
    """`count` coin donations from as many donors in block `block`, each its own transaction."""
    return [
        Sighting(
            chain="eth",
            transfer=Transfer(
                tx_hash=f"0x{block:04x}{i:060x}",
                log_index=i,
                donor=f"0x{i + 1:040x}",
                asset="usdt",
                amount=Decimal("25"),
                block_number=block,
                block_hash=f"0x{block:064x}",
            ),
            block_time=datetime(2026, 11, 30, tzinfo=UTC),
            eth_price=None,
        )
        for i in range(count)
    ]


def statements(count: int, block: int) -> tuple[int, int]:
    """Statements of the latest crawler's write and of the finalized crawler's, for one block."""
    tiers = settings.CONFIG.sale_tiers
    sightings = coin_donations(count, block)
    with CaptureQueriesContext(connection) as latest:
        block_record_unconfirmed(chain="eth", sightings=sightings, tiers=tiers)
    with CaptureQueriesContext(connection) as final:
        finalized_block_record(chain="eth", sightings=sightings, reverted_tx_hashes=[], tiers=tiers)
    return len(latest), len(final)


@pytest.mark.parametrize("subscribed", [False, True], ids=["no-webhooks", "webhooks"])
def test_each_further_donation_in_a_block_costs_its_own_row_writes_only(subscribed):
    if subscribed:
        registered_endpoint("https://hooks.example/dws", ["donation.confirmed"], secret="s" * 32)
    latest_one, final_one = statements(1, block=100)
    latest_ten, final_ten = statements(10, block=200)

    # Finalized: the row's UPDATE per donation (and its outbox event when subscribed); the campaign row,
    # the donors' totals, the rows' lock and the endpoints are one statement each for the whole block.
    per_event = 4 if subscribed else 0  # savepoint, event, release, deliveries
    assert final_ten - final_one <= 9 * (1 + per_event)
    # Latest: each new row is one INSERT in its own savepoint (a racing writer's row stands).
    assert latest_ten - latest_one <= 9 * 3
    assert Donation.objects.filter(status="confirmed").count() == 11
    assert DonationStats.objects.get().total == Decimal("275.00")
    assert UserData.objects.count() == 10
    assert WebhookEvent.objects.count() == (11 if subscribed else 0)
