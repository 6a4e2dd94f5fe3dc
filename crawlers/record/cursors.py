"""Crawler cursors (`last_block`): the last block each crawler of a chain has fully processed, written by
the block recorder in the same transaction as the block's rows, or by the operator's `set_cursor`."""

from __future__ import annotations

from crawlers.models import LastBlock


def cursor_get(*, chain: str, label: str) -> LastBlock | None:
    return LastBlock.objects.filter(chain=chain, label=label).first()


def cursor_write(*, chain: str, label: str, value: int, block_hash: str | None = None) -> None:
    """One UPDATE per block on the hot path; the INSERT only on a crawler's very first run. Decides
    nothing (the operator's checks are `runs.operator.set_cursor`'s)."""
    updated = LastBlock.objects.filter(chain=chain, label=label).update(value=value, block_hash=block_hash)
    if not updated:
        LastBlock.objects.create(chain=chain, label=label, value=value, block_hash=block_hash)
