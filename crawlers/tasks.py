"""Celery tasks for the crawlers: a lock, one domain call, a log line."""

from __future__ import annotations

from celery import shared_task

from crawlers.models import FINALIZED, LATEST
from crawlers.runs.jobs import run_crawler, run_old_unconfirmed
from crawlers.runs.reconcile import reconcile_last_day
from dws_project.locks import non_overlapping


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
