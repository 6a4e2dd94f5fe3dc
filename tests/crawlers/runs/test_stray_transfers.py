"""Coins the sale does not take, on anvil (docs/detection.md, "Coins the sale does not take"): a DAI-like and a
USDC.e-like token sent to the donation address are owed back to their senders, a spam token's transfers are
only counted, nothing is credited; the treasury's transfers back close the rows they match, and a transfer
that matches none is listed for the operator."""

from __future__ import annotations

from decimal import Decimal

import pytest

from crawlers.models import FINALIZED, LATEST, ForeignTransferCount
from crawlers.record.cursors import cursor_write
from crawlers.runs.crawl import crawl
from donations.models import Donation
from donations.refund_models import Refund, UnmatchedPayout
from dws_project.config_values import StableCoin
from tests.chain import ACCOUNTS, DONATION_ADDRESS
from tests.configs import configured
from tests.invariants import assert_ledger_invariants

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

DONOR, OTHER, SPAMMER = ACCOUNTS[1], ACCOUNTS[2], ACCOUNTS[3]
UNIT = 10**6  # the test coins' decimals


@pytest.fixture
def tokens(node, settings) -> dict[str, str]:
    """A DAI-like and a USDC.e-like token on the stray list, a spam token on none."""
    found = {
        name: node.deploy("TestStableCoin", ["string", "string"], [f"{name} (test)", name.upper()])
        for name in ("dai", "usdc.e", "spam")
    }
    strays = (StableCoin("dai", found["dai"], 6), StableCoin("usdc.e", found["usdc.e"], 6))
    settings.CONFIG = configured(settings.CONFIG, stray_tokens=strays, start_block=node.head() + 1)
    for name in ("dai", "usdc.e"):
        node.mint(found[name], DONOR, 1000 * UNIT)
        node.mint(found[name], OTHER, 1000 * UNIT)
    node.mint(found["spam"], SPAMMER, 10**9 * UNIT)
    return found


def finalized_crawl(node) -> None:
    node.mine(2)
    assert crawl(LATEST).held is None
    assert crawl(FINALIZED).held is None


def owed() -> set[tuple]:
    return {(r.donor, r.asset, r.amount, r.reason, r.status) for r in Refund.objects.all()}


def test_stray_coins_are_owed_back_and_spam_is_only_counted(node, tokens):
    dai_tx = node.transfer_token(tokens["dai"], DONOR, DONATION_ADDRESS, 25 * UNIT)
    node.transfer_token(tokens["usdc.e"], OTHER, DONATION_ADDRESS, 10 * UNIT + 5)
    node.transfer_token(tokens["dai"], OTHER, DONATION_ADDRESS, 0)  # a zero-value transfer: poisoning, counted
    node.mint(tokens["spam"], DONATION_ADDRESS, 777 * UNIT)  # an airdrop: minted, no sender
    for _ in range(3):
        node.transfer_token(tokens["spam"], SPAMMER, DONATION_ADDRESS, 1)
    usdt = node.coins["usdt"]
    node.mint(usdt, DONOR, 5 * UNIT)
    node.transfer_token(usdt, DONOR, DONATION_ADDRESS, 5 * UNIT)  # a donation coin: credited as always

    finalized_crawl(node)

    assert owed() == {
        (DONOR, "dai", Decimal(25), "stray-coin", "owed"),
        (OTHER, "usdc.e", Decimal("10.000005"), "stray-coin", "owed"),
    }
    dai = Refund.objects.get(asset="dai")
    assert (dai.source_tx_hash, dai.contract, dai.decimals, dai.amount_raw) == (dai_tx, tokens["dai"], 6, 25 * UNIT)
    counted = {c.contract: c.transfers for c in ForeignTransferCount.objects.all()}
    assert counted == {tokens["spam"]: 4, tokens["dai"]: 1}
    assert [(d.asset, d.amount, d.status) for d in Donation.objects.all()] == [("usdt", Decimal(5), "confirmed")]
    assert_ledger_invariants()

    # The same blocks crawled again (the cursor set back by an operator): nothing owed or counted twice.
    cursor_write(chain="eth", label=FINALIZED, value=dai.source_block_number - 1)
    assert crawl(FINALIZED).held is None
    assert Refund.objects.count() == 2
    assert {c.contract: c.transfers for c in ForeignTransferCount.objects.all()} == counted


def test_the_treasury_paying_a_stray_back_closes_its_row_and_a_wrong_amount_is_listed(node, tokens):
    node.transfer_token(tokens["dai"], DONOR, DONATION_ADDRESS, 25 * UNIT)
    node.transfer_token(tokens["usdc.e"], OTHER, DONATION_ADDRESS, 10 * UNIT)
    finalized_crawl(node)

    # The donation address is an account here (anvil's, unlocked): it signs the transfers back itself.
    paid = node.transfer_token(tokens["dai"], DONATION_ADDRESS, DONOR, 25 * UNIT)
    wrong = node.transfer_token(tokens["usdc.e"], DONATION_ADDRESS, OTHER, 9 * UNIT)
    finalized_crawl(node)

    dai, usdce = Refund.objects.get(asset="dai"), Refund.objects.get(asset="usdc.e")
    assert (dai.status, dai.paid_tx_hash, dai.paid_log_index) == ("paid", paid, 0)
    assert dai.paid_block_number == int(node.receipt(paid)["blockNumber"], 16)
    assert usdce.status == "owed"
    listed = UnmatchedPayout.objects.get()
    assert (listed.tx_hash, listed.recipient, listed.asset, listed.amount, listed.status) == (
        wrong,
        OTHER,
        "usdc.e",
        Decimal(9),
        "open",
    )

    # The operator pays the right amount after all (the treasury topped up: the 9 went out): the row closes;
    # the wrong transfer stays listed.
    node.mint(tokens["usdc.e"], DONATION_ADDRESS, 9 * UNIT)
    right = node.transfer_token(tokens["usdc.e"], DONATION_ADDRESS, OTHER, 10 * UNIT)
    assert node.receipt(right)["status"] == "0x1"
    finalized_crawl(node)
    usdce.refresh_from_db()
    assert (usdce.status, usdce.paid_tx_hash) == ("paid", right)
    assert UnmatchedPayout.objects.get().tx_hash == wrong
