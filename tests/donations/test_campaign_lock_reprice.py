"""Rows a finalized block priced before the campaign lock, priced again under it (issue 37): the paths other
than a plain insert. While an operator's session holds the campaign row, another chain's block that crosses
a tier limit queues for it first and this chain's block second; this block records a donation the latest
crawler saw in a block a re-org replaced (moved), one the judge had failed (recorded anew) and one nobody
saw (inserted), each priced at the tier as last committed. Credited after the other chain's block, each is
priced at the next tier, and the webhooks announce that price only.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from donations.finalized import finalized_block_record
from donations.judging import donations_fail_unconfirmed
from donations.ledger import ledger_discrepancies
from donations.models import Donation, DonationStats
from donations.services import block_record_unconfirmed
from donations.sightings import Sighting, Transfer
from donations.webhook_models import WebhookEvent
from dws_project.config_values import SaleTier
from tests.chain import ACCOUNTS
from tests.configs import with_chains
from tests.crawlers.runs.test_campaign_lock import on_thread, session, waiting
from tests.webhook_receiver import registered_endpoint

pytestmark = [pytest.mark.django_db(transaction=True)]

TIERS = (SaleTier(3_000_000, Decimal("0.001")), SaleTier(50_000_000, Decimal("0.002")))


def sighting(chain: str, n: int, *, block: int, usdt: str, donor: str = ACCOUNTS[4]) -> Sighting:
    transfer = Transfer(
        tx_hash=f"0x{n:064x}",
        log_index=0,
        donor=donor,
        asset="usdt",
        amount=Decimal(usdt),
        block_number=block,
        block_hash=f"0x{block:064x}",
    )
    return Sighting(chain=chain, transfer=transfer, block_time=datetime(2026, 1, 1, tzinfo=UTC), eth_price=None)


def test_moved_recorded_anew_and_inserted_rows_are_priced_at_the_tier_of_their_turn_and_announced_so(settings):
    eth = settings.CONFIG.first_chain
    settings.CONFIG = with_chains(settings.CONFIG, eth, dataclasses.replace(eth, name="rollup", chain_id=9001))
    DonationStats.objects.get_or_create()
    registered_endpoint("https://hooks.example/dws", ["donation.seen", "donation.moved"], secret="s" * 32)
    moved, failed, new = (sighting("eth", n, block=200, usdt="100") for n in (1, 2, 3))
    # The latest crawler saw two of them in block 100, which a re-org replaced; the judge failed one.
    seen = block_record_unconfirmed(
        chain="eth",
        sightings=[sighting("eth", n, block=100, usdt="100") for n in (1, 2)],
        tiers=TIERS,
    )
    donations_fail_unconfirmed(donation_ids=[seen[1][0].id], reason="gone from its block", tiers=TIERS)
    crossing = sighting("rollup", 9, block=300, usdt="4000", donor=ACCOUNTS[5])  # 4,000,000 tokens in tier 1

    operator, probe = session(), session(autocommit=True)
    try:
        with operator.cursor() as sql:
            sql.execute("SELECT tokens FROM donation_stats FOR UPDATE")
        with on_thread(
            lambda: finalized_block_record(chain="rollup", sightings=[crossing], reverted_tx_hashes=[], tiers=TIERS)
        ) as first:
            waiting(probe, 1, table="donation_stats")
            with on_thread(
                lambda: finalized_block_record(
                    chain="eth", sightings=[moved, failed, new], reverted_tx_hashes=[], tiers=TIERS
                )
            ) as second:
                waiting(probe, 2, table="donation_stats")  # both blocks written, each waiting to credit
                operator.rollback()
    finally:
        operator.close()
        probe.close()
    assert "error" not in first, first.get("error")
    assert "error" not in second, second.get("error")

    rows = {d.tx_hash: d for d in Donation.objects.all()}
    assert (rows[crossing.transfer.tx_hash].price, rows[crossing.transfer.tx_hash].tokens) == (
        Decimal("0.001"),
        4_000_000,
    )
    for s in (moved, failed, new):
        row = rows[s.transfer.tx_hash]
        assert (row.status, row.block_number, row.price, row.tokens) == ("confirmed", 200, Decimal("0.002"), 50_000)
    assert DonationStats.objects.get().tokens == 4_150_000
    assert ledger_discrepancies() == []
    # The latest crawler's announcement of block 100 stands; this block's announce the price it credited.
    announced = sorted(
        (e.event, e.payload["data"]["tx_hash"], e.payload["data"]["block_number"], Decimal(e.payload["data"]["price"]))
        for e in WebhookEvent.objects.filter(payload__data__chain="eth")
    )
    tx = {s: f"0x{n:064x}" for s, n in (("moved", 1), ("failed", 2), ("new", 3))}
    assert announced == sorted(
        [
            ("donation.seen", tx["moved"], 100, Decimal("0.001")),
            ("donation.seen", tx["failed"], 100, Decimal("0.001")),
            ("donation.moved", tx["moved"], 200, Decimal("0.002")),
            ("donation.seen", tx["new"], 200, Decimal("0.002")),
        ]
    )
