"""The finalized crawler's write for one block: the rows first, the campaign lock last and briefly.

Tiers, cap and pause are the campaign's, across every chain, so crediting is serialized on the one
`donation_stats` row. A block's transaction is written in two parts (crawlers/record/blocks.py puts its
inflows, cursor and proof publication between them):

1. `finalized_block_rows`, without the campaign lock: the chain's donation rows lock
   (dws_project/locks.py `chain_donations_lock`), the block's rows locked, each sighting inserted, moved,
   recorded as the finalized block shows it or recorded anew from a failed row, priced at the tier of
   the confirmed total as last committed (a provisional price: nobody sees these rows before the commit);
   the rows of the reverted ETH transactions locked.
2. `finalized_block_credit`, last in the transaction: the campaign row locked; each row this block
   priced is priced again at the tier of the confirmed total now (the moment it counts as first
   recorded: crediting is serialized on this lock, so the commit order is the lock order) when that
   differs, and announced (`donation.seen` / `donation.moved`) with its final price; then the crediting
   rule (`donation_confirm`), the reverts, the campaign row and the donors' totals.

The result is what the whole write under the campaign lock from its start gave: the same prices, tiers
across chains, cap and pause, in the order the blocks commit. Lock order: the chain's donation rows lock,
its donation rows (and the inflow, cursor and proof rows), the campaign row, the donors' rows.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from django.db import transaction

from donations.identity import records_as_seen
from donations.models import Donation, DonationStats, DonationStatus
from donations.refunds import refund_cancel_for_failed
from donations.rules import sale_state
from donations.services import (
    DonationOutcome,
    block_rows,
    donation_confirm,
    donation_move_to,
    donation_record_as_seen,
    sighting_announce,
    sighting_priced,
    sighting_record,
    stats_lock,
)
from donations.sightings import Sighting
from donations.totals import Deltas, stats_save
from donations.webhooks import webhook_donation_event, webhook_endpoints_once, webhook_endpoints_read
from dws_project.config_values import SaleTier
from dws_project.locks import chain_donations_lock

logger = logging.getLogger("dws.donations")


@dataclass
class FinalizedBlockResult:
    confirmed: int = 0
    inserted: int = 0
    held_paused: int = 0
    failed: int = 0


@dataclass(frozen=True)
class _Written:
    sighting: Sighting
    row: Donation
    outcome: str  # what sighting_record did (announced once the price is final)
    priced_here: bool  # this transaction priced the row: its price is final only under the campaign lock


@dataclass
class FinalizedRows:
    """What `finalized_block_rows` wrote and locked, for `finalized_block_credit` in the same transaction."""

    chain: str
    tiers: Sequence[SaleTier]
    written: list[_Written] = field(default_factory=list)
    reverted: list[Donation] = field(default_factory=list)
    result: FinalizedBlockResult = field(default_factory=FinalizedBlockResult)


class _Provisional:
    """The token price at the confirmed total as last committed, read once and only when a row is priced:
    the rows are priced again under the campaign lock where the tier has moved since (another chain's
    block committed in between)."""

    def __init__(self, tiers: Sequence[SaleTier]) -> None:
        self.tiers = tiers
        self.price: Decimal | None = None

    def __call__(self) -> Decimal:
        if self.price is None:
            tokens = DonationStats.objects.values_list("tokens", flat=True).get()
            self.price = sale_state(tokens, self.tiers).token_price
        return self.price


def finalized_block_rows(
    *, chain: str, sightings: Sequence[Sighting], reverted_tx_hashes: Sequence[str], tiers: Sequence[SaleTier]
) -> FinalizedRows:
    """The first part of a finalized block's write (the caller holds its transaction): every row the block's
    sightings and reverts touch, locked and written, priced provisionally. Takes no campaign lock."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("finalized_block_rows writes part of a block: call it inside the block's transaction")
    written = FinalizedRows(chain, tiers)
    if not sightings and not reverted_tx_hashes:
        return written
    chain_donations_lock(chain)
    if sightings:
        webhook_endpoints_read()  # each is announced or confirmed under the campaign lock: read them before it
    provisional = _Provisional(tiers)
    rows = block_rows(chain, sightings)
    for sighting in sightings:
        donation, outcome = sighting_record(
            sighting=sighting, token_price=provisional, rows=rows.get(sighting.transfer.tx_hash)
        )
        priced_here = outcome in (DonationOutcome.INSERTED, DonationOutcome.MOVED)
        if outcome == DonationOutcome.INSERTED:
            written.result.inserted += 1
        if (
            donation.status == DonationStatus.UNCONFIRMED
            and donation.block_hash == sighting.transfer.block_hash
            and not records_as_seen(donation, sighting.transfer, sighting.block_time)
        ):
            # The latest crawler's row says otherwise than the finalized block (its provider alone told it):
            # what is confirmed is the transfer as the finalized block shows it, priced from that block.
            logger.warning(
                "donation %s as recorded from the latest block (%s %s from %s at %s) is not what finalized block "
                "%d shows (%s %s from %s at %s); recorded from the finalized block",
                donation.tx_hash,
                donation.amount,
                donation.asset,
                donation.address,
                donation.block_time.isoformat(),
                sighting.transfer.block_number,
                sighting.transfer.amount,
                sighting.transfer.asset,
                sighting.transfer.donor,
                sighting.block_time.isoformat(),
            )
            donation_record_as_seen(donation, sighting, sighting_priced(sighting, provisional()))
            priced_here = True
        if donation.status == DonationStatus.FAILED:
            # Positive evidence (the transfer in a finalized block) outweighs an earlier absence; the row
            # is recorded from this sighting (its block, that minute's price, the tier now), not its old one.
            logger.warning(
                "donation %s was failed but is in finalized block %d; recorded from it and confirmed",
                donation.tx_hash,
                sighting.transfer.block_number,
            )
            donation_move_to(donation, sighting, sighting_priced(sighting, provisional()))
            donation.status = DonationStatus.UNCONFIRMED  # confirmed below, or held by a pause as unconfirmed
            donation.failed_reason = ""
            donation.save(update_fields=["status", "failed_reason", "modified_at"])
            priced_here = True
        written.written.append(_Written(sighting, donation, outcome, priced_here))
    for tx_hash in reverted_tx_hashes:
        written.reverted += Donation.objects.select_for_update().filter(
            chain=chain, tx_hash=tx_hash, log_index__isnull=True
        )
    return written


def finalized_block_credit(written: FinalizedRows) -> FinalizedBlockResult:
    """The last part of a finalized block's write: under the campaign lock (one for every chain: the tiers
    and the cap are the campaign's), each row priced at the tier of the confirmed total now, the crediting
    rule applied, the reverts failed, and the campaign row and the touched donors' rows moved by the
    deltas (the cost does not grow with the donations on record)."""
    result = written.result
    if not written.written and not written.reverted:
        return result
    tiers = written.tiers
    stats = stats_lock()
    before = sale_state(stats.tokens, tiers)
    deltas = Deltas()
    for item in written.written:
        donation = item.row
        if item.priced_here:
            _price_now(item, sale_state(stats.tokens, tiers).token_price)
            sighting_announce(donation, item.outcome)
        decision = donation_confirm(stats=stats, donation=donation, tiers=tiers)
        if decision == DonationOutcome.CONFIRMED:
            result.confirmed += 1
            deltas.add(donation, +1)
        elif decision == DonationOutcome.HELD_PAUSED:
            result.held_paused += 1
    for donation in written.reverted:
        result.failed += _revert(stats, donation, deltas)
    if result.confirmed or result.failed:
        stats_save(stats=stats, tiers=tiers, before=before, chain=written.chain)
        deltas.apply()
    return result


def _price_now(item: _Written, token_price: Decimal) -> None:
    """A row this block priced, priced again at the tier under the lock when it moved since (rare: another
    chain's block crossed a tier limit in between). Its USD value and ETH price do not depend on the tier."""
    donation = item.row
    if donation.price == token_price:
        return
    priced = sighting_priced(item.sighting, token_price)
    logger.info(
        "donation %s priced at %s (tier of the confirmed total when credited), not %s: %d tokens",
        donation.tx_hash,
        priced.token_price,
        donation.price,
        priced.tokens,
    )
    donation.price, donation.tokens = priced.token_price, priced.tokens
    donation.save(update_fields=["price", "tokens", "modified_at"])


@transaction.atomic
@webhook_endpoints_once()
def finalized_block_record(
    *, chain: str, sightings: Sequence[Sighting], reverted_tx_hashes: Sequence[str], tiers: Sequence[SaleTier]
) -> FinalizedBlockResult:
    """Everything the finalized crawler writes for one block's donations of `chain`, in one transaction: the
    two parts above with nothing between (the crawler writes its inflows, cursor and proof between them)."""
    return finalized_block_credit(
        finalized_block_rows(chain=chain, sightings=sightings, reverted_tx_hashes=reverted_tx_hashes, tiers=tiers)
    )


def donation_fail_reverted(*, donation: Donation) -> bool:
    """A finalized receipt reports the transaction reverted: no money moved. Caller holds the stats lock
    and subtracts a confirmed row's deltas (see `Deltas`)."""
    if donation.status == DonationStatus.FAILED:
        return False
    logger.warning(
        "donation %s (%s) reverted on chain per its finalized receipt; %s -> failed",
        donation.tx_hash,
        donation.asset,
        donation.status,
    )
    donation.status = DonationStatus.FAILED
    donation.failed_reason = "its finalized receipt reports a revert"
    donation.save(update_fields=["status", "failed_reason", "modified_at"])
    webhook_donation_event(donation, "donation.failed", reason="reverted", detail=donation.failed_reason)
    return True


def _revert(stats: DonationStats, donation: Donation, deltas: Deltas) -> bool:
    """Fail a reverted row; a confirmed one takes its USD and tokens back out of the totals."""
    was_confirmed = donation.status == DonationStatus.CONFIRMED
    if not donation_fail_reverted(donation=donation):
        return False
    refund_cancel_for_failed(donation)
    if was_confirmed:
        stats.total -= donation.usd_amount
        stats.tokens -= donation.tokens
        deltas.add(donation, -1)
    return True
