"""The migrations that make the chain part of every record move the rows from before to chain `eth`: the one
chain the single-chain variables configured, and the first of DWS_CHAINS' default."""

from __future__ import annotations

import pytest
from django.db import connection

from crawlers.models import UnexplainedInflow
from donations.models import Donation, DonationStats
from tests.migrations import latest, latest_schema_after, migrate  # noqa: F401 - latest_schema_after: a fixture

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("latest_schema_after")]

BEFORE = [("donations", "0012_donation_confirmed_at"), ("crawlers", "0007_internal_movement")]
AFTER = [("donations", "0013_chains"), ("crawlers", "0008_chains")]


def test_the_rows_from_before_several_chains_are_chain_eth_and_keep_their_identity():
    DonationStats.objects.get_or_create()  # the ledger check after the test reads it; a flush removes it
    migrate(BEFORE)
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO donation (tx_hash, log_index, address, asset, amount, usd_amount, price, tokens, status, "
                "block_number, block_hash, block_time, absent_count, failed_reason, created_at, modified_at) "
                "VALUES (%s, NULL, %s, 'eth', 1, 2000, 0.001, 2000000, 'unconfirmed', 7, %s, now(), 0, '', now(), "
                "now()) RETURNING id",
                ["0x" + "ab" * 32, "0x" + "cd" * 20, "0x" + "ef" * 32],
            )
            donation_id = cursor.fetchone()[0]
            cursor.execute(
                "INSERT INTO unexplained_inflow (block_number, block_hash, asset, amount_raw, amount, status, "
                "tx_hash, reason, operator, created_at) VALUES (7, %s, 'eth', 5, 0.000000000000000005, 'open', '', "
                "'', '', now()) RETURNING id",
                ["0x" + "ef" * 32],
            )
            inflow_id = cursor.fetchone()[0]
    finally:
        migrate(AFTER)
        migrate(latest())  # the rows are read through today's models, which know every later column

    assert Donation.objects.get(id=donation_id).chain == "eth"
    assert UnexplainedInflow.objects.get(id=inflow_id).chain == "eth"
    # the same transaction on another chain is another donation; on chain eth it is the same one
    row = Donation.objects.get(id=donation_id)
    row.pk, row.chain = None, "base"
    row.save(force_insert=True)
    row.pk, row.chain = None, "eth"
    with pytest.raises(Exception, match="donation_tx_hash_log_index_key"):
        row.save(force_insert=True)
