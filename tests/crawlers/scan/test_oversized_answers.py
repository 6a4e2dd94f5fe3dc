"""No answer is too big to prove (issue 32): what anyone can send never holds a block for good.

At the smallest answer cap (DWS_RPC_MAX_ANSWER_MB=1), on the session anvil:

* a call bomb (tests/contracts/CallBomb.sol: some thousands of empty calls, a block trace of several MB)
  beside an internal ETH donation in the same block: the block's trace is asked per transaction, the
  donation's own first, and the donation is credited by both crawlers; nothing holds;
* a call bomb that itself pays the donation address: its one trace is too large even alone, so what the
  balances say arrived in the block is an unexplained inflow naming the transaction and the reason, and
  the cursor moves on (a donation after it is credited as usual);
* log bombs (tests/contracts/LogBomb.sol: a coin donation with a ~300 KB log beside it) checked with a
  second provider: the receipts batch the cross-check asks is over the cap, each receipt alone is not,
  and the batch is asked again in smaller parts;
* a stranger's contract emitting a Transfer event that names the donation address with ~1.4 MB of data
  (anyone can emit one: the filter to us asks every contract, for the coins the sale does not take): the
  logs of that one block are past the cap, and only the contracts whose logs decide something are asked.
"""

from __future__ import annotations

import logging
from decimal import Decimal

import pytest

from crawlers.models import CHAIN, FINALIZED, LATEST, UnexplainedInflow
from crawlers.record.cursors import cursor_get
from crawlers.runs.crawl import crawl
from crawlers.runs.reconcile import reconcile
from donations.models import Donation, DonationStats
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER, multisend
from tests.configs import configured
from tests.rpc_proxy import RpcProxy

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

MIB = 2**20
CALLS = 7_000  # ~1.35 MB of callTracer frames, ~3.5 MB of trace_block entries: past a 1 MiB cap either way
USDT = 10**6


@pytest.fixture
def small_cap(settings, node):
    """The smallest cap DWS_RPC_MAX_ANSWER_MB takes, the crawlers reading the node through the proxy."""
    with RpcProxy(node.url) as provider:
        settings.CONFIG = configured(settings.CONFIG, rpc_url=provider.url("/rpc"), rpc_max_answer_bytes=MIB)
        yield provider


TRANSFER_TOPIC = "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"


def transfer_event_bomb(node, at: str) -> None:
    """Code at `at` that emits Transfer(caller, the donation address) with as many zero bytes of data as its
    calldata's first word says: PUSH20 us, CALLER, PUSH32 Transfer, PUSH1 0 CALLDATALOAD, PUSH1 0, LOG3."""
    node.set_code(at, "0x73" + DONATION_ADDRESS[2:] + "33" + "7f" + TRANSFER_TOPIC + "600035" + "6000" + "a3" + "00")


def bomb(node, bomb_address: str, *, pays: int = 0) -> dict:
    data = node.call_data("bomb(uint256,address)", ["uint256", "address"], [CALLS, DONATION_ADDRESS])
    return {"from": ACCOUNTS[3], "to": bomb_address, "data": data, "value": hex(pays), "gas": hex(25_000_000)}


def relay(node, relay_address: str, wei: int) -> dict:
    data = node.call_data("relay(address)", ["address"], [DONATION_ADDRESS])
    return {"from": ACCOUNTS[1], "to": relay_address, "data": data, "value": hex(wei), "gas": hex(100_000)}


@pytest.mark.parametrize("trace", ["debug", "trace"])
def test_a_call_bomb_beside_an_internal_donation_holds_nothing_and_the_donation_is_credited(
    node, small_cap, settings, trace
):
    settings.CONFIG = configured(settings.CONFIG, trace_mode=trace)
    bomber, relayer = node.deploy("CallBomb"), node.deploy("EthRelay")
    with node.one_block():
        bombed = node.send(bomb(node, bomber))
        donated = node.send(relay(node, relayer, ETHER))
    block = int(node.receipt(donated)["blockNumber"], 16)
    assert node.receipt(bombed)["status"] == "0x1"
    node.mine(2)

    latest = crawl(LATEST)
    assert latest.held is None
    assert Donation.objects.get().status == "unconfirmed"
    final = crawl(FINALIZED)

    assert final.held is None
    row = Donation.objects.get()
    assert (row.tx_hash, row.address, row.amount, row.status) == (donated, relayer, Decimal("1"), "confirmed")
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized() >= block
    assert not UnexplainedInflow.objects.exists()


def test_a_call_bomb_paying_the_address_itself_is_an_unexplained_inflow_and_the_cursor_moves_on(
    node, small_cap, caplog
):
    bomber = node.deploy("CallBomb")
    bombed = node.send(bomb(node, bomber, pays=ETHER))
    block = int(node.receipt(bombed)["blockNumber"], 16)
    after = node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, 2 * ETHER)
    node.mine(2)

    with caplog.at_level(logging.ERROR, logger="dws.crawlers"):
        assert crawl(LATEST).held is None
        final = crawl(FINALIZED)

    assert final.held is None
    inflow = UnexplainedInflow.objects.get()
    assert (inflow.block_number, inflow.asset, inflow.amount_raw, inflow.status) == (block, "eth", ETHER, "open")
    assert bombed in inflow.reason
    assert "DWS_RPC_MAX_ANSWER_MB" in inflow.reason
    assert any(bombed in r.getMessage() and "unexplained inflow" in r.getMessage() for r in caplog.records)
    assert Donation.objects.get().tx_hash == after  # the block after it is credited as usual
    assert Donation.objects.get().status == "confirmed"
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()

    report = reconcile(block, node.finalized())
    assert report.discrepancies == report.awaiting_operator  # the open inflow waits for the operator: no drift
    assert DonationStats.objects.get().status == "open"


def test_log_bombs_in_donations_checked_by_a_second_provider_are_confirmed(node, small_cap, settings):
    with RpcProxy(node.url) as check:
        settings.CONFIG = configured(settings.CONFIG, rpc_check_url=check.url("/check"))
        bombs = [node.deploy("LogBomb") for _ in range(4)]
        for address in bombs:
            node.mint(node.coins["usdt"], address, 10 * USDT)
        with node.one_block():
            paid = [
                node.send(
                    node.token_tx(
                        address,
                        ACCOUNTS[4],
                        "pay(address,address,uint256,uint256)",
                        ["address", "address", "uint256", "uint256"],
                        [node.coins["usdt"], DONATION_ADDRESS, 10 * USDT, 300_000],
                    )
                    | {"gas": hex(5_000_000)}
                )
                for address in bombs
            ]
        node.mine(2)

        final = crawl(FINALIZED)

    assert final.held is None
    assert final.confirmed == 4
    assert {d.tx_hash: d.address for d in Donation.objects.filter(status="confirmed")} == dict(
        zip(paid, bombs, strict=True)
    )


def test_a_transfer_event_past_the_cap_naming_the_address_holds_nothing(node, small_cap):
    """Both crawlers held on the block for ever ('no Transfer logs for blocks ...: too-large'): get_logs halved
    the span down to the one block and gave up (found by attack32; this test failed so). The coins' and the
    stray tokens' logs are asked alone for such a range: the donations beside the bomb are credited."""
    spam = "0x" + "be" * 20
    transfer_event_bomb(node, spam)
    node.mint(node.coins["usdc"], ACCOUNTS[2], 30 * USDT)
    words = "0x" + (1_400_000).to_bytes(32, "big").hex()
    with node.one_block():
        bombed = node.send({"from": ACCOUNTS[3], "to": spam, "data": words, "gas": hex(25_000_000)})
        usdc = node.transfer_token(node.coins["usdc"], ACCOUNTS[2], DONATION_ADDRESS, 30 * USDT)
        eth = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    assert node.receipt(bombed)["status"] == "0x1"
    node.mine(2)

    assert crawl(LATEST).held is None
    final = crawl(FINALIZED)

    assert final.held is None
    assert {d.tx_hash: (d.amount, d.status) for d in Donation.objects.all()} == {
        usdc: (Decimal(30), "confirmed"),
        eth: (Decimal(1), "confirmed"),
    }
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()
    assert not UnexplainedInflow.objects.exists()


def test_a_mint_whose_receipt_is_past_the_cap_is_an_unexplained_inflow_and_holds_nothing(node, small_cap):
    """Whose a coin minted to the address is, only its transaction's receipt says (crawlers/decode/mints.py),
    and anyone can put a megabyte log beside a mint in one transaction (a Safe's batch: a mint, then a log
    bomb; on a real chain, relaying someone's CCTP message with a log of one's own). The receipt was past the
    cap even alone and both crawlers held on the block for ever ('no receipt for tx ..., which minted a coin
    to the donation address (...too-large...)'; found by attack32, this test failed so). It names nobody: the
    mint is an open unexplained inflow saying why, and the cursor moves on."""
    stranger, usdc = ACCOUNTS[6], node.coins["usdc"]
    safe, log_bomb = node.deploy("BatchSafe", ["address"], [stranger]), node.deploy("LogBomb")
    mint = node.call_data("mint(address,uint256)", ["address", "uint256"], [DONATION_ADDRESS, 5 * USDT])
    junk = node.call_data(
        "pay(address,address,uint256,uint256)",
        ["address", "address", "uint256", "uint256"],
        [usdc, ACCOUNTS[8], 0, 700_000],
    )
    batch = multisend([{"to": usdc, "value": 0, "data": mint}, {"to": log_bomb, "value": 0, "data": junk}])
    data = node.call_data("multiSend(bytes)", ["bytes"], [batch])
    minted = node.send({"from": stranger, "to": safe, "data": data, "gas": hex(20_000_000)})
    assert node.receipt(minted)["status"] == "0x1"
    after = node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)
    node.mine(2)

    assert crawl(LATEST).held is None
    final = crawl(FINALIZED)

    assert final.held is None
    inflow = UnexplainedInflow.objects.get()
    assert (inflow.asset, int(inflow.amount_raw), inflow.status) == ("usdc", 5 * USDT, "open")
    assert minted in inflow.reason
    assert "DWS_RPC_MAX_ANSWER_MB" in inflow.reason
    assert Donation.objects.get().tx_hash == after
    assert Donation.objects.get().status == "confirmed"
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()
    report = reconcile(int(node.receipt(minted)["blockNumber"], 16), node.finalized())
    assert report.discrepancies == report.awaiting_operator


def test_donations_whose_own_receipt_is_past_the_cap_are_confirmed_with_a_second_provider(node, small_cap, settings):
    """The check provider compares every credited transaction's receipt, and a donation's own receipt is past the
    cap when its transaction carries a log of a megabyte (a coin paid by LogBomb; ETH relayed by a Safe's batch
    beside a log bomb): the finalized crawler waited for the check provider for ever ('eth_getTransactionReceipt:
    too-large ...; waiting'), and nothing after it was confirmed (found by attack32; this test failed so). The
    check is shown the same facts by smaller answers: the coin's Transfer log in its block, the ETH's frame in
    its call trace."""
    with RpcProxy(node.url) as check:
        settings.CONFIG = configured(settings.CONFIG, rpc_check_url=check.url("/check"))
        log_bomb, relayer = node.deploy("LogBomb"), node.deploy("EthRelay")
        safe = node.deploy("BatchSafe", ["address"], [ACCOUNTS[6]])
        node.mint(node.coins["usdt"], log_bomb, 10 * USDT)
        node.send_eth(ACCOUNTS[6], safe, ETHER)
        junk = ["address", "address", "uint256", "uint256"]
        coin = node.send(
            node.token_tx(
                log_bomb,
                ACCOUNTS[4],
                "pay(address,address,uint256,uint256)",
                junk,
                [node.coins["usdt"], DONATION_ADDRESS, 10 * USDT, 1_100_000],
            )
            | {"gas": hex(29_000_000)}
        )
        relayed = {"to": relayer, "value": ETHER, "data": relay(node, relayer, ETHER)["data"]}
        noise = node.call_data(
            "pay(address,address,uint256,uint256)", junk, [node.coins["usdt"], ACCOUNTS[8], 0, 1_100_000]
        )
        batch = node.call_data(
            "multiSend(bytes)", ["bytes"], [multisend([relayed, {"to": log_bomb, "value": 0, "data": noise}])]
        )
        eth = node.send({"from": ACCOUNTS[6], "to": safe, "data": batch, "gas": hex(29_000_000)})
        assert (node.receipt(coin)["status"], node.receipt(eth)["status"]) == ("0x1", "0x1")
        after = node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)
        node.mine(2)

        assert crawl(LATEST).held is None
        final = crawl(FINALIZED)

    assert final.held is None
    assert {d.tx_hash: (d.address, d.amount, d.status) for d in Donation.objects.all()} == {
        coin: (log_bomb, Decimal(10), "confirmed"),
        eth: (relayer, Decimal(1), "confirmed"),
        after: (ACCOUNTS[2], Decimal(1), "confirmed"),
    }


def test_a_block_whose_coin_logs_alone_are_past_the_cap_is_an_unexplained_inflow_and_holds_nothing(node, small_cap):
    """Thousands of zero-value USDC transfers to the address in one block (a Safe's batch): the coin's own
    Transfer logs of that block are past the cap, however the filter is split. Both crawlers held there for ever
    ('no Transfer logs for blocks ...'; found by attack32, this test failed so). What the balances say that coin
    brought in that block is an open unexplained inflow saying why (the USDC donation beside the spam is in it,
    for the operator to credit), the other assets are credited as usual, and the cursor moves on."""
    usdc, spammer = node.coins["usdc"], ACCOUNTS[6]
    safe = node.deploy("BatchSafe", ["address"], [spammer])
    zero = node.call_data("transfer(address,uint256)", ["address", "uint256"], [DONATION_ADDRESS, 0])
    batch = node.call_data("multiSend(bytes)", ["bytes"], [multisend([{"to": usdc, "value": 0, "data": zero}] * 2_000)])
    node.mint(usdc, ACCOUNTS[2], 30 * USDT)
    with node.one_block():
        spam = node.send({"from": spammer, "to": safe, "data": batch, "gas": hex(25_000_000)})
        donated = node.transfer_token(usdc, ACCOUNTS[2], DONATION_ADDRESS, 30 * USDT)
        eth = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    block = int(node.receipt(spam)["blockNumber"], 16)
    assert node.receipt(spam)["status"] == "0x1"
    assert int(node.receipt(donated)["blockNumber"], 16) == block
    node.mine(2)

    assert crawl(LATEST).held is None
    final = crawl(FINALIZED)

    assert final.held is None
    assert {d.tx_hash: d.status for d in Donation.objects.all()} == {eth: "confirmed"}
    inflow = UnexplainedInflow.objects.get()
    assert (inflow.block_number, inflow.asset, int(inflow.amount_raw), inflow.status) == (
        block,
        "usdc",
        30 * USDT,
        "open",
    )
    assert "DWS_RPC_MAX_ANSWER_MB" in inflow.reason
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()
    report = reconcile(block, node.finalized())
    assert report.discrepancies == report.awaiting_operator


def test_a_block_whose_body_is_past_the_cap_holds_nothing(node, small_cap):
    """Anyone can fill a block with calldata (600 KB of zero bytes: some 6M gas): the block with its transactions
    is past the cap even alone, and both crawlers held on it for ever ('no block from the provider (too-large
    ...)'; found by attack32, this test failed so). It is read in parts: its header with the transactions'
    hashes, then each transaction by its place in the block; one still past the cap stands as its hash alone,
    nobody's transfer, and what it did at the address the balances show: ETH it paid is traced, and past the
    cap there too, an unexplained inflow saying why."""
    fat = "0x" + "00" * 600_000
    node.mint(node.coins["usdc"], ACCOUNTS[2], 30 * USDT)
    with node.one_block():
        stuffed = node.send({"from": ACCOUNTS[3], "to": ACCOUNTS[4], "data": fat, "gas": hex(25_000_000)})
        eth = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
        usdc = node.transfer_token(node.coins["usdc"], ACCOUNTS[2], DONATION_ADDRESS, 30 * USDT)
    paying = node.send(
        {"from": ACCOUNTS[5], "to": DONATION_ADDRESS, "value": hex(2 * ETHER), "data": fat, "gas": hex(25_000_000)}
    )
    assert (node.receipt(stuffed)["status"], node.receipt(paying)["status"]) == ("0x1", "0x1")
    node.mine(2)

    assert crawl(LATEST).held is None
    final = crawl(FINALIZED)

    assert final.held is None
    assert {d.tx_hash: d.status for d in Donation.objects.all()} == {eth: "confirmed", usdc: "confirmed"}
    inflow = UnexplainedInflow.objects.get()
    assert (inflow.asset, int(inflow.amount_raw), inflow.status) == ("eth", 2 * ETHER, "open")
    assert inflow.block_number == int(node.receipt(paying)["blockNumber"], 16)
    assert paying in inflow.reason
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()


def test_reconcile_through_a_provider_whose_answer_is_past_the_cap_where_ours_was_not_freezes_nothing(
    node, small_cap, settings
):
    """Two providers encode the same logs at different lengths (fields one adds, the other leaves out): a stranger
    can send as many transfers to the address in one block as fit under the cap at the crawlers' provider and not
    at the check provider, which reconcile reads. The crawlers credited the block's donation; reconcile could not
    read the coin's logs there, took the arrival for an unexplained inflow nobody recorded, called it drift and
    froze the sale (found by attack32; this test failed so). What reconcile could not read is not checked, not
    drift."""
    usdc, spammer = node.coins["usdc"], ACCOUNTS[6]
    safe = node.deploy("BatchSafe", ["address"], [spammer])
    zero = node.call_data("transfer(address,uint256)", ["address", "uint256"], [DONATION_ADDRESS, 0])
    batch = node.call_data("multiSend(bytes)", ["bytes"], [multisend([{"to": usdc, "value": 0, "data": zero}] * 1_000)])
    node.mint(usdc, ACCOUNTS[2], 30 * USDT)
    first = node.head() + 1
    with node.one_block():
        node.send({"from": spammer, "to": safe, "data": batch, "gas": hex(25_000_000)})
        donated = node.transfer_token(usdc, ACCOUNTS[2], DONATION_ADDRESS, 30 * USDT)
    node.mine(2)
    assert crawl(LATEST).held is None
    assert crawl(FINALIZED).held is None
    assert Donation.objects.get(tx_hash=donated).status == "confirmed"

    def wordier(logs, params):  # another provider's encoding: each log 500 bytes longer
        return [{**log, "extra": "0" * 500} for log in logs] if isinstance(logs, list) else logs

    with RpcProxy(node.url) as check:
        check.arm("eth_getLogs", "rewrite", count=None, rewrite=wordier)
        settings.CONFIG = configured(settings.CONFIG, rpc_check_url=check.url("/check"))
        report = reconcile(first, node.finalized())

    assert DonationStats.objects.get().status == "open"
    assert report.discrepancies == report.unchecked + report.awaiting_operator
