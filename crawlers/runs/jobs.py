"""One guarded run of a crawler job of one chain: its non-overlap lock, the domain run, the log line, the
metrics, the catch-up progress and the run's end (crawlers/runs/cadence.py: a job that stops running is
overdue). The Celery tasks and `manage.py crawl` both call these; every chain's jobs are locked apart, so
chains are crawled in parallel by however many workers there are, and one chain's provider never delays
another's runs."""

from __future__ import annotations

import logging
import time

from django.conf import settings

from crawlers.chain.clients import make_client
from crawlers.chain.rpc import RpcClient
from crawlers.runs.address_code import address_code_refusal
from crawlers.runs.cadence import run_finished
from crawlers.runs.crawl import crawl
from crawlers.runs.lag import lag_seconds
from crawlers.runs.old_unconfirmed import OLD_UNCONFIRMED, JudgeResult, crawl_old_unconfirmed
from crawlers.runs.operator import job_name
from crawlers.runs.progress import catch_up_clear, catch_up_record, tip_note
from crawlers.runs.results import CrawlResult, run_title
from dws_project import metrics
from dws_project.chain_settings import ChainSettings
from dws_project.locks import DATABASE_GONE, database_gone, non_overlapping

logger = logging.getLogger("dws.crawlers")

# Extended while a run works; frees itself this long after a dead holder (a Django setting, so a test
# stack can shorten it).
LOCK_TTL = float(getattr(settings, "CRAWLER_LOCK_TTL", 120.0))
# Blocks per run: a long catch-up proceeds in runs well inside the task's time limit (the next run
# continues from the cursor), instead of being cut off by it.
RUN_MAX_BLOCKS = int(getattr(settings, "CRAWLER_RUN_MAX_BLOCKS", 1000))


def job_chain(chain: str | None) -> ChainSettings:
    """The configured chain `chain` (the first one when None)."""
    config = settings.CONFIG
    return config.chain(chain) if chain else config.first_chain


def run_crawler(label: str, *, chain: str | None = None, client: RpcClient | None = None) -> CrawlResult | None:
    """One run of the `label` crawler of `chain` under its non-overlap lock; None when another run holds it."""
    settings_ = job_chain(chain)
    client = client or make_client(settings_)

    @non_overlapping(job_name(label, settings_.name), ttl=LOCK_TTL)
    def guarded() -> CrawlResult:
        return observed_run(label, settings_, client)

    try:
        return guarded()
    except DATABASE_GONE as exc:
        database_gone(f"crawl {run_title(label, settings_.name)}", exc)
        return None


def observed_run(label: str, chain: ChainSettings, client: RpcClient, *, note_finished: bool = True) -> CrawlResult:
    """One run of a crawler whose non-overlap lock the caller holds (`run_crawler`, or the head follower for
    its lease): the run, its log line, the metrics, the tip it saw, the catch-up progress and (with
    `note_finished`) the run's end for the overdue clock."""
    trips_before = client.round_trips
    started = time.monotonic()
    refused = address_code_refusal(client, chain)
    if refused is not None:
        result = CrawlResult(label, chain=chain.name, held=refused)
        logger.critical("crawl %s: %s", run_title(label, chain.name), refused)
    else:
        result = crawl(label, chain=chain.name, client=client, max_blocks=RUN_MAX_BLOCKS)
    _log(result)
    if note_finished:
        run_finished(label, chain.name)
    metrics.crawl_observed(
        chain=chain.name,
        crawler=label,
        blocks=result.blocks,
        round_trips=client.round_trips - trips_before,
        held=result.held,
        tip=result.tip,
        cursor=result.cursor,
        lag_seconds=lag_seconds(client, result.cursor, result.tip),
    )
    if result.tip is not None:
        tip_note(chain.name, label, result.tip)
    if result.more_to_do and result.cursor is not None and result.tip is not None:  # more_to_do implies both
        catch_up_record(
            chain=chain.name,
            label=label,
            cursor=result.cursor,
            tip=result.tip,
            blocks=result.blocks,
            seconds=time.monotonic() - started,
        )
    elif result.held is None:
        catch_up_clear(chain.name, label)
    return result


def run_old_unconfirmed(*, chain: str | None = None, client: RpcClient | None = None) -> JudgeResult | None:
    """One run of `chain`'s judge under its non-overlap lock; None when another run holds it."""
    settings_ = job_chain(chain)

    @non_overlapping(job_name(OLD_UNCONFIRMED, settings_.name), ttl=LOCK_TTL)
    def guarded() -> JudgeResult:
        return crawl_old_unconfirmed(chain=settings_.name, client=client)

    try:
        result = guarded()
        _log(result)
        if result is not None:
            run_finished(OLD_UNCONFIRMED, settings_.name)
    except DATABASE_GONE as exc:
        database_gone(f"crawl {run_title(OLD_UNCONFIRMED, settings_.name)}", exc)
        return None
    return result


def _log(result: CrawlResult | JudgeResult | None) -> None:
    if result is not None:
        log = logger.warning if result.held else logger.info
        log("%s", result.summary())
