"""Ranges proven side by side (crawlers/scan/pipeline.py): the next ranges are asked while this one is
written, never more posts in flight than DWS_RPC_MAX_IN_FLIGHT, and nothing recorded out of order or past
a hold."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from django.db import connection, transaction

from crawlers.models import CHAIN, FINALIZED
from crawlers.record.cursors import cursor_get
from crawlers.runs.crawl import crawl
from crawlers.scan.ranges import RANGE_BLOCKS
from donations.models import Donation, DonationStats
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER, Anvil, deploy_stable_coins
from tests.configs import configured

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]


@pytest.fixture
def chain() -> Iterator[Anvil]:
    """A node of its own per test: these tests mine hundreds of blocks, and anvil keeps the state of only
    its recent blocks in memory, so on the session's node they would push out the state other tests'
    balance proofs ask for (the block their crawl starts after)."""
    with Anvil() as anvil:
        anvil.coins = deploy_stable_coins(anvil)
        yield anvil


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


def test_a_429_met_by_a_range_proven_ahead_decides_nothing_and_the_back_off_rules(node, proxy, settings):
    settings.CRAWLER_SPARSE = False
    start = settings.CONFIG.first_chain.start_block
    node.mine(4)
    node.send_eth(ACCOUNTS[3], DONATION_ADDRESS, ETHER // 4)  # first range
    node.mine(RANGE_BLOCKS + 10)
    node.send_eth(ACCOUNTS[4], DONATION_ADDRESS, ETHER // 8)  # second range
    node.mine(RANGE_BLOCKS)
    second = hex(start + RANGE_BLOCKS)
    # The provider refuses the second range's blocks (asked beside the first range's) with a 429.
    fault = proxy.arm("eth_getBlockByNumber", "status", status=429, retry_after=2, when=lambda p: p[0] == second)

    held = crawl(FINALIZED)

    assert fault.used == 1
    assert "backing off" in (held.held or "")  # held by the shared back-off window, nothing decided
    # The first range is recorded when its posts went out before the 429, else held like the rest; the
    # second range never is.
    assert cursor_get(chain=CHAIN, label=FINALIZED).value in (start - 1, start + RANGE_BLOCKS - 1)
    assert Donation.objects.filter(status="confirmed").count() <= 1
    refused_at = fault.used_at[0]
    # Nobody asked during the window (beyond a post already on its way when the 429 came back).
    late = [s for s in proxy.seen if refused_at + 0.1 < s.at < refused_at + 1.5]
    assert not late, late

    time.sleep(2.2)
    done = crawl(FINALIZED)

    assert done.held is None, done.held
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()
    assert Donation.objects.filter(status="confirmed").count() == 2


def _donations_in_ranges(node, ranges: int) -> None:
    for i in range(ranges):
        node.mine(7)
        node.send_eth(ACCOUNTS[3 + i % 4], DONATION_ADDRESS, ETHER // (4 + i))
        node.mine(RANGE_BLOCKS - 8)
    node.mine(3)


@pytest.mark.parametrize("bound", [1, 3])
def test_ranges_are_proven_side_by_side_within_the_in_flight_bound(node, proxy, settings, bound):
    settings.CRAWLER_SPARSE = False  # ranges of RANGE_BLOCKS, several to prove
    settings.CONFIG = configured(settings.CONFIG, rpc_max_in_flight=bound)
    _donations_in_ranges(node, 6)
    proxy.arm("*", "hang", count=None, seconds=0.05)  # a provider across the internet

    result = crawl(FINALIZED)

    assert result.held is None, result.held
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()
    assert Donation.objects.filter(status="confirmed").count() == 6
    assert proxy.most_in_flight == bound  # side by side, and never more


def test_a_provider_that_rate_limits_never_sees_more_posts_at_once_than_the_bound(node, proxy, settings):
    settings.CRAWLER_SPARSE = False  # ranges of RANGE_BLOCKS, several to prove
    settings.CONFIG = configured(settings.CONFIG, rpc_max_in_flight=2)
    _donations_in_ranges(node, 6)
    # Three posts asking blocks are refused with a 429 and a short window; every other one waits a while.
    refusals = proxy.arm("eth_getBlockByNumber", "status", count=3, status=429, retry_after=1)
    proxy.arm("*", "hang", count=None, seconds=0.05)

    runs = [crawl(FINALIZED)]
    while runs[-1].held is not None and len(runs) < 20:
        time.sleep(1.05)
        runs.append(crawl(FINALIZED))

    assert refusals.used == 3
    assert runs[-1].held is None, [r.held for r in runs]
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()
    assert Donation.objects.filter(status="confirmed").count() == 6
    assert proxy.most_in_flight <= 2


def test_nothing_after_a_hold_is_recorded_though_it_was_proven(node, proxy, settings):
    settings.CRAWLER_SPARSE = False
    start = settings.CONFIG.first_chain.start_block
    _donations_in_ranges(node, 4)
    held_block = start + RANGE_BLOCKS + 20  # in the second range, after its donation
    fault = proxy.arm("eth_getBlockByNumber", "null", count=1, when=lambda p: p[0] == hex(held_block))

    result = crawl(FINALIZED)

    assert fault.used == 1
    assert result.held is not None
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == held_block - 1  # up to the hold, no further
    # The third and fourth ranges were proven beside the second, and nothing of them is on record.
    assert Donation.objects.filter(status="confirmed").count() == 2
    assert not Donation.objects.filter(block_number__gte=held_block).exists()

    done = crawl(FINALIZED)

    assert done.held is None, done.held
    assert Donation.objects.filter(status="confirmed").count() == 4


def test_a_post_that_times_out_beside_others_makes_every_run_ask_one_at_a_time_for_a_while(node, proxy, settings):
    settings.CRAWLER_SPARSE = False
    # A time-out wide enough that only the slow post meets it on a loaded machine.
    settings.CRAWLER_RPC_READ_TIMEOUT = 1.5
    start = settings.CONFIG.first_chain.start_block
    _donations_in_ranges(node, 4)
    # A provider that answers the posts in flight one after another, slowly: one of them times out.
    second = hex(start + RANGE_BLOCKS)
    slow = proxy.arm("eth_getBlockByNumber", "hang", seconds=3.0, when=lambda p: p[0] == second)

    held = crawl(FINALIZED)

    assert slow.used == 1
    assert "timeout" in (held.held or "")
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == start + RANGE_BLOCKS - 1  # up to the slow range
    time.sleep(1.6)  # the proxy is still sleeping on the post the client gave up on
    proxy.most_in_flight = 0

    done = crawl(FINALIZED)

    assert done.held is None, done.held
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()
    assert Donation.objects.filter(status="confirmed").count() == 4
    assert proxy.most_in_flight == 1  # one post at a time now: side by side would only time out again
