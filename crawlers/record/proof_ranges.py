"""The published proof: each span of finalized blocks the balance proof checked, stored as a `proof_range` row
in the same transaction as the cursor move over it (issue #23, "a sale anyone can audit").

The proof hands the writer a `SpanLedger` (crawlers/scan/ledger.py), from which it can publish any prefix
of the span exactly, so the row always ends where the cursor is, whichever block the run stopped at (a
price still missing, a shutdown), and a cursor set back by an operator never makes two rows cover one
block.

One row per span, except that a span in which nothing moved at all (balances and nonce unchanged,
nothing left) extends the row before it: a quiet month is one row, and each row boundary is where value
moved. Rows the finalized crawler passed without the proof (no historical state, the genesis block) are
`unproven`, with the reason and without balances; adjacent ones with the same reason are one row.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from django.utils import timezone

from crawlers.decode.balances import NONCE
from crawlers.models import ProofRange, ProofRangeAsset, ProofStatus
from crawlers.scan.ledger import SpanLedger, UnprovenSpan

logger = logging.getLogger("dws.crawlers")


def _last_row(chain: str) -> ProofRange | None:
    return ProofRange.objects.filter(chain=chain).order_by("-last_block").first()


def proof_range_record(*, chain: str, span: SpanLedger | UnprovenSpan, through: int, through_hash: str) -> None:
    """Publish the span's blocks up to `through` (the block the cursor moves to, its hash). Call inside the
    transaction that moves the cursor; repeated calls for a growing `through` extend the same row."""
    previous = _last_row(chain)
    first = span.first
    if previous is not None and previous.last_block >= first:
        if previous.last_block >= through:
            return  # already published (the cursor was set back and these blocks are proven again)
        first = previous.last_block + 1
    if isinstance(span, UnprovenSpan):
        _record_unproven(chain, span, first, through, through_hash, previous)
    else:
        _record_proven(chain, span, first, through, through_hash, previous)


def _adjacent(previous: ProofRange | None, first: int, status: str) -> ProofRange | None:
    if previous is not None and previous.last_block == first - 1 and previous.status == status:
        return previous
    return None


def _record_proven(
    chain: str, span: SpanLedger, first: int, last: int, last_hash: str, previous: ProofRange | None
) -> None:
    closing = span.balances_at(last)
    row = _adjacent(previous, first, ProofStatus.PROVEN)
    if row is not None and (row.first_block >= span.first or span.quiet_between(first, last)):
        # The span's own row, a block further on; or a span in which nothing moved, added to the row before.
        _extend(row, last, last_hash, closing)
        if not span.quiet_between(first, last):  # (the span's own row: it covers every block of it)
            opening = span.balances_at(row.first_block - 1)
            _write_assets(row, opening, closing, span.left_between(row.first_block, last), update=True)
        return
    opening = span.balances_at(first - 1)
    row = _create(chain, previous, first, last, last_hash, ProofStatus.PROVEN, "", opening, closing)
    _write_assets(row, opening, closing, span.left_between(first, last), update=False)
    logger.info("proof: %s blocks %d..%d published as proven", chain, first, last)


def _extend(row: ProofRange, last: int, last_hash: str, closing: Mapping[str, int]) -> None:
    ProofRange.objects.filter(pk=row.pk).update(
        last_block=last, last_block_hash=last_hash, nonce_closing=closing.get(NONCE), checked_at=timezone.now()
    )


def _create(
    chain: str,
    previous: ProofRange | None,
    first: int,
    last: int,
    last_hash: str,
    status: str,
    reason: str,
    opening: Mapping[str, int],
    closing: Mapping[str, int],
) -> ProofRange:
    return ProofRange.objects.create(
        chain=chain,
        ordinal=previous.ordinal + 1 if previous is not None else 0,  # always after the chain's last row
        first_block=first,
        last_block=last,
        last_block_hash=last_hash,
        status=status,
        reason=reason,
        nonce_opening=opening.get(NONCE),
        nonce_closing=closing.get(NONCE),
        checked_at=timezone.now(),
    )


def _write_assets(
    row: ProofRange, opening: Mapping[str, int], closing: Mapping[str, int], left: Mapping[str, int], *, update: bool
) -> None:
    assets = [
        ProofRangeAsset(
            proof_range=row, asset=asset, opening=opening[asset], closing=closing[asset], left=left.get(asset, 0)
        )
        for asset in opening
        if asset != NONCE
    ]
    if update:
        ProofRangeAsset.objects.bulk_create(
            assets, update_conflicts=True, unique_fields=["proof_range", "asset"], update_fields=["closing", "left"]
        )
    else:
        ProofRangeAsset.objects.bulk_create(assets)


def _record_unproven(
    chain: str, span: UnprovenSpan, first: int, last: int, last_hash: str, previous: ProofRange | None
) -> None:
    """An unproven row, with whatever balances the provider gave at its edges (what left is unknown)."""
    closing = dict(span.closing) if span.closing is not None and last == span.end else {}
    row = _adjacent(previous, first, ProofStatus.UNPROVEN)
    if row is not None and row.reason == span.reason:
        _extend(row, last, last_hash, closing)
        row.assets.update(closing=None)
        for asset, raw in closing.items():
            if asset != NONCE:
                ProofRangeAsset.objects.update_or_create(proof_range=row, asset=asset, defaults={"closing": raw})
        return
    opening = dict(span.opening) if span.opening is not None and first == span.first else {}
    row = _create(chain, previous, first, last, last_hash, ProofStatus.UNPROVEN, span.reason, opening, closing)
    ProofRangeAsset.objects.bulk_create(
        ProofRangeAsset(proof_range=row, asset=asset, opening=opening.get(asset), closing=closing.get(asset))
        for asset in dict.fromkeys([*opening, *closing])
        if asset != NONCE
    )
    logger.info("proof: %s blocks %d..%d published as unproven: %s", chain, first, last, span.reason)
