"""The head follower (issue 36): the latest crawler follows the head as it moves, by polling or by a newHeads
subscription over WebSocket, and queues the finalized crawler whenever the finalized tag moves."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from django.db import connections

from crawlers.models import LATEST
from crawlers.record.cursors import cursor_get
from crawlers.runs.follow import BUSY, LEASE_OVER, FollowResult, follow_head
from donations.models import Donation, DonationStats, DonationStatus
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.configs import configured

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
