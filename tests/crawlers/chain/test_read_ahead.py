"""Pipelining: the next range is fetched while this one is written, and a read-ahead decides nothing."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, transaction

from crawlers.models import CHAIN, FINALIZED
from crawlers.record.cursors import cursor_get
from crawlers.runs.crawl import crawl
from crawlers.scan.ranges import RANGE_BLOCKS
from donations.models import Donation, DonationStats
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]


def _first_arrival(proxy, block: int) -> float:
    """When the proxy first saw the full block `block` asked for."""
    wanted = ["eth_getBlockByNumber", [hex(block), True]]
    return min(s.at for s in proxy.seen if wanted in s.calls)


class _StatsHolder(threading.Thread):
    """Another session (its own connection) holding the campaign lock a while, as an operator's pause or
    another confirmation does."""

    def __init__(self, seconds: float) -> None:
        super().__init__(daemon=True)
        self.seconds = seconds
        self.holding = threading.Event()
        self.released_at = 0.0

    def run(self) -> None:
        try:
            with transaction.atomic():
                DonationStats.objects.select_for_update().get()
                self.holding.set()
                time.sleep(self.seconds)
                self.released_at = time.monotonic()
        finally:
            connection.close()


def test_the_next_range_is_fetched_while_this_one_waits_to_be_written(node, proxy, settings):
    settings.CRAWLER_SPARSE = False  # ranges of RANGE_BLOCKS, so the second range's first block is known
    start = settings.CONFIG.first_chain.start_block
    node.mine(4)
    node.send_eth(ACCOUNTS[3], DONATION_ADDRESS, ETHER // 4)  # in the first range
    node.mine(2 * RANGE_BLOCKS + 10)
    holder = _StatsHolder(seconds=1.5)
    holder.start()
    assert holder.holding.wait(10)

    result = crawl(FINALIZED)
    holder.join(10)

    assert result.held is None, result.held
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()
    donation = Donation.objects.get()
    assert donation.status == "confirmed"
    # Writing the first range waited for the lock; the second range's blocks were asked meanwhile.
    assert _first_arrival(proxy, start + RANGE_BLOCKS) < holder.released_at


def test_a_read_ahead_that_meets_a_429_decides_nothing_and_the_back_off_rules(node, proxy, settings):
    settings.CRAWLER_SPARSE = False
    start = settings.CONFIG.first_chain.start_block
    node.mine(4)
    node.send_eth(ACCOUNTS[3], DONATION_ADDRESS, ETHER // 4)  # first range
    node.mine(RANGE_BLOCKS + 10)
    node.send_eth(ACCOUNTS[4], DONATION_ADDRESS, ETHER // 8)  # second range
    node.mine(RANGE_BLOCKS)
    second = hex(start + RANGE_BLOCKS)
    # The provider refuses the second range's blocks (read ahead while the first is written) with a 429.
    fault = proxy.arm("eth_getBlockByNumber", "status", status=429, retry_after=2, when=lambda p: p[0] == second)

    held = crawl(FINALIZED)

    assert fault.used == 1
    assert "backing off" in (held.held or "")  # held by the shared back-off window, nothing decided
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == start + RANGE_BLOCKS - 1  # the first range only
    assert Donation.objects.filter(status="confirmed").count() == 1
    refused_at = fault.used_at[0]
    assert not [s for s in proxy.seen if refused_at < s.at < refused_at + 1.5]  # nobody asked during the window

    time.sleep(2.2)
    done = crawl(FINALIZED)

    assert done.held is None, done.held
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()
    assert Donation.objects.filter(status="confirmed").count() == 2
