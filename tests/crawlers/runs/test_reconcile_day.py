"""The daily reconcile covers a day of each chain by time (its blocks of the last 24 hours, found from their
timestamps), in several runs where one does not hold it; /health says through which block and when.

The test node's blocks are made an hour apart (anvil_mine's interval), so a day is 24 of them: a chain
whose day is more blocks than one run checks, like a rollup's ~43,200 against the run's 7,200."""

from __future__ import annotations

import pytest

from crawlers.models import FINALIZED, LATEST, ReconcileRun
from crawlers.runs.crawl import crawl
from crawlers.runs.reconcile_day import reconcile_last_day
from crawlers.selectors import health_report
from donations.models import Donation
from tests.chain import ACCOUNTS, DONATION_ADDRESS

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

HOUR = 3600


def hourly_blocks(node, count: int) -> None:
    node.rpc("anvil_mine", hex(count), hex(HOUR))


def test_a_day_of_hourly_blocks_is_covered_by_several_runs_and_health_says_through_which_block(node):
    hourly_blocks(node, 30)
    node.mint(node.coins["usdt"], ACCOUNTS[2], 40 * 10**6)
    tx = node.transfer_token(node.coins["usdt"], ACCOUNTS[2], DONATION_ADDRESS, 40 * 10**6)  # in the day's last hour
    hourly_blocks(node, 2)
    crawl(LATEST)
    assert crawl(FINALIZED).confirmed == 1
    finalized = node.finalized()
    last_time = int(node.block(finalized)["timestamp"], 16)
    first_of_day = next(n for n in range(finalized + 1) if int(node.block(n)["timestamp"], 16) > last_time - 24 * HOUR)
    assert finalized - first_of_day + 1 > 20  # about an hour a block (the coin's blocks share their hour)

    runs = []
    while True:
        run = reconcile_last_day(max_blocks=10)
        runs.append(run)
        if not run.more_to_do:
            break

    assert [(r.report.from_block, r.report.to_block) for r in runs if r.report] == [
        (first_of_day, first_of_day + 9),
        (first_of_day + 10, first_of_day + 19),
        (first_of_day + 20, finalized),
    ]
    assert all(r.report.ok for r in runs if r.report)
    assert set(ReconcileRun.objects.values_list("trigger", "day_first_block", "day_last_block")) == {
        ("daily", first_of_day, finalized)
    }
    assert Donation.objects.get(tx_hash=tx).status == "confirmed"
    daily = health_report()["chains"]["eth"]["daily_reconcile"]
    assert (daily["to_block"], daily["day_first_block"], daily["day_covered"], daily["ok"]) == (
        finalized,
        first_of_day,
        True,
        True,
    )
    assert reconcile_last_day(max_blocks=10).report is None  # nothing new until the chain moves on

    hourly_blocks(node, 5)
    crawl(FINALIZED)
    (next_day,) = [reconcile_last_day(max_blocks=10)]
    assert (next_day.report.from_block, next_day.report.to_block) == (finalized + 1, node.finalized())


def test_a_day_cut_short_by_a_crawler_behind_says_so_and_queues_nothing(node):
    hourly_blocks(node, 12)
    crawl(FINALIZED)
    crawled = node.finalized()
    hourly_blocks(node, 6)  # finalized, not crawled yet

    run = reconcile_last_day(max_blocks=100)

    assert run.report is not None
    assert (run.report.to_block, run.more_to_do) == (crawled, False)
    daily = health_report()["chains"]["eth"]["daily_reconcile"]
    assert (daily["to_block"], daily["day_covered"]) == (crawled, False)
