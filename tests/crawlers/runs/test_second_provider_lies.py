"""A lying primary provider against an honest check provider (DWS_RPC_CHECK_URL), one lie per test.

The primary is the fault proxy in front of the test node, rewriting its answers consistently (a lie the
balance proof alone cannot see: the balances are bent to match); the check provider is the node itself.
Nothing the check provider's own answers do not show is confirmed, and the chain holds with a CRITICAL
line naming both answers (crawlers/scan/agreement.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from crawlers.chain.calls import BALANCE_OF
from crawlers.models import CHAIN, FINALIZED, UnexplainedInflow
from crawlers.record.cursors import cursor_get
from crawlers.runs.crawl import crawl
from donations.models import Donation
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER, Anvil
from tests.configs import configured
from tests.crawlers.runs.test_second_provider import critical
from tests.rpc_proxy import RpcProxy

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

US = DONATION_ADDRESS.lower()
USDT = 10**6


@pytest.fixture
def lying(node, settings) -> Iterator[RpcProxy]:
    """The primary: a proxy in front of the node, armed by each test; the check provider: the node."""
    with RpcProxy(node.url) as proxy:
        proxy.arm("trace_*", "error", count=None, code=-32601, message="not found")  # debug traces it is
        settings.CONFIG = configured(settings.CONFIG, rpc_url=proxy.url("/rpc"), rpc_check_url=node.url)
        yield proxy


def block_of(node: Anvil, at: Any) -> int:
    """The block a balance request is about: a number, a tag or an EIP-1898 `{"blockHash": ...}`."""
    if isinstance(at, dict):
        return int(node.rpc("eth_getBlockByHash", at["blockHash"], False)["number"], 16)
    if at in ("latest", "pending", "safe", "finalized"):
        return int(node.block(at)["number"], 16)
    return int(at, 16)


def bend_eth_balance(proxy: RpcProxy, node: Anvil, *, since: int, by: int, until: int | None = None) -> None:
    """The primary's ETH balance of the donation address is off by `by` wei from block `since` on (to
    block `until`, not included)."""

    def bent(result: Any, params: list) -> Any:
        if str(params[0]).lower() != US or not since <= block_of(node, params[1]) < (until or 2**64):
            return result
        return hex(int(result, 16) + by)

    proxy.arm("eth_getBalance", "rewrite", count=None, rewrite=bent)


def bend_coin_balance(
    proxy: RpcProxy, node: Anvil, coin: str, *, since: int, by: int, until: int | None = None
) -> None:
    """The primary's `balanceOf(donation address)` of `coin` is off by `by` from block `since` on (to
    block `until`, not included)."""

    def ours(params: list) -> bool:
        call = params[0] if params and isinstance(params[0], dict) else {}
        data = str(call.get("data") or "").lower()
        return str(call.get("to")).lower() == coin and data.startswith(BALANCE_OF) and data.endswith(US[2:])

    def bent(result: Any, params: list) -> Any:
        if not since <= block_of(node, params[1]) < (until or 2**64):
            return result
        return "0x" + format(int(result, 16) + by, "064x")

    proxy.arm("eth_call", "rewrite", count=None, when=ours, rewrite=bent)


def in_block(number: int) -> Callable[[list], bool]:
    return lambda params: bool(params) and isinstance(params[0], str) and params[0] == hex(number)


def eth_donation(node: Anvil) -> tuple[str, int]:
    """A 1 ETH donation in a block after an empty one, finalized: its transaction and block."""
    node.mine(1)
    tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    block = int(node.receipt(tx)["blockNumber"], 16)
    node.mine(2)
    return tx, block


def usdt_donation(node: Anvil) -> tuple[str, str, int]:
    """A 40 USDT donation, finalized: the coin's contract, the transaction, its block."""
    usdt = node.coins["usdt"]
    node.mint(usdt, ACCOUNTS[2], 100 * USDT)
    tx = node.transfer_token(usdt, ACCOUNTS[2], DONATION_ADDRESS, 40 * USDT)
    block = int(node.receipt(tx)["blockNumber"], 16)
    node.mine(2)
    return usdt, tx, block


def drop_logs_of(proxy: RpcProxy, tx: str) -> None:
    """The primary's eth_getLogs answers leave out transaction `tx`'s logs."""
    proxy.arm(
        "eth_getLogs",
        "rewrite",
        count=None,
        rewrite=lambda logs, _params: [log for log in logs if log.get("transactionHash") != tx],
    )


def drop_from_body(proxy: RpcProxy, block: int, tx: str) -> None:
    """The primary's answers about block `block` leave transaction `tx` out of its body."""

    def dropped(result: Any, _params: list) -> Any:
        kept = [t for t in result["transactions"] if (t["hash"] if isinstance(t, dict) else t) != tx]
        return {**result, "transactions": kept}

    proxy.arm("eth_getBlockByNumber", "rewrite", count=None, when=in_block(block), rewrite=dropped)


def rewrite_trace(proxy: RpcProxy, block: int, tx: str, change: Callable[[dict], dict]) -> None:
    """The primary's call trace of block `block` has transaction `tx`'s call tree passed through `change`."""

    def changed(result: Any, _params: list) -> Any:
        return [{**item, "result": change(item["result"])} if item.get("txHash") == tx else item for item in result]

    proxy.arm("debug_traceBlockByNumber", "rewrite", count=None, when=in_block(block), rewrite=changed)


def held_critically(caplog, result, *parts: str) -> str:
    """The run held with a CRITICAL line naming both answers; returns the line."""
    assert result.held is not None
    assert "providers disagree" in result.held
    (line,) = [line for line in critical(caplog) if "providers disagree" in line]
    for part in parts:
        assert part in line, (part, line)
    return line


def test_an_inflated_balance_records_no_inflow_and_holds_the_chain(node, lying, caplog):
    node.mine(1)
    block = node.head() + 1
    node.send_eth(ACCOUNTS[1], ACCOUNTS[2], ETHER)  # a stranger's transfer, nothing to us
    node.mine(2)
    bend_eth_balance(lying, node, since=block, by=50 * ETHER)

    with caplog.at_level(logging.INFO):
        result = crawl(FINALIZED)

    # The block where the balance rose is an unexplained inflow to our proof: its change is compared.
    held_critically(
        caplog,
        result,
        f"block {block}: how the block moved",
        f"eth: ours says +{50 * ETHER}, the check provider says +0",
    )
    assert not UnexplainedInflow.objects.exists()
    assert cursor_get(chain=CHAIN, label=FINALIZED).value < node.finalized()


def test_an_invented_trace_frame_with_a_balance_to_match_confirms_nothing(node, lying, caplog):
    """The money review's reproduction: 50 ETH that never arrived were confirmed (100,000,000 tokens)."""
    node.mine(1)
    stranger = node.send_eth(ACCOUNTS[1], ACCOUNTS[2], ETHER)
    block = int(node.receipt(stranger)["blockNumber"], 16)
    node.mine(2)
    frame = {
        "type": "CALL",
        "from": ACCOUNTS[2].lower(),
        "to": US,
        "value": hex(50 * ETHER),
        "gas": "0x0",
        "gasUsed": "0x0",
        "input": "0x",
        "output": "0x",
    }

    rewrite_trace(lying, block, stranger, lambda call: {**call, "calls": [*(call.get("calls") or []), frame]})
    bend_eth_balance(lying, node, since=block, by=50 * ETHER)

    with caplog.at_level(logging.INFO):
        result = crawl(FINALIZED)

    held_critically(
        caplog,
        result,
        f"block {block}: how the block moved",
        f"eth: ours says +{50 * ETHER}, the check provider says +0",
    )
    assert result.confirmed == 0
    assert not Donation.objects.exists()


def test_a_coin_transfer_dropped_from_the_logs_holds_the_chain(node, lying, caplog):
    usdt, tx, block = usdt_donation(node)
    drop_logs_of(lying, tx)
    bend_coin_balance(lying, node, usdt, since=block, by=-40 * USDT)

    with caplog.at_level(logging.INFO):
        result = crawl(FINALIZED)

    held_critically(caplog, result, "balances after blocks", f"usdt: ours says 0, the check provider says {40 * USDT}")
    assert cursor_get(chain=CHAIN, label=FINALIZED).value < block


def test_a_transaction_dropped_from_a_body_holds_the_chain(node, lying, caplog):
    tx, block = eth_donation(node)
    drop_from_body(lying, block, tx)
    bend_eth_balance(lying, node, since=block, by=-ETHER)

    with caplog.at_level(logging.INFO):
        result = crawl(FINALIZED)

    real = int(node.rpc("eth_getBalance", DONATION_ADDRESS, hex(node.finalized())), 16)
    held_critically(caplog, result, f"eth: ours says {real - ETHER}, the check provider says {real}")
    assert cursor_get(chain=CHAIN, label=FINALIZED).value < block


@pytest.mark.parametrize("traces", [True, False], ids=["tracing", "without-traces"])
def test_a_check_provider_without_state_shows_internal_eth_by_its_trace_or_waits(node, settings, caplog, traces):
    """A check provider that keeps only its recent state (a full node: balances refused more than 128 blocks
    behind its head) cannot give a crediting block's balances: learnt as for the primary (refused on two
    runs while its head answers), the block is shown by its transactions and, for ETH paid by an internal
    call, by the transaction's trace; without one, the range waits (never confirmed on the primary's word)."""
    relay = node.deploy("EthRelay")
    data = node.call_data("relay(address)", ["address"], [DONATION_ADDRESS])
    tx = node.send({"from": ACCOUNTS[4], "to": relay, "value": hex(3 * ETHER), "data": data})
    node.mine(140)

    def old(params: list) -> bool:
        at = params[-1] if params else None
        return (
            isinstance(at, (str, dict)) and at not in ("latest", "pending") and block_of(node, at) < node.head() - 128
        )

    with RpcProxy(node.url) as full_node:
        for method in ("eth_getBalance", "eth_getTransactionCount", "eth_call", "eth_getCode"):
            full_node.arm(method, "error", count=None, when=old, message="missing trie node 0xabc (path )")
        if not traces:
            full_node.refuse_traces()
        settings.CONFIG = configured(settings.CONFIG, rpc_check_url=full_node.url("/check"))

        with caplog.at_level(logging.INFO):
            first, second = crawl(FINALIZED), crawl(FINALIZED)

    assert critical(caplog) == []
    assert first.confirmed == 0
    assert "gave no evidence" in (first.held or "")  # a first refusal: asked again on the next run
    if traces:
        assert second.held is None
        assert Donation.objects.get().tx_hash == tx
        assert Donation.objects.get().status == "confirmed"
    else:
        assert "cannot be shown" in (second.held or "")
        assert not Donation.objects.filter(status="confirmed").exists()
