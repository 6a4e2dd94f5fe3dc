"""Writing scanned blocks: pricing their new transfers, recording them (unconfirmed by the latest crawler,
confirmed by the finalized one), moving the cursor in the same transaction, and reporting a hold."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction

from crawlers.decode.transfers import BlockHeader, Transfer
from crawlers.models import LATEST
from crawlers.record.cursors import cursor_set
from crawlers.record.inflows import inflow_record
from crawlers.scan.ranges import BlockHeld, ScannedBlock
from donations.models import Donation, DonationStatus
from donations.services import Outcome, Sighting, block_record_unconfirmed, finalized_block_record
from dws_project import shutdown
from dws_project.config import Config
from prices.models import ETH, Price, PriceRequest

logger = logging.getLogger("dws.crawlers")

PRICE_WINDOW = timedelta(seconds=90)  # ETH price searched within +-1.5 minutes of the block's minute


@dataclass
class CrawlResult:
    label: str
    cursor_before: int | None = None
    cursor: int | None = None
    tip: int | None = None  # head (latest) or finalized block the run aimed for
    blocks: int = 0
    inserted: int = 0
    confirmed: int = 0
    failed: int = 0
    held: str | None = None  # why the run stopped short of the tip

    @property
    def more_to_do(self) -> bool:
        """The run stopped at its per-run cap, not at a hold, with blocks before its tip still to do."""
        return self.held is None and self.blocks > 0 and None not in (self.cursor, self.tip) and self.cursor < self.tip

    def summary(self) -> str:
        text = (
            f"crawl {self.label}: cursor {self.cursor_before} -> {self.cursor} (tip {self.tip}), "
            f"{self.blocks} block(s), {self.inserted} inserted, {self.confirmed} confirmed, {self.failed} failed"
        )
        return text + (f"; held: {self.held}" if self.held else "")


# --- pricing --------------------------------------------------------------------------------------


def block_minute(when: datetime) -> datetime:
    return when.replace(second=0, microsecond=0)


def eth_price_near(minute: datetime) -> Price | None:
    """The ETH price row nearest the block's minute within +-1.5 minutes."""
    rows = list(Price.objects.filter(asset=ETH, created_at__range=(minute - PRICE_WINDOW, minute + PRICE_WINDOW)))
    return min(rows, key=lambda r: (abs(r.created_at - minute), r.created_at), default=None)


def price_request_file(minute: datetime) -> PriceRequest:
    """Ask the price service for a historical minute; filing twice is a no-op."""
    request, created = PriceRequest.objects.get_or_create(asset=ETH, requested_at=minute)
    if created:
        logger.info("filed a price request for ETH at %s", minute.isoformat())
    return request


def _sightings(block: ScannedBlock, transfers: Sequence[Transfer]) -> list[Sighting]:
    """A block's transfers with the ETH price of its minute; raises BlockHeld when an ETH transfer has no
    price yet. The price goes into the row as is (`rules.donation_tokens` applies it)."""
    if not transfers:
        return []
    eth_price = None
    if any(t.asset == "eth" for t in transfers):
        minute = block_minute(block.header.time)
        row = eth_price_near(minute)
        if row is None:
            raise BlockHeld(
                block.header.number,
                f"no ETH price within 1.5 minutes of {minute:%Y-%m-%d %H:%M} UTC; a price request is filed, waiting",
                stuck=False,
                price_minute=minute,
            )
        eth_price = row.price
    return [Sighting(transfer=t, block_time=block.header.time, eth_price=eth_price) for t in transfers]


def _key(transfer: Transfer) -> tuple:
    return transfer.tx_hash, transfer.log_index, transfer.trace_address


def _recorded_here(transfers: Sequence[Transfer], *, failed_too: bool = False) -> dict[tuple, Donation]:
    """The rows already recorded from this very block for these transfers, by identity, in one query
    (the rest need a price). `failed_too`: a failed row counts as not recorded, since the finalized
    crawler records it anew from this sighting."""
    if not transfers:
        return {}
    rows = Donation.objects.filter(tx_hash__in={t.tx_hash for t in transfers})
    if failed_too:
        rows = rows.exclude(status=DonationStatus.FAILED)
    here = {(r.tx_hash, r.log_index, r.trace_address, r.block_hash): r for r in rows}
    return {_key(t): here[(*_key(t), t.block_hash)] for t in transfers if (*_key(t), t.block_hash) in here}


# --- writing one block ----------------------------------------------------------------------------


def _write_latest(block: ScannedBlock, config: Config) -> int:
    recorded = _recorded_here(block.transfers)
    sightings = _sightings(block, [t for t in block.transfers if _key(t) not in recorded])
    inserted = 0
    for sighting, (_, outcome) in zip(
        sightings, block_record_unconfirmed(sightings=sightings, tiers=config.sale_tiers), strict=True
    ):
        inserted += outcome != Outcome.UNCHANGED
        logger.info(
            "latest: %s donation %s of %s %s from %s in block %d (%s)",
            sighting.transfer.asset,
            sighting.transfer.tx_hash,
            sighting.transfer.amount,
            sighting.transfer.asset,
            sighting.transfer.donor,
            block.header.number,
            outcome,
        )
    return inserted


def _write_finalized(block: ScannedBlock, config: Config) -> tuple[int, int, int]:
    if not block.transfers and not block.reverted:
        return 0, 0, 0
    # Rows already seen in this block keep how they were priced; only new sightings need a price.
    recorded = _recorded_here(block.transfers, failed_too=True)
    priced = {_key(s.transfer): s for s in _sightings(block, [t for t in block.transfers if _key(t) not in recorded])}
    sightings = [
        priced.get(_key(t)) or Sighting(transfer=t, block_time=block.header.time, eth_price=recorded[_key(t)].eth_price)
        for t in block.transfers
    ]
    result = finalized_block_record(sightings=sightings, reverted_tx_hashes=block.reverted, tiers=config.sale_tiers)
    if sightings or result.failed:
        logger.info(
            "finalized: block %d: %d confirmed, %d inserted, %d held (paused), %d failed (reverted)",
            block.header.number,
            result.confirmed,
            result.inserted,
            result.held_paused,
            result.failed,
        )
    return result.inserted, result.confirmed, result.failed


def _write_block(label: str, block: ScannedBlock, config: Config, result: CrawlResult) -> None:
    if label == LATEST:
        result.inserted += _write_latest(block, config)
    else:
        inserted, confirmed, failed = _write_finalized(block, config)
        # After the block's donations: a block rolled back for a missing price records nothing, logs nothing.
        for asset, raw in block.unexplained:
            inflow_record(config, block=block.header, asset=asset, raw=raw)
        result.inserted += inserted
        result.confirmed += confirmed
        result.failed += failed


def quiet(block: ScannedBlock) -> bool:
    """A block with nothing to write: no donation, no revert, no unexplained inflow."""
    return not block.transfers and not block.reverted and not block.unexplained


def record_blocks(
    label: str,
    blocks: Sequence[ScannedBlock],
    held: BlockHeld | None,
    config: Config,
    result: CrawlResult,
    *,
    move_cursor: bool,
    reach: BlockHeader | None = None,
) -> BlockHeld | None:
    """Write the scanned blocks, stopping at the first that cannot be proven; return that hold, or the
    scan's own, already reported.

    A block with something to write gets a transaction of its own, which moves the cursor too (past
    the quiet blocks before it). A run of quiet blocks costs one cursor UPDATE at its end, and `reach`
    (the end of a sparse range, proven quiet after the last block written) one more. SIGTERM stops
    between blocks, never inside one.
    """
    pending: BlockHeader | None = None  # the last quiet block passed, the cursor not yet moved over it
    stopped = False
    try:
        for block in blocks:
            if shutdown.requested():
                stopped = True
                break
            if move_cursor and quiet(block):
                pending = block.header
                continue
            with transaction.atomic():
                _write_block(label, block, config, result)
                if move_cursor:
                    cursor_set(label, block.header.number, block.header.hash)
            pending = None
            _passed(result, block.header.number, move_cursor)
        else:
            if held is None and reach is not None:
                pending = reach
    except BlockHeld as exc:
        held = exc
    if pending is not None:
        cursor_set(label, pending.number, pending.hash)
        _passed(result, pending.number, move_cursor)
    if stopped:
        return None
    if held is not None:
        # Outside the rolled-back block transaction: ask for the missing price, so the hold resolves.
        if held.price_minute is not None:
            price_request_file(held.price_minute)
        result.held = held.describe()
    return held


def _passed(result: CrawlResult, number: int, move_cursor: bool) -> None:
    """Count the blocks the cursor moved over (one for a single-block re-crawl)."""
    if not move_cursor:
        result.blocks += 1
        return
    result.blocks += number - (result.cursor if result.cursor is not None else number - 1)
    result.cursor = number
