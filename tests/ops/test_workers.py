"""Real workers: the price cycle on its own queue runs while a long crawl holds the crawler queue, and a
SIGTERM during a long crawl stops it between blocks and lets the worker exit."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.utils import timezone

from crawlers.models import LATEST, LastBlock
from crawlers.runs.crawl import crawl
from crawlers.runs.operator import job_name
from crawlers.tasks import crawl_latest
from donations.models import Donation, DonationStats
from dws_project.locks import is_running
from dws_project.redis_client import get_redis
from prices.models import ETH, Price
from prices.tasks import fetch_prices
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.ops.processes import ONE_POST_AT_A_TIME, Process, beat, process_environment, worker
from tests.rpc_proxy import RpcProxy

pytestmark = [pytest.mark.django_db(transaction=True)]

CATCH_UP = 1000  # blocks behind: one crawl run's whole budget
SLOW = 0.4  # seconds the provider takes for each batch of blocks (50 blocks): a run takes ~10 s or more


@pytest.fixture
def slow_provider(node) -> Iterator[RpcProxy]:
    DonationStats.objects.get_or_create()  # an earlier transactional test's flush removes the migration's row
    get_redis().flushdb()
    with RpcProxy(node.url) as proxy:
        proxy.arm("eth_getBlockByNumber", "hang", count=None, seconds=SLOW)
        yield proxy
    get_redis().flushdb()


def cursor() -> int | None:
    return LastBlock.objects.filter(label=LATEST).values_list("value", flat=True).first()


def wait_until(condition, timeout: float = 120.0, describe: str = "", log=None) -> None:
    """Waits for `condition`; on a time-out the message carries the tail of the worker's `log` (a worker
    starting on a loaded machine can take tens of seconds, and the log says where it was)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            tail = f"; the worker's log ends:\n{log()[-3000:]}" if log else ""
            pytest.fail(f"timed out waiting for {describe}{tail}")
        time.sleep(0.1)


def test_the_minute_price_runs_while_a_long_crawl_holds_the_crawler_queue(node, slow_provider, tmp_path):
    start = node.head() + 1
    node.mine(CATCH_UP)
    env = process_environment(
        ETH_RPC_URL=slow_provider.url("/rpc"),
        **ONE_POST_AT_A_TIME,
        DWS_START_BLOCK=str(start),
        DWS_CHAIN_ID="31337",
        DWS_DEV_ETH_PRICE="2000",
        DWS_HEARTBEAT_DIR=str(tmp_path / "heartbeat"),
    )
    crawlers = worker("crawlers", "crawlers,celery", env, tmp_path)
    prices = worker("prices", "prices", env, tmp_path)
    try:
        crawl_latest.delay()
        crawl_latest.delay()  # the next beat tick: queued behind the running crawl
        wait_until(lambda: (cursor() or 0) > start + 50, describe="the crawl to be under way")

        fetch_prices.delay()
        wait_until(lambda: Price.objects.filter(asset=ETH).exists(), 30, "the minute's price")

        assert is_running(job_name(LATEST, "eth")), "the crawl should still hold the crawler queue"
        assert cursor() < node.head()
        price = Price.objects.get(asset=ETH)
        assert timezone.now() - price.created_at < timedelta(minutes=2)  # this minute's, not a stale one
    finally:
        crawlers.stop()
        prices.stop()


def test_sigterm_stops_a_long_crawl_between_blocks_and_the_worker_exits(
    node, slow_provider, tmp_path, eth_prices, crawl_config
):
    """About 35 s: a real worker must be mid-way through a catch-up long enough to be stopped between blocks
    (the slow provider paces it), then exit within its grace period."""
    start = node.head() + 1
    early = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    node.mine(CATCH_UP)
    late = node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)
    env = process_environment(
        ETH_RPC_URL=slow_provider.url("/rpc"),
        **ONE_POST_AT_A_TIME,
        DWS_START_BLOCK=str(start),
        DWS_HEARTBEAT_DIR=str(tmp_path / "heartbeat"),
    )
    running = worker("stopping", "crawlers,celery", env, tmp_path)
    try:
        # Queued again every few seconds, as beat does: a node that no longer holds the state of the first
        # blocks (anvil keeps a bounded history; a long suite's chain has outgrown it) makes the first run hold
        # once before the next reads them as a range without history (crawlers/scan/history.py).
        kicked = [0.0]

        def under_way() -> bool:
            if time.monotonic() - kicked[0] > 5:
                kicked[0] = time.monotonic()
                crawl_latest.delay()
            return (cursor() or 0) > start + 100

        wait_until(under_way, describe="the crawl to be under way", log=running.text)

        running.process.send_signal(signal.SIGTERM)  # what `docker stop` does: the main process only
        try:
            exit_code = running.process.wait(timeout=60)  # compose's grace period is 120 s
        except subprocess.TimeoutExpired:
            pytest.fail(f"the worker did not exit after SIGTERM:\n{running.text()[-3000:]}")
    finally:
        running.stop()

    stopped_at = cursor()
    log = running.text()
    assert exit_code == 0, log[-3000:]
    assert f"shutdown requested; stopped between blocks at {stopped_at}" in log
    assert "Traceback" not in log
    assert stopped_at < node.head()
    # every block up to the cursor is whole, and nothing past it was written
    assert Donation.objects.filter(tx_hash=early).exists()
    assert not Donation.objects.filter(block_number__gt=stopped_at).exists()

    slow_provider.disarm()
    for _ in range(CATCH_UP // 10):  # the next runs continue from the cursor; without the node's old state
        crawl(LATEST)  # a range takes two runs or more (a refused trace is believed when it repeats)
        if cursor() == node.head():
            break
    assert cursor() == node.head()
    assert Donation.objects.filter(tx_hash=late).count() == 1


def test_beat_starts_the_head_follower_it_confirms_on_the_finalized_tag_and_sigterm_ends_it(
    node, tmp_path, eth_prices, crawl_config
):
    """Issue 36, as an operator runs dws: beat (re)starts the head follower on the crawlers' worker, which
    records a donation as its block appears and queues the finalized crawler when the tag moves (confirmed
    long before the finalized beat's first minute); SIGTERM ends the follower between blocks and the worker
    exits. About 25 s: a worker and beat start on a loaded machine, beat's first tick comes after 5 s."""
    DonationStats.objects.get_or_create()
    get_redis().flushdb()
    env = process_environment(ETH_RPC_URL=node.url, DWS_START_BLOCK=str(node.head() + 1))
    running = worker("following", "crawlers,celery", env, tmp_path, concurrency=3)
    scheduler = beat(env, tmp_path)
    try:
        wait_until(
            lambda: "follow latest on eth: block time" in running.text(), describe="the follower", log=running.text
        )
        tx = node.send_eth(ACCOUNTS[3], DONATION_ADDRESS, ETHER)
        wait_until(lambda: Donation.objects.filter(tx_hash=tx).exists(), describe="the row", log=running.text)
        node.mine(2)  # the tag covers the donation's block
        wait_until(
            lambda: Donation.objects.filter(tx_hash=tx, status="confirmed").exists(),
            timeout=30,
            describe="the confirmation",
            log=running.text,
        )
        running.process.send_signal(signal.SIGTERM)
        exit_code = running.process.wait(timeout=60)
    finally:
        scheduler.stop()
        running.stop()
    log = running.text()
    assert exit_code == 0, log[-3000:]
    assert "follow latest on eth: shutdown" in log
    assert "Traceback" not in log


def test_the_foreground_follower_records_the_head_and_ends_on_sigterm(node, tmp_path, eth_prices, crawl_config):
    """`manage.py crawl latest --follow` is the same loop in the foreground: it records a donation as its block
    appears, and SIGTERM ends it between blocks with a clean exit."""
    DonationStats.objects.get_or_create()
    get_redis().flushdb()
    env = process_environment(ETH_RPC_URL=node.url, DWS_START_BLOCK=str(node.head() + 1))
    command = [sys.executable, "manage.py", "crawl", "latest", "--follow"]
    follower = Process("follow", command, env, tmp_path / "follow.log")
    try:
        follower.wait_log("follow latest on eth: block time")
        tx = node.send_eth(ACCOUNTS[4], DONATION_ADDRESS, ETHER)
        follower.wait_for(lambda: Donation.objects.filter(tx_hash=tx).exists(), 60, "the donation's row")
        follower.process.send_signal(signal.SIGTERM)
        exit_code = follower.process.wait(timeout=30)
    finally:
        follower.stop()
    log = follower.text()
    assert exit_code == 0, log[-3000:]
    assert "follow latest on eth: shutdown" in log
    assert "Traceback" not in log
