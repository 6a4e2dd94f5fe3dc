"""One row per donation across re-orgs: a coin Transfer re-mined at another log index moves its
unconfirmed row instead of adding a second one; a confirmed row never moves."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.conf import settings

from crawlers.models import FINALIZED, LATEST
from crawlers.runs.crawl import crawl
from donations.judging import donations_confirm
from donations.models import Donation, DonationStats
from donations.services import DonationOutcome, donation_record_unconfirmed
from donations.sightings import Sighting, Transfer
from tests.chain import ACCOUNTS, DONATION_ADDRESS
from tests.invariants import assert_ledger_invariants

pytestmark = pytest.mark.django_db

USDT = 10**6


@pytest.mark.usefixtures("crawl_config", "eth_prices")
def test_a_coin_donation_remined_at_another_log_index_is_one_row_confirmed_once(node):
    donor, bystander = ACCOUNTS[2], ACCOUNTS[3]
    usdt = node.coins["usdt"]
    node.mint(usdt, donor, 1000 * USDT)
    node.mint(usdt, bystander, 1000 * USDT)
    tx_hash = node.transfer_token(usdt, donor, DONATION_ADDRESS, 250 * USDT)
    signed = node.rpc("eth_getRawTransactionByHash", tx_hash)
    crawl(LATEST)
    first = Donation.objects.get()
    assert first.log_index == 0

    # The block is replaced by one where another Transfer comes first: ours is re-mined at log index 1.
    other = node.token_tx(usdt, bystander, "transfer(address,uint256)", ["address", "uint256"], [ACCOUNTS[4], USDT])
    node.reorg(1, [(other, 0), (signed, 0)])
    receipt = node.receipt(tx_hash)
    new_index = next(int(log["logIndex"], 16) for log in receipt["logs"])
    assert new_index != first.log_index
    node.mine(1)
    crawl(LATEST)
    node.mine(2)
    crawl(LATEST)
    crawl(FINALIZED)

    row = Donation.objects.get()
    assert (row.id, row.tx_hash, row.log_index, row.status) == (first.id, tx_hash, new_index, "confirmed")
    assert row.block_hash == receipt["blockHash"]
    assert DonationStats.objects.get().total == Decimal("250.00")
    assert_ledger_invariants()


# --- the matching rule, on recorded rows ---------------------------------------------------------------

TX = "0x" + "ab" * 32
OLD_BLOCK, NEW_BLOCK = "0x" + "01" * 32, "0x" + "02" * 32
DONOR, OTHER = ACCOUNTS[1], ACCOUNTS[2]
WHEN = datetime(2026, 1, 1, tzinfo=UTC)


def sighting(log_index, amount, block_hash=NEW_BLOCK, donor=DONOR, asset="usdt", trace_address=None, usd=None):
    transfer = Transfer(
        tx_hash=TX,
        log_index=log_index,
        donor=donor,
        asset=asset,
        amount=Decimal(amount),
        block_number=2 if block_hash == NEW_BLOCK else 1,
        block_hash=block_hash,
        trace_address=trace_address,
    )
    # A coin is USD 1:1; an ETH sighting carries the ETH price that makes its USD value `usd`.
    eth_price = Decimal(usd or "2000") / Decimal(amount) if asset == "eth" else None
    return Sighting(chain="eth", transfer=transfer, block_time=WHEN, eth_price=eth_price)


def record(s: Sighting):
    return donation_record_unconfirmed(sighting=s, tiers=settings.CONFIG.sale_tiers)


def rows():
    return sorted((r.log_index, r.amount, r.usd_amount, r.block_hash) for r in Donation.objects.filter(tx_hash=TX))


def test_two_transfers_of_one_transaction_shifted_up_each_keep_their_own_row_and_usd_value():
    record(sighting(3, "10", OLD_BLOCK))
    record(sighting(4, "5", OLD_BLOCK))

    # Re-mined one log later: the first new sighting lands on the slot the other transfer held.
    assert record(sighting(4, "10"))[1] == DonationOutcome.MOVED
    assert record(sighting(5, "5"))[1] == DonationOutcome.MOVED

    assert rows() == [(4, Decimal("10"), Decimal("10.00"), NEW_BLOCK), (5, Decimal("5"), Decimal("5.00"), NEW_BLOCK)]
    assert Donation.objects.count() == 2


def test_two_transfers_shifted_down_each_keep_their_own_row():
    record(sighting(3, "10", OLD_BLOCK))
    record(sighting(4, "5", OLD_BLOCK))

    record(sighting(2, "10"))
    record(sighting(3, "5"))

    assert rows() == [(2, Decimal("10"), Decimal("10.00"), NEW_BLOCK), (3, Decimal("5"), Decimal("5.00"), NEW_BLOCK)]


def test_identical_transfers_in_one_transaction_pair_off_in_order():
    record(sighting(3, "7", OLD_BLOCK))
    record(sighting(4, "7", OLD_BLOCK))

    record(sighting(8, "7"))
    record(sighting(9, "7"))

    assert rows() == [(8, Decimal("7"), Decimal("7.00"), NEW_BLOCK), (9, Decimal("7"), Decimal("7.00"), NEW_BLOCK)]


def test_a_moved_row_takes_the_usd_value_derived_for_its_new_block():
    record(sighting(None, "1", OLD_BLOCK, asset="eth", trace_address="0.1", usd="2000"))
    row, outcome = record(sighting(None, "1", asset="eth", trace_address="0.1", usd="2100"))
    assert outcome == DonationOutcome.MOVED
    assert (row.usd_amount, row.block_hash, row.trace_address) == (Decimal("2100.00"), NEW_BLOCK, "0.1")
    assert Donation.objects.count() == 1


def test_a_transfer_of_another_donor_or_amount_never_moves_a_row():
    record(sighting(3, "10", OLD_BLOCK))

    record(sighting(5, "10", donor=OTHER))
    record(sighting(6, "11"))

    assert sorted((r.log_index, r.address, r.amount, r.block_hash) for r in Donation.objects.all()) == [
        (3, DONOR, Decimal("10"), OLD_BLOCK),
        (5, OTHER, Decimal("10"), NEW_BLOCK),
        (6, DONOR, Decimal("11"), NEW_BLOCK),
    ]


def test_internal_frames_of_one_transaction_are_separate_donations():
    record(sighting(None, "1", asset="eth", trace_address="0"))
    record(sighting(None, "1", asset="eth", trace_address="1"))
    record(sighting(None, "1", asset="eth"))  # and a top-level transfer would be a third identity

    assert sorted(Donation.objects.values_list("trace_address", flat=True), key=str) == ["0", "1", None]


def test_a_confirmed_row_never_moves():
    row, _ = record(sighting(3, "10", OLD_BLOCK))
    donations_confirm(donation_ids=[row.id], tiers=settings.CONFIG.sale_tiers)

    found, outcome = record(sighting(4, "10"))

    assert (found.id, outcome) == (row.id, DonationOutcome.UNCHANGED)
    assert rows() == [(3, Decimal("10"), Decimal("10.00"), OLD_BLOCK)]
