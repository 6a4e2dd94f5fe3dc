"""Migration 0010 numbers the proof ranges already published, chain by chain in block order: the public
proof's pages are cut by that number (crawlers/proof_report.py)."""

from __future__ import annotations

import pytest
from django.db import connection

from crawlers.models import ProofRange
from donations.models import DonationStats
from tests.migrations import latest_schema_after, migrate  # noqa: F401 - latest_schema_after: a fixture

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("latest_schema_after")]


def test_the_ranges_published_before_are_numbered_per_chain_in_block_order():
    DonationStats.objects.get_or_create()  # the ledger check after the test reads it; a flush removes it
    migrate([("crawlers", "0009_address_mode")])
    try:
        with connection.cursor() as cursor:
            for chain, first in (("eth", 300), ("base", 50), ("eth", 100), ("eth", 200), ("base", 10)):
                cursor.execute(
                    "INSERT INTO proof_range (chain, first_block, last_block, last_block_hash, status, reason, "
                    "checked_at, created_at) VALUES (%s, %s, %s, %s, 'proven', '', now(), now())",
                    [chain, first, first + 9, "0x" + format(first + 9, "064x")],
                )
    finally:
        migrate([("crawlers", "0010_proof_range_ordinal")])

    numbered = sorted(ProofRange.objects.values_list("chain", "first_block", "ordinal"))
    assert numbered == [("base", 10, 0), ("base", 50, 1), ("eth", 100, 0), ("eth", 200, 1), ("eth", 300, 2)]
