"""Which recorded row a sighted transfer is: a donation's identity, kept across re-orgs.

A donation's identity is `donations.sightings.donation_key` (tx_hash, log_index, trace_address). For
ETH, top-level or internal, it does not depend on the block. A log index does: it is a position in
the whole block, so a Transfer re-mined in another block comes back at another index. It is still the same donation,
and its unconfirmed row moves there instead of a second row appearing. Only a row of the same
transaction, asset, donor, amount (and frame) may be taken for it; a confirmed row never moves.

Callers hold a transaction: the transaction's rows are locked here, in (log_index, trace_address, id)
order, before anything is decided (or by `transactions_rows`, for a whole block's transactions at once).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db.models import QuerySet

from donations.models import Donation, DonationStatus
from donations.sightings import Transfer, donation_key

logger = logging.getLogger("dws.donations")


@dataclass(frozen=True)
class Match:
    row: Donation | None  # None: no row records this transfer, insert one
    move: bool = False  # the row records it as seen in another block: move it to this sighting


def same_transfer(row: Donation, transfer: Transfer) -> bool:
    """Whether a row records this transfer, wherever it was seen."""
    return (
        row.asset == transfer.asset
        and row.address == transfer.donor
        and row.amount == transfer.amount
        and row.trace_address == transfer.trace_address
    )


def records_as_seen(row: Donation, transfer: Transfer, block_time: datetime) -> bool:
    """Whether a row records this transfer as a block shows it: the same transfer, at that block's time (the
    time prices it). A row the latest crawler wrote from a provider that said otherwise does not."""
    return same_transfer(row, transfer) and row.block_time == block_time


def find_at_identity(chain: str, transfer: Transfer, *, lock: bool) -> Donation | None:
    rows = Donation.objects.filter(
        chain=chain, tx_hash=transfer.tx_hash, log_index=transfer.log_index, trace_address=transfer.trace_address
    )
    if lock:
        rows = rows.select_for_update()
    return rows.first()


def _park(row: Donation, log_index: int | None) -> None:
    """Free a slot held by a stale row of the same transaction: it takes `log_index` (the slot the
    mover leaves, or a negative placeholder) until its own transfer is seen again and moves it."""
    row.log_index = log_index if log_index is not None else -row.id
    row.save(update_fields=["log_index", "modified_at"])


def transactions_rows(chain: str, tx_hashes: Iterable[str]) -> dict[str, list[Donation]]:
    """The rows of these transactions of `chain`, locked, in one statement; each transaction's rows in the
    order `sighting_match` reads them."""
    by_tx: dict[str, list[Donation]] = {tx: [] for tx in tx_hashes}
    if by_tx:
        for row in _locked(Donation.objects.filter(chain=chain, tx_hash__in=by_tx), "tx_hash"):
            by_tx[row.tx_hash].append(row)
    return by_tx


def _locked(rows: QuerySet[Donation], *first: str) -> QuerySet[Donation]:
    return rows.select_for_update().order_by(*first, "log_index", "trace_address", "id")


def sighting_match(chain: str, transfer: Transfer, rows: list[Donation] | None = None) -> Match:
    """The row a sighting is, among its transaction's rows on `chain` (locked):

    * the row at its identity, seen in this block: that row, unchanged;
    * any row of the transaction confirmed in another block: that block is final and this sighting
      is from a stale fork; nothing is to be written;
    * the row at its identity records this transfer: moved if unconfirmed, else left alone;
    * otherwise an unconfirmed row of the same transaction, asset, donor, amount (and frame) seen in
      another block is this transfer at its old log index: moved, the lowest log index first, so
      identical transfers of one transaction pair off in order. A stale row of another transfer
      holding the new slot swaps places with it (or is parked) and moves when its own sighting comes.
    """
    if rows is None:
        rows = list(_locked(Donation.objects.filter(chain=chain, tx_hash=transfer.tx_hash)))
    identity = donation_key(transfer)
    at_slot = next((row for row in rows if donation_key(row) == identity), None)
    if at_slot is not None and at_slot.block_hash == transfer.block_hash:
        return Match(at_slot)
    final = next(
        (r for r in rows if r.status == DonationStatus.CONFIRMED and r.block_hash != transfer.block_hash), None
    )
    if final is not None:
        logger.warning(
            "transaction %s is confirmed in block %s; its sighting in block %s is not recorded",
            transfer.tx_hash,
            final.block_hash,
            transfer.block_hash,
        )
        return Match(at_slot or final)
    if at_slot is not None and same_transfer(at_slot, transfer):
        return Match(at_slot, move=at_slot.status == DonationStatus.UNCONFIRMED)
    mover = next(
        (
            r
            for r in rows
            if r.status == DonationStatus.UNCONFIRMED
            and r.block_hash != transfer.block_hash
            and same_transfer(r, transfer)
        ),
        None,
    )
    if at_slot is not None:
        freed = None
        if mover is not None:
            freed = mover.log_index
            _park(mover, None)
        _park(at_slot, freed)
    return Match(mover, move=True) if mover is not None else Match(None)
