"""deploy/verify_proof.py on an OP-stack chain (tests/op_stack.py): it applies the crawler's fee and deposit
rules, so a sale crawled there matches on a node whose receipts say what was charged (the proxy writes
op-geth's l1Fee and operator fee scalars), does not match on one whose receipts leave the L1 fee out (the
address then lost more than its transactions say), and cannot check, naming the transaction, where a fee
is unreadable. It applies the crawler's rule for ETH bridged through the standard bridge too: the donor is
the L1 account that bridged it (the relayed `finalizeBridgeETH`'s `_from`), so a sale listing the bridge
contract as the donor does not match."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from donations.models import Donation, DonationStats
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER, Anvil
from tests.hostile_site import TamperingSite
from tests.hostile_site import verify_site as verify
from tests.op_stack import (
    L2_STANDARD_BRIDGE,
    aliased,
    bridge_eth,
    charge_l1_fees,
    deposit,
    install_bridge,
    op_geth_receipt_fields,
)
from tests.rpc_proxy import RpcProxy

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("eth_prices")]


@pytest.fixture(autouse=True)
def campaign_row() -> None:
    """The campaign row a migration makes; a transactional test before this one flushed it."""
    if not DonationStats.objects.exists():
        DonationStats.objects.create()


@pytest.fixture
def op_sale(op_node: Anvil, op_proxy: RpcProxy) -> dict[str, str]:
    """A sale on the OP-stack chain: a donation, a deposit donation from an L1 contract, the address's own
    deposits (to itself, and onwards), and a payment out that paid the L1 and operator fees."""
    fees = charge_l1_fees(op_node)
    txs = {"donation": op_node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, 2 * ETHER)}
    donor = aliased("0x5fbdb2315678afecb367f032d93f642f64180aa3")
    txs["deposit"] = deposit(op_node, donor, DONATION_ADDRESS, value=ETHER, mint=3 * ETHER, source=41)
    txs["bridged"] = deposit(op_node, DONATION_ADDRESS, DONATION_ADDRESS, value=ETHER, mint=ETHER, source=42)
    txs["onwards"] = deposit(op_node, DONATION_ADDRESS, ACCOUNTS[5], value=ETHER // 4, mint=ETHER, source=43)
    txs["paid_out"] = op_node.send_eth(DONATION_ADDRESS, ACCOUNTS[5], ETHER // 2)
    fields = {tx: op_geth_receipt_fields(op_node, tx, fees) for tx in (txs["donation"], txs["paid_out"])}
    op_proxy.amend_receipts(fields)
    op_node.mine(3)
    call_command("crawl", "finalized", "--once")
    assert set(Donation.objects.values_list("tx_hash", "address", "status")) == {
        (txs["donation"], ACCOUNTS[1], "confirmed"),
        (txs["deposit"], donor, "confirmed"),
    }
    return txs


def test_the_sale_matches_on_a_node_whose_receipts_say_what_was_charged(live_server, op_proxy, op_sale):
    run = verify(live_server.url, op_proxy.url("/rpc"))

    assert run.returncode == 0, run.stdout + run.stderr
    assert "matches:" in run.stdout.splitlines()[-1]
    assert "2 donation(s)" in run.stdout.splitlines()[-1]


def test_receipts_without_the_l1_fee_do_not_match(live_server, op_node, op_sale):
    run = verify(live_server.url, op_node.url)  # anvil itself: the fees were charged, its receipts omit them

    assert run.returncode == 1, run.stdout + run.stderr
    assert "ETH left the address in block" in run.stdout.splitlines()[-1]
    assert "that no transaction of it shows" in run.stdout.splitlines()[-1]


def test_an_unreadable_fee_on_the_node_is_a_check_it_could_not_make(live_server, op_node, op_sale):
    with RpcProxy(op_node.url) as garbled:
        garbled.amend_receipts({op_sale["paid_out"]: {"l1Fee": "-0x1"}})
        run = verify(live_server.url, garbled.url("/rpc"))

    assert run.returncode == 4, run.stdout + run.stderr
    assert f"transaction {op_sale['paid_out']} (sent by the address in block" in run.stderr
    assert "its l1Fee is '-0x1', not a hex quantity" in run.stderr


# --- ETH bridged through the standard bridge --------------------------------------------------------------


@pytest.fixture
def bridged_sale(op_node: Anvil, op_proxy: RpcProxy) -> dict[str, str]:
    """A donor's ETH bridged to the address through the standard bridge, and the address's own ETH bridged to
    itself (its own money: credited to nobody)."""
    install_bridge(op_node)
    txs = {
        "donated": bridge_eth(op_node, ACCOUNTS[1], DONATION_ADDRESS, ETHER, source=51),
        "own": bridge_eth(op_node, DONATION_ADDRESS, DONATION_ADDRESS, 2 * ETHER, source=52),
    }
    op_node.mine(3)
    call_command("crawl", "finalized", "--once")
    assert set(Donation.objects.values_list("tx_hash", "address", "trace_address")) == {
        (txs["donated"], ACCOUNTS[1], "0.0.0.0")
    }
    return txs


def test_bridged_eth_credited_to_its_l1_sender_matches(live_server, op_node, bridged_sale):
    run = verify(live_server.url, op_node.url)

    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 donation(s)" in run.stdout.splitlines()[-1]


def test_a_site_naming_the_bridge_contract_the_donor_does_not_match(live_server, op_node, bridged_sale):
    donated = bridged_sale["donated"].encode()

    def to_the_bridge(path: str, body: bytes) -> bytes:
        if not path.startswith("/proof/donations.csv"):
            return body
        lines = body.splitlines(keepends=True)
        return b"".join(
            line.replace(ACCOUNTS[1].encode(), L2_STANDARD_BRIDGE.encode()) if donated in line else line
            for line in lines
        )

    with TamperingSite(live_server.url, to_the_bridge) as site:
        run = verify(site.url, op_node.url)

    assert run.returncode == 1, run.stdout + run.stderr
    assert (
        f"the listed donation {bridged_sale['donated']} is not what your node shows: transaction "
        f"{bridged_sale['donated']} paid the address {ETHER} wei in block"
    ) in run.stdout
    assert f"from {ACCOUNTS[1]} (internal call 0.0.0.0)" in run.stdout.splitlines()[-1]
