"""The balance proof on a real chain: every wei and coin unit at the donation address is accounted for."""

from __future__ import annotations

import logging
from decimal import Decimal

import pytest
from eth_abi import encode
from eth_utils import keccak

from crawlers.models import CHAIN, FINALIZED, LATEST, Completeness, UnexplainedInflow
from crawlers.record.cursors import cursor_get
from crawlers.runs.crawl import crawl
from crawlers.runs.reconcile import reconcile
from crawlers.scan.results import STUCK_POINTER
from donations.models import Donation
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.invariants import assert_ledger_invariants

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

USDT = 10**6
OLD_STATE = "missing trie node 2cf5a2d3b1 (path ) state 0x1a2b is not available"


def block_of(node, tx: str) -> int:
    return int(node.receipt(tx)["blockNumber"], 16)


def test_coin_donations_a_lagging_provider_leaves_out_hold_the_cursor_until_it_answers_in_full(node, proxy, caplog):
    donor = ACCOUNTS[1]
    node.mint(node.coins["usdt"], donor, 1000 * USDT)
    early = node.transfer_token(node.coins["usdt"], donor, DONATION_ADDRESS, 100 * USDT)
    late = node.transfer_token(node.coins["usdt"], donor, DONATION_ADDRESS, 250 * USDT)
    node.mine(2)
    lagging_from = block_of(node, late)
    # The provider's log index has not reached the newest blocks: they come back without their logs.
    proxy.lag_logs(lambda: lagging_from)

    with caplog.at_level(logging.INFO):
        first = crawl(FINALIZED)
        again = crawl(FINALIZED)

    stuck = f"block: {lagging_from} -- the usdt balance rose by {250 * USDT} raw units more than the Transfer logs"
    assert first.held.startswith(stuck)
    assert first.held.endswith(STUCK_POINTER)
    assert again.held == first.held
    assert stuck in caplog.text
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == lagging_from - 1  # never advanced past it
    assert {d.tx_hash: d.status for d in Donation.objects.all()} == {early: "confirmed"}
    assert not UnexplainedInflow.objects.exists()

    proxy.disarm()  # the node caught up
    final = crawl(FINALIZED)

    assert final.held is None
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()
    assert {d.tx_hash: (d.amount, d.status) for d in Donation.objects.all()} == {
        early: (Decimal("100"), "confirmed"),
        late: (Decimal("250"), "confirmed"),
    }
    assert Completeness.objects.get(label=FINALIZED).proven_through == node.finalized()
    assert_ledger_invariants()


def test_the_latest_crawler_too_does_not_pass_a_block_whose_logs_are_missing(node, proxy):
    node.mint(node.coins["usdc"], ACCOUNTS[2], 10 * USDT)
    tx = node.transfer_token(node.coins["usdc"], ACCOUNTS[2], DONATION_ADDRESS, 10 * USDT)
    node.mine(1)
    proxy.lag_logs(lambda: block_of(node, tx))

    result = crawl(LATEST)

    assert f"block: {block_of(node, tx)} -- the usdc balance rose" in result.held
    assert cursor_get(chain=CHAIN, label=LATEST).value == block_of(node, tx) - 1
    proxy.disarm()
    assert crawl(LATEST).held is None
    assert Donation.objects.get().tx_hash == tx


def test_what_the_donation_address_sends_out_closes_the_identity_and_is_credited_to_nobody(node):
    donor, payee = ACCOUNTS[1], ACCOUNTS[5]
    node.mint(node.coins["usdt"], donor, 1000 * USDT)
    coin_in = node.transfer_token(node.coins["usdt"], donor, DONATION_ADDRESS, 300 * USDT)
    eth_in = node.send_eth(donor, DONATION_ADDRESS, 2 * ETHER)
    dust = node.send_eth(donor, DONATION_ADDRESS, 1)  # arrives, too small for the 8-decimal column
    node.send_eth(DONATION_ADDRESS, payee, ETHER // 2)  # ETH out: value + fee
    node.transfer_token(node.coins["usdt"], DONATION_ADDRESS, payee, 120 * USDT)  # a coin out: fee + Transfer
    with node.one_block():  # out and in within one block
        node.send_eth(DONATION_ADDRESS, payee, ETHER // 4)
        mixed = node.send_eth(ACCOUNTS[3], DONATION_ADDRESS, ETHER)
    node.mine(2)

    latest, final = crawl(LATEST), crawl(FINALIZED)

    assert latest.held is None
    assert final.held is None
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()
    assert {d.tx_hash: (d.asset, d.address, d.amount, d.status) for d in Donation.objects.all()} == {
        coin_in: ("usdt", donor, Decimal("300"), "confirmed"),
        eth_in: ("eth", donor, Decimal("2"), "confirmed"),
        mixed: ("eth", ACCOUNTS[3], Decimal("1"), "confirmed"),
    }
    assert dust not in {d.tx_hash for d in Donation.objects.all()}
    assert not UnexplainedInflow.objects.exists()  # every wei in and out explained
    assert Completeness.objects.get(label=FINALIZED).proven_through == node.finalized()
    assert_ledger_invariants()


def test_eth_forwarded_by_a_contract_without_traces_is_an_unexplained_inflow_and_the_cursor_moves_on(
    node, proxy, caplog
):
    relay = node.deploy("EthRelay")
    data = node.call_data("relay(address)", ["address"], [DONATION_ADDRESS])
    forwarded = node.send({"from": ACCOUNTS[4], "to": relay, "value": hex(3 * ETHER), "data": data})
    direct = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    node.mine(2)
    proxy.refuse_traces()

    with caplog.at_level(logging.INFO):
        latest, final = crawl(LATEST), crawl(FINALIZED)

    assert latest.held is None
    assert final.held is None
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()  # not a wedge
    inflow = UnexplainedInflow.objects.get()
    block = node.block(block_of(node, forwarded))
    assert (inflow.block_number, inflow.block_hash, inflow.asset) == (int(block["number"], 16), block["hash"], "eth")
    assert (inflow.amount_raw, inflow.amount, inflow.status) == (3 * ETHER, Decimal(3), "open")
    errors = [r for r in caplog.records if r.levelno == logging.ERROR and "unexplained inflow" in r.getMessage()]
    assert len(errors) == 1
    assert f"block {inflow.block_number}" in errors[0].getMessage()
    assert {d.tx_hash for d in Donation.objects.all()} == {direct}

    crawl(FINALIZED)  # an unexplained inflow is recorded once
    assert UnexplainedInflow.objects.count() == 1
    assert_ledger_invariants()


def test_a_provider_without_historical_state_is_scanned_without_proof_once_it_refuses_again(node, proxy, caplog):
    donor = ACCOUNTS[1]
    node.mint(node.coins["usdt"], donor, 1000 * USDT)
    old = node.transfer_token(node.coins["usdt"], donor, DONATION_ADDRESS, 40 * USDT)
    node.mine(300)
    recent = node.transfer_token(node.coins["usdt"], donor, DONATION_ADDRESS, 60 * USDT)
    node.mine(2)
    pruned_below = node.head() - 128  # a full node keeps the state of its last 128 blocks only

    def pruned(params: list) -> bool:
        at = params[-1]
        return isinstance(at, str) and at.startswith("0x") and int(at, 16) < pruned_below

    for method in ("eth_getBalance", "eth_getTransactionCount", "eth_call"):
        proxy.arm(method, "error", count=None, message=OLD_STATE, when=pruned)

    with caplog.at_level(logging.WARNING):
        first, again = crawl(FINALIZED, max_blocks=150), crawl(FINALIZED)

    # The first refusal of an old balance holds that run: a transient refusal decides nothing, and the
    # words decide nothing either; refused again on the next run while the head answers, it is no history.
    assert "was refused" in first.held
    assert first.cursor == first.cursor_before
    assert again.held is None
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()
    assert {d.tx_hash for d in Donation.objects.filter(status="confirmed")} == {old, recent}
    warnings = [r.getMessage() for r in caplog.records if "keeps no historical state" in r.getMessage()]
    assert len(warnings) == 1  # once, however many ranges
    assert warnings[0].endswith("those blocks are scanned without the balance proof")
    row = Completeness.objects.get(label=FINALIZED)
    assert pruned_below <= row.unproven_before <= pruned_below + 50  # the first range the provider could prove
    assert row.proven_through == node.finalized()
    assert_ledger_invariants()


def test_the_same_words_about_a_recent_block_are_a_lagging_node_and_hold_the_range(node, proxy):
    node.mint(node.coins["usdt"], ACCOUNTS[1], 10 * USDT)
    tx = node.transfer_token(node.coins["usdt"], ACCOUNTS[1], DONATION_ADDRESS, 10 * USDT)
    node.mine(1)
    proxy.arm("eth_call", "error", count=None, message="header not found")
    proxy.lag_logs(lambda: block_of(node, tx))

    result = crawl(LATEST)

    assert "no balance evidence" in result.held
    assert cursor_get(chain=CHAIN, label=LATEST).value < block_of(node, tx)
    assert not Donation.objects.exists()
    proxy.disarm()
    assert crawl(LATEST).held is None
    assert Donation.objects.get().tx_hash == tx


def test_coins_arriving_without_any_transfer_log_the_bloom_rules_out_are_an_unexplained_inflow(node):
    # A rebasing coin's balance grows with no Transfer log: here the coin's storage is written directly
    # (TestStableCoin's balanceOf mapping is storage slot 3), and the next block carries the change.
    token = node.coins["usdc"]
    slot = "0x" + keccak(encode(["address", "uint256"], [DONATION_ADDRESS, 3])).hex()
    before = node.token_balance(token, DONATION_ADDRESS)
    node.mine(1)
    node.rpc("anvil_setStorageAt", token, slot, "0x" + (before + 7 * USDT).to_bytes(32, "big").hex())
    node.mine(3)
    data = node.call_data("balanceOf(address)", ["address"], [DONATION_ADDRESS])
    at = [int(node.rpc("eth_call", {"to": token, "data": data}, hex(n))[2:] or "0", 16) for n in range(node.head() + 1)]
    changed = at.index(before + 7 * USDT)  # the first block whose state carries the change

    result = crawl(FINALIZED)

    assert result.held is None
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()  # not held forever
    inflow = UnexplainedInflow.objects.get()
    assert (inflow.block_number, inflow.asset, inflow.amount_raw, inflow.amount) == (changed, "usdc", 7 * USDT, 7)
    assert not Donation.objects.exists()


def test_a_refusal_of_an_old_balance_that_passes_by_the_next_run_decides_nothing(node, proxy, settings):
    # An archive provider's load balancer says "header not found" about an old block for a moment.
    start = settings.CONFIG.first_chain.start_block
    donation = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    node.mine(300)
    proxy.arm("eth_getBalance", "error", count=None, message="header not found", when=lambda p: p[-1] == hex(start - 1))

    first = crawl(FINALIZED)
    proxy.disarm()
    again = crawl(FINALIZED)

    assert "no balance evidence" in first.held
    assert first.cursor == start - 1
    assert again.held is None
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()
    row = Completeness.objects.get(label=FINALIZED)
    assert row.unproven_before is None  # nothing was passed without the proof
    assert row.proven_through == node.finalized()
    assert Donation.objects.get().tx_hash == donation
    assert_ledger_invariants()


def burn_without_log(node, token: str, holder: str) -> str:
    """USDT's destroyBlackFunds: the holder's whole balance is burnt; no Transfer log, only its own event."""
    return node.send(node.token_tx(token, ACCOUNTS[7], "destroyBlackFunds(address)", ["address"], [holder]))


def test_a_coin_burnt_without_a_log_is_on_record_for_the_operator_and_stops_no_asset(node, settings, caplog):
    settings.CRAWLER_SPARSE = False  # the full scan: the sparse path has its own test (test_sparse.py)
    usdt, usdc = node.coins["usdt"], node.coins["usdc"]
    node.mint(usdt, ACCOUNTS[1], 100 * USDT)
    node.mint(usdc, ACCOUNTS[1], 100 * USDT)
    before = node.transfer_token(usdt, ACCOUNTS[1], DONATION_ADDRESS, 30 * USDT)
    held_then = node.token_balance(usdt, DONATION_ADDRESS)
    burn = burn_without_log(node, usdt, DONATION_ADDRESS)
    later = {
        node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER): ("eth", Decimal(1)),
        node.transfer_token(usdc, ACCOUNTS[1], DONATION_ADDRESS, 5 * USDT): ("usdc", Decimal(5)),
        node.transfer_token(usdt, ACCOUNTS[1], DONATION_ADDRESS, 7 * USDT): ("usdt", Decimal(7)),
    }
    node.mine(2)

    with caplog.at_level(logging.ERROR):
        latest, final = crawl(LATEST), crawl(FINALIZED)

    assert latest.held is None
    assert final.held is None
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()
    assert {d.tx_hash: (d.asset, d.amount, d.status) for d in Donation.objects.all()} == {
        before: ("usdt", Decimal(30), "confirmed"),
        **{tx: (*what, "confirmed") for tx, what in later.items()},
    }
    burnt = UnexplainedInflow.objects.get()  # on record like an unexplained inflow: block, asset, amount
    assert (burnt.block_number, burnt.asset, burnt.amount_raw, burnt.status) == (
        block_of(node, burn),
        "usdt",
        -held_then,
        "open",
    )
    errors = [r.getMessage() for r in caplog.records if "unexplained outflow" in r.getMessage()]
    assert len(errors) == 1
    assert f"left the donation address in block {block_of(node, burn)}" in errors[0]
    assert Completeness.objects.get(label=FINALIZED).proven_through == node.finalized()
    assert_ledger_invariants()
    # reconcile names it for the operator as what it is: value that left, not value that arrived
    report = reconcile(block_of(node, before), node.finalized())
    named = [line for line in report.discrepancies if f"block {block_of(node, burn)}:" in line]
    assert any(f"{held_then} raw units of usdt left that no transfer explains" in line for line in named)
