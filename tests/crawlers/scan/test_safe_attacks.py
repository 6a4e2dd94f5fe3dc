"""A Safe read by its events under attack: a failing or lying provider, a dishonest operator (crawlers/scan/safe.py).

Each test puts a real Safe 1.4.1 (tests/safe_wallet.py) on anvil and injects its fault at the provider's
boundary (tests/rpc_proxy.py); what is asserted is what the sale sees: every donation credited once, or the
chain held.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from eth_abi import encode

from crawlers.decode.safe import NONCE_SLOT
from crawlers.models import CHAIN, FINALIZED
from crawlers.record.cursors import cursor_get
from crawlers.runs.crawl import crawl
from donations.models import Donation
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER, selector
from tests.configs import configured
from tests.crawlers.scan.test_safe_events import relay
from tests.crawlers.scan.test_sparse import crawled
from tests.rpc_proxy import RpcProxy
from tests.safe_wallet import EXEC_TRANSACTION, ZERO, execute, install_safe

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

OWNER, PAYEE = ACCOUNTS[1], ACCOUNTS[6]


def test_an_execution_block_the_provider_cannot_trace_costs_no_donation_before_it(node, proxy):
    """The execution block's trace fails (a null answer): the range holds there, and the blocks before it
    recorded meanwhile must be proven ones (an internal donation is found only by its block's trace)."""
    install_safe(node, DONATION_ADDRESS, [OWNER])
    node.mine(20)
    assert crawl(FINALIZED).held is None
    relayed = relay(node, ACCOUNTS[3], ETHER)  # an internal donation: SafeReceived, no transaction to us
    node.mine(5)
    paid = execute(node, DONATION_ADDRESS, OWNER, PAYEE, ETHER // 2)
    executed = int(node.receipt(paid)["blockNumber"], 16)
    node.mine(20)
    for method in ("trace_block", "debug_traceBlockByNumber"):
        proxy.arm(method, "null", count=None, when=lambda params: bool(params) and params[0] == hex(executed))

    assert crawl(FINALIZED).held is not None
    proxy.faults.clear()
    assert crawl(FINALIZED).held is None

    assert Donation.objects.get(tx_hash=relayed).status == "confirmed"


@pytest.fixture
def lying(node, settings) -> Iterator[RpcProxy]:
    """The primary: a proxy in front of the node, armed by the test; the check provider: the node itself."""
    with RpcProxy(node.url) as primary:
        primary.arm("trace_*", "error", count=None, code=-32601, message="not found")  # debug traces, no trace_filter
        settings.CONFIG = configured(settings.CONFIG, rpc_url=primary.url("/rpc"), rpc_check_url=node.url)
        yield primary


def test_a_primary_hiding_a_safes_net_zero_pair_with_its_nonce_bent_holds_the_chain(node, lying, caplog):
    """The primary leaves out the Safe's logs of an internal donation and of a payout of the same amount, and
    bends the Safe's transaction nonce (slot 5) to stand still: the range looks quiet to it, as a dropped pair
    with the account nonce bent looks to a plain address's proof. The check provider's nonce must show it."""
    install_safe(node, DONATION_ADDRESS, [OWNER])
    node.mine(20)
    assert crawl(FINALIZED).held is None
    honest = relay(node, ACCOUNTS[2], ETHER)  # told truly: the check provider shows the same reading
    node.mine(5)
    with node.one_block():  # two executions in one block, one of them failed: the nonce moves by two
        execute(node, DONATION_ADDRESS, OWNER, PAYEE, ETHER // 2)
        execute(node, DONATION_ADDRESS, OWNER, node.coins["usdt"], 0, b"\xde\xad", safe_tx_gas=50_000)
    node.mine(20)
    assert crawl(FINALIZED).held is None
    assert Donation.objects.get(tx_hash=honest).status == "confirmed"
    nonce = int(node.rpc("eth_getStorageAt", DONATION_ADDRESS, NONCE_SLOT, "latest"), 16)
    relayed = relay(node, ACCOUNTS[3], ETHER)
    node.mine(5)
    paid = execute(node, DONATION_ADDRESS, OWNER, PAYEE, ETHER)
    node.mine(20)
    hidden = {relayed, paid}
    lying.arm(
        "eth_getLogs",
        "rewrite",
        count=None,
        rewrite=lambda logs, _params: [log for log in logs if log.get("transactionHash") not in hidden],
    )

    def still(result: Any, params: list) -> Any:
        ours = str(params[0]).lower() == DONATION_ADDRESS and int(params[1], 16) == int(NONCE_SLOT, 16)
        return "0x" + format(nonce, "064x") if ours else result

    lying.arm("eth_getStorageAt", "rewrite", count=None, rewrite=still)

    with caplog.at_level(logging.INFO):
        result = crawl(FINALIZED)

    assert result.held is not None
    assert "providers disagree" in result.held
    assert "the Safe's transaction nonce" in result.held
    assert cursor_get(chain=CHAIN, label=FINALIZED).value < int(node.receipt(relayed)["blockNumber"], 16)


MASTER_COPY = "0xa619486e"  # masterCopy(): the proxy answers it itself, payable

BURNER = "0x" + "b1" * 20
REWINDER = "0x" + "7e" * 20
REWIND_NONCE = "0x60016005540360055500"  # PUSH1 1 PUSH1 5 SLOAD SUB PUSH1 5 SSTORE STOP: slot 5 -= 1


def delegate(node, owner: str, to: str) -> str:
    """The owner has the Safe execTransaction a DELEGATECALL to `to` (its code runs in the Safe's storage)."""
    signature = bytes.fromhex(owner[2:].rjust(64, "0")) + b"\x00" * 32 + b"\x01"
    args = [to, 0, b"", 1, 0, 0, 0, ZERO, ZERO, signature]
    data = "0x" + (selector(EXEC_TRANSACTION[0]) + encode(EXEC_TRANSACTION[1], args)).hex()
    return node.send({"from": owner, "to": DONATION_ADDRESS, "data": data, "gas": hex(400_000)})


def test_an_execution_that_rewinds_the_safes_nonce_is_read_in_full_not_a_disagreement(node, lying, caplog):
    """The owners' delegatecall sets the Safe's transaction nonce back (its code may write any slot): the
    nonce no longer counts the executions, so the range is read in full; both providers tell the truth, so
    nothing may hold the chain as a disagreement between them."""
    install_safe(node, DONATION_ADDRESS, [OWNER])
    node.mine(20)
    assert crawl(FINALIZED).held is None
    node.set_code(REWINDER, REWIND_NONCE)
    donated = node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)
    before = int(node.rpc("eth_getStorageAt", DONATION_ADDRESS, NONCE_SLOT, "latest"), 16)
    delegate(node, OWNER, REWINDER)
    assert int(node.rpc("eth_getStorageAt", DONATION_ADDRESS, NONCE_SLOT, "latest"), 16) == before
    node.mine(20)

    with caplog.at_level(logging.WARNING):
        result = crawl(FINALIZED)

    assert result.held is None
    assert Donation.objects.get(tx_hash=donated).status == "confirmed"
    assert any("read in full through call traces" in r.getMessage() for r in caplog.records)


def test_eth_the_safes_code_never_sees_is_read_as_the_full_scan_reads_it(node, proxy, settings):
    """ETH moved with no event of the Safe, inside ranges read by its events: taken by the proxy's payable
    masterCopy() (the Safe's code never runs: no SafeReceived), and the whole balance sent away by an
    owners' delegatecall running SELFDESTRUCT in the Safe (no call frame of its own; since Cancun the code
    stays). Each is the residual of its interval, or inside an execution block read in full and traced."""
    install_safe(node, DONATION_ADDRESS, [OWNER])
    node.mine(20)
    execute(node, DONATION_ADDRESS, OWNER, PAYEE, 0)
    node.mine(10)
    quiet = node.send({"from": ACCOUNTS[4], "to": DONATION_ADDRESS, "value": hex(ETHER), "data": MASTER_COPY})
    node.mine(10)
    execute(node, DONATION_ADDRESS, OWNER, PAYEE, ETHER)  # the same amount out again
    node.mine(10)
    donated = relay(node, ACCOUNTS[3], ETHER)
    node.mine(5)
    node.set_code(BURNER, "0x73" + PAYEE[2:] + "ff")  # PUSH20 payee; SELFDESTRUCT
    delegate(node, OWNER, BURNER)
    assert node.rpc("eth_getBalance", DONATION_ADDRESS, "latest") == "0x0"
    node.mine(20)

    by_events = crawled(settings, sparse=True)
    assert by_events == crawled(settings, sparse=False)
    assert {quiet, donated} <= {row[0] for row in by_events[0]}


def test_a_primary_moving_one_safereceived_amount_onto_another_costs_no_donation(node, proxy, caplog):
    """Two donations of 1 ETH in one quiet stretch; the primary (no trace_filter) leaves the first one's
    SafeReceived out and says the second brought 2 ETH: the interval still closes on what the events
    announce. The second block's balances show 1 ETH, so the announcement was wrong, and so is the verdict
    on the interval: another block in it moved the difference."""
    install_safe(node, DONATION_ADDRESS, [OWNER])
    node.mine(20)
    assert crawl(FINALIZED).held is None
    first = node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)
    node.mine(5)
    second = node.send_eth(ACCOUNTS[3], DONATION_ADDRESS, ETHER)
    node.mine(20)

    def moved(logs: Any, _params: list) -> Any:
        if not isinstance(logs, list):
            return logs
        kept = [log for log in logs if log.get("transactionHash") != first]
        return [
            {**log, "data": "0x" + format(2 * ETHER, "064x")} if log.get("transactionHash") == second else log
            for log in kept
        ]

    proxy.arm("eth_getLogs", "rewrite", count=None, rewrite=moved)
    proxy.arm("trace_filter", "error", count=None, code=-32601, message="the method trace_filter does not exist")

    with caplog.at_level(logging.INFO):
        assert crawl(FINALIZED).held is None

    assert {d.tx_hash for d in Donation.objects.filter(status="confirmed")} == {first, second}
    assert any("its SafeReceived events say" in r.getMessage() for r in caplog.records)


def test_a_primary_bending_the_balance_before_an_execution_costs_no_donation(node, proxy, caplog):
    """The primary (no trace_filter) leaves a donation's SafeReceived out and bends the Safe's balance asked
    by number before the next execution by as much: the stretch before it looks quiet, and the execution
    block, asked again pinned by hash, closes on its true change. The blocks proven no longer add up to
    the range's change: the range is read in full."""
    install_safe(node, DONATION_ADDRESS, [OWNER])
    node.mine(20)
    assert crawl(FINALIZED).held is None
    donated = node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)
    node.mine(5)
    paid = execute(node, DONATION_ADDRESS, OWNER, PAYEE, ETHER // 2)
    parent = hex(int(node.receipt(paid)["blockNumber"], 16) - 1)
    node.mine(20)

    def bent(result: Any, params: list) -> Any:
        ours = str(params[0]).lower() == DONATION_ADDRESS and params[1] == parent
        return hex(int(result, 16) - ETHER) if ours and isinstance(result, str) else result

    proxy.arm("eth_getBalance", "rewrite", count=None, rewrite=bent)
    proxy.arm(
        "eth_getLogs",
        "rewrite",
        count=None,
        rewrite=lambda logs, _params: [log for log in logs if log.get("transactionHash") != donated],
    )
    proxy.arm("trace_filter", "error", count=None, code=-32601, message="the method trace_filter does not exist")

    with caplog.at_level(logging.WARNING):
        result = crawl(FINALIZED)

    assert result.held is None
    assert Donation.objects.get(tx_hash=donated).status == "confirmed"
