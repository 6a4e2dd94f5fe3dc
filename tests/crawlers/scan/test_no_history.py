"""A provider without historical state: the crawler started at block 0 on anvil loaded from a state dump.

Such a node has every block, receipt, log and `trace_block` answer, but the balances of the blocks before
the dump are refused ("BlockOutOfRangeError: block height is N but requested was 0"): nothing in those
words says "pruned history". The crawler learns it by behaviour (the head answers, the old block is
refused again on a later run), then reads the call traces of every block of such a range, so an internal
donation (no top-level flow to find it by) is credited; where the traces are refused too, the range is
published unproven with the ETH change the provider's balances show.
"""

from __future__ import annotations

import binascii
import dataclasses
import gzip
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from crawlers.models import CHAIN, FINALIZED, ProofRange, ProofStatus, UnexplainedInflow
from crawlers.record.cursors import cursor_get
from crawlers.runs.crawl import crawl
from donations.models import Donation
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER, Anvil, deploy_stable_coins
from tests.configs import configured
from tests.invariants import assert_ledger_invariants
from tests.rpc_proxy import RpcProxy

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eth_prices")]

USDT = 10**6
BEFORE_DUMP = 200  # blocks mined before the dump: its state lives only at the dump's head
AFTER_LOAD = 150  # then more than a full node's 128 recent states: the old blocks are old


@dataclasses.dataclass
class Dumped:
    node: Anvil
    proxy: RpcProxy
    relayed: str  # 3 ETH from a contract wallet to the donation address, before the dump
    direct: str
    coin: str
    dump_head: int


@pytest.fixture
def dumped(tmp_path: Path, settings) -> Iterator[Dumped]:
    with Anvil() as source:
        coins = deploy_stable_coins(source)
        relay = source.deploy("EthRelay")
        data = source.call_data("relay(address)", ["address"], [DONATION_ADDRESS])
        relayed = source.send({"from": ACCOUNTS[4], "to": relay, "value": hex(3 * ETHER), "data": data})
        direct = source.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
        source.mint(coins["usdt"], ACCOUNTS[2], 100 * USDT)
        coin = source.transfer_token(coins["usdt"], ACCOUNTS[2], DONATION_ADDRESS, 40 * USDT)
        source.mine(BEFORE_DUMP)
        dump_head = source.head()
        state = tmp_path / "state.json"
        state.write_bytes(gzip.decompress(binascii.unhexlify(source.rpc("anvil_dumpState")[2:])))
    with Anvil(extra_args=["--load-state", str(state)]) as node, RpcProxy(node.url) as proxy:
        node.coins = coins
        node.mine(AFTER_LOAD)
        settings.CONFIG = configured(settings.CONFIG, rpc_url=proxy.url("/rpc"), start_block=0)
        yield Dumped(node, proxy, relayed, direct, coin, dump_head)


def crawl_until_caught_up(node: Anvil, runs: int = 4) -> list[str | None]:
    held = []
    for _ in range(runs):
        result = crawl(FINALIZED)
        held.append(result.held)
        if result.held is None and cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized():
            break
    return held


def test_the_node_refuses_old_balances_in_words_that_do_not_say_history(dumped):
    with pytest.raises(Exception, match="BlockOutOfRangeError: block height is"):
        dumped.node.rpc("eth_getBalance", DONATION_ADDRESS, "0x0")


def test_started_at_block_0_the_crawler_moves_and_credits_the_internal_donation_from_the_traces(dumped):
    node = dumped.node

    held = crawl_until_caught_up(node)

    assert held[-1] is None, held
    assert len(held) <= 2, held  # a first run may wait to see the refusal again; the next one moves
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()
    rows = {(d.tx_hash, d.asset, d.amount, d.status) for d in Donation.objects.all()}
    assert rows == {
        (dumped.relayed, "eth", Decimal(3), "confirmed"),  # found in the traces: no top-level flow shows it
        (dumped.direct, "eth", Decimal(1), "confirmed"),
        (dumped.coin, "usdt", Decimal(40), "confirmed"),
    }
    assert not UnexplainedInflow.objects.exists()
    unproven = ProofRange.objects.get(status=ProofStatus.UNPROVEN)
    assert unproven.first_block == 1
    assert unproven.last_block >= dumped.dump_head - 50  # every range whose opening balance was refused
    assert "historical state" in unproven.reason
    proven = ProofRange.objects.filter(status=ProofStatus.PROVEN).order_by("first_block")
    assert proven.last().last_block == node.finalized()
    assert_ledger_invariants()


def test_the_traces_of_a_range_without_history_come_in_one_post_once_the_method_is_known(dumped):
    node = dumped.node

    held = crawl_until_caught_up(node)

    assert held[-1] is None, held
    traced = [s for s in dumped.proxy.seen if {"debug_traceBlockByNumber", "trace_block"} & set(s.methods)]
    blocks = sum(s.methods.count("debug_traceBlockByNumber") + s.methods.count("trace_block") for s in traced)
    assert blocks >= dumped.dump_head  # every block before the dump is traced (and its header asked with it)
    # Many blocks a post, not one each (a block whose trace in the batch is refused is asked again alone).
    assert len(traced) < blocks / 3, (len(traced), blocks)


def test_where_the_traces_are_refused_too_the_range_is_published_unproven_with_the_eth_change(dumped):
    node = dumped.node
    dumped.proxy.refuse_traces()

    held = crawl_until_caught_up(node)

    assert held[-1] is None, held
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()
    assert {d.tx_hash for d in Donation.objects.all()} == {dumped.direct, dumped.coin}  # never guessed
    unproven = ProofRange.objects.get(status=ProofStatus.UNPROVEN)
    assert "no call traces" in unproven.reason
    assert unproven.first_block == 1
    eth = unproven.assets.get(asset="eth")
    # The first balance the provider gives after the span (at its last block) is on record beside it.
    assert eth.closing == int(node.rpc("eth_getBalance", DONATION_ADDRESS, hex(unproven.last_block)), 16)
    assert_ledger_invariants()


def test_a_trace_error_for_one_block_on_one_run_holds_it_and_the_internal_donation_is_credited_after(dumped):
    # A flaky load balancer: each trace method answers an error object for the relayed donation's block,
    # once. That is no proof the block cannot be traced: held, asked again, and credited.
    node = dumped.node
    block = hex(int(node.receipt(dumped.relayed)["blockNumber"], 16))
    for method in ("debug_traceBlockByNumber", "trace_block"):
        dumped.proxy.arm(method, "error", count=1, message="header not found", when=lambda p: p[:1] == [block])

    held = crawl_until_caught_up(node, runs=5)

    assert held[-1] is None, held
    assert {(d.tx_hash, d.amount) for d in Donation.objects.filter(asset="eth")} == {
        (dumped.relayed, Decimal(3)),
        (dumped.direct, Decimal(1)),
    }
    assert not ProofRange.objects.filter(reason__contains="no call traces").exists()
    assert_ledger_invariants()


def test_a_block_every_trace_method_keeps_refusing_is_published_unproven_on_a_later_run(dumped):
    # The same errors on every run (a provider that cannot replay the block): one more run, never a wedge.
    node = dumped.node
    block = hex(int(node.receipt(dumped.relayed)["blockNumber"], 16))
    for method in ("debug_traceBlockByNumber", "trace_block"):
        dumped.proxy.arm(method, "error", count=None, message="header not found", when=lambda p: p[:1] == [block])

    held = crawl_until_caught_up(node, runs=5)

    assert held[-1] is None, held
    assert any(h and "call traces were refused once" in h for h in held), held
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()
    assert dumped.relayed not in {d.tx_hash for d in Donation.objects.all()}  # never guessed
    assert ProofRange.objects.filter(reason__contains="no call traces").exists()
    assert_ledger_invariants()
