"""Reconcile at start (seed 004): a crawler worker's start checks the records against the chain over the
window since the last clean reconcile -- at most the last 10,000 finalized, crawled blocks -- so a process
never simply trusts what the database says after a crash or a restore.

It runs in a thread of the worker's main process, beside the pool that runs the crawl tasks: the first
crawl never waits for it. It takes the same lock as the daily reconcile (one reconcile at a time), its
verdicts are reconcile's (what it cannot see is "not checked", the pause's backlog "pending": only
records that contradict evidence freeze the sale), and its result is stored with trigger "start".
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings
from django.db import connections

from crawlers.chain.clients import make_reconcile_client
from crawlers.chain.outcomes import NoEvidenceError
from crawlers.chain.rpc import RpcClient
from crawlers.chain.tips import chain_tips
from crawlers.models import FINALIZED, ReconcileRun
from crawlers.record.cursors import cursor_get
from crawlers.runs.checkpoint import CHECKPOINT
from crawlers.runs.reconcile import ReconcileError, ReconcileReport, reconcile
from dws_project.chain_settings import chain_settings
from dws_project.config import Config
from dws_project.locks import non_overlapping

logger = logging.getLogger("dws.crawlers")

START = "start"
START_WINDOW = 10_000  # blocks: the most a start reconciles, whatever has happened since the last clean run
RECONCILE_LOCK = "reconcile"  # the daily run's (crawlers/tasks.py)


def start_window(*, crawled: int, config: Config) -> tuple[int, int] | None:
    """The blocks a start reconciles: after the last clean reconcile's range (a checkpoint is not one),
    at most START_WINDOW of them, never before DWS_START_BLOCK; None when there is nothing to check."""
    last_clean = (
        ReconcileRun.objects.filter(ok=True)
        .exclude(trigger=CHECKPOINT)
        .order_by("-finished_at")
        .values_list("to_block", flat=True)
        .first()
    )
    first = max(crawled - START_WINDOW + 1, config.start_block or 0, 0)
    if last_clean is not None:
        first = max(first, last_clean + 1)
    return (first, crawled) if first <= crawled else None


def reconcile_at_start(*, config: Config | None = None, client: RpcClient | None = None) -> ReconcileReport | None:
    """Reconcile the start window; None when there was nothing to check or no evidence to check it with."""
    config = config or settings.CONFIG
    chain = chain_settings(config)
    client = client or make_reconcile_client(chain)  # the second provider when there is one
    cursor = cursor_get(chain=chain.name, label=FINALIZED)
    try:
        finalized = chain_tips(client).finalized
    except NoEvidenceError as exc:
        logger.warning("reconcile at start: skipped, the provider gave no evidence (%s)", exc)
        return None
    if cursor is None or finalized is None:
        logger.info("reconcile at start: nothing crawled and finalized yet")
        return None
    window = start_window(crawled=min(cursor.value, finalized), config=config)
    if window is None:
        logger.info("reconcile at start: nothing new since the last clean reconcile (block %d)", cursor.value)
        return None
    logger.info("reconcile at start: blocks %d..%d", *window)
    try:
        return reconcile(*window, config=config, client=client, trigger=START)
    except ReconcileError as exc:
        logger.warning("reconcile at start: %s", exc)
        return None


def reconcile_at_start_in_background() -> threading.Thread:
    """Start `reconcile_at_start` in a daemon thread (a worker's start calls this) and return at once."""

    @non_overlapping(RECONCILE_LOCK, ttl=300)
    def guarded() -> ReconcileReport | None:
        return reconcile_at_start()

    def work() -> None:
        try:
            if guarded() is None:
                logger.debug("reconcile at start: nothing done (or another reconcile was running)")
        except Exception:  # a thread's exception would be lost: say it, the daily run still comes
            logger.exception("reconcile at start failed")
        finally:
            connections.close_all()

    thread = threading.Thread(target=work, name="reconcile-at-start", daemon=True)
    thread.start()
    return thread
