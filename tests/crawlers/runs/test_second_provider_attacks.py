"""A lying primary against an honest check provider (DWS_RPC_CHECK_URL): lies the first cross-check let
through (found by attacking issue 34's check, one test each).

The primary is the fault proxy in front of the test node (`lying`: crawlers/runs/test_second_provider_lies.py);
the check provider is the node itself.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from crawlers.chain.calls import TRANSFER_TOPIC, address_topic
from crawlers.models import CHAIN, FINALIZED, LATEST, UnexplainedInflow
from crawlers.record.cursors import cursor_get
from crawlers.runs.crawl import crawl
from donations.models import Donation, DonationStats
from donations.refund_models import Refund
from dws_project.config_values import StableCoin
from prices.models import Price
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.configs import configured
from tests.crawlers.conftest import ETH_USD
from tests.crawlers.runs import test_second_provider_lies
from tests.crawlers.runs.test_second_provider import critical
from tests.crawlers.runs.test_second_provider_lies import (
    bend_coin_balance,
    bend_eth_balance,
    block_of,
    drop_from_body,
    drop_logs_of,
    eth_donation,
    held_critically,
    in_block,
    rewrite_trace,
    usdt_donation,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

USDT = 10**6
US = DONATION_ADDRESS.lower()

lying = test_second_provider_lies.lying  # the primary: the proxy, armed by each test; the check provider: the node


def test_a_transfer_hidden_by_a_bent_opening_balance_holds_the_chain(node, lying, caplog):
    """The range's opening balances come from the primary alone: dropping a coin donation's log and adding
    its amount to every balance before its block closes the range's identity (opening = closing), and the
    closing balance the check provider compares is the true one. The donation was skipped, the cursor past it."""
    usdt, tx, block = usdt_donation(node)
    drop_logs_of(lying, tx)
    bend_coin_balance(lying, node, usdt, since=0, by=40 * USDT, until=block)  # every block before it: +40

    with caplog.at_level(logging.INFO):
        result = crawl(FINALIZED)

    held_critically(caplog, result, "balances before blocks", f"usdt: ours says {40 * USDT}, the check provider says 0")
    assert cursor_get(chain=CHAIN, label=FINALIZED).value < block
    assert not Donation.objects.exists()


def test_an_eth_donation_hidden_by_a_bent_opening_balance_holds_the_chain(node, lying, caplog):
    tx, block = eth_donation(node)
    drop_from_body(lying, block, tx)
    bend_eth_balance(lying, node, since=0, by=ETHER, until=block)

    with caplog.at_level(logging.INFO):
        result = crawl(FINALIZED)

    held_critically(caplog, result, "balances before blocks", "eth: ours says")
    assert cursor_get(chain=CHAIN, label=FINALIZED).value < block
    assert not Donation.objects.exists()


def test_an_eth_donation_dropped_from_a_body_and_its_trace_is_no_unexplained_inflow(node, lying, caplog):
    """Balances true, the donation's transaction left out of its block body and the block's trace: the
    proof finds ETH it cannot explain and records it as an unexplained inflow, which the check did not look at."""
    tx, block = eth_donation(node)
    drop_from_body(lying, block, tx)
    lying.arm(
        "debug_traceBlockByNumber",
        "rewrite",
        count=None,
        when=in_block(block),
        rewrite=lambda result, _params: [item for item in result if item.get("txHash") != tx],
    )

    with caplog.at_level(logging.INFO):
        result = crawl(FINALIZED)

    held_critically(caplog, result, tx)
    assert cursor_get(chain=CHAIN, label=FINALIZED).value < block
    assert not UnexplainedInflow.objects.exists()


def test_a_coin_donation_dropped_from_the_logs_and_the_bloom_is_no_unexplained_inflow(node, lying, caplog):
    """The coin's variant: its Transfer left out of the logs and the block's logsBloom cleared, so the proof
    takes the rise for a coin moving our balance itself (an unexplained inflow) instead of retrying the logs."""
    _, tx, block = usdt_donation(node)
    drop_logs_of(lying, tx)
    lying.arm(
        "eth_getBlockByNumber",
        "rewrite",
        count=None,
        when=in_block(block),
        rewrite=lambda result, _params: {**result, "logsBloom": "0x" + "00" * 256},
    )

    with caplog.at_level(logging.INFO):
        result = crawl(FINALIZED)

    held_critically(caplog, result, f"usdt transfer {tx}", "the check provider's block pays it")
    assert cursor_get(chain=CHAIN, label=FINALIZED).value < block
    assert not UnexplainedInflow.objects.exists()


def test_an_unexplained_inflow_both_providers_show_is_recorded_as_before(node, lying, caplog):
    """No false alarm: ETH that reaches the address with no transaction or call (here its balance set
    directly, as a withdrawal or a self-destruct would) is an unexplained inflow to the check provider's
    own reading too."""
    node.mine(1)
    node.set_balance(DONATION_ADDRESS, int(node.rpc("eth_getBalance", DONATION_ADDRESS, "latest"), 16) + 7 * ETHER)
    node.mine(3)

    with caplog.at_level(logging.INFO):
        result = crawl(FINALIZED)

    assert result.held is None
    assert critical(caplog) == []
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()
    assert UnexplainedInflow.objects.get().amount_raw == 7 * ETHER


def test_internal_eth_a_primary_without_traces_cannot_see_is_an_open_inflow_the_check_provider_names(
    node, lying, caplog
):
    """A primary that gives no call traces files ETH paid by an internal call as an unexplained inflow; the
    check provider's own reading shows the donation. The chain does not hold on it: anyone can pay the address
    by an internal call, and holding there would let a stranger stop every donation after it (DESIGN,
    invariant 5). The inflow stays open for the operator and a WARNING names what the check provider's trace
    shows. (A primary whose traces leave a frame out holds:
    test_an_eth_donation_dropped_from_a_body_and_its_trace_is_no_unexplained_inflow.)"""
    _, tx, block = relayed_donation(node)
    lying.refuse_traces()

    with caplog.at_level(logging.INFO):
        result = crawl(FINALIZED)

    assert result.held is None
    assert cursor_get(chain=CHAIN, label=FINALIZED).value >= block
    inflow = UnexplainedInflow.objects.get()
    assert (int(inflow.amount_raw), inflow.block_number, inflow.status) == (3 * ETHER, block, "open")
    assert f"eth transfer {tx} frame 0 is shown only by its call trace" in caplog.text
    assert not Donation.objects.filter(status="confirmed").exists()


def test_a_donation_moved_into_a_later_unexplained_inflow_holds_the_chain(node, lying, caplog):
    """The donation's transaction left out of its block body and the balances bent down until the next
    block, where they rise back unexplained: the check provider's own reading of that block finds nothing
    there, but its balances did not move there (the block's change is compared, as a crediting block's)."""
    tx, block = eth_donation(node)
    node.mine(1)
    drop_from_body(lying, block, tx)
    bend_eth_balance(lying, node, since=block, by=-ETHER, until=block + 1)

    with caplog.at_level(logging.INFO):
        result = crawl(FINALIZED)

    held_critically(caplog, result, f"block {block + 1}: how the block moved", f"eth: ours says +{ETHER}")
    assert cursor_get(chain=CHAIN, label=FINALIZED).value < block
    assert not UnexplainedInflow.objects.exists()


@pytest.mark.parametrize("drops", [True, False], ids=["leaving-it-out", "honest"])
def test_a_primary_without_history_does_not_skip_a_donation_it_leaves_out(node, lying, caplog, drops):
    """A primary that refuses every old balance (as a full node does, or says it does) has its ranges read
    without the balance proof: nothing of ours is then left to hold the check provider's balances against,
    and a coin donation left out of its logs was skipped (the range published unproven, the cursor past it).
    The check provider now reads such a range itself; an honest one (a full node) is confirmed as before."""
    usdt = node.coins["usdt"]
    node.mint(usdt, ACCOUNTS[2], 100 * USDT)
    tx = node.transfer_token(usdt, ACCOUNTS[2], DONATION_ADDRESS, 40 * USDT)
    block = int(node.receipt(tx)["blockNumber"], 16)
    node.mine(140)
    pruned_below = node.head() - 128

    def old(params: list) -> bool:
        at = params[-1] if params else None
        return isinstance(at, (str, dict)) and at not in ("latest", "pending") and block_of(node, at) < pruned_below

    for method in ("eth_getBalance", "eth_getTransactionCount", "eth_call", "eth_getCode"):
        lying.arm(method, "error", count=None, when=old, message="missing trie node 0xabc (path )")
    if drops:
        drop_logs_of(lying, tx)

    with caplog.at_level(logging.INFO):
        first, second = crawl(FINALIZED), crawl(FINALIZED)

    assert "was refused" in (first.held or "")  # a first refusal: asked again on the next run
    if not drops:
        assert second.held is None
        assert critical(caplog) == []
        assert Donation.objects.get(status="confirmed").tx_hash == tx
        return
    held_critically(caplog, second, f"usdt transfer {tx}", "the check provider's block pays it")
    assert cursor_get(chain=CHAIN, label=FINALIZED).value < block
    assert not Donation.objects.exists()


STRAY = ACCOUNTS[4]


def relayed_donation(node) -> tuple[str, str, int]:
    """3 ETH paid to the address by a contract's internal call, finalized: the contract, transaction, block."""
    relay = node.deploy("EthRelay")
    data = node.call_data("relay(address)", ["address"], [DONATION_ADDRESS])
    tx = node.send({"from": ACCOUNTS[4], "to": relay, "value": hex(3 * ETHER), "data": data})
    block = int(node.receipt(tx)["blockNumber"], 16)
    node.mine(2)
    return relay, tx, block


def with_dai(node, settings) -> str:
    """A stray token (DWS_STRAY_TOKENS): owed back to whoever sends it."""
    dai = node.deploy("TestStableCoin", ["string", "string"], ["DAI (test)", "DAI"])
    settings.CONFIG = configured(
        settings.CONFIG, stray_tokens=(StableCoin("dai", dai, 6),), start_block=node.head() + 1
    )
    node.mint(dai, STRAY, 50 * USDT)
    return dai


def invent_transfer_log(proxy, dai: str, sender: str, recipient: str, in_tx: str, receipt: dict) -> None:
    """The primary's eth_getLogs answers about the block of `receipt` gain a 50 DAI Transfer in transaction `in_tx`."""
    log = {
        "address": dai,
        "topics": [TRANSFER_TOPIC, address_topic(sender), address_topic(recipient)],
        "data": "0x" + format(50 * USDT, "064x"),
        "blockNumber": receipt["blockNumber"],
        "blockHash": receipt["blockHash"],
        "transactionHash": in_tx,
        "transactionIndex": receipt["transactionIndex"],
        "logIndex": "0x0",
        "removed": False,
    }

    def spans(params: list) -> bool:
        query = params[0] if params and isinstance(params[0], dict) else {}
        block = int(receipt["blockNumber"], 16)
        return int(query.get("fromBlock", "0x0"), 16) <= block <= int(query.get("toBlock", "0x0"), 16)

    proxy.arm("eth_getLogs", "rewrite", count=None, when=spans, rewrite=lambda logs, _params: [*logs, log])


def test_a_refund_payout_only_the_primary_shows_leaves_the_refund_owed(node, lying, settings, caplog):
    """A stray coin sent to us is owed back; a primary that adds a Transfer of it from us to its sender to
    its logs of a later block (a stranger's transaction there) had the refund marked paid, with the coin
    still at the address: a stray token is outside the balance proof, so no balance shows it either."""
    dai = with_dai(node, settings)
    node.transfer_token(dai, STRAY, DONATION_ADDRESS, 50 * USDT)
    node.mine(2)
    assert crawl(FINALIZED).held is None
    assert Refund.objects.get().status == "owed"
    stranger = node.send_eth(ACCOUNTS[1], ACCOUNTS[2], ETHER)
    node.mine(2)
    invent_transfer_log(lying, dai, DONATION_ADDRESS, STRAY, stranger, node.receipt(stranger))

    with caplog.at_level(logging.INFO):
        result = crawl(FINALIZED)

    held_critically(caplog, result, f"dai payout {stranger}", "no such Transfer in its receipt")
    assert Refund.objects.get().status == "owed"


def test_a_stray_arrival_only_the_primary_shows_owes_nothing(node, lying, settings, caplog):
    """A primary that adds a Transfer of a stray token to us to its logs had a refund of a coin that never
    arrived owed to the sender it names (the operator's next Safe batch would pay it)."""
    dai = with_dai(node, settings)
    stranger = node.send_eth(ACCOUNTS[1], ACCOUNTS[2], ETHER)
    node.mine(2)
    invent_transfer_log(lying, dai, ACCOUNTS[6], DONATION_ADDRESS, stranger, node.receipt(stranger))

    with caplog.at_level(logging.INFO):
        result = crawl(FINALIZED)

    held_critically(caplog, result, f"dai stray transfer {stranger} log 0", "no such log")
    assert not Refund.objects.exists()


def test_real_strays_and_payouts_both_providers_show_are_recorded(node, lying, settings, caplog):
    """No false alarm: a stray coin in and paid back, and ETH the address sends, both providers show."""
    dai = with_dai(node, settings)
    node.transfer_token(dai, STRAY, DONATION_ADDRESS, 50 * USDT)
    node.mine(2)
    owed = crawl(FINALIZED)
    node.transfer_token(dai, DONATION_ADDRESS, STRAY, 50 * USDT)
    node.send_eth(DONATION_ADDRESS, ACCOUNTS[3], ETHER)
    node.mine(2)

    with caplog.at_level(logging.INFO):
        result = crawl(FINALIZED)

    assert (owed.held, result.held) == (None, None)
    assert critical(caplog) == []
    assert Refund.objects.get().status == "paid"


def test_internal_eth_a_primary_passes_off_as_our_own_money_holds_the_chain(node, lying, caplog):
    """ETH reaching the address inside a call the address made itself is its own money, not a donation: a
    primary whose trace nests a donor's frame under an invented call from the address had the donation
    recorded as an own movement (the balances close on it), nothing credited."""
    relay, tx, block = relayed_donation(node)

    def ours(call: dict) -> dict:
        return {
            **call,
            "calls": [{"type": "CALL", "from": US, "to": relay.lower(), "value": "0x0", "calls": call["calls"]}],
        }

    rewrite_trace(lying, block, tx, ours)

    with caplog.at_level(logging.INFO):
        result = crawl(FINALIZED)

    held_critically(caplog, result, f"eth transfer {tx} frame 0", "the check provider's block pays it")
    assert cursor_get(chain=CHAIN, label=FINALIZED).value < block


def test_our_own_money_both_providers_show_is_a_movement_as_before(node, lying, caplog):
    """No false alarm: ETH the address sends through a relay back to itself is its own money to both."""
    relay = node.deploy("EthRelay")
    data = node.call_data("relay(address)", ["address"], [DONATION_ADDRESS])
    node.send({"from": DONATION_ADDRESS, "to": relay, "value": hex(ETHER), "data": data})
    node.mine(2)

    with caplog.at_level(logging.INFO):
        result = crawl(FINALIZED)

    assert result.held is None
    assert critical(caplog) == []
    assert any("the donation address's own money" in r.getMessage() for r in caplog.records)
    assert not Donation.objects.exists()


@pytest.mark.parametrize("renames", [True, False], ids=["renaming-the-donor", "honest"])
def test_internal_eth_credited_to_another_donor_holds_the_chain(node, lying, caplog, renames):
    """A primary whose trace names another sender for a real internal frame (the same amount, so every
    balance agrees) had the donation's tokens credited to the address it named; an honest one's is confirmed."""
    relay, tx, block = relayed_donation(node)
    impostor = ACCOUNTS[6].lower()

    def renamed(call: dict) -> dict:
        return {**call, "calls": [{**frame, "from": impostor} for frame in call["calls"]]}

    if renames:
        rewrite_trace(lying, block, tx, renamed)

    with caplog.at_level(logging.INFO):
        result = crawl(FINALIZED)

    if not renames:
        assert result.held is None
        assert Donation.objects.get(status="confirmed").address == relay.lower()
        return
    held_critically(caplog, result, f"eth transfer {tx} frame 0", impostor, "no such frame in its trace")
    assert not Donation.objects.filter(status="confirmed").exists()


def test_a_row_the_latest_crawler_recorded_from_a_lie_is_confirmed_as_the_finalized_block_shows(node, lying, caplog):
    """The latest crawler reads the primary alone (nothing is confirmed from it); the finalized crawler then
    found the row at the transfer's identity in the same block and confirmed the row as it stood: a primary
    that told the latest crawler 50 ETH (balances bent to match) for a real 1 ETH donation, and the truth to
    the finalized crawler, had 50 ETH confirmed (100,000,000 tokens)."""
    node.mine(1)
    tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    block = int(node.receipt(tx)["blockNumber"], 16)

    def inflated(result: Any, _params: list) -> Any:
        bent = [
            {**t, "value": hex(50 * ETHER)} if isinstance(t, dict) and t["hash"] == tx else t
            for t in result["transactions"]
        ]
        return {**result, "transactions": bent}

    lying.arm("eth_getBlockByNumber", "rewrite", count=None, when=in_block(block), rewrite=inflated)
    lying.arm(
        "eth_getTransactionByHash",
        "rewrite",
        count=None,
        rewrite=lambda t, _p: {**t, "value": hex(50 * ETHER)} if t and t.get("hash") == tx else t,
    )
    bend_eth_balance(lying, node, since=block, by=49 * ETHER)
    assert crawl(LATEST).inserted == 1
    assert Donation.objects.get().amount == 50
    lying.disarm()
    node.mine(2)

    with caplog.at_level(logging.INFO):
        result = crawl(FINALIZED)

    assert result.held is None
    donation = Donation.objects.get()
    assert (donation.status, donation.amount) == ("confirmed", 1)
    assert DonationStats.objects.get().tokens == donation.tokens == 2_000_000  # 1 ETH at 2,000 USD, 0.001 a token


def test_a_crediting_block_moved_in_time_to_a_dearer_minute_holds_the_chain(node, lying, caplog):
    """An ETH donation is priced at its block's minute; the check provider compared the block's hash, not
    its time: a primary that dated the block 20 minutes later, where ETH was dearer, had it credited at that
    minute's price (twice the tokens here)."""
    node.mine(1)
    tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    block = int(node.receipt(tx)["blockNumber"], 16)
    node.mine(2)
    real = int(node.block(block)["timestamp"], 16)
    later = real + 20 * 60
    minute = datetime.fromtimestamp(later, UTC).replace(second=0)
    Price.objects.filter(
        created_at__gte=minute - timedelta(minutes=2), created_at__lte=minute + timedelta(minutes=2)
    ).update(price=2 * ETH_USD)
    lying.arm(
        "eth_getBlockByNumber",
        "rewrite",
        count=None,
        when=in_block(block),
        rewrite=lambda result, _params: {**result, "timestamp": hex(later)},
    )

    with caplog.at_level(logging.INFO):
        result = crawl(FINALIZED)

    held_critically(caplog, result, f"block {block}: block time")
    assert not Donation.objects.filter(status="confirmed").exists()
