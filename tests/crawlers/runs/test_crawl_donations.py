"""Donations end to end through the latest and finalized crawlers on a real anvil chain."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import pytest

from crawlers.models import CHAIN, FINALIZED, LATEST
from crawlers.record.cursors import cursor_get
from crawlers.runs.crawl import crawl
from donations.models import Donation, DonationStats, UserData
from dws_project.config_values import SaleTier
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.configs import configured
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
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()
    assert cursor_get(chain=CHAIN, label=LATEST).value == node.head() - 2
    assert_ledger_invariants()


def test_a_donation_through_a_contract_wallet_counts_for_the_wallet(node):
    owner = ACCOUNTS[5]
    wallet = node.deploy("ForwardingWallet", sender=owner)
    node.mint(node.coins["usdt"], wallet, 80 * USDT)
    tx = node.wallet_forward(wallet, owner, node.coins["usdt"], DONATION_ADDRESS, 80 * USDT)
    finalize(node)

    crawl(LATEST)
    crawl(FINALIZED)

    donation = Donation.objects.get()
    assert (donation.tx_hash, donation.address, donation.asset, donation.amount) == (tx, wallet, "usdt", Decimal("80"))
    assert donation.status == "confirmed"
    assert UserData.objects.get(address=wallet).tokens == 80_000
    assert_ledger_invariants()


def test_transfers_that_are_zero_at_the_column_scale_are_not_recorded(node):
    donor = ACCOUNTS[1]
    node.mint(node.coins["usdc"], donor, 5 * USDT)
    with node.one_block():
        node.send_eth(donor, DONATION_ADDRESS, 1)  # 1 wei
        node.send_eth(donor, DONATION_ADDRESS, 0)
        node.send_eth(donor, DONATION_ADDRESS, 10**10 - 1)  # just under 0.00000001 ETH
        node.transfer_token(node.coins["usdc"], donor, DONATION_ADDRESS, 0)
        smallest_eth = node.send_eth(donor, DONATION_ADDRESS, 10**10)  # exactly 0.00000001 ETH
        smallest_usdc = node.transfer_token(node.coins["usdc"], donor, DONATION_ADDRESS, 1)  # 0.000001 USDC
    finalize(node)

    crawl(LATEST)
    crawl(FINALIZED)

    assert {d.tx_hash: d.amount for d in Donation.objects.all()} == {
        smallest_eth: Decimal("0.00000001"),
        smallest_usdc: Decimal("0.000001"),
    }
    assert_ledger_invariants()


def test_reverted_transfers_are_not_donations(node):
    donor = ACCOUNTS[1]
    owner = ACCOUNTS[5]
    wallet = node.deploy("ForwardingWallet", sender=owner)
    # The donation address briefly runs code that reverts, so a plain ETH transfer to it fails.
    node.set_code(DONATION_ADDRESS, "0x60006000fd")
    eth_tx = node.send_eth(donor, DONATION_ADDRESS, ETHER, gas=60_000)
    node.set_code(DONATION_ADDRESS, "0x")
    no_balance = node.transfer_token(node.coins["usdt"], donor, DONATION_ADDRESS, 10 * USDT)
    wallet_tx = node.wallet_forward(wallet, owner, node.coins["usdt"], DONATION_ADDRESS, 10 * USDT)
    assert [node.receipt(tx)["status"] for tx in (eth_tx, no_balance, wallet_tx)] == ["0x0"] * 3
    finalize(node)

    latest, final = crawl(LATEST), crawl(FINALIZED)

    assert latest.held is None
    assert final.held is None
    assert not Donation.objects.exists()
    assert_ledger_invariants()


def test_transfers_elsewhere_and_unconfigured_tokens_are_ignored(node):
    donor, other = ACCOUNTS[1], ACCOUNTS[8]
    stranger_coin = node.deploy("TestStableCoin", ["string", "string"], ["Not configured", "NOPE"])
    node.mint(stranger_coin, donor, 100 * USDT)
    node.mint(node.coins["usdt"], donor, 100 * USDT)
    with node.one_block():
        node.send_eth(donor, other, ETHER)
        node.transfer_token(node.coins["usdt"], donor, other, 10 * USDT)
        node.transfer_token(stranger_coin, donor, DONATION_ADDRESS, 10 * USDT)
    finalize(node)

    crawl(LATEST)
    crawl(FINALIZED)

    assert not Donation.objects.exists()
    assert_ledger_invariants()


def test_a_reorg_before_finality_removes_a_donation_and_it_is_never_confirmed(node):
    donor, replacement_donor = ACCOUNTS[1], ACCOUNTS[2]
    orphaned = node.send_eth(donor, DONATION_ADDRESS, ETHER)
    crawl(LATEST)
    assert Donation.objects.get().tx_hash == orphaned
    orphaned_block_hash = Donation.objects.get().block_hash

    # The block carrying the donation is replaced by one carrying another donor's donation.
    node.reorg(1, [({"from": replacement_donor, "to": DONATION_ADDRESS, "value": hex(ETHER // 4)}, 0)])
    assert node.rpc("eth_getTransactionByHash", orphaned) is None
    node.mine(1)
    crawl(LATEST)

    rows = donations()
    replacement = next(d for tx, d in rows.items() if tx != orphaned)
    assert (replacement.address, replacement.status) == (replacement_donor, "unconfirmed")
    assert (rows[orphaned].status, rows[orphaned].block_hash) == ("unconfirmed", orphaned_block_hash)

    finalize(node)
    final = crawl(FINALIZED)

    assert final.held is None
    rows = donations()
    assert rows[orphaned].status == "unconfirmed"  # never confirmed; never failed on mere absence either
    assert rows[replacement.tx_hash].status == "confirmed"
    assert DonationStats.objects.get().total == Decimal("500.00")
    assert not UserData.objects.filter(address=donor).exists()
    assert_ledger_invariants()


def test_a_transaction_remined_in_another_block_is_recorded_where_it_now_is(node):
    donor = ACCOUNTS[1]
    tx_hash = node.send_eth(donor, DONATION_ADDRESS, ETHER)
    signed = node.rpc("eth_getRawTransactionByHash", tx_hash)
    crawl(LATEST)
    first_hash = Donation.objects.get().block_hash

    # The block is re-orged away, and the very same signed transaction is mined again a block later.
    node.remine_one_block_later(signed)
    node.mine(1)
    crawl(LATEST)

    donation = Donation.objects.get()
    assert donation.tx_hash == tx_hash
    assert donation.block_hash != first_hash
    assert donation.block_hash == node.receipt(tx_hash)["blockHash"]
    finalize(node)
    crawl(FINALIZED)
    assert Donation.objects.get().status == "confirmed"
    assert_ledger_invariants()


def test_the_finalized_crawler_inserts_and_confirms_what_the_latest_crawler_missed(node):
    tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    finalize(node)

    result = crawl(FINALIZED)

    assert (result.inserted, result.confirmed) == (1, 1)
    donation = Donation.objects.get()
    assert (donation.tx_hash, donation.status, donation.tokens) == (tx, "confirmed", 2_000_000)
    assert_ledger_invariants()


def test_a_provider_on_another_chain_than_dws_chain_id_is_refused(node, settings):
    node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    settings.CONFIG = configured(settings.CONFIG, chain_id=1)
    assert "DWS_CHAIN_ID is 1" in (crawl(LATEST).held or "")
    assert cursor_get(chain=CHAIN, label=LATEST) is None
    assert not Donation.objects.exists()
    settings.CONFIG = configured(settings.CONFIG, chain_id=31337)
    assert crawl(LATEST).inserted == 1


def test_the_finalized_crawler_treats_a_row_from_an_orphaned_block_as_not_yet_seen(node):
    tx_hash = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    signed = node.rpc("eth_getRawTransactionByHash", tx_hash)
    crawl(LATEST)
    orphaned_hash = Donation.objects.get().block_hash
    node.remine_one_block_later(signed)  # re-mined one block later; the latest crawler does not look again
    finalize(node)

    result = crawl(FINALIZED)

    donation = Donation.objects.get()
    assert result.confirmed == 1
    assert donation.status == "confirmed"
    assert donation.block_hash == node.receipt(tx_hash)["blockHash"] != orphaned_hash
    assert donation.block_number == int(node.receipt(tx_hash)["blockNumber"], 16)
    assert_ledger_invariants()


def test_a_donation_remined_elsewhere_before_finality_is_priced_anew_at_the_tier_then(node, settings):
    """DESIGN, Crediting: an unconfirmed donation a re-org moves into another block is recorded anew there,
    at its new block's minute and the tier of the confirmed total at that moment; confirmation keeps that."""
    tx_hash = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    signed = node.rpc("eth_getRawTransactionByHash", tx_hash)
    crawl(LATEST)
    assert (Donation.objects.get().price, Donation.objects.get().tokens) == (Decimal("0.001"), 2_000_000)

    # The tier price in force changes (here: the operator's configuration), then the block is re-orged
    # and the same transaction mined in another block.
    settings.CONFIG = dataclasses.replace(settings.CONFIG, sale_tiers=(SaleTier(10**9, Decimal("0.004")),))
    node.remine_one_block_later(signed)
    node.mine(1)
    crawl(LATEST)

    donation = Donation.objects.get()
    assert donation.block_hash == node.receipt(tx_hash)["blockHash"]
    assert (donation.price, donation.eth_price, donation.tokens) == (Decimal("0.004"), Decimal("2000"), 500_000)
    finalize(node)
    crawl(FINALIZED)
    donation.refresh_from_db()
    assert (donation.status, donation.price, donation.tokens) == ("confirmed", Decimal("0.004"), 500_000)
    assert_ledger_invariants()
