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

from django.conf import settings

from crawlers.balances import scan_range
from crawlers.blocks import debug_dump, fetch_blocks
from crawlers.cursors import LABELS, ChainTips, CursorRefused, chain_tips, cursor_get, cursor_set, job_name, set_cursor
from crawlers.models import FINALIZED, LATEST, LastBlock
from crawlers.ranges import (
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
from crawlers.rpc import NoEvidenceError, RpcClient, require
from crawlers.sparse import TOO_BUSY, scan_sparse
from crawlers.writing import CrawlResult, quiet, record_blocks
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
    sparse_below = _sparse_ceiling(client, label, tip)
    span = client.log_span  # a sparse range starts as wide as the provider's log span, and adapts
    dense = False  # a busy stretch: read in full, the sparse path would cost more
    used = 0.0  # of the budget: a block read in full costs 1, a block skipped 1 / SPARSE_BLOCKS_PER_UNIT
    while position < tip and used < budget and not shutdown.requested():
        left = budget - used
        end = max(
            position + 1, int(min(tip, position + min(span, client.log_span), position + left * SPARSE_BLOCKS_PER_UNIT))
        )
        if position < sparse_below:
            end = min(end, sparse_below)  # the latest crawler: sparse up to the finalized block, then in full
        sparse = end <= sparse_below and not dense
        scan = scan_sparse(client, config, position + 1, end, label) if sparse else None
        if scan is not None and scan is not TOO_BUSY:
            used += (end - position) / SPARSE_BLOCKS_PER_UNIT + len(scan.read)
            blocks, held, first_parent, reach = scan.blocks, scan.held, scan.first_parent, scan.reach
            # The range grows while the chain is quiet (up to the provider's log span), shrinks where busy.
            busy = len(scan.read)
            span = min(client.log_span, span * 2) if busy <= 2 else max(RANGE_BLOCKS, span // 2) if busy > 8 else span
            dense = busy > 8 and span == RANGE_BLOCKS  # busy even at the smallest span: read in full a while
        else:
            # Read in full: no evidence for the sparse path, or a busy stretch (then the following ranges
            # too are read in full, until one holds at most one block with something for us).
            dense = dense or scan is TOO_BUSY
            span = RANGE_BLOCKS
            end = int(min(end, position + RANGE_BLOCKS, position + max(1, left)))
            blocks, held = scan_range(client, config, position + 1, end, label)
            used += end - position
            first_parent, reach = (blocks[0].header.parent_hash if blocks else None), None
            if dense and held is None and sum(not quiet(b) for b in blocks) <= 1:
                dense = False
        if first_parent and position_hash and first_parent != position_hash:
            if label == LATEST:
                position, position_hash = _rewind_after_reorg(client, position, config)
                result.cursor = position
                continue
            result.held = f"finalized block {position + 1} does not build on the finalized block {position} we recorded"
            logger.critical("crawl %s: %s", label, stuck_message(position + 1, result.held))
            return result
        held = record_blocks(label, blocks, held, config, result, move_cursor=True, reach=reach)
        if held is not None:
            (logger.error if held.stuck else logger.warning)("crawl %s: %s", label, result.held)
            return result
        last = reach or (blocks[-1].header if blocks else None)
        if last is None or result.cursor != last.number:
            break  # stopped part-way (shutdown): the next run continues from the cursor
        position, position_hash = last.number, last.hash
    if shutdown.requested() and (result.cursor or 0) < tip:
        result.held = f"shutdown requested; stopped between blocks at {result.cursor}, the next run continues"
    return result


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
