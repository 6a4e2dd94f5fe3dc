"""ETH bridged from L1 through an OP-stack rollup's standard bridge (L1StandardBridge `depositETH` /
`bridgeETHTo`, what bridge UIs use), on `anvil --network optimism` with stand-in predeploys
(tests/op_stack.py `install_bridge`): the deposit calls L2CrossDomainMessenger, whose relayMessage calls
L2StandardBridge `finalizeBridgeETH` (or the legacy `finalizeDeposit`), which pays the recipient in an
internal call from the bridge.

* A donor's bridged ETH is credited to the donor (`_from`, the L1 account), not to the bridge contract,
  with either trace method, on both scan paths, to a plain address and to one with code (a Safe).
* The donation address bridging its own ETH to itself (a Safe topping up its gas on Base) is its own money:
  an internal movement, never a donation nor an unexplained inflow; the proof closes.
* A payment from the bridge that no relayed deposit explains, or relayed calldata a provider garbles,
  stays as it was: the bridge contract is the donor; never an exception, never dropped.
* A re-crawl with the other trace method finds the same donation (same identity: no second row); the
  old-unconfirmed judge confirms a bridged donation through the transaction's trace; rows credited to the
  bridge before this rule are listed by `reconcile` as credited under an earlier rule, not drift.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from crawlers.models import (
    CHAIN,
    FINALIZED,
    LATEST,
    Completeness,
    InternalMovement,
    ProofRangeAsset,
    UnexplainedInflow,
)
from crawlers.record.cursors import cursor_write
from crawlers.runs.crawl import crawl
from crawlers.runs.old_unconfirmed import crawl_old_unconfirmed
from crawlers.runs.reconcile import reconcile
from donations.models import Donation, DonationStats
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER, Anvil, as_contract_wallet
from tests.configs import configured
from tests.crawlers.runs.test_op_stack import crawl_to_final
from tests.invariants import assert_ledger_invariants
from tests.op_stack import L2_STANDARD_BRIDGE, bridge_eth, install_bridge
from tests.ops.test_earlier_rules import credited_the_old_way
from tests.rpc_proxy import RpcProxy

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eth_prices")]

DONOR, OWNER = ACCOUNTS[1], ACCOUNTS[2]
RELAYED_FRAME = "0.0.0.0"  # deposit -> messenger proxy -> messenger -> bridge proxy -> bridge -> the address


@pytest.fixture
def bridge(op_node: Anvil, op_proxy: RpcProxy, settings) -> int:
    """The stand-in predeploys installed; the crawlers start after them. Returns their first block."""
    install_bridge(op_node)
    start = op_node.head() + 1
    settings.CONFIG = configured(settings.CONFIG, start_block=start)
    return start


@pytest.fixture(params=["debug", "trace"])
def trace_method(request, bridge, settings) -> str:
    """Each trace method alone: debug_traceBlockByNumber (callTracer) or trace_block."""
    settings.CONFIG = configured(settings.CONFIG, trace_mode=request.param)
    return request.param


def rows() -> set[tuple[str, str, Decimal, str | None, str]]:
    return set(Donation.objects.values_list("tx_hash", "address", "amount", "trace_address", "status"))


def movements() -> set[tuple[str, str, Decimal, str]]:
    return {(m.tx_hash, m.asset, m.amount, m.kind) for m in InternalMovement.objects.all()}


def assert_proven_and_reconciled(start: int, node: Anvil) -> None:
    """Every finalized range closed its balance identity, and `reconcile` agrees with the records."""
    assert Completeness.objects.get(chain=CHAIN, label=FINALIZED).proven_through == node.finalized()
    report = reconcile(start, node.finalized())
    assert report.ok, report.discrepancies
    assert not report.awaiting_operator
    assert_ledger_invariants()


# --- a donor's bridged ETH ----------------------------------------------------------------------------------


@pytest.mark.parametrize("legacy", [False, True], ids=["finalizeBridgeETH", "finalizeDeposit"])
def test_eth_a_donor_bridged_to_the_address_is_credited_to_the_l1_sender(op_node, bridge, trace_method, legacy):
    bridged = bridge_eth(op_node, DONOR, DONATION_ADDRESS, ETHER, source=101, legacy=legacy)

    crawl_to_final(op_node)

    assert rows() == {(bridged, DONOR, Decimal(1), RELAYED_FRAME, "confirmed")}
    assert not UnexplainedInflow.objects.exists()
    assert not InternalMovement.objects.exists()
    assert_proven_and_reconciled(bridge, op_node)


@pytest.mark.parametrize("sparse", [True, False], ids=["sparse", "full-scan"])
def test_both_scan_paths_credit_the_l1_sender(op_node, bridge, settings, sparse):
    settings.CRAWLER_SPARSE = sparse
    bridged = bridge_eth(op_node, DONOR, DONATION_ADDRESS, 3 * ETHER // 2, source=102)

    crawl_to_final(op_node)

    assert rows() == {(bridged, DONOR, Decimal("1.5"), RELAYED_FRAME, "confirmed")}
    assert_proven_and_reconciled(bridge, op_node)


def test_a_re_crawl_with_the_other_trace_method_finds_the_same_donation_and_adds_no_row(op_node, bridge, settings):
    bridged = bridge_eth(op_node, DONOR, DONATION_ADDRESS, ETHER, source=103)
    settings.CONFIG = configured(settings.CONFIG, trace_mode="debug")
    crawl_to_final(op_node)
    (first,) = Donation.objects.all()

    settings.CONFIG = configured(settings.CONFIG, trace_mode="trace")
    number = int(op_node.receipt(bridged)["blockNumber"], 16)
    call_command("crawl", "finalized", "--single-block", str(number))

    (again,) = Donation.objects.all()
    assert (again.id, again.tx_hash, again.trace_address, again.address, again.status) == (
        first.id,
        bridged,
        RELAYED_FRAME,
        DONOR,
        "confirmed",
    )


# --- the address's own money -------------------------------------------------------------------------------


def test_the_address_bridging_its_own_eth_to_itself_is_an_internal_movement_and_the_proof_closes(
    op_node, bridge, trace_method
):
    own = bridge_eth(op_node, DONATION_ADDRESS, DONATION_ADDRESS, 2 * ETHER, source=111)
    donation = op_node.send_eth(DONOR, DONATION_ADDRESS, ETHER // 10)

    crawl_to_final(op_node)

    assert rows() == {(donation, DONOR, Decimal("0.1"), None, "confirmed")}
    assert movements() == {(own, "eth", Decimal(2), "bridged by the address")}
    assert not UnexplainedInflow.objects.exists()
    # The published proof: what arrived is the donation and the 2 ETH, which closes the identity uncredited.
    eth = ProofRangeAsset.objects.filter(asset="eth")
    assert sum(int(r.closing) - int(r.opening) + int(r.left) for r in eth) == 2 * ETHER + ETHER // 10
    assert_proven_and_reconciled(bridge, op_node)


def test_a_safe_donation_address_takes_a_donor_s_bridged_eth_and_tops_itself_up(op_node, bridge, trace_method):
    """An address with code (its calls read from traces, crawlers/scan/with_code.py): the donor's bridged
    ETH is credited to the donor, the Safe's own L1 treasury bridged to it is an internal movement."""
    as_contract_wallet(op_node, DONATION_ADDRESS, OWNER)
    donated = bridge_eth(op_node, DONOR, DONATION_ADDRESS, ETHER, source=121)
    topped_up = bridge_eth(op_node, DONATION_ADDRESS, DONATION_ADDRESS, 5 * ETHER, source=122)

    crawl_to_final(op_node)

    assert rows() == {(donated, DONOR, Decimal(1), RELAYED_FRAME, "confirmed")}
    assert movements() == {(topped_up, "eth", Decimal(5), "bridged by the address")}
    assert not UnexplainedInflow.objects.exists()
    assert_proven_and_reconciled(bridge, op_node)


# --- what does not decode: as before ------------------------------------------------------------------------


def test_a_payment_from_the_bridge_that_no_relayed_deposit_explains_is_the_bridge_s(op_node, bridge, trace_method):
    data = op_node.call_data("payOut(address)", ["address"], [DONATION_ADDRESS])
    paid = op_node.send({"from": DONOR, "to": L2_STANDARD_BRIDGE, "value": hex(ETHER), "data": data})

    crawl_to_final(op_node)

    assert rows() == {(paid, L2_STANDARD_BRIDGE, Decimal(1), "0.0", "confirmed")}
    assert_proven_and_reconciled(bridge, op_node)


def _garbled(result: object, _params: list) -> object:
    """Traces as a provider that cuts the relayed call's calldata short would give them, in either shape."""

    def cut(frame: dict) -> None:
        if frame.get("to") == L2_STANDARD_BRIDGE and str(frame.get("input", "")).startswith("0x1635f5fd"):
            frame["input"] = frame["input"][:74]
        for child in frame.get("calls") or []:
            cut(child)

    for item in result if isinstance(result, list) else []:
        cut(item["action"] if "action" in item else item["result"])  # trace_block's, or callTracer's
    return result


def test_relayed_calldata_a_provider_garbles_leaves_the_bridge_the_donor_and_nothing_raises(
    op_node, op_proxy, bridge, trace_method, caplog
):
    for method in ("debug_traceBlockByNumber", "trace_block"):
        op_proxy.arm(method, "rewrite", count=None, rewrite=_garbled)
    bridged = bridge_eth(op_node, DONOR, DONATION_ADDRESS, ETHER, source=131)

    crawl_to_final(op_node)

    assert rows() == {(bridged, L2_STANDARD_BRIDGE, Decimal(1), RELAYED_FRAME, "confirmed")}
    assert not UnexplainedInflow.objects.exists()
    assert not [r for r in caplog.records if r.exc_info]
    assert_proven_and_reconciled(bridge, op_node)


# --- the old-unconfirmed judge ------------------------------------------------------------------------------


def test_the_old_unconfirmed_judge_confirms_a_bridged_donation_by_its_trace(op_node, op_proxy, bridge, trace_method):
    bridged = bridge_eth(op_node, DONOR, DONATION_ADDRESS, ETHER, source=141)
    assert crawl(LATEST).held is None
    op_node.mine(3)
    cursor_write(chain=CHAIN, label=FINALIZED, value=op_node.finalized())  # the finalized crawler missed it
    assert rows() == {(bridged, DONOR, Decimal(1), RELAYED_FRAME, "unconfirmed")}

    result = crawl_old_unconfirmed(now=timezone.now() + timedelta(minutes=31))

    assert result.confirmed == 1
    assert rows() == {(bridged, DONOR, Decimal(1), RELAYED_FRAME, "confirmed")}
    method = "debug_traceTransaction" if trace_method == "debug" else "trace_transaction"
    assert op_proxy.requests_for(method) == 1


# --- rows credited to the bridge before this rule -----------------------------------------------------------


def _credited_to_the_bridge(node: Anvil, tx: str, settings) -> Donation:
    """The row the earlier rule wrote for the frame: confirmed, 1 ETH from the bridge contract."""
    return credited_the_old_way(node, tx, settings, donor=L2_STANDARD_BRIDGE, frame=RELAYED_FRAME)


@pytest.mark.parametrize("sender", [DONOR, DONATION_ADDRESS], ids=["a donor's", "its own"])
def test_a_row_credited_to_the_bridge_before_is_listed_under_an_earlier_rule_and_freezes_nothing(
    op_node, bridge, settings, sender
):
    """The crawlers before this rule credited the bridge contract; such a confirmed row stays as it is
    (tokens never change, a row is never deleted, and the chain names the same frame: no second row) and
    `reconcile` lists it for an operator instead of calling it drift."""
    bridged = bridge_eth(op_node, sender, DONATION_ADDRESS, ETHER, source=151)
    row = _credited_to_the_bridge(op_node, bridged, settings)  # recorded before the finalized crawl
    crawl_to_final(op_node)
    assert Donation.objects.count() == 1
    own = set() if sender == DONOR else {(bridged, "eth", Decimal(1), "bridged by the address")}
    assert movements() == own

    out = StringIO()
    call_command("reconcile", "--from-block", str(bridge), "--to-block", str(op_node.finalized()), stdout=out)

    assert f"donation id {row.id} ({bridged}) credited under an earlier rule" in out.getvalue()
    assert "no drift" in out.getvalue()
    assert DonationStats.objects.get().status != "paused"
    kept = Donation.objects.get()
    assert (kept.id, kept.address, kept.status, kept.tokens) == (row.id, L2_STANDARD_BRIDGE, "confirmed", 2_000_000)
    assert_ledger_invariants()
