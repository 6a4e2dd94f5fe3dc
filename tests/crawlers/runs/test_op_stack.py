"""Issue #24, "the proof per chain": on an OP-stack chain (anvil --network optimism, tests/op_stack.py) the
balance identity holds with the chain's own fee rules, on both scan paths and in `reconcile`.

* A transaction the donation address sends pays the L1 data fee and the operator fee beside its gas (anvil
  really charges them; the proxy writes them into the receipt as op-geth does): the proof closes on what
  the receipt says, and holds, naming the block, where the receipt leaves them out.
* A deposit transaction (type 0x7e, made on L1) that pays the address is a donation from its `from`; its
  `mint` went to that `from`, never to us, however large.
* A deposit the address made itself (it bridged its own ETH) mints into it: its own money, an internal
  movement, never a donation nor an unexplained inflow, and it moves the nonce, even when it failed.
* A fee field that is there but unreadable holds the block with a reason; the crawler never raises and
  never passes it; once the provider answers well it goes on.
* An Arbitrum receipt's `gasUsedForL1` is part of `gasUsed`: nothing is added twice.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from crawlers.models import FINALIZED, LATEST, InternalMovement, LastBlock, ProofRangeAsset, UnexplainedInflow
from crawlers.runs.crawl import crawl
from crawlers.runs.reconcile import reconcile
from donations.models import Donation
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER, Anvil
from tests.configs import configured
from tests.invariants import assert_ledger_invariants
from tests.op_stack import aliased, charge_l1_fees, charged, deposit, op_geth_receipt_fields
from tests.rpc_proxy import RpcProxy

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eth_prices")]

DONOR, PAYEE = ACCOUNTS[1], ACCOUNTS[5]


@pytest.fixture(params=[True, False], ids=["sparse", "full-scan"])
def scan_mode(request, settings) -> bool:
    """Both ways the finalized crawler reads a range: the sparse path and every block in full."""
    settings.CRAWLER_SPARSE = request.param
    return request.param


def crawl_to_final(node: Anvil) -> None:
    assert crawl(LATEST).held is None
    node.mine(2)
    result = crawl(FINALIZED)
    assert result.held is None, result.held


def block_of(node: Anvil, tx: str) -> int:
    return int(node.receipt(tx)["blockNumber"], 16)


def donations() -> set[tuple[str, str, Decimal, str]]:
    return set(Donation.objects.values_list("tx_hash", "address", "amount", "status"))


def movements() -> set[tuple[str, str, Decimal, str]]:
    return {(m.tx_hash, m.asset, m.amount, m.kind) for m in InternalMovement.objects.all()}


def eth_left() -> int:
    """What the published proof says left the address in ETH, over every range."""
    return sum(int(r.left) for r in ProofRangeAsset.objects.filter(asset="eth"))


def assert_reconciles(start: int, node: Anvil) -> None:
    report = reconcile(start, node.finalized())
    assert report.ok, report.discrepancies
    assert not report.awaiting_operator


# --- fees -------------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("scan_mode")
@pytest.mark.parametrize("reported", [False, True], ids=["op-geth scalars", "operatorFee reported"])
def test_what_an_outgoing_transaction_paid_for_l1_and_the_operator_closes_the_proof(op_node, op_proxy, reported):
    fees = charge_l1_fees(op_node)
    start = op_node.head() + 1
    donation = op_node.send_eth(DONOR, DONATION_ADDRESS, ETHER)
    paid_out = op_node.send_eth(DONATION_ADDRESS, PAYEE, 3 * ETHER // 10)
    amended = {
        tx: op_geth_receipt_fields(op_node, tx, fees, operator_fee_reported=reported) for tx in (donation, paid_out)
    }
    op_proxy.amend_receipts(amended)

    crawl_to_final(op_node)

    # The donor paid its own L1 fee: the donation is the whole value it sent.
    assert donations() == {(donation, DONOR, Decimal(1), "confirmed")}
    assert not UnexplainedInflow.objects.exists()
    assert not InternalMovement.objects.exists()
    receipt, paid = op_node.receipt(paid_out), charged(op_node, paid_out)
    gas = int(receipt["gasUsed"], 16) * int(receipt["effectiveGasPrice"], 16)
    assert eth_left() == 3 * ETHER // 10 + gas + paid.l1_fee + paid.operator_fee  # the published proof's "left"
    assert_reconciles(start, op_node)
    assert_ledger_invariants()


def test_a_receipt_that_leaves_out_the_l1_fee_does_not_close_the_proof_it_holds_the_block(op_node, op_proxy):
    """The control of the test above: anvil's state really carries the L1 and operator fees, so a receipt
    without them explains less than left the address, and the proof says so instead of passing."""
    charge_l1_fees(op_node)
    paid_out = op_node.send_eth(DONATION_ADDRESS, PAYEE, ETHER // 10)
    op_node.mine(2)

    result = crawl(FINALIZED)

    number = block_of(op_node, paid_out)
    assert result.held.startswith(f"block: {number} -- ")
    assert "left the donation address that no transaction or log shows" in result.held
    assert LastBlock.objects.get(chain="eth", label=FINALIZED).value == number - 1


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"l1Fee": "0xzz"}, "its l1Fee is '0xzz', not a hex quantity"),
        ({"l1Fee": "-0x5f5e100"}, "its l1Fee is '-0x5f5e100', not a hex quantity"),
        ({"l1Fee": 123456}, "its l1Fee is '123456', not a hex quantity"),
        ({"operatorFeeConstant": None}, "it gives only one of operatorFeeScalar and operatorFeeConstant"),
        ({"effectiveGasPrice": None}, "it has no gasPrice"),
        ({"type": "0x7e"}, "disagree on whether it is an OP-stack deposit"),
    ],
    ids=["not hex", "negative", "a number", "half the operator fee", "no price", "called a deposit"],
)
def test_an_unreadable_fee_holds_the_block_with_a_reason_and_the_crawl_goes_on_once_it_reads(
    op_node, op_proxy, fields, said
):
    fees = charge_l1_fees(op_node)
    start = op_node.head() + 1
    before = op_node.send_eth(DONOR, DONATION_ADDRESS, ETHER)
    paid_out = op_node.send_eth(DONATION_ADDRESS, PAYEE, ETHER // 10)
    op_node.mine(2)
    amended = {tx: op_geth_receipt_fields(op_node, tx, fees) for tx in (before, paid_out)}
    op_proxy.amend_receipts({before: amended[before], paid_out: {**amended[paid_out], **fields}})

    result = crawl(FINALIZED)  # never raises

    number = block_of(op_node, paid_out)
    assert result.held.startswith(f"block: {number} -- ")
    assert f"tx '{paid_out}', sent by the donation address" in result.held
    assert said in result.held
    assert LastBlock.objects.get(chain="eth", label=FINALIZED).value == number - 1
    assert donations() == {(before, DONOR, Decimal(1), "confirmed")}  # the blocks before it are done
    assert not UnexplainedInflow.objects.exists()

    op_proxy.disarm()
    op_proxy.amend_receipts(amended)  # the provider answers well again
    assert crawl(FINALIZED).held is None
    assert LastBlock.objects.get(chain="eth", label=FINALIZED).value == op_node.finalized()
    assert_reconciles(start, op_node)


@pytest.mark.usefixtures("scan_mode")
def test_an_arbitrum_receipt_s_l1_gas_is_part_of_gas_used_and_is_not_charged_twice(node, proxy, settings):
    """Nitro writes `gasUsedForL1` (and `l1BlockNumber`) beside `gasUsed`, which already includes it."""
    settings.CONFIG = configured(settings.CONFIG, start_block=node.head() + 1)
    start = node.head() + 1
    paid_out = node.send_eth(DONATION_ADDRESS, PAYEE, ETHER // 4)
    gas_used = int(node.receipt(paid_out)["gasUsed"], 16)
    proxy.amend_receipts({paid_out: {"gasUsedForL1": hex(gas_used // 3), "l1BlockNumber": hex(21_840_112)}})

    crawl_to_final(node)

    assert not UnexplainedInflow.objects.exists()
    receipt = node.receipt(paid_out)
    assert eth_left() == ETHER // 4 + gas_used * int(receipt["effectiveGasPrice"], 16)
    assert_reconciles(start, node)


# --- deposits ---------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("scan_mode")
def test_a_deposit_paying_the_address_is_a_donation_from_its_from_and_its_mint_is_not_ours(op_node, op_proxy):
    """An L1 contract's deposit: its `from` is the aliased address the chain shows, and the 3 ETH it minted
    went to that `from` (which paid us 1 ETH of it). Counting the mint as ours would be ETH that never came:
    the block would hold for ever."""
    charge_l1_fees(op_node)
    start = op_node.head() + 1
    l1_contract = "0x5fbdb2315678afecb367f032d93f642f64180aa3"
    donor = aliased(l1_contract)
    bridged = deposit(op_node, donor, DONATION_ADDRESS, value=ETHER, mint=3 * ETHER, source=7)
    assert op_node.receipt(bridged)["status"] == "0x1"

    crawl_to_final(op_node)

    assert donations() == {(bridged, donor, Decimal(1), "confirmed")}
    assert not UnexplainedInflow.objects.exists()
    assert not InternalMovement.objects.exists()
    assert_reconciles(start, op_node)
    assert_ledger_invariants()


@pytest.mark.usefixtures("scan_mode")
def test_a_deposit_the_address_made_itself_is_its_own_money_and_moves_its_nonce_even_when_it_failed(op_node, op_proxy):
    """It bridged its own ETH from L1 three ways: to itself, to someone else (the mint lands at the
    address, the value leaves it), and to a contract that reverted (the mint still lands, the nonce still
    moves, the value stays)."""
    charge_l1_fees(op_node)
    start = op_node.head() + 1
    nonce_before = int(op_node.rpc("eth_getTransactionCount", DONATION_ADDRESS, "latest"), 16)
    to_itself = deposit(op_node, DONATION_ADDRESS, DONATION_ADDRESS, value=2 * ETHER, mint=2 * ETHER, source=11)
    onwards = deposit(op_node, DONATION_ADDRESS, PAYEE, value=4 * ETHER // 10, mint=ETHER, source=12)
    reverted = deposit(op_node, DONATION_ADDRESS, op_node.coins["usdt"], value=5, mint=ETHER // 2, source=13)
    assert op_node.receipt(reverted)["status"] == "0x0"
    donation = op_node.send_eth(DONOR, DONATION_ADDRESS, ETHER // 10)
    assert int(op_node.rpc("eth_getTransactionCount", DONATION_ADDRESS, "latest"), 16) == nonce_before + 3

    crawl_to_final(op_node)

    assert donations() == {(donation, DONOR, Decimal("0.1"), "confirmed")}
    assert not UnexplainedInflow.objects.exists()
    assert movements() == {
        (to_itself, "eth", Decimal(2), "bridged by the address"),
        (to_itself, "eth", Decimal(2), "self-transfer"),
        (onwards, "eth", Decimal(1), "bridged by the address"),
        (reverted, "eth", Decimal("0.5"), "bridged by the address"),
    }
    assert eth_left() == 2 * ETHER + 4 * ETHER // 10  # the values that left it; a deposit pays no fee
    assert_reconciles(start, op_node)
    assert_ledger_invariants()


def test_a_block_and_a_receipt_that_disagree_on_a_deposit_hold_it(op_node, op_proxy: RpcProxy):
    """A provider whose receipt calls our deposit an ordinary transaction (so charged a fee it never paid)
    is contradicting its own block: no evidence, held."""
    bridged = deposit(op_node, DONATION_ADDRESS, PAYEE, value=ETHER // 10, mint=ETHER, source=21)
    op_node.mine(2)
    op_proxy.amend_receipts({bridged: {"type": "0x2", "effectiveGasPrice": hex(10**9)}})

    result = crawl(FINALIZED)

    assert result.held.startswith(f"block: {block_of(op_node, bridged)} -- ")
    assert "disagree on whether it is an OP-stack deposit" in result.held
    assert not InternalMovement.objects.exists()


def test_a_mint_the_node_writes_unreadably_holds_the_block(op_node, op_proxy: RpcProxy):
    bridged = deposit(op_node, DONATION_ADDRESS, PAYEE, value=0, mint=ETHER, source=31)
    op_node.mine(2)
    number = block_of(op_node, bridged)

    def garbled(block, params):
        if isinstance(block, dict) and int(block["number"], 16) == number:
            txs = [{**tx, "mint": "lots"} if isinstance(tx, dict) else tx for tx in block["transactions"]]
            block = {**block, "transactions": txs}
        return block

    op_proxy.arm("eth_getBlockByNumber", "rewrite", count=None, rewrite=garbled)

    result = crawl(FINALIZED)

    assert result.held.startswith(f"block: {number} -- ")
    assert f"tx '{bridged}', sent by the donation address, is unreadable in its block: its mint is 'lots'" in (
        result.held
    )
