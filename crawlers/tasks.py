"""Celery tasks for the crawlers: a lock, one domain call, a log line. Each takes the chain it runs for
(beat has one entry per chain and job); a task without one runs for the first chain, as the tasks queued
before several chains did."""

from __future__ import annotations

import logging

from celery import Task, shared_task

from crawlers.models import FINALIZED, LATEST
from crawlers.runs.follow import FOLLOW_LEASE_SECONDS, LEASE_OVER, follow_head
from crawlers.runs.jobs import run_crawler, run_old_unconfirmed
from crawlers.runs.reconcile import ReconcileError, reconcile_lock
from crawlers.runs.reconcile_day import reconcile_last_day
from dws_project.chain_settings import UnknownChain
from dws_project.locks import non_overlapping

logger = logging.getLogger("dws.crawlers")


@shared_task(name="crawlers.crawl_latest", soft_time_limit=300, time_limit=360)
def crawl_latest(chain: str | None = None) -> None:
    _crawl_and_follow(LATEST, chain, crawl_latest)


@shared_task(
    name="crawlers.follow_head",
    soft_time_limit=int(FOLLOW_LEASE_SECONDS) + 300,
    time_limit=int(FOLLOW_LEASE_SECONDS) + 360,
)
def follow_head_task(chain: str | None = None) -> None:
    """`chain`'s head follower for one lease (crawlers/runs/follow.py). Beat starts one every few seconds (a
    copy that finds the lock held ends at once); a lease that ran out queues its successor at once, so the
    head is followed without a gap; one ended by SIGTERM or a lost lease is not succeeded here (beat will)."""
    try:
        result = follow_head(chain=chain)
    except UnknownChain as exc:
        logger.warning("follow latest: %s; the queued run is dropped", exc)
        return
    if result.ended == LEASE_OVER:
        follow_head_task.apply_async(kwargs={"chain": result.chain}, expires=60)


@shared_task(name="crawlers.crawl_finalized", soft_time_limit=300, time_limit=360)
def crawl_finalized(chain: str | None = None) -> None:
    _crawl_and_follow(FINALIZED, chain, crawl_finalized)


def _crawl_and_follow(label: str, chain: str | None, task: Task) -> None:
    """One run of `chain`'s `label` crawler; behind (stopped at its per-run cap), the next run starts now, not
    at the next beat tick. A chain no longer configured drops the queued run."""
    try:
        result = run_crawler(label, chain=chain)
    except UnknownChain as exc:
        logger.warning("crawl %s: %s; the queued run is dropped", label, exc)
        return
    if result is not None and result.more_to_do:
        task.delay(chain=result.chain)


@shared_task(name="crawlers.crawl_old_unconfirmed", soft_time_limit=600, time_limit=720)
def crawl_old_unconfirmed_task(chain: str | None = None) -> None:
    try:
        run_old_unconfirmed(chain=chain)
    except UnknownChain as exc:
        logger.warning("crawl old-unconfirmed: %s; the queued run is dropped", exc)


@shared_task(name="crawlers.reconcile_last_day", soft_time_limit=1800, time_limit=1900)
def reconcile_last_day_task(chain: str | None = None) -> None:
    from django.conf import settings

    try:
        name = settings.CONFIG.chain(chain).name if chain else settings.CONFIG.first_chain.name
    except UnknownChain as exc:
        logger.warning("reconcile: %s; the queued run is dropped", exc)
        return

    @non_overlapping(reconcile_lock(name), ttl=300)
    def guarded() -> bool:
        try:
            return reconcile_last_day(chain=name).more_to_do  # logs its summary and stores the result
        except ReconcileError as exc:
            logger.warning("reconcile %s: %s; the next daily run tries again", name, exc)
            return False

    if guarded():  # the chain's day did not fit one run: the next starts now, after this one's lock
        reconcile_last_day_task.delay(chain=name)
