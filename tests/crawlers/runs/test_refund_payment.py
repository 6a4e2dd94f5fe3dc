"""Refunds paid from the treasury end to end, on anvil: the donation address is a Safe stand-in
(tests/contracts/BatchSafe.sol: its owner has it execute a MultiSend-encoded batch, as a Safe executes a
Transaction Builder file). A donation after the sale closed and a stray coin are owed; the operator exports
the Safe batch from the admin; the owner executes it in one transaction; the finalized crawler marks both
rows paid with that transaction, by itself."""

from __future__ import annotations

import dataclasses
import json
from decimal import Decimal

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth.models import User
from django.urls import reverse
from eth_abi import encode

from crawlers.models import FINALIZED, LATEST
from crawlers.runs.crawl import crawl
from donations.models import Donation
from donations.refund_models import Refund, UnmatchedPayout
from dws_project.config_values import SaleTier, StableCoin
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER, multisend, selector
from tests.configs import configured
from tests.invariants import assert_ledger_invariants

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

OWNER, EARLY, LATE, STRAY = ACCOUNTS[1], ACCOUNTS[2], ACCOUNTS[3], ACCOUNTS[4]
# 1 ETH = 2000 USD = 2,000,000 tokens at 0.001; the cap is 5,000,000 tokens.
SMALL_SALE = (SaleTier(5_000_000, Decimal("0.001")),)


def install_batch_safe(node) -> None:
    template = node.deploy("BatchSafe", ["address"], [OWNER])
    node.set_code(DONATION_ADDRESS, node.rpc("eth_getCode", template, "latest"))


def finalized_crawl(node) -> None:
    node.mine(2)
    assert crawl(LATEST).held is None
    assert crawl(FINALIZED).held is None


def test_a_safe_pays_the_exported_batch_in_one_transaction_and_the_register_closes_by_itself(node, settings, client):
    dai = node.deploy("TestStableCoin", ["string", "string"], ["DAI (test)", "DAI"])
    settings.CONFIG = dataclasses.replace(
        configured(settings.CONFIG, stray_tokens=(StableCoin("dai", dai, 6),), start_block=node.head() + 1),
        sale_tiers=SMALL_SALE,
    )
    install_batch_safe(node)
    node.mint(dai, STRAY, 50 * 10**6)
    node.send_eth(EARLY, DONATION_ADDRESS, 3 * ETHER)  # 6,000,000 tokens: reaches the cap
    node.mine(1)
    late = node.send_eth(LATE, DONATION_ADDRESS, ETHER)  # confirmed after it: 0 tokens, owed back
    node.transfer_token(dai, STRAY, DONATION_ADDRESS, 50 * 10**6)
    finalized_crawl(node)

    assert Donation.objects.get(tx_hash=late).tokens == 0
    owed = {(r.donor, r.asset, r.amount, r.reason) for r in Refund.objects.filter(status="owed")}
    assert owed == {(LATE, "eth", Decimal(1), "sale-closed"), (STRAY, "dai", Decimal(50), "stray-coin")}

    client.force_login(User.objects.create_superuser("alice", "alice@example.org", "pw-not-used"))
    rows = list(Refund.objects.values_list("id", flat=True))
    exported = client.post(
        reverse("admin:donations_refund_changelist"), {"action": "export_safe_batch", ACTION_CHECKBOX_NAME: rows}
    )
    batch = json.loads(exported.content)
    assert batch["chainId"] == str(settings.CONFIG.first_chain.chain_id)

    data = "0x" + (selector("multiSend(bytes)") + encode(["bytes"], [multisend(batch["transactions"])])).hex()
    paid = node.send({"from": OWNER, "to": DONATION_ADDRESS, "data": data, "gas": hex(500_000)})
    assert node.receipt(paid)["status"] == "0x1"
    finalized_crawl(node)

    refunds = {r.asset: r for r in Refund.objects.all()}
    assert {a: (r.status, r.paid_tx_hash) for a, r in refunds.items()} == {"eth": ("paid", paid), "dai": ("paid", paid)}
    assert refunds["eth"].paid_trace_address != ""  # the Safe's own call, below the owner's transaction
    assert refunds["dai"].paid_log_index is not None
    assert not UnmatchedPayout.objects.exists()
    assert node.token_balance(dai, STRAY) == 50 * 10**6
    assert_ledger_invariants()


def test_an_account_treasury_pays_by_its_own_transaction(node, settings):
    """The donation address as an externally owned account (the CSV's way: one transaction per refund)."""
    settings.CONFIG = dataclasses.replace(settings.CONFIG, sale_tiers=SMALL_SALE)
    node.send_eth(EARLY, DONATION_ADDRESS, 3 * ETHER)
    node.mine(1)
    node.send_eth(LATE, DONATION_ADDRESS, ETHER)
    finalized_crawl(node)
    assert Refund.objects.get().status == "owed"

    paid = node.send_eth(DONATION_ADDRESS, LATE, ETHER)  # anvil's account: unlocked, it signs itself
    finalized_crawl(node)

    refund = Refund.objects.get()
    assert (refund.status, refund.paid_tx_hash, refund.paid_log_index, refund.paid_trace_address) == (
        "paid",
        paid,
        None,
        "",
    )
    assert_ledger_invariants()
