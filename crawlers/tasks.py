"""Celery tasks for the crawlers: a lock, one domain call, a log line."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from crawlers.cursors import job_name
from crawlers.models import FINALIZED, LATEST
from crawlers.old_unconfirmed import OLD_UNCONFIRMED, JudgeResult, crawl_old_unconfirmed
from crawlers.reconcile import reconcile_last_day
from crawlers.rpc import RpcClient
from crawlers.services import crawl
from crawlers.writing import CrawlResult
from dws_project.locks import non_overlapping

logger = logging.getLogger("dws.crawlers")

# Seconds between runs (the beat schedule in settings uses the same numbers).
INTERVALS = {LATEST: 12, FINALIZED: 60, OLD_UNCONFIRMED: 15 * 60}
# Extended while a run works; frees itself this long after a dead holder (a Django setting, so a test
# stack can shorten it).
LOCK_TTL = float(getattr(settings, "CRAWLER_LOCK_TTL", 120.0))
# Blocks per run: a long catch-up proceeds in runs well inside the task's time limit (the next run
# continues from the cursor), instead of being cut off by it.
RUN_MAX_BLOCKS = 1000


def run_crawler(label: str, *, client: RpcClient | None = None) -> CrawlResult | None:
    """One run under the crawler's non-overlap lock; None when another run holds it."""

    @non_overlapping(job_name(label), ttl=LOCK_TTL)
    def guarded() -> CrawlResult:
        return crawl(label, client=client, max_blocks=RUN_MAX_BLOCKS)

    result = guarded()
    _log(result)
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
    run_crawler(LATEST)


@shared_task(name="crawlers.crawl_finalized", soft_time_limit=300, time_limit=360)
def crawl_finalized() -> None:
    run_crawler(FINALIZED)


@shared_task(name="crawlers.crawl_old_unconfirmed", soft_time_limit=600, time_limit=720)
def crawl_old_unconfirmed_task() -> None:
    run_old_unconfirmed()


@shared_task(name="crawlers.reconcile_last_day", soft_time_limit=1800, time_limit=1900)
def reconcile_last_day_task() -> None:
    @non_overlapping("reconcile", ttl=300)
    def guarded() -> None:
        reconcile_last_day()  # logs its summary and stores the result

    guarded()
