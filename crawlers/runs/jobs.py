"""One guarded run of a crawler job: its non-overlap lock, the domain run, the log line, the metrics, the
catch-up progress and the run's end (crawlers/runs/cadence.py: a job that stops running is overdue). The
Celery tasks and `manage.py crawl` both call these."""

from __future__ import annotations

import logging
import time

from django.conf import settings

from crawlers.chain.clients import make_client
from crawlers.chain.rpc import RpcClient
from crawlers.runs.cadence import run_finished
from crawlers.runs.crawl import crawl
from crawlers.runs.lag import lag_seconds
from crawlers.runs.old_unconfirmed import OLD_UNCONFIRMED, JudgeResult, crawl_old_unconfirmed
from crawlers.runs.operator import job_name
from crawlers.runs.progress import catch_up_clear, catch_up_record
from crawlers.runs.results import CrawlResult
from dws_project import metrics
from dws_project.chain_settings import chain_settings
from dws_project.locks import DATABASE_GONE, database_gone, non_overlapping

logger = logging.getLogger("dws.crawlers")

# Extended while a run works; frees itself this long after a dead holder (a Django setting, so a test
# stack can shorten it).
LOCK_TTL = float(getattr(settings, "CRAWLER_LOCK_TTL", 120.0))
# Blocks per run: a long catch-up proceeds in runs well inside the task's time limit (the next run
# continues from the cursor), instead of being cut off by it.
RUN_MAX_BLOCKS = int(getattr(settings, "CRAWLER_RUN_MAX_BLOCKS", 1000))


def run_crawler(label: str, *, client: RpcClient | None = None) -> CrawlResult | None:
    """One run under the crawler's non-overlap lock; None when another run holds it."""
    chain = chain_settings(settings.CONFIG)
    client = client or make_client(chain)
    trips_before = client.round_trips

    @non_overlapping(job_name(label), ttl=LOCK_TTL)
    def guarded() -> CrawlResult:
        return crawl(label, client=client, max_blocks=RUN_MAX_BLOCKS)

    started = time.monotonic()
    try:
        result = guarded()
        _log(result)
        if result is not None:
            run_finished(label, chain.name)
    except DATABASE_GONE as exc:
        database_gone(f"crawl {label}", exc)
        return None
    if result is not None:
        metrics.crawl_observed(
            crawler=label,
            blocks=result.blocks,
            round_trips=client.round_trips - trips_before,
            held=result.held,
            tip=result.tip,
            cursor=result.cursor,
            lag_seconds=lag_seconds(client, result.cursor, result.tip),
        )
        if result.more_to_do and result.cursor is not None and result.tip is not None:  # more_to_do implies both
            catch_up_record(
                label=label,
                cursor=result.cursor,
                tip=result.tip,
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

    try:
        result = guarded()
        _log(result)
        if result is not None:
            run_finished(OLD_UNCONFIRMED, chain_settings(settings.CONFIG).name)
    except DATABASE_GONE as exc:
        database_gone(f"crawl {OLD_UNCONFIRMED}", exc)
        return None
    return result


def _log(result: CrawlResult | JudgeResult | None) -> None:
    if result is not None:
        log = logger.warning if result.held else logger.info
        log("%s", result.summary())
