"""Reconcile at start: a crawler worker's start reconciles the window since the last clean reconcile (at
most 10,000 blocks) in the background, and the first crawl does not wait for it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from crawlers.models import CHAIN, FINALIZED, LATEST, LastBlock, ReconcileRun
from crawlers.record.cursors import cursor_write
from crawlers.runs.reconcile_start import START_WINDOW, reconcile_at_start, start_window
from crawlers.tasks import crawl_latest
from donations.models import DonationStats
from tests.ops.processes import process_environment, worker
from tests.ops.test_reconcile import donated
from tests.ops.test_workers import slow_provider, wait_until

__all__ = ["donated", "slow_provider"]


def stored_run(trigger: str, to_block: int, *, ok: bool = True, age: timedelta = timedelta(0)) -> None:
    ReconcileRun.objects.create(
        trigger=trigger,
        from_block=1,
        to_block=to_block,
        started_at=timezone.now() - age,
        ok=ok,
        transfers=0,
        discrepancies=[],
        summary="",
    )
    ReconcileRun.objects.filter(to_block=to_block, trigger=trigger).update(finished_at=timezone.now() - age)


@pytest.mark.django_db
def test_the_window_starts_after_the_last_clean_reconcile_and_spans_at_most_10000_blocks():
    config = settings.CONFIG.first_chain
    assert start_window(crawled=25_000, chain=config) == (25_000 - START_WINDOW + 1, 25_000)  # never reconciled

    stored_run("daily", 20_000, age=timedelta(hours=2))
    assert start_window(crawled=25_000, chain=config) == (20_001, 25_000)

    stored_run("command", 22_000, ok=False, age=timedelta(hours=1))  # not clean: the window stays
    stored_run("checkpoint", 24_000, ok=True)  # a checkpoint checks no chain: not a reconcile of the window
    assert start_window(crawled=25_000, chain=config) == (20_001, 25_000)

    stored_run("start", 25_000)
    assert start_window(crawled=25_000, chain=config) is None
    assert start_window(crawled=5, chain=config) is None


@pytest.mark.django_db
@pytest.mark.usefixtures("crawl_config", "eth_prices")
def test_a_start_reconciles_the_crawled_window_once(donated):
    report = reconcile_at_start()

    assert report is not None
    assert report.ok
    run = ReconcileRun.objects.get()
    assert (run.trigger, run.ok, run.to_block, run.transfers) == ("start", True, donated["to"], 2)
    assert reconcile_at_start() is None  # nothing new since that clean run
    assert DonationStats.objects.get().status == "open"


@pytest.mark.django_db(transaction=True)
def test_a_crawler_workers_start_reconciles_in_the_background_without_delaying_the_first_crawl(
    node, slow_provider, tmp_path
):
    DonationStats.objects.get_or_create()
    start = node.head() + 1
    node.mine(1000)  # a window of ~1000 finalized blocks: ~20 slow block batches for reconcile
    cursor_write(chain=CHAIN, label=FINALIZED, value=node.finalized())
    cursor_write(chain=CHAIN, label=LATEST, value=node.head() - 2)  # the first crawl: two blocks
    env = process_environment(
        ETH_RPC_URL=slow_provider.url("/rpc"),
        DWS_START_BLOCK=str(start),
        DWS_HEARTBEAT_DIR=str(tmp_path / "heartbeat"),
    )
    crawl_latest.delay()  # waiting in the queue when the worker starts
    running = worker("starting", "crawlers,celery", env, tmp_path)
    try:
        wait_until(lambda: LastBlock.objects.get(chain=CHAIN, label=LATEST).value == node.head(), 60, "the first crawl")
        assert not ReconcileRun.objects.exists(), "the first crawl waited for reconcile"
        wait_until(lambda: ReconcileRun.objects.exists(), 120, "the start's reconcile")
    finally:
        running.stop()

    run = ReconcileRun.objects.get()
    assert (run.trigger, run.ok, run.from_block, run.to_block) == ("start", True, start, node.finalized())
    assert f"reconcile at start of eth: blocks {start}..{node.finalized()}" in running.text()
