"""A crawler that is behind keeps going: one task, no beat, and the finalized crawler still reaches its tip."""

from __future__ import annotations

import time

import pytest

from crawlers.models import CHAIN, FINALIZED
from crawlers.record.cursors import cursor_get
from crawlers.runs.progress import catch_up_status
from crawlers.tasks import crawl_finalized
from donations.models import Donation, DonationStatus
from tests.chain import ACCOUNTS, ETHER

pytestmark = [pytest.mark.django_db(transaction=True)]

RUN_BLOCKS = 10


def test_a_crawler_behind_runs_again_at_once_until_it_is_current(stack_factory):
    stack = stack_factory(workers=0)
    stack.env["TEST_CRAWL_RUN_MAX_BLOCKS"] = str(RUN_BLOCKS)
    # Every block read in full, so each run stops at the cap (a sparse range's skipped blocks cost a
    # fortieth of one: tests/crawlers/scan/test_sparse.py checks the cap there).
    stack.env["TEST_CRAWLER_SPARSE"] = "0"
    stack.start_workers(1)
    donation = stack.donate_eth(ACCOUNTS[1], ETHER // 4)
    stack.anvil.mine(6 * RUN_BLOCKS)
    tip = stack.anvil.finalized()
    # A provider a little slower than the local one (50 ms a post), so each run lasts long enough for
    # this test to see the progress it reports while it is behind.
    stack.proxy.arm("*", "hang", count=None, seconds=0.05)

    crawl_finalized.delay()  # once: beat is not playing, so every further run is the crawler's own doing
    deadline = time.monotonic() + 40
    progress_seen = None
    while time.monotonic() < deadline:
        cursor = cursor_get(chain=CHAIN, label=FINALIZED)
        progress_seen = progress_seen or catch_up_status("eth", FINALIZED)
        if cursor is not None and cursor.value >= tip:
            break
        time.sleep(0.2)

    assert cursor_get(chain=CHAIN, label=FINALIZED).value >= tip, stack.describe()
    runs = stack.worker_logs().count("Task crawlers.crawl_finalized[")
    assert runs >= (tip - stack.start_block) // RUN_BLOCKS, f"{runs} run(s) for {tip - stack.start_block} blocks"
    assert "catching up" in stack.worker_logs()
    assert progress_seen is not None, "no catch-up progress was ever reported"
    assert progress_seen["behind"] > 0
    assert progress_seen["eta_seconds"] > 0
    assert Donation.objects.get(tx_hash=donation).status == DonationStatus.CONFIRMED
    # current again: /health no longer shows a catch-up (the run clears it as it ends, just after its last
    # cursor move, which is what the loop above waited for)
    deadline = time.monotonic() + 10
    while catch_up_status("eth", FINALIZED) is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert catch_up_status("eth", FINALIZED) is None
