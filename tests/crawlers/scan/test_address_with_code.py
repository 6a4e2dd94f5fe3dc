"""A donation address with code (a Safe, an EIP-7702 delegated account): its calls are read from the traces.

A Safe pays out by an internal call that no transaction shows; ETH can come in and go out again inside
one range, netting to zero; a 7702 authorization the address signs moves its nonce with no transaction
from it. None of these may wedge the crawlers, and nothing that arrived may slip through.
"""

from __future__ import annotations

import logging
from decimal import Decimal

import pytest

from crawlers.models import CHAIN, FINALIZED, LATEST, Completeness, UnexplainedInflow
from crawlers.record.cursors import cursor_get
from crawlers.runs.crawl import crawl
from crawlers.selectors import health_report
from donations.models import Donation
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER, authorize_7702
from tests.invariants import assert_ledger_invariants

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

OWNER, PAYEE = ACCOUNTS[1], ACCOUNTS[6]


def block_of(node, tx: str) -> int:
    return int(node.receipt(tx)["blockNumber"], 16)


def install_safe(node) -> None:
    """The donation address becomes a Safe-like wallet of OWNER's (its code installed there)."""
    template = node.deploy("SafeLikeWallet", ["address"], [OWNER])
    node.set_code(DONATION_ADDRESS, node.rpc("eth_getCode", template, "latest"))


def pay_out(node, wei: int) -> str:
    """The owner signs, the wallet pays by an internal call."""
    data = node.call_data("execute(address,uint256,bytes)", ["address", "uint256", "bytes"], [PAYEE, wei, b""])
    return node.send({"from": OWNER, "to": DONATION_ADDRESS, "data": data, "gas": hex(200_000)})


def relay(node, sender: str, wei: int) -> str:
    """ETH to the donation address from a contract: an internal call, no top-level flow."""
    relay_contract = node.deploy("EthRelay")
    data = node.call_data("relay(address)", ["address"], [DONATION_ADDRESS])
    return node.send({"from": sender, "to": relay_contract, "value": hex(wei), "data": data, "gas": hex(200_000)})


def crawl_both() -> None:
    latest, final = crawl(LATEST), crawl(FINALIZED)
    assert latest.held is None
    assert final.held is None


def test_a_safe_donation_address_paying_out_by_internal_call_is_proven_not_held(node, caplog):
    install_safe(node)
    direct = node.send({"from": ACCOUNTS[2], "to": DONATION_ADDRESS, "value": hex(ETHER), "gas": hex(100_000)})
    relayed = relay(node, ACCOUNTS[3], 2 * ETHER)
    paid = pay_out(node, ETHER // 2)
    node.mine(3)

    with caplog.at_level(logging.INFO):
        crawl_both()

    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()
    assert {d.tx_hash: (d.amount, d.status) for d in Donation.objects.all()} == {
        direct: (Decimal(1), "confirmed"),
        relayed: (Decimal(2), "confirmed"),
    }
    assert paid not in {d.tx_hash for d in Donation.objects.all()}
    assert not UnexplainedInflow.objects.exists()
    assert Completeness.objects.get(label=FINALIZED).proven_through == node.finalized()
    modes = [r.getMessage() for r in caplog.records if r.getMessage().startswith("donation address ")]
    assert modes == [
        f"donation address {DONATION_ADDRESS} on eth is contract; its calls are read from call traces (trace_filter)"
    ]  # once, at the first range, though both crawlers ran many
    shown = health_report()["donation_address"]
    assert (shown["mode"], shown["calls_found_by"]) == ("contract", "trace_filter")
    assert_ledger_invariants()


def test_one_eth_in_and_one_eth_out_in_one_interval_still_credits_the_donation(node):
    install_safe(node)
    node.send({"from": ACCOUNTS[2], "to": DONATION_ADDRESS, "value": hex(ETHER), "gas": hex(100_000)})
    node.mine(5)
    crawl_both()  # the range before: the address's balance is on record
    node.mine(3)
    relayed = relay(node, ACCOUNTS[3], ETHER)  # in by an internal call ...
    node.mine(4)
    pay_out(node, ETHER)  # ... and the same out again: the range's balance is where it was
    node.mine(3)

    crawl_both()

    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()
    assert Donation.objects.get(tx_hash=relayed).status == "confirmed"
    assert Donation.objects.get(tx_hash=relayed).amount == Decimal(1)
    assert not UnexplainedInflow.objects.exists()
    assert_ledger_invariants()


def test_a_safe_donation_address_without_call_traces_is_held_with_the_reason(node, proxy):
    install_safe(node)
    relay(node, ACCOUNTS[3], ETHER)
    node.mine(3)
    proxy.refuse_traces()

    result = crawl(FINALIZED)

    assert "the donation address has code (contract)" in result.held
    assert "gives no call traces" in result.held
    assert not Donation.objects.exists()
    proxy.disarm()
    assert crawl(FINALIZED).held is None
    assert Donation.objects.get().amount == Decimal(1)


def test_a_7702_authorization_signed_by_the_address_is_accounted_for_and_its_calls_are_then_traced(node, caplog):
    delegate = node.deploy("SafeLikeWallet", ["address"], [OWNER])
    node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)
    node.mine(3)
    crawl_both()
    authorize_7702(node, delegate, sponsor=ACCOUNTS[0])  # a sponsor sends it: no transaction is from the address
    assert node.rpc("eth_getCode", DONATION_ADDRESS, "latest").startswith("0xef0100")
    relayed = relay(node, ACCOUNTS[3], 2 * ETHER)
    pay_out(node, ETHER // 4)
    node.mine(3)

    with caplog.at_level(logging.INFO):
        crawl_both()

    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()
    assert Donation.objects.get(tx_hash=relayed).amount == Decimal(2)
    assert not UnexplainedInflow.objects.exists()
    assert any(
        r.getMessage().startswith(f"donation address {DONATION_ADDRESS} on eth is delegated") for r in caplog.records
    )
    assert health_report()["donation_address"]["mode"] == "delegated"
    assert_ledger_invariants()


def test_without_trace_filter_every_block_of_the_range_is_traced_and_health_says_so(node, proxy):
    proxy.arm("trace_filter", "error", count=None, code=-32601, message="the method trace_filter does not exist")
    install_safe(node)
    relayed = relay(node, ACCOUNTS[3], ETHER)
    node.mine(4)
    pay_out(node, ETHER)  # the in-and-out pair again: only the traces see either
    node.mine(3)

    crawl_both()

    assert Donation.objects.get(tx_hash=relayed).status == "confirmed"
    shown = health_report()["donation_address"]
    assert (shown["mode"], shown["calls_found_by"]) == ("contract", "the traces of every block")
    assert shown["last_range_traced"] == shown["last_range_blocks"] > 0
    # Refused once (both filters) by each range proven before the refusal was remembered (the latest crawler
    # proves its sparse range up to the finalized block and the one after it side by side), never again.
    assert proxy.requests_for("trace_filter") in (2, 4)
    assert_ledger_invariants()


def delegate_move_and_clear(node) -> str:
    """Inside one range: delegate to the Safe stand-in, take 2 ETH in by an internal call and send it out
    again through the delegated code (no nonce move), clear the delegation. Both edges of the range look
    plain and the two authorizations explain the nonce: only the traces show the pair."""
    delegate = node.deploy("SafeLikeWallet", ["address"], [OWNER])
    node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)
    node.mine(3)
    crawl_both()  # the range before: plain, its balance on record
    authorize_7702(node, delegate)
    relay_contract = node.deploy("EthRelay")
    data = node.call_data("relay(address)", ["address"], [DONATION_ADDRESS])
    with node.one_block():  # in and out in one block: its balance does not move either
        relayed = node.send(
            {"from": ACCOUNTS[3], "to": relay_contract, "value": hex(2 * ETHER), "data": data, "gas": hex(200_000)}
        )
        pay_out(node, 2 * ETHER)
    authorize_7702(node, "0x" + "0" * 40)
    assert node.rpc("eth_getCode", DONATION_ADDRESS, "latest") == "0x"
    node.mine(3)
    return relayed


@pytest.mark.parametrize("sparse", [True, False], ids=["sparse", "full"])
def test_a_7702_delegation_set_and_cleared_inside_one_range_is_read_through_its_traces(node, settings, sparse):
    settings.CRAWLER_SPARSE = sparse
    relayed = delegate_move_and_clear(node)

    crawl_both()

    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()
    row = Donation.objects.get(tx_hash=relayed)
    assert (row.amount, row.status) == (Decimal(2), "confirmed")
    assert not UnexplainedInflow.objects.exists()
    assert_ledger_invariants()


def test_a_7702_delegation_inside_a_range_without_call_traces_holds_it_with_the_reason(node, proxy):
    relayed = delegate_move_and_clear(node)
    proxy.refuse_traces()

    result = crawl(FINALIZED)

    assert result.held is not None
    assert "EIP-7702" in result.held
    assert "gives no call traces" in result.held
    assert relayed not in {d.tx_hash for d in Donation.objects.all()}
    proxy.disarm()
    assert crawl(FINALIZED).held is None
    assert Donation.objects.get(tx_hash=relayed).status == "confirmed"
