"""The latest and finalized crawlers: one run of the crawl loop, which reads as scan, prove, record.

The stages live in the rooms below: `scan` reads a range (`ranges`, the sparse path) and proves it
complete against the donation address's balances (`proof`); `record` writes the scanned blocks with the
cursor, and what the proof established about completeness.

Both walk the chain from their cursor (`last_block`) in ranges: one batched request for the range's
full blocks, one `eth_getLogs` for the coins' Transfer logs to the donation address, and one batched
request for the receipts of the ETH transfers found. A block is written (its donations and the cursor,
in one transaction) only with positive evidence for every donation in it; a block the provider will
not answer for holds the cursor and logs the grep-able "stuck" line.

* latest: from its cursor to the head; inserts donations as unconfirmed. Notices a re-org behind its
  cursor (the chain no longer builds on the block it recorded) and re-crawls from a safe point.
* finalized: from its cursor to the `finalized` tag; confirms every donation of each block (inserting
  it first if the latest crawler missed it), fails a native transfer whose receipt reports a revert,
  and recomputes the campaign, all under the donation_stats lock.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from crawlers.chain.clients import make_check_client, make_client
from crawlers.chain.outcomes import NoEvidenceError
from crawlers.chain.rpc import RpcClient
from crawlers.chain.tips import ChainMismatchError, tip_block
from crawlers.decode.blocks import BlockHeader
from crawlers.models import FINALIZED, LATEST, LastBlock
from crawlers.record.blocks import record_blocks
from crawlers.record.completeness import completeness_proven, completeness_unproven
from crawlers.record.cursors import cursor_get, cursor_write
from crawlers.runs.checkpoint import ledger_checkpoint
from crawlers.runs.pace import Pace
from crawlers.runs.results import CrawlResult, run_title
from crawlers.runs.second_provider import agreed, run_tip
from crawlers.scan.ledger import SpanLedger, UnprovenSpan
from crawlers.scan.proof import ProvenRange, prove_range, proven_range_first_batches
from crawlers.scan.results import BlockHeld, ReadMode, ScannedBlock, stuck_message
from crawlers.scan.sparse import TOO_BUSY, SparseScan, scan_sparse, sparse_first_batch
from donations.selectors import recorded_block_numbers
from dws_project import shutdown
from dws_project.chain_settings import ChainSettings
from dws_project.config import Config
from dws_project.locks import chain_writer
from prices.lookup import eth_price_missing, eth_price_near
from prices.requests import price_request_file

logger = logging.getLogger("dws.crawlers")

# What each crawler's label means to the stages below: the finalized one reads final blocks.
READ_MODES = {LATEST: ReadMode(LATEST, final=False), FINALIZED: ReadMode(FINALIZED, final=True)}
REORG_REWIND_BLOCKS = 64  # how far back the latest crawler re-crawls after noticing a re-org


@dataclass(frozen=True)
class _Job:
    """One crawler of one chain: its cursor's label, what that label means, and the configuration."""

    label: str
    chain: ChainSettings
    config: Config
    run: str = field(default_factory=lambda: uuid.uuid4().hex)

    @property
    def title(self) -> str:
        return run_title(self.label, self.chain.name)

    @property
    def mode(self) -> ReadMode:
        return dataclasses.replace(READ_MODES[self.label], run=self.run)


def _job(label: str, config: Config | None, chain: str | None) -> _Job:
    """The `label` crawler of `chain` (the first configured chain when None)."""
    config = config or settings.CONFIG
    return _Job(label, config.chain(chain) if chain else config.first_chain, config)


def _start_cursor(client: RpcClient, job: _Job) -> LastBlock:
    """A first run begins at DWS_START_BLOCK, else at the current head (the cursor is the block before)."""
    start = job.chain.start_block if job.chain.start_block is not None else tip_block(client, finalized=False)
    cursor_write(chain=job.chain.name, label=job.label, value=max(start - 1, 0))
    logger.info("crawl %s: no cursor yet; starting at block %d", job.title, start)
    cursor = cursor_get(chain=job.chain.name, label=job.label)
    assert cursor is not None  # written just above
    return cursor


def _busy(result: CrawlResult, job: _Job) -> CrawlResult:
    result.held = f"another run of the {job.label} crawler of {job.chain.name} holds its PostgreSQL lock; skipped"
    return result


def crawl(
    label: str,
    *,
    chain: str | None = None,
    config: Config | None = None,
    client: RpcClient | None = None,
    max_blocks: int | None = None,
    check: RpcClient | None = None,
) -> CrawlResult:
    """One run of the `label` crawler: from its cursor towards the tip until caught up or held; a finalized
    run that confirmed or failed anything ends with its ledger checkpoint (crawlers/runs/checkpoint.py).
    Exclusive in PostgreSQL (dws_project/locks.py `chain_writer`), whatever became of the Redis lock.

    With a second provider (DWS_RPC_CHECK_URL, `check`): the finalized crawler goes no further than the
    check provider's finalized block and records a range only when the check provider agrees on it
    (crawlers/runs/second_provider.py); the latest crawler reads from the check provider when ours fails."""
    job = _job(label, config, chain)
    with chain_writer(job.chain.name, label) as mine:
        if not mine:
            return _busy(CrawlResult(label, chain=job.chain.name), job)
        result = _crawl(job, client or make_client(job.chain), max_blocks, check or make_check_client(job.chain))
        before, after = result.cursor_before, result.cursor
        if label == FINALIZED and (result.confirmed or result.failed) and before is not None and after is not None:
            ledger_checkpoint(chain=job.chain.name, first=before + 1, last=after)
        return result


def _crawl(job: _Job, client: RpcClient, max_blocks: int | None, check: RpcClient | None) -> CrawlResult:
    label, title = job.label, job.title
    result = CrawlResult(label, chain=job.chain.name)
    try:
        client, tip = run_tip(client, check, job.chain, label=label, final=job.mode.final)
        cursor = cursor_get(chain=job.chain.name, label=label) or _start_cursor(client, job)
        result.cursor_before = result.cursor = cursor.value
    except NoEvidenceError as exc:
        result.held = f"provider gave no evidence: {exc}"
        logger.warning("crawl %s: %s", title, result.held)
        return result
    except ChainMismatchError as exc:
        return _wrong_chain(result, title, exc)
    result.tip = tip
    if tip < cursor.value:
        result.held = (
            f"provider's {label} block {tip} is behind our cursor {cursor.value} (lagging or re-syncing node); waiting"
        )
        logger.warning("crawl %s: %s", title, result.held)
        return result
    final_check = check if job.mode.final else None
    position, position_hash = cursor.value, cursor.block_hash
    budget = max_blocks if max_blocks is not None else float("inf")
    pace = Pace(tip, budget, span=client.log_span, sparse_below=_sparse_ceiling(client, job.mode, tip))
    try:
        while position < tip and pace.used < budget and not shutdown.requested():
            end, sparse = pace.next_range(position, client.log_span)
            scan = _scan_sparse(client, job, position + 1, end) if sparse else None
            first_parent: str | None  # the parent hash of the range's first block, when one was read
            if scan is not None and scan is not TOO_BUSY:
                pace.after_sparse(end - position, len(scan.read), client.log_span)
                if scan.proven:
                    logger.info("balance proof: blocks %d..%d proven complete (%s)", position + 1, end, title)
                    completeness_proven(chain=job.chain.name, label=label, through=end)
                blocks, held, first_parent, reach = scan.blocks, scan.held, scan.first_parent, scan.reach
                proof: SpanLedger | UnprovenSpan | None = scan.ledger
            else:
                # Read in full: no evidence for the sparse path, or a busy stretch (then the following
                # ranges too are read in full, until one holds at most one block with something for us).
                end = pace.full_range_end(position, end)
                found = prove_range(client, job.chain, position + 1, end, job.mode)
                _note_completeness(job, found)
                blocks, held, proof = found.blocks, found.held, found.ledger
                pace.after_full(end - position, blocks, busy=scan is TOO_BUSY, whole=held is None)
                first_parent, reach = (blocks[0].header.parent_hash if blocks else None), None
            if first_parent and position_hash and first_parent != position_hash:
                if not job.mode.final:
                    client.drop_read_ahead()  # read before the re-org: never to be taken for the re-crawl
                    position, position_hash = _rewind_after_reorg(client, job, position)
                    result.cursor = position
                    continue
                result.held = (
                    f"finalized block {position + 1} does not build on the finalized block {position} we recorded"
                )
                logger.critical("crawl %s: %s", title, stuck_message(position + 1, result.held))
                return result
            if final_check is not None and not agreed(final_check, client, job.chain, blocks, reach, result):
                return result
            if held is None and end < tip and pace.used < budget:
                _read_ahead(client, job, end, pace)  # fetched while this range is written
            level = _record(job, blocks, held, result, move_cursor=True, reach=reach, proof=proof)
            if level is not None:
                logger.log(level, "crawl %s: %s", title, result.held)
                return result
            last = reach or (blocks[-1].header if blocks else None)
            if last is None or result.cursor != last.number:
                break  # stopped part-way (shutdown): the next run continues from the cursor
            position, position_hash = last.number, last.hash
    except SoftTimeLimitExceeded:
        raise  # the task's time limit: the next run continues from the cursor
    except Exception as exc:  # no answer, however it reads, makes a run raise: what it stopped at holds
        cause = (str(exc).strip().splitlines() or [""])[0][:200]
        result.held = stuck_message(position + 1, f"reading blocks from here raised {type(exc).__name__}: {cause}")
        logger.exception("crawl %s: %s", title, result.held)
        return result
    finally:
        client.drop_read_ahead()
    if shutdown.requested() and (result.cursor or 0) < tip:
        result.held = f"shutdown requested; stopped between blocks at {result.cursor}, the next run continues"
    return result


def _wrong_chain(result: CrawlResult, title: str, exc: ChainMismatchError) -> CrawlResult:
    """Hold the run: the provider serves another network than the chain's id (the CRITICAL line pages)."""
    result.held = exc.hold_reason()
    logger.critical("crawl %s: %s", title, result.held)
    return result


def _scan_sparse(client: RpcClient, job: _Job, start: int, end: int) -> SparseScan | None:
    """The sparse path over start..end; a final read also reads in full every block our rows name."""
    recorded = functools.partial(recorded_block_numbers, job.chain.name) if job.mode.final else None
    return scan_sparse(client, job.chain, start, end, job.mode, recorded_blocks=recorded)


def _note_completeness(job: _Job, found: ProvenRange) -> None:
    """What the proof established about the range, for /health."""
    if found.proven is not None:
        completeness_proven(chain=job.chain.name, label=job.label, through=found.proven[1])
    if found.unproven is not None:
        completeness_unproven(
            chain=job.chain.name, label=job.label, before=found.unproven.before, why=found.unproven.why
        )


def _record(
    job: _Job,
    blocks: Sequence[ScannedBlock],
    held: BlockHeld | None,
    result: CrawlResult,
    *,
    move_cursor: bool,
    reach: BlockHeader | None = None,
    proof: SpanLedger | UnprovenSpan | None = None,
) -> int | None:
    """Record the scanned blocks; a hold (the scan's, or a block waiting for its price) goes into
    `result.held`, and the level to log it at is returned (ERROR: stuck, WARNING: waiting), else None."""
    recording = record_blocks(
        blocks,
        chain=job.chain,
        cursor=job.label,
        final=job.mode.final,
        tiers=job.config.sale_tiers,
        price_at=eth_price_near,
        tally=result,
        move_cursor=move_cursor,
        reach=reach if held is None else None,
        proof=proof if job.mode.final else None,  # only the finalized crawler publishes the proof
    )
    if recording.stopped:
        return None
    if recording.failed is not None:
        result.held = recording.failed.describe()
        return logging.ERROR
    if recording.price_missing is not None:
        missing = recording.price_missing
        price_request_file(missing.minute)  # outside the rolled-back block: the hold resolves
        # The reason is the price service's: no price near that minute, or one exchange's alone.
        result.held = missing.describe(eth_price_missing(missing.minute))
        return logging.WARNING
    if held is not None:
        result.held = held.describe()
        return logging.ERROR
    return None


def _read_ahead(client: RpcClient, job: _Job, position: int, pace: Pace) -> None:
    """Ask for the next range's first batches now, so they arrive while this one is written (pipelining).
    A Django setting (`CRAWLER_READ_AHEAD = False`, benchmarks comparing with and without) turns it off."""
    if not getattr(settings, "CRAWLER_READ_AHEAD", True):
        return
    end, sparse = pace.next_range(position, client.log_span)
    if sparse:
        client.read_ahead(sparse_first_batch(client, job.chain, position + 1, end))
    else:
        client.read_ahead(*proven_range_first_batches(client, job.chain, position + 1, end, job.mode))


def _sparse_ceiling(client: RpcClient, mode: ReadMode, tip: int) -> int:
    """The last block a sparse range may end at: the tip for the finalized crawler; for the latest one the
    finalized block (the end header alone cannot show that the blocks in between build on our cursor,
    the finalized chain can), or -1 (never sparse) when the provider will not say which that is."""
    if mode.final:
        return tip
    try:
        return tip_block(client, finalized=True)
    except NoEvidenceError:
        return -1


def _rewind_after_reorg(client: RpcClient, job: _Job, position: int) -> tuple[int, str | None]:
    """The chain no longer builds on our cursor's block: re-crawl from a point the re-org cannot reach."""
    floor = job.chain.start_block - 1 if job.chain.start_block else 0
    target = max(position - REORG_REWIND_BLOCKS, floor)
    with contextlib.suppress(NoEvidenceError):  # without the finalized tag, the fixed rewind will do
        target = max(target, min(tip_block(client, finalized=True), position - 1))
    logger.warning("crawl %s: re-org detected at block %d; re-crawling from block %d", job.title, position, target + 1)
    cursor_write(chain=job.chain.name, label=job.label, value=target, block_hash=None)
    return target, None


def crawl_single_block(
    label: str,
    number: int,
    *,
    chain: str | None = None,
    config: Config | None = None,
    client: RpcClient | None = None,
) -> CrawlResult:
    """Re-crawl one block without touching the cursor; writes are idempotent, so nothing is duplicated.
    Takes the crawler's PostgreSQL lock (re-entrant: the judge and the inflow crediting may hold it)."""
    job = _job(label, config, chain)
    with chain_writer(job.chain.name, label) as mine:
        if not mine:
            return _busy(CrawlResult(label, chain=job.chain.name, cursor_before=number, cursor=number, tip=number), job)
        return _crawl_single_block(job, number, client or make_client(job.chain))


def _crawl_single_block(job: _Job, number: int, client: RpcClient) -> CrawlResult:
    label, title = job.label, job.title
    check = make_check_client(job.chain)
    result = CrawlResult(label, chain=job.chain.name, cursor_before=number, cursor=number, tip=number)
    try:
        client, tip = run_tip(client, check, job.chain, label=label, final=job.mode.final)
    except NoEvidenceError as exc:
        result.held = f"provider gave no evidence: {exc}"
        return result
    except ChainMismatchError as exc:
        return _wrong_chain(result, f"{title} --single-block", exc)
    if number > tip:
        result.held = f"block {number} is beyond the provider's {label} block {tip}"
        return result
    found = prove_range(client, job.chain, number, number, job.mode)
    _note_completeness(job, found)
    if check is not None and job.mode.final and not agreed(check, client, job.chain, found.blocks, None, result):
        return result
    if _record(job, found.blocks, found.held, result, move_cursor=False) is not None:
        logger.error("crawl %s --single-block: %s", title, result.held)
    return result
