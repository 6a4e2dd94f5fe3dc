"""A pending donation whose block was replaced (issue 36): once the finalized crawler has passed a row's block
and found another block at its height, the row says so. It stays unconfirmed (seed 000: a transaction absent
from the chain may still be mined again, and the old-unconfirmed judge fails it only after 24 hours of
absence), but the page says "its block was replaced; waiting to see whether it is mined again" instead of a
plain "pending", and it leaves the campaign's pending figures. A new sighting of the transfer moves the row
to its new block and clears the mark (services._move_to)."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from django.utils import timezone

from donations.models import Donation, DonationStatus

logger = logging.getLogger("dws.donations")


def donations_mark_block_replaced(*, chain: str, final_hashes: Mapping[int, str]) -> int:
    """Mark `chain`'s unconfirmed rows whose block number is among the finalized blocks just passed
    (`final_hashes`: number -> the finalized block's hash) but whose block hash is another. A number not in
    `final_hashes` (a block the finalized crawler did not read) proves nothing. Returns how many it marked."""
    if not final_hashes:
        return 0
    candidates = Donation.objects.filter(
        chain=chain,
        status=DonationStatus.UNCONFIRMED,
        block_replaced_at__isnull=True,
        block_number__range=(min(final_hashes), max(final_hashes)),
    ).values_list("id", "block_number", "block_hash", "tx_hash")
    replaced = [
        (row_id, number, block_hash, tx)
        for row_id, number, block_hash, tx in candidates
        if number in final_hashes and final_hashes[number].lower() != block_hash.lower()
    ]
    now = timezone.now()
    marked = 0
    for row_id, number, block_hash, tx in replaced:
        # Only the row as it was read: the latest crawler, which runs beside this one, may have moved it to the
        # transaction's new block since, and that block is on the chain.
        if not Donation.objects.filter(
            id=row_id,
            block_number=number,
            block_hash=block_hash,
            status=DonationStatus.UNCONFIRMED,
            block_replaced_at__isnull=True,
        ).update(block_replaced_at=now):
            continue
        marked += 1
        logger.warning(
            "donation %s on %s: its block %d was replaced (the finalized block there is another); it stays "
            "unconfirmed while it may be mined again",
            tx,
            chain,
            number,
        )
    return marked
