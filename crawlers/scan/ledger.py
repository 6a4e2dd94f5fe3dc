"""The balance proof's account of a range, block by block: what the finalized crawler publishes as a proof
range (crawlers/record/proof_ranges.py writes it; issue #23, "a sale anyone can audit").

A value, built from the proof's scanned blocks: the donation address's balances before the range and,
for each block of it that moved anything, what changed and what left. From it any prefix of the range
is exact, so the published row can end wherever the cursor stops.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from crawlers.decode.balances import NONCE
from crawlers.scan.results import ScannedBlock


@dataclass
class SpanLedger:
    """The balance proof's account of blocks `first`.. block by block, in raw units.

    `opening`: every asset's balance (and NONCE) at block first - 1. `changes[n]`: how block n moved each
    balance (what its transactions and logs explain plus what the proof settled there: traced internal
    ETH, unexplained inflows, rounding); a block absent from it moved nothing. `outflows[n]`: what left
    the address in block n (values and fees of its transactions, Transfer logs from it). `closing`: the
    balances read at block `end`, when the proof read them.
    """

    first: int
    opening: Mapping[str, int]
    changes: dict[int, dict[str, int]] = field(default_factory=dict)
    outflows: dict[int, dict[str, int]] = field(default_factory=dict)
    end: int | None = None
    closing: Mapping[str, int] | None = None

    def balances_at(self, block: int) -> dict[str, int]:
        """Every balance at the end of `block` (first - 1 gives the opening)."""
        if self.closing is not None and block == self.end:
            return dict(self.closing)
        values = dict(self.opening)
        for number, moved in self.changes.items():
            if number <= block:
                for asset, raw in moved.items():
                    values[asset] = values.get(asset, 0) + raw
        return values

    def left_between(self, first: int, last: int) -> dict[str, int]:
        """Per asset (not NONCE), what left the address in blocks first..last."""
        left = {asset: 0 for asset in self.opening if asset != NONCE}
        for number, gone in self.outflows.items():
            if first <= number <= last:
                for asset, raw in gone.items():
                    left[asset] = left.get(asset, 0) + raw
        return left

    def quiet_between(self, first: int, last: int) -> bool:
        """Nothing moved in blocks first..last: every balance as before and nothing left."""
        return self.balances_at(first - 1) == self.balances_at(last) and not any(
            self.left_between(first, last).values()
        )


@dataclass(frozen=True)
class UnprovenSpan:
    """Blocks from `first` that the finalized crawler passes without the proof, and why; with the balances
    the provider did give around them, if any (at first - 1, and at `end`), so the change is on record."""

    first: int
    reason: str
    opening: Mapping[str, int] | None = None
    end: int | None = None
    closing: Mapping[str, int] | None = None


def ledger_from_blocks(
    first: int,
    opening: Mapping[str, int],
    blocks: Iterable[ScannedBlock],
    end: int | None = None,
    closing: Mapping[str, int] | None = None,
) -> SpanLedger:
    """A ledger from the proof's scanned blocks (each with `flows`, `settled` and `outflows`)."""
    ledger = SpanLedger(first, dict(opening), end=end, closing=dict(closing) if closing is not None else None)
    for block in blocks:
        number = block.header.number
        moved = dict(block.flows)
        for asset, raw in block.settled.items():
            moved[asset] = moved.get(asset, 0) + raw
        if any(moved.values()):
            ledger.changes[number] = moved
        if any(block.outflows.values()):
            ledger.outflows[number] = dict(block.outflows)
    return ledger
