"""The head follower (issue 36): the latest crawler follows the head as it moves, by polling or by a newHeads
subscription over WebSocket, and queues the finalized crawler whenever the finalized tag moves."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from django.db import connections

from crawlers.chain.heads import MIN_POLL_SECONDS
from crawlers.models import FINALIZED, LATEST
from crawlers.record.cursors import cursor_get
from crawlers.runs.crawl import crawl
from crawlers.runs.follow import BUSY, LEASE_OVER, FollowResult, follow_head
from crawlers.runs.results import CrawlResult
from donations.models import Donation, DonationStats, DonationStatus
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.configs import configured
from tests.rpc_proxy import RpcProxy
from tests.ws_heads import HeadsPusher

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("crawl_config", "eth_prices")]


@pytest.fixture(autouse=True)
def _campaign_row(db) -> None:
    DonationStats.objects.get_or_create()  # a transactional test's flush takes the migrated row with it


LEASE = 6.0  # seconds: the follower learns the block time, crawls the first head, then the donation's block


def following(outcome: list[FollowResult], seconds: float, on_finalized: Callable[[str], None]) -> threading.Thread:
    """A follower for one lease of `seconds`, in a thread that closes its database connection at the end."""

    def follow() -> None:
        try:
            outcome.append(follow_head(seconds=seconds, on_finalized=on_finalized))
        finally:
            connections.close_all()

    thread = threading.Thread(target=follow)
    thread.start()
    return thread


def wait_until(condition, timeout: float, describe: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {describe}"
        time.sleep(0.05)


@pytest.mark.parametrize("heads", ["poll", "websocket"])
def test_the_follower_records_a_donation_of_a_new_block_and_queues_the_finalized_crawler_as_the_tag_moves(
    node, settings, heads
):
    if heads == "websocket":  # anvil serves WebSocket on its HTTP port
        settings.CONFIG = configured(settings.CONFIG, ws_url=node.url.replace("http://", "ws://"))
    kicked: list[str] = []
    outcome: list[FollowResult] = []
    follower = following(outcome, LEASE, kicked.append)
    try:
        wait_until(lambda: cursor_get(chain="eth", label=LATEST) is not None, LEASE, "the follower's first run")
        kicks_before = len(kicked)
        tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)  # mines a block: the head and the tag move

        wait_until(lambda: Donation.objects.filter(tx_hash=tx).exists(), LEASE, "the donation's row")
        wait_until(lambda: len(kicked) > kicks_before, LEASE, "the finalized crawler queued as the tag moved")
    finally:
        follower.join(timeout=LEASE + 30)

    (result,) = outcome
    assert (result.ended, result.source) == (LEASE_OVER, heads)
    row = Donation.objects.get(tx_hash=tx)
    assert row.status == DonationStatus.UNCONFIRMED
    assert set(kicked) == {"eth"}


def test_a_second_follower_of_the_chain_ends_at_once_while_one_holds_the_lease(node):
    outcome: list[FollowResult] = []
    follower = following(outcome, 3, lambda _: None)
    try:
        wait_until(lambda: cursor_get(chain="eth", label=LATEST) is not None, 3, "the first follower's run")
        started = time.monotonic()
        second = follow_head(seconds=3, on_finalized=lambda _: None)
        assert second.ended == BUSY
        assert time.monotonic() - started < 2
    finally:
        follower.join(timeout=30)
    assert outcome[0].ended == LEASE_OVER


def chain_tips_asked(proxy: RpcProxy) -> int:
    """The follower's asks for the head and the finalized block (one batched request each)."""
    return sum(1 for seen in proxy.seen if seen.methods == ["eth_blockNumber", "eth_getBlockByNumber"])


def test_a_provider_flooding_new_heads_gets_no_more_than_a_few_head_requests_a_second(proxy, node, settings):
    """A provider that repeats its newHeads (or pushes heads faster than a block) must not make the follower ask
    the HTTP provider once per message: the polls' bound holds, at most one ask per MIN_POLL_SECONDS."""
    with HeadsPusher(node, "flood", per_second=200) as pusher:
        settings.CONFIG = configured(settings.CONFIG, ws_url=pusher.url)
        result = follow_head(seconds=3, on_finalized=lambda _: None)
    assert (result.ended, result.source) == (LEASE_OVER, "websocket")
    assert pusher.pushed > 100  # the flood reached the follower
    assert chain_tips_asked(proxy) <= 3 / MIN_POLL_SECONDS + 2


def test_a_donation_is_recorded_while_the_new_heads_subscription_has_gone_silent(proxy, node, settings):
    """A subscription the provider dropped while the socket stays open pushes nothing; the follower must not
    wait a minute to notice while the chain moves on: a few block times of silence make it look at the head
    over HTTP, and a head that moved without a push sends it back to polling."""
    with HeadsPusher(node, "silent") as pusher:
        settings.CONFIG = configured(settings.CONFIG, ws_url=pusher.url)
        outcome: list[FollowResult] = []
        follower = following(outcome, LEASE, lambda _: None)
        try:
            wait_until(lambda: cursor_get(chain="eth", label=LATEST) is not None, LEASE, "the follower's first run")
            tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
            wait_until(lambda: Donation.objects.filter(tx_hash=tx).exists(), LEASE, "the donation's row")
        finally:
            follower.join(timeout=LEASE + 30)
    assert outcome[0].ended == LEASE_OVER


def test_a_finalized_crawler_that_holds_is_not_run_again_every_few_seconds_while_the_tag_stands(proxy, node):
    """The follower queues the finalized crawler when the tag moves, and again while that crawler is behind it.
    A finalized crawler that holds (a provider that will not answer for a block) is behind for as long as the
    provider fails: queued every 5 s, it asked the failing provider twelve times as often as its own beat."""
    crawl(LATEST)
    crawl(FINALIZED)
    tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    node.mine(3)  # the tag covers the donation's block
    proxy.arm("eth_getTransactionReceipt", "null", count=None)  # the finalized crawler holds at that block
    runs: list[CrawlResult] = []

    def finalized_run(chain: str) -> None:  # what the worker does with the queued task, here in the follower
        runs.append(crawl(FINALIZED, chain=chain))

    result = follow_head(seconds=8, on_finalized=finalized_run)

    assert result.ended == LEASE_OVER
    assert runs
    assert all(run.held for run in runs)
    assert len(runs) == 1  # the tag did not move, the crawler made no progress: its beat tries it again
    assert not Donation.objects.filter(tx_hash=tx, status=DonationStatus.CONFIRMED).exists()


def test_a_pushed_head_the_http_provider_has_not_reached_yet_is_asked_again(proxy, node, settings):
    """newHeads arrives as the node imports the block; the HTTP provider behind a load balancer may answer from
    a node a moment behind. The block is then crawled as soon as the HTTP provider has it (asked again at the
    polling pace), not one block later when the next head is pushed (here: never, nothing more is mined)."""
    settings.CONFIG = configured(settings.CONFIG, ws_url=node.url.replace("http://", "ws://"))
    outcome: list[FollowResult] = []
    follower = following(outcome, 5, lambda _: None)
    try:
        wait_until(lambda: cursor_get(chain="eth", label=LATEST) is not None, LEASE, "the follower's first run")
        # the next answers for the head (the follower's, then its run's) are one block behind the node's
        proxy.arm("eth_blockNumber", "rewrite", count=2, rewrite=lambda head, _params: hex(int(head, 16) - 1))
        tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)  # mines a block: pushed at once
        wait_until(lambda: Donation.objects.filter(tx_hash=tx).exists(), LEASE, "the donation's row")
    finally:
        follower.join(timeout=LEASE + 30)
    assert (outcome[0].ended, outcome[0].source) == (LEASE_OVER, "websocket")


def test_pushed_heads_back_off_their_http_asks_while_the_http_provider_fails(proxy, node, settings):
    """With the HTTP provider answering errors, a chain of fast blocks pushed over newHeads asks it no more
    often than polling would: doubling from the polling pace, as the polls back off (it asked every 0.4 s)."""
    proxy.arm("eth_blockNumber", "error", count=None)
    with HeadsPusher(node, "climb", per_second=20) as pusher:
        settings.CONFIG = configured(settings.CONFIG, ws_url=pusher.url)
        result = follow_head(seconds=4, on_finalized=lambda _: None)
    assert result.ended == LEASE_OVER
    assert pusher.pushed > 30
    # the learned block time is anvil's 0.4 s floor: asks at 0, 0.8 and 2.4 s (before: every 0.4 s)
    assert chain_tips_asked(proxy) <= 4
