"""The latest and finalized crawlers: the crawl loop.

The concerns live next door: `ranges` reads a range of blocks, `balances` proves it complete against
the donation address's balances, `writing` records scanned blocks, `cursors` keeps the positions.

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
import logging
from dataclasses import dataclass

from django.conf import settings

from crawlers.chain.block_store import debug_dump, fetch_blocks
from crawlers.chain.rpc import NoEvidenceError, RpcClient, require
from crawlers.models import FINALIZED, LATEST, LastBlock
from crawlers.record.blocks import CrawlResult, quiet, record_blocks
from crawlers.record.cursors import (
    LABELS,
    ChainTips,
    CursorRefused,
    chain_tips,
    cursor_get,
    cursor_set,
    job_name,
    set_cursor,
)
from crawlers.scan.proof import scan_range, scan_range_opening
from crawlers.scan.ranges import (
    PROBE_TIMEOUT,
    RANGE_BLOCKS,
    RECONCILE,
    STUCK_POINTER,
    BlockHeld,
    ScannedBlock,
    make_client,
    make_probe_client,
    stuck_message,
)
from crawlers.scan.sparse import TOO_BUSY, scan_sparse
from crawlers.scan.sparse import enabled as sparse_enabled
from crawlers.scan.sparse import opening_calls as sparse_opening
from dws_project import shutdown
from dws_project.config import Config

# Names other modules have always imported from here; their homes are the modules above.
__all__ = [
    "LABELS",
    "PROBE_TIMEOUT",
    "RANGE_BLOCKS",
    "RECONCILE",
    "STUCK_POINTER",
    "BlockHeld",
    "ChainTips",
    "CrawlResult",
    "CursorRefused",
    "ScannedBlock",
    "chain_tips",
    "crawl",
    "crawl_single_block",
    "cursor_get",
    "cursor_set",
    "debug_dump",
    "fetch_blocks",
    "job_name",
    "make_client",
    "make_probe_client",
    "scan_range",
    "set_cursor",
    "tip_of",
]

logger = logging.getLogger("dws.crawlers")

REORG_REWIND_BLOCKS = 64  # how far back the latest crawler re-crawls after noticing a re-org
# The per-run cap (`max_blocks`) counts blocks read in full; a block a sparse range skips costs a
# twentieth of one (a 2,000-block quiet range is one post, about what 50 full blocks cost in time).
SPARSE_BLOCKS_PER_UNIT = 20


# --- the crawl loop -------------------------------------------------------------------------------


def tip_of(client: RpcClient, label: str) -> int:
    if label == LATEST:
        return client.block_number()
    block = require(client.call("eth_getBlockByNumber", ["finalized", False]))
    return int(block["number"], 16)


def _start_cursor(client: RpcClient, label: str, config: Config) -> LastBlock:
    """A first run begins at DWS_START_BLOCK, else at the current head (the cursor is the block before)."""
    start = config.start_block if config.start_block is not None else client.block_number()
    cursor_set(label, max(start - 1, 0))
    logger.info("crawl %s: no cursor yet; starting at block %d", label, start)
    return cursor_get(label)  # type: ignore[return-value]


def crawl(
    label: str, *, config: Config | None = None, client: RpcClient | None = None, max_blocks: int | None = None
) -> CrawlResult:
    """One run of the `label` crawler: from its cursor towards the tip until caught up or held."""
    config = config or settings.CONFIG
    client = client or make_client(config)
    result = CrawlResult(label)
    try:
        client.check_chain_id(config.chain_id)
        cursor = cursor_get(label) or _start_cursor(client, label, config)
        result.cursor_before = result.cursor = cursor.value
        tip = tip_of(client, label)
    except NoEvidenceError as exc:
        result.held = f"provider gave no evidence: {exc}"
        logger.warning("crawl %s: %s", label, result.held)
        return result
    result.tip = tip
    if tip < cursor.value:
        result.held = (
            f"provider's {label} block {tip} is behind our cursor {cursor.value} (lagging or re-syncing node); waiting"
        )
        logger.warning("crawl %s: %s", label, result.held)
        return result
    position, position_hash = cursor.value, cursor.block_hash
    budget = max_blocks if max_blocks is not None else float("inf")
    pace = _Pace(tip, budget, span=client.log_span, sparse_below=_sparse_ceiling(client, label, tip))
    try:
        while position < tip and pace.used < budget and not shutdown.requested():
            end, sparse = pace.next_range(position, client.log_span)
            scan = scan_sparse(client, config, position + 1, end, label) if sparse else None
            if scan is not None and scan is not TOO_BUSY:
                pace.after_sparse(end - position, len(scan.read), client.log_span)
                blocks, held, first_parent, reach = scan.blocks, scan.held, scan.first_parent, scan.reach
            else:
                # Read in full: no evidence for the sparse path, or a busy stretch (then the following
                # ranges too are read in full, until one holds at most one block with something for us).
                end = pace.full_range_end(position, end)
                blocks, held = scan_range(client, config, position + 1, end, label)
                pace.after_full(end - position, blocks, busy=scan is TOO_BUSY, whole=held is None)
                first_parent, reach = (blocks[0].header.parent_hash if blocks else None), None
            if first_parent and position_hash and first_parent != position_hash:
                if label == LATEST:
                    client.drop_read_ahead()  # read before the re-org: never to be taken for the re-crawl
                    position, position_hash = _rewind_after_reorg(client, position, config)
                    result.cursor = position
                    continue
                result.held = (
                    f"finalized block {position + 1} does not build on the finalized block {position} we recorded"
                )
                logger.critical("crawl %s: %s", label, stuck_message(position + 1, result.held))
                return result
            if held is None and end < tip and pace.used < budget:
                _read_ahead(client, config, label, end, pace)  # fetched while this range is written
            held = record_blocks(label, blocks, held, config, result, move_cursor=True, reach=reach)
            if held is not None:
                (logger.error if held.stuck else logger.warning)("crawl %s: %s", label, result.held)
                return result
            last = reach or (blocks[-1].header if blocks else None)
            if last is None or result.cursor != last.number:
                break  # stopped part-way (shutdown): the next run continues from the cursor
            position, position_hash = last.number, last.hash
    finally:
        client.drop_read_ahead()
    if shutdown.requested() and (result.cursor or 0) < tip:
        result.held = f"shutdown requested; stopped between blocks at {result.cursor}, the next run continues"
    return result


@dataclass
class _Pace:
    """How the loop reads its next range: sparse ranges grow while the chain is quiet (up to the
    provider's log span) and shrink where it is busy; a stretch busy even at the smallest span is read
    in full for a while. `used` counts the run's budget: a block read in full costs 1, a block a sparse
    range skips 1 / SPARSE_BLOCKS_PER_UNIT."""

    tip: int
    budget: float  # the run's cap (`max_blocks`)
    span: int
    sparse_below: int  # the last block a sparse range may end at (see _sparse_ceiling)
    dense: bool = False
    used: float = 0.0

    def next_range(self, position: int, log_span: int) -> tuple[int, bool]:
        """The next range's end after `position`, and whether to try it the sparse way."""
        left = self.budget - self.used
        reach = min(self.span, log_span, left * SPARSE_BLOCKS_PER_UNIT)
        end = max(position + 1, int(min(self.tip, position + reach)))
        if position < self.sparse_below:
            end = min(end, self.sparse_below)  # the latest crawler: sparse up to the finalized block, then in full
        sparse = end <= self.sparse_below and not self.dense and sparse_enabled() and position >= 0
        return (end if sparse else self.full_range_end(position, end)), sparse

    def full_range_end(self, position: int, end: int) -> int:
        """`end` cut to a range read in full: RANGE_BLOCKS at most, and what the budget has left."""
        return int(min(end, position + RANGE_BLOCKS, position + max(1, self.budget - self.used)))

    def after_sparse(self, blocks: int, busy: int, log_span: int) -> None:
        self.used += blocks / SPARSE_BLOCKS_PER_UNIT + busy
        if busy <= 2:
            self.span = min(log_span, self.span * 2)
        elif busy > 8:
            self.span = max(RANGE_BLOCKS, self.span // 2)
        self.dense = busy > 8 and self.span == RANGE_BLOCKS  # busy even at the smallest span: read in full a while

    def after_full(self, blocks: int, scanned: list, *, busy: bool, whole: bool) -> None:
        self.used += blocks
        self.span = RANGE_BLOCKS
        self.dense = self.dense or busy
        if self.dense and whole and sum(not quiet(b) for b in scanned) <= 1:
            self.dense = False


def _read_ahead(client: RpcClient, config: Config, label: str, position: int, pace: _Pace) -> None:
    """Ask for the next range's first batches now, so they arrive while this one is written (pipelining).
    A Django setting (`CRAWLER_READ_AHEAD = False`, benchmarks comparing with and without) turns it off."""
    if not getattr(settings, "CRAWLER_READ_AHEAD", True):
        return
    end, sparse = pace.next_range(position, client.log_span)
    if sparse:
        client.read_ahead(sparse_opening(client, config, position + 1, end))
    else:
        client.read_ahead(*scan_range_opening(client, config, position + 1, end, label))


def _sparse_ceiling(client: RpcClient, label: str, tip: int) -> int:
    """The last block a sparse range may end at: the tip for the finalized crawler; for the latest one the
    finalized block (the end header alone cannot show that the blocks in between build on our cursor,
    the finalized chain can), or -1 (never sparse) when the provider will not say which that is."""
    if label == FINALIZED:
        return tip
    try:
        return tip_of(client, FINALIZED)
    except NoEvidenceError:
        return -1


def _rewind_after_reorg(client: RpcClient, position: int, config: Config) -> tuple[int, str | None]:
    """The chain no longer builds on our cursor's block: re-crawl from a point the re-org cannot reach."""
    floor = config.start_block - 1 if config.start_block else 0
    target = max(position - REORG_REWIND_BLOCKS, floor)
    with contextlib.suppress(NoEvidenceError):  # without the finalized tag, the fixed rewind will do
        target = max(target, min(tip_of(client, FINALIZED), position - 1))
    logger.warning("crawl latest: re-org detected at block %d; re-crawling from block %d", position, target + 1)
    cursor_set(LATEST, target, None)
    return target, None


def crawl_single_block(
    label: str, number: int, *, config: Config | None = None, client: RpcClient | None = None
) -> CrawlResult:
    """Re-crawl one block without touching the cursor; writes are idempotent, so nothing is duplicated."""
    config = config or settings.CONFIG
    client = client or make_client(config)
    result = CrawlResult(label, cursor_before=number, cursor=number, tip=number)
    try:
        client.check_chain_id(config.chain_id)
        tip = tip_of(client, label)
    except NoEvidenceError as exc:
        result.held = f"provider gave no evidence: {exc}"
        return result
    if number > tip:
        result.held = f"block {number} is beyond the provider's {label} block {tip}"
        return result
    blocks, held = scan_range(client, config, number, number, label)
    if record_blocks(label, blocks, held, config, result, move_cursor=False) is not None:
        logger.error("crawl %s --single-block: %s", label, result.held)
    return result
