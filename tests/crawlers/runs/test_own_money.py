"""Issue #19 item 3: the donation address's own money is never credited.

A self-transfer (ETH, and a coin) and ETH coming back to a contract donation address from a withdrawal
it started itself (a WETH-like `withdraw`, tests/contracts/WrappedEth.sol) are not donations: they close
the balance identity, are recorded as internal movements for the admin, and `reconcile` agrees. A real
donation in the same blocks is credited as ever.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.test import Client

from crawlers.models import FINALIZED, LATEST, InternalMovement, UnexplainedInflow
from crawlers.runs.crawl import crawl
from crawlers.runs.reconcile import reconcile
from donations.models import Donation
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER, as_contract_wallet
from tests.configs import configured
from tests.invariants import assert_ledger_invariants

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

USDT = 10**6
DONOR, OWNER = ACCOUNTS[2], ACCOUNTS[1]


def movements() -> set[tuple[str, str, Decimal, str]]:
    return {(m.tx_hash, m.asset, m.amount, m.kind) for m in InternalMovement.objects.all()}


def crawl_to_final(node) -> None:
    assert crawl(LATEST).held is None
    node.mine(2)
    assert crawl(FINALIZED).held is None


def start_after_head(settings, node) -> int:
    """The crawlers start after what the test set up: the next block is the first they read."""
    start = node.head() + 1
    settings.CONFIG = configured(settings.CONFIG, start_block=start)
    return start


def test_a_self_transfer_of_eth_and_of_a_coin_is_an_internal_movement_never_a_donation(
    node, settings, admin_client: Client
):
    usdt = node.coins["usdt"]
    node.mint(usdt, DONATION_ADDRESS, 1000 * USDT)
    start = start_after_head(settings, node)
    eth_self = node.send_eth(DONATION_ADDRESS, DONATION_ADDRESS, ETHER)
    coin_self = node.transfer_token(usdt, DONATION_ADDRESS, DONATION_ADDRESS, 500 * USDT)
    donation = node.send_eth(DONOR, DONATION_ADDRESS, ETHER // 2)

    crawl_to_final(node)

    assert list(Donation.objects.values_list("tx_hash", "address", "status")) == [(donation, DONOR, "confirmed")]
    assert movements() == {
        (eth_self, "eth", Decimal(1), "self-transfer"),
        (coin_self, "usdt", Decimal(500), "self-transfer"),
    }
    assert not UnexplainedInflow.objects.exists()
    report = reconcile(start, node.finalized())
    assert report.ok, report.discrepancies
    assert not report.awaiting_operator
    page = admin_client.get("/admin/crawlers/internalmovement/")
    assert page.status_code == 200
    listed = page.content.decode()
    assert eth_self in listed
    assert "not a donation" in listed
    assert_ledger_invariants()


def test_eth_a_contract_donation_address_withdraws_from_weth_is_not_credited_to_weth(node, settings):
    weth = node.deploy("WrappedEth")
    wrap = {"from": DONATION_ADDRESS, "to": weth, "value": hex(2 * ETHER), "data": node.call_data("deposit()", [], [])}
    node.send(wrap)  # wrapped while the address was a plain account
    as_contract_wallet(node, DONATION_ADDRESS, OWNER)
    start = start_after_head(settings, node)
    withdraw = node.call_data("withdraw(uint256)", ["uint256"], [ETHER])
    execute = node.call_data(
        "execute(address,uint256,bytes)", ["address", "uint256", "bytes"], [weth, 0, bytes.fromhex(withdraw[2:])]
    )
    tx = node.send({"from": OWNER, "to": DONATION_ADDRESS, "data": execute, "gas": hex(300_000)})
    assert node.receipt(tx)["status"] == "0x1"

    crawl_to_final(node)

    assert not Donation.objects.exists()
    assert movements() == {(tx, "eth", Decimal(1), "returned to the address")}
    assert not UnexplainedInflow.objects.exists()
    assert reconcile(start, node.finalized()).ok


def mint_call(node, to: str, amount: int) -> str:
    return node.call_data("mint(address,uint256)", ["address", "uint256"], [to, amount])


def test_a_coin_arriving_in_a_transaction_the_address_signed_is_its_own_money(node, settings):
    # Stand-in for a swap it made: the coin comes from elsewhere (here minted) inside its own transaction.
    usdt = node.coins["usdt"]
    start = start_after_head(settings, node)
    tx = node.send({"from": DONATION_ADDRESS, "to": usdt, "data": mint_call(node, DONATION_ADDRESS, 300 * USDT)})

    crawl_to_final(node)

    assert not Donation.objects.exists()
    assert movements() == {(tx, "usdt", Decimal(300), "returned to the address")}
    assert reconcile(start, node.finalized()).ok


def test_a_coin_a_contract_donation_address_brings_in_by_its_own_call_is_not_credited(node, settings):
    usdt = node.coins["usdt"]
    as_contract_wallet(node, DONATION_ADDRESS, OWNER)
    start = start_after_head(settings, node)
    mint = mint_call(node, DONATION_ADDRESS, 300 * USDT)
    execute = node.call_data(
        "execute(address,uint256,bytes)", ["address", "uint256", "bytes"], [usdt, 0, bytes.fromhex(mint[2:])]
    )
    tx = node.send({"from": OWNER, "to": DONATION_ADDRESS, "data": execute, "gas": hex(300_000)})
    assert node.receipt(tx)["status"] == "0x1"

    crawl_to_final(node)

    assert not Donation.objects.exists()
    assert movements() == {(tx, "usdt", Decimal(300), "returned to the address")}
    assert reconcile(start, node.finalized()).ok


def test_a_donor_contract_that_makes_a_safe_call_out_before_paying_it_is_still_credited(node, settings):
    # Anyone can make a Safe call out (a call it has no function for goes to its fallback handler by a CALL
    # from the Safe). Only value nested under such a call is the address's own; the donor's ETH and coin,
    # paid after it returned, are donations.
    usdt = node.coins["usdt"]
    template = node.deploy("HandlerWallet", ["address", "address"], [OWNER, ACCOUNTS[5]])
    node.set_code(DONATION_ADDRESS, node.rpc("eth_getCode", template, "latest"))
    payer = node.deploy("PokeThenPay")
    node.mint(usdt, payer, 200 * USDT)
    start = start_after_head(settings, node)
    pay = node.call_data(
        "pokeThenPay(address,address,uint256)", ["address", "address", "uint256"], [DONATION_ADDRESS, usdt, 200 * USDT]
    )
    tx = node.send({"from": DONOR, "to": payer, "value": hex(ETHER), "data": pay, "gas": hex(300_000)})
    assert node.receipt(tx)["status"] == "0x1"

    crawl_to_final(node)

    credited = set(Donation.objects.values_list("tx_hash", "address", "asset", "amount", "status"))
    assert credited == {
        (tx, payer.lower(), "eth", Decimal(1), "confirmed"),
        (tx, payer.lower(), "usdt", Decimal(200), "confirmed"),
    }
    assert not movements()
    assert not UnexplainedInflow.objects.exists()
    assert reconcile(start, node.finalized()).ok
    assert_ledger_invariants()


def test_a_coin_minted_to_the_address_with_no_depositor_named_is_an_open_question_never_a_donation(node, settings):
    """A coin minted with no depositor its bridge names (an unknown bridge's mint; a CCTP mint is its
    depositor's, tests/crawlers/runs/test_bridged_mints.py) arrives as a Transfer from the zero address: no
    donor to credit (tokens issued to 0x0 would count money nobody gave), and no reason to think it is the
    sale's own either. It closes the identity and is an open unexplained inflow for the operator, with the
    reason; reconcile waits for the operator on it and finds no drift."""
    usdc = node.coins["usdc"]
    start = start_after_head(settings, node)
    minted = node.mint(usdc, DONATION_ADDRESS, 700 * USDT)
    donation = node.transfer_token(usdc, node_donor(node, usdc), DONATION_ADDRESS, 25 * USDT)

    crawl_to_final(node)

    assert list(Donation.objects.values_list("tx_hash", "address", "asset")) == [(donation, DONOR, "usdc")]
    assert not movements()
    inflow = UnexplainedInflow.objects.get()
    assert (inflow.asset, inflow.amount, inflow.status) == ("usdc", Decimal("700"), "open")
    assert minted in inflow.reason
    report = reconcile(start, node.finalized())
    assert report.discrepancies == report.awaiting_operator
    assert_ledger_invariants()


def node_donor(node, coin: str) -> str:
    node.mint(coin, DONOR, 100 * USDT)
    return DONOR
