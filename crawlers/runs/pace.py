"""How the crawl loop paces itself: how long its next range is, and whether to try it the sparse way."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from crawlers.scan.pipeline import Planned
from crawlers.scan.ranges import RANGE_BLOCKS
from crawlers.scan.results import ScannedBlock

# The per-run cap (`max_blocks`) counts blocks read in full; a block a sparse range skips costs a
# fortieth of one (a 2,000-block quiet range is one post, about what 50 full blocks cost in time, and
# its posts now overlap with the next ranges'). So a 1,000-block cap lets one run skip 40,000 quiet
# blocks: an archive of a few weeks of quiet chain is one process, not two.
SPARSE_BLOCKS_PER_UNIT = 40


def sparse_enabled() -> bool:
    """The sparse path is on unless a Django setting (tests comparing it with the full scan) turns it off."""
    return bool(getattr(settings, "CRAWLER_SPARSE", True))


@dataclass
class Pace:
    """How the loop reads its next range: sparse ranges grow while the chain is quiet (up to the
    provider's log span) and shrink where it is busy; a stretch busy even at the smallest span is read
    in full for a while. `used` counts the run's budget: a block read in full costs 1, a block a sparse
    range skips 1 / SPARSE_BLOCKS_PER_UNIT. Ranges planned ahead (crawlers/scan/pipeline.py) hold their
    share of the budget (`reserve`) until they are recorded or dropped (`release`)."""

    tip: int
    budget: float  # the run's cap (`max_blocks`)
    span: int
    sparse_below: int  # the last block a sparse range may end at (see _sparse_ceiling)
    dense: bool = False
    used: float = 0.0
    reserved: float = 0.0  # the nominal cost of the ranges planned and not yet recorded

    def left(self) -> float:
        return self.budget - self.used - self.reserved

    def reserve(self, planned: Planned) -> None:
        self.reserved += self._nominal(planned)

    def release(self, planned: Planned) -> None:
        self.reserved = max(0.0, self.reserved - self._nominal(planned))

    @staticmethod
    def _nominal(planned: Planned) -> float:
        blocks = planned.end - planned.start + 1
        return blocks / SPARSE_BLOCKS_PER_UNIT if planned.sparse else blocks

    def next_range(self, position: int, log_span: int) -> tuple[int, bool]:
        """The next range's end after `position`, and whether to try it the sparse way."""
        left = self.left()
        reach = min(self.span, log_span, left * SPARSE_BLOCKS_PER_UNIT)
        end = max(position + 1, int(min(self.tip, position + reach)))
        if position < self.sparse_below:
            end = min(end, self.sparse_below)  # the latest crawler: sparse up to the finalized block, then in full
        sparse = end <= self.sparse_below and not self.dense and sparse_enabled() and position >= 0
        return (end if sparse else self.full_range_end(position, end)), sparse

    def full_range_end(self, position: int, end: int) -> int:
        """`end` cut to a range read in full: RANGE_BLOCKS at most, and what the budget has left."""
        return int(min(end, position + RANGE_BLOCKS, position + max(1, self.left())))

    def after_sparse(self, blocks: int, busy: int, log_span: int) -> None:
        self.used += blocks / SPARSE_BLOCKS_PER_UNIT + busy
        if busy <= 2:
            self.span = min(log_span, self.span * 2)
        elif busy > 8:
            self.span = max(RANGE_BLOCKS, self.span // 2)
        self.dense = busy > 8 and self.span == RANGE_BLOCKS  # busy even at the smallest span: read in full a while

    def after_full(self, blocks: int, scanned: list[ScannedBlock], *, busy: bool, whole: bool) -> None:
        self.used += blocks
        self.span = RANGE_BLOCKS
        self.dense = self.dense or busy
        if self.dense and whole and sum(not b.quiet for b in scanned) <= 1:
            self.dense = False
