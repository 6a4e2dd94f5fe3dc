"""Recording scanned blocks: their new transfers priced and written (unconfirmed from the head, confirmed
from a final block), a final block's unexplained inflows, and the cursor moved in the same transaction.

A final block's transaction writes its donation rows, inflows, cursor and proof publication first and
takes the campaign row (`donation_stats`, one for every chain) last, only to price at the confirmed total
and credit (donations/finalized.py): the chains' blocks queue on that lock for their crediting only.

The only writer of a scanned block's rows. Prices are looked up by the caller's `price_at` (the run
passes the price service's lookup); a block whose ETH transfer has no price yet is rolled back and
reported as `PriceMissing`, so the run can file a price request and wait.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db import InterfaceError, OperationalError, transaction

from crawlers.chain.logs import ForeignLogs
from crawlers.decode.amounts import raw_units
from crawlers.decode.blocks import BlockHeader
from crawlers.record.cursors import cursor_write
from crawlers.record.inflows import inflow_record
from crawlers.record.movements import movements_record
from crawlers.record.proof_ranges import proof_range_record
from crawlers.record.strays import foreign_counts_record, strays_record
from crawlers.scan.ledger import SpanLedger, UnprovenSpan
from crawlers.scan.own import open_mints
from crawlers.scan.results import BlockHeld, ScannedBlock
from donations.finalized import FinalizedRows, finalized_block_credit, finalized_block_rows
from donations.identity import records_as_seen
from donations.models import Donation, DonationStatus
from donations.refunds import refund_payouts_record
from donations.replaced import donations_mark_block_replaced
from donations.services import DonationOutcome, block_record_unconfirmed
from donations.sightings import DonationKey, Sighting, Transfer, donation_key, donation_unholdable
from donations.webhooks import webhook_endpoints_once
from dws_project import shutdown
from dws_project.chain_settings import ChainSettings
from dws_project.config_values import SaleTier
from dws_project.locks import ChainWriterBusy, chain_writer_check
from prices.services import minute_of

logger = logging.getLogger("dws.crawlers")

PriceAt = Callable[[datetime], Decimal | None]  # a block's minute -> the ETH price to apply, or None yet


@dataclass(kw_only=True)
class BlockTally:
    """What recording did: the cursor it reached, the blocks it passed, the rows it wrote."""

    cursor: int | None = None
    blocks: int = 0
    inserted: int = 0
    confirmed: int = 0
    failed: int = 0


class PriceMissing(Exception):
    """A block's ETH transfer has no price yet: its transaction was rolled back, the cursor is before it."""

    def __init__(self, number: int, minute: datetime) -> None:
        self.number = number
        self.minute = minute  # the minute to file a price request for
        super().__init__(
            f"no ETH price within 1.5 minutes of {minute:%Y-%m-%d %H:%M} UTC; a price request is filed, waiting"
        )

    def describe(self, reason: str | None = None) -> str:
        """The hold's text; `reason` (the price service's, when it knows more) replaces the generic one."""
        return f"block: {self.number} -- {reason or self}"


@dataclass(frozen=True)
class Recording:
    """How `record_blocks` ended: stopped by a shutdown request, at a block without a price, or at a block
    whose write failed (rolled back: the cursor stays before it)."""

    stopped: bool = False
    price_missing: PriceMissing | None = None
    failed: BlockHeld | None = None


def _failure(block: ScannedBlock, exc: Exception) -> BlockHeld:
    """A block whose write raised: a hold naming the block, each of its transfers (asset and transaction)
    and what was raised. No transaction anyone can send may make the run raise instead."""
    cause = (str(exc).strip().splitlines() or [""])[0][:200]
    named = [
        f"{t.asset} {t.tx_hash}"
        + (f" log {t.log_index}" if t.log_index is not None else "")
        + (f" frame {t.trace_address[:40]}" if t.trace_address else "")
        for t in block.transfers
    ]
    named += [f"eth {tx} (reverted)" for tx in block.reverted]
    named += [f"{asset} unexplained inflow of {raw}" for asset, raw in block.unexplained]
    listed = ", ".join(named[:5]) + (f" and {len(named) - 5} more" if len(named) > 5 else "")
    return BlockHeld(
        block.header.number,
        f"writing the block failed ({type(exc).__name__}: {cause}); nothing of it is recorded; it holds {listed}",
    )


@dataclass(frozen=True)
class _Writer:
    chain: ChainSettings
    cursor: str  # the label of the cursor row (`last_block`) moved with each block
    final: bool  # the blocks are finalized: confirm, fail reverts, record unexplained inflows
    tiers: Sequence[SaleTier]
    price_at: PriceAt


def _sightings(writer: _Writer, block: ScannedBlock, transfers: Sequence[Transfer]) -> list[Sighting]:
    """A block's transfers with the ETH price of its minute; raises PriceMissing when an ETH transfer has no
    price yet. The price goes into the row as is (`rules.donation_tokens` applies it)."""
    if not transfers:
        return []
    eth_price = None
    if any(t.asset == "eth" for t in transfers):
        minute = minute_of(block.header.time)
        eth_price = writer.price_at(minute)
        if eth_price is None:
            raise PriceMissing(block.header.number, minute)
    chain = writer.chain.name
    return [Sighting(chain=chain, transfer=t, block_time=block.header.time, eth_price=eth_price) for t in transfers]


def _set_aside(writer: _Writer, block: ScannedBlock, sightings: Sequence[Sighting]) -> list[Sighting]:
    """The sightings the donation columns can hold; each other one (an amount, USD value, tokens or log index
    past its column: `donation_unholdable`) is logged naming its transaction and asset and, from a final
    block, set aside for the operator as an unexplained inflow of its raw amount, with the reason. No amount
    anyone can send stops the block or the assets beside it."""
    kept = []
    for sighting in sightings:
        t = sighting.transfer
        why = donation_unholdable(t, eth_price=sighting.eth_price, tiers=writer.tiers)
        if why is None:
            kept.append(sighting)
            continue
        where = f" log {t.log_index}" if t.log_index is not None else ""
        where += f" frame {t.trace_address}" if t.trace_address else ""
        reason = f"{t.asset} transfer {t.tx_hash}{where} from {t.donor} cannot be a donation row: {why}"
        if writer.final:
            block.add_unexplained(t.asset, raw_units(writer.chain, t), reason)
        logger.error(
            "block %d of %s: %s; %s",
            block.header.number,
            writer.chain.name,
            reason,
            "set aside for the operator as an unexplained inflow" if writer.final else "recorded once final",
        )
    return kept


def _recorded_here(
    chain: str, transfers: Sequence[Transfer], *, final_at: datetime | None = None
) -> dict[DonationKey, Donation]:
    """The rows already recorded from this very block for these transfers, by identity, in one query
    (the rest need a price). `final_at` (the finalized crawler's: the block's time): a failed row counts as
    not recorded, nor one that records another transfer or time than this block shows (the latest crawler's
    provider said otherwise): the finalized crawler records those anew from this sighting."""
    if not transfers:
        return {}
    rows = Donation.objects.filter(chain=chain, tx_hash__in={t.tx_hash for t in transfers})
    if final_at is not None:
        rows = rows.exclude(status=DonationStatus.FAILED)
    here = {(donation_key(r), r.block_hash): r for r in rows}
    return {
        donation_key(t): row
        for t in transfers
        if (row := here.get((donation_key(t), t.block_hash))) is not None
        and (final_at is None or records_as_seen(row, t, final_at))
    }


# --- writing one block ----------------------------------------------------------------------------


def _write_latest(writer: _Writer, block: ScannedBlock) -> int:
    recorded = _recorded_here(writer.chain.name, block.transfers)
    new = [t for t in block.transfers if donation_key(t) not in recorded]
    sightings = _set_aside(writer, block, _sightings(writer, block, new))
    inserted = 0
    written = block_record_unconfirmed(chain=writer.chain.name, sightings=sightings, tiers=writer.tiers)
    for sighting, (_, outcome) in zip(sightings, written, strict=True):
        inserted += outcome != DonationOutcome.UNCHANGED
        logger.info(
            "latest: %s donation %s of %s %s from %s in block %d of %s (%s)",
            sighting.transfer.asset,
            sighting.transfer.tx_hash,
            sighting.transfer.amount,
            sighting.transfer.asset,
            sighting.transfer.donor,
            block.header.number,
            writer.chain.name,
            outcome,
        )
    return inserted


def _write_final(writer: _Writer, block: ScannedBlock) -> FinalizedRows | None:
    """A final block's donation rows, written and locked; credited by `_credit_final` at the transaction's end."""
    if not block.transfers and not block.reverted:
        return None
    # Rows already seen in this block keep how they were priced; only new sightings need a price.
    recorded = _recorded_here(writer.chain.name, block.transfers, final_at=block.header.time)
    new = [t for t in block.transfers if donation_key(t) not in recorded]
    priced = {donation_key(s.transfer): s for s in _set_aside(writer, block, _sightings(writer, block, new))}
    sightings = [
        priced.get(donation_key(t))
        or Sighting(
            chain=writer.chain.name,
            transfer=t,
            block_time=block.header.time,
            eth_price=recorded[donation_key(t)].eth_price,
        )
        for t in block.transfers
        if donation_key(t) in priced or donation_key(t) in recorded
    ]
    return finalized_block_rows(
        chain=writer.chain.name, sightings=sightings, reverted_tx_hashes=block.reverted, tiers=writer.tiers
    )


def _credit_final(writer: _Writer, block: ScannedBlock, rows: FinalizedRows | None, tally: BlockTally) -> None:
    """The end of a final block's transaction: its donations credited under the campaign lock (held from here
    to the commit only), then the payouts matched against the refunds owed (a donation credited here may
    owe one)."""
    if rows is not None:
        result = finalized_block_credit(rows)
        if rows.written or result.failed:
            logger.info(
                "finalized: block %d of %s: %d confirmed, %d inserted, %d held (paused), %d failed (reverted)",
                block.header.number,
                writer.chain.name,
                result.confirmed,
                result.inserted,
                result.held_paused,
                result.failed,
            )
        tally.inserted += result.inserted
        tally.confirmed += result.confirmed
        tally.failed += result.failed
    if block.payouts:  # what left the address may pay owed refunds (the refund register matches it)
        refund_payouts_record(chain=writer.chain.name, payouts=block.payouts)


def _write_block(writer: _Writer, block: ScannedBlock, tally: BlockTally) -> Callable[[], None] | None:
    """Write a block's rows; for a final block, return what ends its transaction (`_credit_final`: the
    campaign lock, taken after the caller has moved the cursor and published the proof)."""
    if not writer.final:
        tally.inserted += _write_latest(writer, block)
        return None
    rows = _write_final(writer, block)
    open_mints(block)  # a coin minted to the address that nobody is named for waits for the operator
    # After the block's donations: a block rolled back for a missing price records nothing, logs nothing.
    for asset, raw in block.unexplained:
        inflow_record(writer.chain, block=block.header, asset=asset, raw=raw, why=block.unexplained_why.get(asset, ""))
    if block.own:
        movements_record(writer.chain, block=block.header, movements=block.own)
    if block.strays:  # owed before the payouts are matched: a refund paid later in the range finds its row
        strays_record(writer.chain, block=block.header, strays=block.strays)
    return lambda: _credit_final(writer, block, rows, tally)


def record_blocks(
    blocks: Sequence[ScannedBlock],
    *,
    chain: ChainSettings,
    cursor: str,
    final: bool,
    tiers: Sequence[SaleTier],
    price_at: PriceAt,
    tally: BlockTally,
    move_cursor: bool,
    reach: BlockHeader | None = None,
    proof: SpanLedger | UnprovenSpan | None = None,
    foreign: ForeignLogs | None = None,
) -> Recording:
    """Write the scanned blocks in order, stopping at the first without a price.

    A block with something to write gets a transaction of its own, which moves the `cursor` too (past
    the quiet blocks before it). A run of quiet blocks costs one cursor UPDATE at its end, and `reach`
    (the end of a sparse range, proven quiet after the last block written; only when the scan did not
    hold) one more. SIGTERM stops between blocks, never inside one. A block whose write raises is rolled
    back and ends the recording as `Recording.failed`, a hold naming what the block holds. With the scan's
    `proof` (a final read moving its cursor), each of those cursor moves publishes the blocks it passed, in
    its transaction, and with the range's `foreign` logs counts the Transfers naming the address that are
    not stray transfers (crawlers/record/strays.py; a block's stray transfers are written with it).
    """
    writer = _Writer(chain, cursor, final, tiers, price_at)
    pending: BlockHeader | None = None  # the last quiet block passed, the cursor not yet moved over it
    stopped = False
    missing: PriceMissing | None = None
    failed: BlockHeld | None = None
    try:
        for block in blocks:
            if shutdown.requested():
                stopped = True
                break
            if move_cursor and block.quiet:
                pending = block.header
                continue
            written = BlockTally()
            try:
                with transaction.atomic(), webhook_endpoints_once():
                    chain_writer_check(chain.name, cursor)
                    credit = _write_block(writer, block, written)
                    if move_cursor:
                        _move_cursor(chain, cursor, block.header, proof, foreign)
                    if credit is not None:
                        credit()  # the campaign lock, last: held from here to the commit
            except (PriceMissing, OperationalError, InterfaceError):
                raise  # a missing price ends the recording below; a lost database ends the run
            except ChainWriterBusy as exc:  # this session lost the run's lock, and another run holds it
                failed = BlockHeld(block.header.number, f"{exc}; nothing of the block is written by this run")
                break
            except Exception as exc:  # rolled back; the block holds, the run goes on to report it
                logger.exception("writing block %d failed", block.header.number)
                failed = _failure(block, exc)
                break
            tally.inserted += written.inserted
            tally.confirmed += written.confirmed
            tally.failed += written.failed
            pending = None
            _passed(tally, block.header.number, move_cursor)
        else:
            if reach is not None:
                pending = reach
    except PriceMissing as exc:
        missing = exc
    if pending is not None:
        try:
            with transaction.atomic():
                chain_writer_check(chain.name, cursor)
                _move_cursor(chain, cursor, pending, proof, foreign)
            _passed(tally, pending.number, move_cursor)
        except ChainWriterBusy as exc:
            failed = failed or BlockHeld(pending.number, f"{exc}; the cursor is not moved by this run")
    if final and move_cursor and tally.cursor is not None:
        # The finalized blocks passed: an unconfirmed row naming one of their heights with another hash was
        # in a block the chain replaced (donations/replaced.py).
        passed = {b.header.number: b.header.hash for b in blocks if b.header.number <= tally.cursor}
        donations_mark_block_replaced(chain=chain.name, final_hashes=passed)
    return Recording(stopped=stopped, price_missing=None if stopped else missing, failed=failed)


def _move_cursor(
    chain: ChainSettings,
    cursor: str,
    header: BlockHeader,
    proof: SpanLedger | UnprovenSpan | None,
    foreign: ForeignLogs | None = None,
) -> None:
    cursor_write(chain=chain.name, label=cursor, value=header.number, block_hash=header.hash)
    if proof is not None:
        proof_range_record(chain=chain.name, span=proof, through=header.number, through_hash=header.hash)
    if foreign is not None:
        foreign_counts_record(chain, foreign=foreign, through=header.number)


def _passed(tally: BlockTally, number: int, move_cursor: bool) -> None:
    """Count the blocks the cursor moved over (one for a single-block re-crawl)."""
    if not move_cursor:
        tally.blocks += 1
        return
    tally.blocks += number - (tally.cursor if tally.cursor is not None else number - 1)
    tally.cursor = number
