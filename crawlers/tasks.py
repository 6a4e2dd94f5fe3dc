"""Celery tasks for the crawlers: a lock, one domain call, a log line."""

from __future__ import annotations

import logging
import time

from celery import shared_task
from django.conf import settings

from crawlers.chain.rpc import RpcClient
from crawlers.models import FINALIZED, LATEST
from crawlers.record.blocks import CrawlResult
from crawlers.record.cursors import job_name
from crawlers.runs.crawl import crawl
from crawlers.runs.old_unconfirmed import OLD_UNCONFIRMED, JudgeResult, crawl_old_unconfirmed
from crawlers.runs.progress import catch_up_clear, catch_up_record
from crawlers.runs.reconcile import reconcile_last_day
from crawlers.scan.ranges import make_client
from dws_project import metrics
from dws_project.locks import non_overlapping

logger = logging.getLogger("dws.crawlers")

# Seconds between runs (the beat schedule in settings uses the same numbers).
INTERVALS = {LATEST: 12, FINALIZED: 60, OLD_UNCONFIRMED: 15 * 60}
# Extended while a run works; frees itself this long after a dead holder (a Django setting, so a test
# stack can shorten it).
LOCK_TTL = float(getattr(settings, "CRAWLER_LOCK_TTL", 120.0))
# Blocks per run: a long catch-up proceeds in runs well inside the task's time limit (the next run
# continues from the cursor), instead of being cut off by it.
RUN_MAX_BLOCKS = int(getattr(settings, "CRAWLER_RUN_MAX_BLOCKS", 1000))


def run_crawler(label: str, *, client: RpcClient | None = None) -> CrawlResult | None:
    """One run under the crawler's non-overlap lock; None when another run holds it."""
    client = client or make_client()
    trips_before = client.round_trips

    @non_overlapping(job_name(label), ttl=LOCK_TTL)
    def guarded() -> CrawlResult:
        return crawl(label, client=client, max_blocks=RUN_MAX_BLOCKS)

    started = time.monotonic()
    result = guarded()
    _log(result)
    metrics.crawl_observed(result, client=client, trips_before=trips_before)
    if result is not None:
        if result.more_to_do:
            catch_up_record(
                label=label,
                cursor=result.cursor,  # type: ignore[arg-type]
                tip=result.tip,  # type: ignore[arg-type]
                blocks=result.blocks,
                seconds=time.monotonic() - started,
            )
        elif result.held is None:
            catch_up_clear(label)
    return result


def run_old_unconfirmed(*, client: RpcClient | None = None) -> JudgeResult | None:
    """One run of the judge under its non-overlap lock; None when another run holds it."""

    @non_overlapping(job_name(OLD_UNCONFIRMED), ttl=LOCK_TTL)
    def guarded() -> JudgeResult:
        return crawl_old_unconfirmed(client=client)

    result = guarded()
    _log(result)
    return result


def _log(result: CrawlResult | JudgeResult | None) -> None:
    if result is not None:
        log = logger.warning if result.held else logger.info
        log("%s", result.summary())


@shared_task(name="crawlers.crawl_latest", soft_time_limit=300, time_limit=360)
def crawl_latest() -> None:
    result = run_crawler(LATEST)
    if result is not None and result.more_to_do:
        crawl_latest.delay()  # behind: the next run starts now, not at the next beat tick


@shared_task(name="crawlers.crawl_finalized", soft_time_limit=300, time_limit=360)
def crawl_finalized() -> None:
    result = run_crawler(FINALIZED)
    if result is not None and result.more_to_do:
        crawl_finalized.delay()  # behind: the next run starts now, not 60 s later


@shared_task(name="crawlers.crawl_old_unconfirmed", soft_time_limit=600, time_limit=720)
def crawl_old_unconfirmed_task() -> None:
    run_old_unconfirmed()


@shared_task(name="crawlers.reconcile_last_day", soft_time_limit=1800, time_limit=1900)
def reconcile_last_day_task() -> None:
    @non_overlapping("reconcile", ttl=300)
    def guarded() -> None:
        reconcile_last_day()  # logs its summary and stores the result

    guarded()
