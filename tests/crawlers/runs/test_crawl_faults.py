"""The crawlers facing a bad provider: they hold, say why, and never fail or skip a donation."""

from __future__ import annotations

import logging

import pytest

from crawlers.chain.calls import TRANSFER_TOPIC
from crawlers.models import CHAIN, FINALIZED, LATEST, UnexplainedInflow
from crawlers.record.cursors import cursor_get
from crawlers.runs.crawl import crawl, crawl_single_block
from crawlers.runs.follow import LEASE_OVER, follow_head
from crawlers.scan.results import STUCK_POINTER
from donations.models import Donation
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.configs import configured
from tests.invariants import assert_ledger_invariants
from tests.manual import has_heading, pointed_section
from tests.rpc_proxy import RpcProxy

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

PATH_KEY = "pathKEY-5544332211"
QUERY_KEY = "queryKEY-aabbccddee"


@pytest.fixture
def proxy(node, settings):
    with RpcProxy(node.url) as running:
        url = running.url(f"/rpc/{PATH_KEY}?key={QUERY_KEY}")
        settings.CONFIG = configured(settings.CONFIG, rpc_url=url)
        yield running


def test_a_receipt_the_provider_never_returns_holds_the_block_with_the_grepable_stuck_line(node, proxy, caplog):
    tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    block = int(node.receipt(tx)["blockNumber"], 16)
    node.mine(1)
    proxy.arm("eth_getTransactionReceipt", "null", count=None)

    with caplog.at_level(logging.INFO):
        result = crawl(LATEST)

    line = f"block: {block} -- no tx receipt for tx '{tx}' (0 usable receipt(s) for 1 tx(s)); {STUCK_POINTER}"
    assert result.held == line
    assert line in caplog.text
    assert cursor_get(chain=CHAIN, label=LATEST).value == block - 1
    assert not Donation.objects.exists()
    assert PATH_KEY not in caplog.text
    assert QUERY_KEY not in caplog.text

    proxy.disarm()
    assert crawl(LATEST).held is None
    assert Donation.objects.get().tx_hash == tx
    assert_ledger_invariants()


def test_the_stuck_line_points_at_the_runbook():
    assert pointed_section(STUCK_POINTER) == ("docs/operating.md", "a crawler is stuck on a block")
    assert has_heading(*pointed_section(STUCK_POINTER))


@pytest.mark.parametrize(
    "fault",
    [
        {"kind": "null"},
        {"kind": "error", "message": "internal error"},
        {"kind": "status", "status": 429, "retry_after": 1},
        {"kind": "hang", "seconds": 20},
        {"kind": "drop"},
    ],
    ids=["null", "error", "429", "timeout", "drop"],
)
def test_a_block_the_provider_will_not_serve_holds_both_crawlers_and_fails_nothing(node, proxy, fault, settings):
    confirmed = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    node.mine(2)
    crawl(LATEST)
    crawl(FINALIZED)
    assert Donation.objects.get(tx_hash=confirmed).status == "confirmed"
    pending = node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)
    node.mine(2)
    cursors = {label: cursor_get(chain=CHAIN, label=label).value for label in (LATEST, FINALIZED)}
    if fault["kind"] == "hang":
        fault = {**fault, "seconds": 2}
        settings.CRAWLER_RPC_READ_TIMEOUT = 0.5
    proxy.arm("eth_getBlockByNumber", **fault, count=None, when=lambda params: params[1] is True)

    results = [crawl(LATEST), crawl(FINALIZED)]

    assert all(r.held for r in results)
    assert {label: cursor_get(chain=CHAIN, label=label).value for label in (LATEST, FINALIZED)} == cursors
    statuses = dict(Donation.objects.values_list("tx_hash", "status"))
    assert statuses[confirmed] == "confirmed"
    assert statuses.get(pending, "unconfirmed") == "unconfirmed"
    assert_ledger_invariants()


def test_a_finalized_tag_behind_the_cursor_moves_nothing_backwards(node, proxy, caplog):
    node.mine(6)
    crawl(FINALIZED)
    cursor = cursor_get(chain=CHAIN, label=FINALIZED).value
    stale = node.block(cursor - 3)
    proxy.arm(
        "eth_getBlockByNumber", "rewrite", count=None, when=lambda p: p[0] == "finalized", rewrite=lambda *_: stale
    )

    with caplog.at_level(logging.WARNING):
        result = crawl(FINALIZED)

    assert cursor_get(chain=CHAIN, label=FINALIZED).value == cursor
    assert "behind our cursor" in result.held
    assert f"finalized block {cursor - 3} is behind our cursor {cursor}" in caplog.text
    assert_ledger_invariants()


def test_a_log_query_the_provider_refuses_holds_the_range(node, proxy):
    node.mint(node.coins["usdt"], ACCOUNTS[1], 10**8)
    node.transfer_token(node.coins["usdt"], ACCOUNTS[1], DONATION_ADDRESS, 10**8)
    node.mine(1)
    proxy.arm("eth_getLogs", "error", count=None, message="upstream unavailable")

    result = crawl(LATEST)

    assert "no Transfer logs" in result.held
    assert cursor_get(chain=CHAIN, label=LATEST).value == node.head() - 3  # the start: nothing skipped
    proxy.disarm()
    crawl(LATEST)
    assert Donation.objects.get().asset == "usdt"
    assert_ledger_invariants()


def test_a_receipt_without_a_status_is_no_evidence_of_a_revert(node, proxy):
    tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    block = int(node.receipt(tx)["blockNumber"], 16)
    node.mine(2)
    crawl(FINALIZED)
    assert Donation.objects.get().status == "confirmed"
    proxy.arm("eth_getTransactionReceipt", "rewrite", count=None, rewrite=lambda r, _: {**r, "status": None})

    result = crawl_single_block(FINALIZED, block)

    assert f"block: {block} -- no tx receipt for tx '{tx}'" in result.held
    assert Donation.objects.get().status == "confirmed"
    assert_ledger_invariants()


def test_a_block_answered_for_another_number_is_not_taken_for_the_one_asked(node, proxy):
    tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    block = int(node.receipt(tx)["blockNumber"], 16)
    node.mine(1)
    other = node.block(block + 1, True)
    proxy.arm(
        "eth_getBlockByNumber", "rewrite", count=None, when=lambda p: p[0] == hex(block), rewrite=lambda *_: other
    )

    result = crawl(LATEST)

    assert result.held.startswith(f"block: {block} -- the provider's block is malformed")
    assert cursor_get(chain=CHAIN, label=LATEST).value == block - 1
    assert not Donation.objects.exists()


def _word(value: int | str) -> str:
    body = value[2:] if isinstance(value, str) else f"{value:x}"
    return "0x" + body.rjust(64, "0")


def test_a_hold_on_a_later_blocks_coin_log_keeps_the_eth_donation_before_it(node, proxy):
    """A coin's Transfer log naming another block hash (a re-org, a provider's stale answer) holds the range
    at its block and the blocks before it are recorded: their receipts must be read too. They were not: an ETH
    donation there was recorded as a 1 ETH unexplained inflow, its block passed, the row left unconfirmed."""
    tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    block = int(node.receipt(tx)["blockNumber"], 16)
    node.mine(3)
    assert crawl(LATEST).held is None
    stale = {
        "address": node.coins["usdt"],
        "topics": [TRANSFER_TOPIC, _word(ACCOUNTS[2]), _word(DONATION_ADDRESS)],
        "data": _word(5),
        "blockNumber": hex(block + 1),
        "blockHash": "0x" + "cd" * 32,
        "transactionHash": "0x" + "ab" * 32,
        "transactionIndex": "0x0",
        "logIndex": "0x0",
        "removed": False,
    }
    to_us = lambda params: len(params[0]["topics"]) == 3  # noqa: E731 (the filter to the address)
    proxy.arm("eth_getLogs", "rewrite", count=None, when=to_us, rewrite=lambda logs, _: [*logs, stale])

    held = crawl(FINALIZED).held
    assert held is not None
    assert held.startswith(f"block: {block + 1} -- Transfer log of tx '0x{'ab' * 32}' names another block hash")
    assert list(Donation.objects.values_list("tx_hash", "status")) == [(tx, "confirmed")]
    assert not UnexplainedInflow.objects.exists()

    proxy.disarm()
    assert crawl(FINALIZED).held is None
    assert_ledger_invariants()


@pytest.mark.parametrize("head", ["0x", "twelve"])
def test_a_head_number_that_is_not_hex_is_no_evidence_for_the_crawler_and_the_follower(node, proxy, head):
    """A provider's head that is a string but no number holds the run like any malformed answer: the crawler
    and the head follower raised ValueError on it (the follower's task failed with a traceback)."""
    crawl(LATEST)  # the cursor, before the provider goes wrong
    tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    proxy.arm("eth_blockNumber", "rewrite", count=None, rewrite=lambda _result, _params: head)

    run = crawl(LATEST)
    assert run.held is not None
    assert "eth_blockNumber" in run.held
    followed = follow_head(seconds=1, on_finalized=lambda _: None)
    assert followed.ended == LEASE_OVER

    proxy.disarm()
    crawl(LATEST)
    assert Donation.objects.filter(tx_hash=tx).count() == 1  # nothing lost meanwhile
