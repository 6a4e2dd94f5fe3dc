"""Reconcile at start (seed 004): a crawler worker's start checks the records against each chain over the
window since that chain's last clean reconcile -- at most its last 10,000 finalized, crawled blocks -- so a
process never simply trusts what the database says after a crash or a restore.

It runs in a thread of the worker's main process, beside the pool that runs the crawl tasks: the first
crawl never waits for it. It takes the same lock as the chain's daily reconcile (one at a time), its
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
from crawlers.runs.reconcile import ReconcileError, ReconcileReport, reconcile, reconcile_lock
from dws_project.chain_settings import ChainSettings
from dws_project.config import Config
from dws_project.locks import DATABASE_GONE, database_gone, non_overlapping

logger = logging.getLogger("dws.crawlers")

START = "start"
START_WINDOW = 10_000  # blocks: the most a start reconciles, whatever has happened since the last clean run


def start_window(*, crawled: int, chain: ChainSettings) -> tuple[int, int] | None:
    """The blocks of `chain` a start reconciles: after its last clean reconcile's range (a checkpoint is not
    one), at most START_WINDOW of them, never before its start block; None when there is nothing to check."""
    last_clean = (
        ReconcileRun.objects.filter(chain=chain.name, ok=True)
        .exclude(trigger=CHECKPOINT)
        .order_by("-finished_at")
        .values_list("to_block", flat=True)
        .first()
    )
    first = max(crawled - START_WINDOW + 1, chain.start_block or 0, 0)
    if last_clean is not None:
        first = max(first, last_clean + 1)
    return (first, crawled) if first <= crawled else None


def reconcile_at_start(
    *, chain: str | None = None, config: Config | None = None, client: RpcClient | None = None
) -> ReconcileReport | None:
    """Reconcile `chain`'s start window (the first chain when None); None when there was nothing to check or
    no evidence to check it with."""
    config = config or settings.CONFIG
    settings_ = config.chain(chain) if chain else config.first_chain
    return _reconcile_at_start(settings_, config, client or make_reconcile_client(settings_))


def _reconcile_at_start(chain: ChainSettings, config: Config, client: RpcClient) -> ReconcileReport | None:
    name = chain.name
    cursor = cursor_get(chain=name, label=FINALIZED)
    try:
        finalized = chain_tips(client).finalized
    except NoEvidenceError as exc:
        logger.warning("reconcile at start of %s: skipped, the provider gave no evidence (%s)", name, exc)
        return None
    if cursor is None or finalized is None:
        logger.info("reconcile at start of %s: nothing crawled and finalized yet", name)
        return None
    window = start_window(crawled=min(cursor.value, finalized), chain=chain)
    if window is None:
        logger.info(
            "reconcile at start of %s: nothing new since the last clean reconcile (block %d)", name, cursor.value
        )
        return None
    logger.info("reconcile at start of %s: blocks %d..%d", name, *window)
    try:
        return reconcile(*window, chain=name, config=config, client=client, trigger=START)
    except ReconcileError as exc:
        logger.warning("reconcile at start of %s: %s", name, exc)
        return None


def reconcile_at_start_in_background() -> threading.Thread:
    """Start `reconcile_at_start` for every chain in a daemon thread each (a worker's start calls this) and
    return at once: a chain whose provider hangs never delays another's check. Returns the first chain's."""
    threads = [_in_background(name) for name in settings.CONFIG.chain_names]
    return threads[0]


def _in_background(chain: str) -> threading.Thread:
    @non_overlapping(reconcile_lock(chain), ttl=300)
    def guarded() -> ReconcileReport | None:
        return reconcile_at_start(chain=chain)

    def work() -> None:
        try:
            if guarded() is None:
                logger.debug("reconcile at start of %s: nothing done (or another reconcile was running)", chain)
        except DATABASE_GONE as exc:  # a hold like any run's: one WARNING line, no traceback
            database_gone(f"reconcile at start of {chain}", exc)
        except Exception:  # a thread's exception would be lost: say it, the daily run still comes
            logger.exception("reconcile at start of %s failed", chain)
        finally:
            connections.close_all()

    thread = threading.Thread(target=work, name=f"reconcile-at-start-{chain}", daemon=True)
    thread.start()
    return thread
