"""Issue #19 item 1: no call tree anyone can send stops crediting.

A contract (tests/contracts/DeepCall.sol) recursing ~120 calls deep before paying the donation address gives
its payment a trace path of 241 characters; every later donation must still be credited, by both crawlers.
An unexpected failure while one block is written is a hold naming the block, the asset and the
transaction, with the "stuck" line, never an exception out of the run (the fault is a database trigger:
the boundary, not our code).
"""

from __future__ import annotations

import logging
from decimal import Decimal

import pytest
from django.db import connection

from crawlers.models import FINALIZED, LATEST
from crawlers.runs.crawl import crawl
from crawlers.scan.results import STUCK_POINTER
from donations.models import Donation
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.configs import configured
from tests.invariants import assert_ledger_invariants

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

ATTACKER = ACCOUNTS[5]
DONOR = ACCOUNTS[2]


@pytest.fixture
def deep(node) -> str:
    return node.deploy("DeepCall", sender=ATTACKER)


def dive(node, contract: str, *, depth: int, wei: int, signature: str = "dive(address,uint256,uint256)") -> str:
    data = node.call_data(signature, ["address", "uint256", "uint256"], [DONATION_ADDRESS, wei, depth])
    tx = node.send({"from": ATTACKER, "to": contract, "data": data, "value": hex(wei), "gas": hex(29_000_000)})
    assert node.receipt(tx)["status"] == "0x1"
    return tx


def test_a_payment_120_calls_deep_is_credited_by_both_crawlers_and_crediting_goes_on(node, deep):
    deep_tx = dive(node, deep, depth=120, wei=ETHER // 100)
    direct_tx = node.send_eth(DONOR, DONATION_ADDRESS, ETHER)

    latest = crawl(LATEST)

    assert latest.held is None
    rows = {d.tx_hash: d for d in Donation.objects.all()}
    assert set(rows) == {deep_tx, direct_tx}
    path = rows[deep_tx].trace_address
    assert path == ".".join(["0"] * 121)  # the send, under 120 frames of the contract calling itself
    assert (rows[deep_tx].address, rows[deep_tx].amount, rows[deep_tx].status) == (
        deep,
        Decimal("0.01"),
        "unconfirmed",
    )

    node.mine(2)
    final = crawl(FINALIZED)

    assert final.held is None
    assert set(Donation.objects.values_list("tx_hash", "trace_address", "status")) == {
        (deep_tx, path, "confirmed"),
        (direct_tx, None, "confirmed"),
    }
    assert_ledger_invariants()


def test_a_failure_writing_one_block_is_a_hold_naming_block_asset_and_transaction(node, caplog):
    tx = node.send_eth(DONOR, DONATION_ADDRESS, ETHER)
    number = int(node.receipt(tx)["blockNumber"], 16)
    with connection.cursor() as cursor:  # the database refuses this one row, as it refused a long path
        cursor.execute(
            "CREATE FUNCTION refuse_row() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN IF NEW.tx_hash = %s THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$",
            [tx],
        )
        cursor.execute("CREATE TRIGGER refuse_row BEFORE INSERT ON donation FOR EACH ROW EXECUTE FUNCTION refuse_row()")

    with caplog.at_level(logging.ERROR, logger="dws.crawlers"):
        held = crawl(LATEST)

    assert held.held is not None
    assert held.held.startswith(f"block: {number} -- ")
    assert f"eth {tx}" in held.held
    assert STUCK_POINTER in held.held
    assert held.cursor == number - 1
    assert not Donation.objects.exists()
    assert any(f"block: {number} -- " in r.getMessage() and STUCK_POINTER in r.getMessage() for r in caplog.records)

    with connection.cursor() as cursor:
        cursor.execute("DROP TRIGGER refuse_row ON donation")
    assert crawl(LATEST).held is None
    assert Donation.objects.get().tx_hash == tx


@pytest.fixture
def roomy_blocks(node):
    """Blocks with 10x mainnet's gas: room for a call tree ~500 frames deep (the 63/64 rule caps it)."""
    before = int(node.block("latest")["gasLimit"], 16)
    node.rpc("evm_setBlockGasLimit", hex(300_000_000))
    try:
        yield
    finally:
        node.rpc("evm_setBlockGasLimit", hex(before))


@pytest.mark.usefixtures("roomy_blocks")
def test_a_call_tree_whose_trace_nests_past_pythons_default_json_depth_is_read(node, deep, settings):
    # The callTracer nests each frame two JSON levels deeper: ~1000 levels, where json.loads recursed out.
    settings.CONFIG = configured(settings.CONFIG, trace_mode="debug")
    data = node.call_data(
        "payThenDive(address,uint256,uint256)", ["address", "uint256", "uint256"], [DONATION_ADDRESS, ETHER // 100, 500]
    )
    tx = node.send({"from": ATTACKER, "to": deep, "data": data, "value": hex(ETHER // 100), "gas": hex(290_000_000)})
    assert node.receipt(tx)["status"] == "0x1"

    latest = crawl(LATEST)

    assert latest.held is None
    assert list(Donation.objects.values_list("tx_hash", "trace_address", "address")) == [(tx, "0", deep)]


def test_an_answer_the_scan_cannot_read_is_a_hold_with_the_stuck_line_never_an_exception(node, proxy, caplog):
    tx = node.send_eth(DONOR, DONATION_ADDRESS, ETHER)
    number = int(node.receipt(tx)["blockNumber"], 16)

    def garbled(block, params):  # the provider answers the transaction's value in no number format at all
        if isinstance(block, dict):
            block["transactions"] = [{**t, "value": "0xnot-hex"} for t in block["transactions"]]
        return block

    proxy.arm("eth_getBlockByNumber", "rewrite", count=None, when=lambda p: p[1] is True, rewrite=garbled)

    with caplog.at_level(logging.ERROR, logger="dws.crawlers"):
        held = crawl(LATEST)

    assert held.held is not None
    assert held.held.startswith(f"block: {number} -- ")
    assert "ValueError" in held.held
    assert STUCK_POINTER in held.held
    assert held.cursor == number - 1
    assert not Donation.objects.exists()

    proxy.disarm()
    assert crawl(LATEST).held is None
    assert Donation.objects.get().tx_hash == tx
