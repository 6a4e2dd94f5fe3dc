"""The latest and finalized crawlers: one run of the crawl loop, which reads as scan, prove, record.

The stages live in the rooms below: `scan` reads a range (`ranges`, the sparse path) and proves it
complete against the donation address's balances (`proof`); `record` writes the scanned blocks with the
cursor, and what the proof established about completeness. The loop plans its next ranges ahead and
has up to DWS_RPC_MAX_IN_FLIGHT of them proven side by side (`scan.pipeline`), while it records them
here, on its own thread, strictly in order: each only after every range before it, only if it builds on
the block recorded last, and nothing after a hold.

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
from crawlers.chain.logs import ForeignLogs
from crawlers.chain.outcomes import NoEvidenceError
from crawlers.chain.rpc import RpcClient
from crawlers.chain.tips import ChainMismatchError, tip_block
from crawlers.decode.blocks import BlockHeader
from crawlers.models import FINALIZED, LATEST, LastBlock
from crawlers.record.blocks import record_blocks
from crawlers.record.completeness import completeness_proven, completeness_unproven
from crawlers.record.cursors import cursor_get, cursor_write
from crawlers.runs.checkpoint import ledger_checkpoint
from crawlers.runs.coin_scales import require_coin_scales
from crawlers.runs.pace import Pace
from crawlers.runs.results import CrawlResult, run_title
from crawlers.runs.second_provider import CheckSilent, agreed, run_tip
from crawlers.scan.agreement import RangeClaim
from crawlers.scan.ledger import SpanLedger, UnprovenSpan
from crawlers.scan.pipeline import Planned, Proven, RangePipeline, prove_planned
from crawlers.scan.proof import ProvenRange, prove_range
from crawlers.scan.results import BlockHeld, ReadMode, ScannedBlock, stuck_message
from donations.selectors import recorded_block_numbers
from dws_project import shutdown
from dws_project.chain_settings import ChainSettings
from dws_project.config import Config
from dws_project.locks import DATABASE_GONE, chain_writer
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
        require_coin_scales(job.chain)
        cursor = cursor_get(chain=job.chain.name, label=label) or _start_cursor(client, job)
        result.cursor_before = result.cursor = cursor.value
    except NoEvidenceError as exc:
        result.held = str(exc) if isinstance(exc, CheckSilent) else f"provider gave no evidence: {exc}"
        logger.warning("crawl %s: %s", title, result.held)
        return result
    except ChainMismatchError as exc:
        return _wrong_chain(result, title, exc)
    result.tip = tip
    if tip < cursor.value:
        if cursor.block_hash is None:
            # A cursor no run has crawled to (a fresh install starts both crawlers at the head; set_cursor): the
            # finalized tag reaches it minutes later. Nothing to do yet, and nothing wrong.
            logger.info(
                "crawl %s: waiting for the %s block to reach block %d (now %d)", title, label, cursor.value, tip
            )
            return result
        result.held = (
            f"provider's {label} block {tip} is behind our cursor {cursor.value} (lagging or re-syncing node); waiting"
        )
        logger.warning("crawl %s: %s", title, result.held)
        return result
    final_check = check if job.mode.final else None
    position, position_hash = cursor.value, cursor.block_hash
    budget = max_blocks if max_blocks is not None else float("inf")
    pace = Pace(tip, budget, span=client.log_span, sparse_below=_sparse_ceiling(client, job.mode, tip))
    prove = functools.partial(prove_planned, client, job.chain, job.mode)
    pipeline = RangePipeline(prove, client.in_flight_allowed())  # 1 for a while after a time-out beside others
    planned_to = position  # the last block of the last range planned
    try:
        while True:
            # Plan ahead while there is room: the next ranges are proven while the earliest is recorded.
            while (
                planned_to < tip and pace.left() > 0 and pipeline.has_room(full=pace.dense) and not shutdown.requested()
            ):
                planned_to = _plan(pipeline, pace, job, planned_to, client.log_span)
            if not len(pipeline) or shutdown.requested():
                break  # caught up, or asked to stop: what is planned and not recorded is dropped below
            found = pipeline.next()
            pace.release(found.planned)
            if found.end != found.planned.end or _rows_since_planned(job, found):
                # Read in full (no evidence for the sparse path, a busy stretch: RANGE_BLOCKS of it), or our
                # rows name a block that was not read: the ranges planned after it are planned again.
                for dropped in pipeline.drop():
                    pace.release(dropped)
                if found.end == found.planned.end:
                    found = prove(_replanned(job, found.planned))  # the blocks our rows name now, read too
                planned_to = found.end
            blocks, held, first_parent, reach, proof = (
                found.blocks,
                found.held,
                found.first_parent,
                found.reach,
                found.proof,
            )
            if found.sparse is not None:
                pace.after_sparse(found.end - position, len(found.sparse.read), client.log_span)
                if found.sparse.proven:
                    logger.info("balance proof: blocks %d..%d proven complete (%s)", position + 1, found.end, title)
                    completeness_proven(chain=job.chain.name, label=label, through=found.end)
            elif found.full is not None:
                _note_completeness(job, found.full)
                pace.after_full(found.end - position, blocks, busy=found.busy, whole=held is None)
            if first_parent and position_hash and first_parent != position_hash:
                if not job.mode.final:
                    for dropped in pipeline.drop():  # proven on a chain that no longer is: never recorded
                        pace.release(dropped)
                    position, position_hash = _rewind_after_reorg(client, job, position)
                    planned_to = position
                    result.cursor = position
                    continue
                result.held = (
                    f"finalized block {position + 1} does not build on the finalized block {position} we recorded"
                )
                logger.critical("crawl %s: %s", title, stuck_message(position + 1, result.held))
                return result
            if final_check is not None:
                closing = reach or (blocks[-1].header if blocks else None)
                claim = RangeClaim(
                    found.planned.start - 1,
                    blocks,
                    closing,
                    proof,
                    found.codes,
                    job.run,
                    foreign=found.foreign,
                    safe=found.sparse.safe_claim if found.sparse is not None else None,
                )
                if not agreed(final_check, client, job.chain, claim, result):
                    return result
            level = _record(
                job, blocks, held, result, move_cursor=True, reach=reach, proof=proof, foreign=found.foreign
            )
            if level is not None:
                logger.log(level, "crawl %s: %s", title, result.held)
                return result  # nothing planned after a hold is recorded (the pipeline is dropped below)
            last = reach or (blocks[-1].header if blocks else None)
            if last is None or result.cursor != last.number:
                break  # stopped part-way (shutdown): the next run continues from the cursor
            position, position_hash = last.number, last.hash
    except (SoftTimeLimitExceeded, *DATABASE_GONE):
        # The task's time limit, or the database gone (the run is held with one WARNING line, no traceback:
        # runs/jobs.py): the next run continues from the cursor.
        raise
    except Exception as exc:  # no answer, however it reads, makes a run raise: what it stopped at holds
        cause = (str(exc).strip().splitlines() or [""])[0][:200]
        result.held = stuck_message(position + 1, f"reading blocks from here raised {type(exc).__name__}: {cause}")
        logger.exception("crawl %s: %s", title, result.held)
        return result
    finally:
        pipeline.close()
    if shutdown.requested() and (result.cursor or 0) < tip:
        result.held = f"shutdown requested; stopped between blocks at {result.cursor}, the next run continues"
    return result


def _plan(pipeline: RangePipeline, pace: Pace, job: _Job, position: int, log_span: int) -> int:
    """Plan (and start proving) the range after `position`; returns its last block."""
    end, sparse = pace.next_range(position, log_span)
    planned = Planned(position + 1, end, sparse)
    pipeline.submit(_replanned(job, planned))
    pace.reserve(planned)
    return end


def _replanned(job: _Job, planned: Planned) -> Planned:
    """`planned` with the blocks our rows name in it now (a final sparse read reads each in full)."""
    if not (planned.sparse and job.mode.final):
        return planned
    named = frozenset(recorded_block_numbers(job.chain.name, planned.start, planned.end))
    return dataclasses.replace(planned, recorded=named)


def _rows_since_planned(job: _Job, found: Proven) -> bool:
    """Whether our rows name a block of a final sparse range that they did not name when it was planned
    (the latest crawler recorded it meanwhile): the range is then proven again, reading that block too."""
    planned = found.planned
    if not (planned.sparse and job.mode.final and found.sparse is not None):
        return False
    named = set(recorded_block_numbers(job.chain.name, planned.start, planned.end))
    return bool(named - (planned.recorded or frozenset()))


def _wrong_chain(result: CrawlResult, title: str, exc: ChainMismatchError) -> CrawlResult:
    """Hold the run: the provider serves another network than the chain's id (the CRITICAL line pages)."""
    result.held = exc.hold_reason()
    logger.critical("crawl %s: %s", title, result.held)
    return result


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
    foreign: ForeignLogs | None = None,
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
        foreign=foreign if job.mode.final else None,  # and records the coins the sale does not take
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
        require_coin_scales(job.chain)
    except NoEvidenceError as exc:
        result.held = str(exc) if isinstance(exc, CheckSilent) else f"provider gave no evidence: {exc}"
        result.waiting_for_check = isinstance(exc, CheckSilent)
        return result
    except ChainMismatchError as exc:
        return _wrong_chain(result, f"{title} --single-block", exc)
    if number > tip:
        result.held = f"block {number} is beyond the provider's {label} block {tip}"
        return result
    found = prove_range(client, job.chain, number, number, job.mode)
    _note_completeness(job, found)
    if check is not None and job.mode.final:
        closing = found.blocks[-1].header if found.blocks else None
        claim = RangeClaim(number - 1, found.blocks, closing, found.ledger, found.codes, job.run)
        if not agreed(check, client, job.chain, claim, result):
            return result
    if _record(job, found.blocks, found.held, result, move_cursor=False) is not None:
        logger.error("crawl %s --single-block: %s", title, result.held)
    return result
