"""Donations end to end through the latest and finalized crawlers on a real anvil chain."""

from __future__ import annotations

from decimal import Decimal

import pytest

from crawlers.models import FINALIZED, LATEST
from crawlers.services import crawl, cursor_get
from donations.models import Donation, DonationStats, UserData
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.invariants import assert_ledger_invariants

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

USDT = 10**6  # one whole coin in the token's smallest unit


def finalize(node) -> None:
    """`finalized` trails the head by two blocks: two more blocks finalize everything mined so far."""
    node.mine(2)


def donations() -> dict[str, Donation]:
    return {d.tx_hash: d for d in Donation.objects.all()}


def test_eth_usdt_and_usdc_donations_are_inserted_unconfirmed_then_confirmed_on_finality(node):
    donor_eth, donor_usdt, donor_usdc, spender = ACCOUNTS[1], ACCOUNTS[2], ACCOUNTS[3], ACCOUNTS[4]
    node.mint(node.coins["usdt"], donor_usdt, 1000 * USDT)
    node.mint(node.coins["usdc"], donor_usdc, 1000 * USDT)
    node.approve(node.coins["usdc"], donor_usdc, spender, 100 * USDT)
    with node.one_block():
        eth_tx = node.send_eth(donor_eth, DONATION_ADDRESS, 3 * ETHER // 2)
        usdt_tx = node.transfer_token(node.coins["usdt"], donor_usdt, DONATION_ADDRESS, 250 * USDT)
        usdc_tx = node.transfer_from(node.coins["usdc"], spender, donor_usdc, DONATION_ADDRESS, 100 * USDT)

    latest = crawl(LATEST)

    assert latest.held is None
    assert latest.inserted == 3
    seen = donations()
    assert {tx: (d.asset, d.address, d.amount, d.usd_amount, d.tokens, d.status) for tx, d in seen.items()} == {
        eth_tx: ("eth", donor_eth, Decimal("1.5"), Decimal("3000.00"), 3_000_000, "unconfirmed"),
        usdt_tx: ("usdt", donor_usdt, Decimal("250"), Decimal("250.00"), 250_000, "unconfirmed"),
        # transferFrom: the donor is the Transfer's `from`, not the spender who sent the transaction
        usdc_tx: ("usdc", donor_usdc, Decimal("100"), Decimal("100.00"), 100_000, "unconfirmed"),
    }
    assert seen[eth_tx].log_index is None
    assert seen[usdt_tx].log_index is not None
    assert DonationStats.objects.get().tokens == 0
    assert not UserData.objects.exists()
    assert_ledger_invariants()

    early = crawl(FINALIZED)
    assert early.confirmed == 0
    assert set(Donation.objects.values_list("status", flat=True)) == {"unconfirmed"}

    finalize(node)
    final = crawl(FINALIZED)

    assert final.held is None
    assert (final.confirmed, final.inserted) == (3, 0)
    assert set(Donation.objects.values_list("status", flat=True)) == {"confirmed"}
    stats = DonationStats.objects.get()
    assert (stats.total, stats.tokens, stats.status) == (Decimal("3350.00"), 3_350_000, "open")
    assert {u.address: (u.total, u.tokens) for u in UserData.objects.all()} == {
        donor_eth: (Decimal("3000.00"), 3_000_000),
        donor_usdt: (Decimal("250.00"), 250_000),
        donor_usdc: (Decimal("100.00"), 100_000),
    }
    assert cursor_get(FINALIZED).value == node.finalized()
    assert cursor_get(LATEST).value == node.head() - 2
    assert_ledger_invariants()
