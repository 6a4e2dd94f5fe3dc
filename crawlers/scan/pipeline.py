"""Ranges proven side by side, handed on strictly in order: a provider's latency overlapped, never its answers.

A catch-up is a chain of ranges, each proven on its own (crawlers/scan/sparse.py, crawlers/scan/proof.py):
one range's proof needs nothing of the one before it. So the crawl loop plans the next ranges ahead and
proves up to DWS_RPC_MAX_IN_FLIGHT of them at once, each on a thread of its own, while it records the
earliest. What overlaps is only the waiting: every post still goes through the client's in-flight bound
and the shared back-off window (crawlers/chain/rpc.py), and nothing is decided here.

Order is the recorder's (crawlers/runs/crawl.py): `RangePipeline.next` hands on the earliest planned
range, waiting for it, whatever finished first. The run records it only after every range before it,
checks that it builds on the block recorded last (a re-org between two ranges' proofs shows there), and a
range that holds (no evidence, a re-org, state unavailable) ends the run: every range planned after it is
dropped unrecorded, its answers never looked at.

The threads only ask the provider and prove: they never touch the database (the recorder's thread does,
as before); what a final read needs from our rows (the blocks our rows name) is read before the range is
planned, and checked again when it is recorded.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from crawlers.chain.logs import ForeignLogs
from crawlers.chain.rpc import RpcClient
from crawlers.decode.blocks import BlockHeader
from crawlers.scan.ledger import SpanLedger, UnprovenSpan
from crawlers.scan.proof import ProvenRange, prove_range
from crawlers.scan.ranges import RANGE_BLOCKS
from crawlers.scan.results import BlockHeld, ReadMode, ScannedBlock
from crawlers.scan.sparse import TOO_BUSY, SparseScan, scan_sparse
from dws_project.chain_settings import ChainSettings

FULL_AHEAD = 2  # ranges read in full proven at once


@dataclass(frozen=True)
class Planned:
    """A range the run means to prove: start..end, the sparse way or in full, and (a final sparse read)
    the blocks our rows name in it, read before it was planned."""

    start: int
    end: int
    sparse: bool
    recorded: frozenset[int] | None = None


@dataclass
class Proven:
    """What a planned range's proof found, for the run to check and record.

    `end` is how far it reaches: the planned end, or, where a sparse range fell back to the full scan (no
    evidence for the sparse path, or too busy to bisect), the first RANGE_BLOCKS of it, as the loop read
    before; the ranges planned after it then no longer follow on, and are dropped."""

    planned: Planned
    end: int
    blocks: list[ScannedBlock]
    held: BlockHeld | None
    first_parent: str | None  # the parent hash of the range's first block, when one was read
    reach: BlockHeader | None  # a sparse range's end header when all of it is proven
    proof: SpanLedger | UnprovenSpan | None
    sparse: SparseScan | None = None  # the sparse path's result
    full: ProvenRange | None = None  # the full scan's result
    busy: bool = False  # a sparse range too busy to bisect, read in full instead
    codes: dict[int, str] = field(default_factory=dict)  # the donation address's code as read, by block

    @property
    def foreign(self) -> ForeignLogs:
        """The range's logs of coins the sale does not take (recorded as the cursor passes their blocks)."""
        found = self.sparse or self.full
        return found.foreign if found is not None else ForeignLogs()


def prove_planned(client: RpcClient, chain: ChainSettings, mode: ReadMode, planned: Planned) -> Proven:
    """Prove one planned range (a thread's work: asks the provider, writes nothing)."""
    start, end = planned.start, planned.end
    scan: SparseScan | None = None
    if planned.sparse:
        recorded = planned.recorded
        scan = scan_sparse(
            client,
            chain,
            start,
            end,
            mode,
            recorded_blocks=(lambda first, last: [n for n in recorded if first <= n <= last]) if recorded else None,
        )
        if scan is not None and scan is not TOO_BUSY:
            return Proven(
                planned,
                end,
                scan.blocks,
                scan.held,
                scan.first_parent,
                scan.reach,
                scan.ledger,
                sparse=scan,
                codes=scan.codes,
            )
        end = min(end, start + RANGE_BLOCKS - 1)  # read in full: RANGE_BLOCKS at most, as the loop always did
    found = prove_range(client, chain, start, end, mode)
    first_parent = found.blocks[0].header.parent_hash if found.blocks else None
    return Proven(
        planned,
        end,
        found.blocks,
        found.held,
        first_parent,
        None,
        found.ledger,
        full=found,
        busy=scan is TOO_BUSY,
        codes=found.codes,
    )


class RangePipeline:
    """Up to `bound` planned ranges proven at once; `next` hands them on in the order they were planned."""

    def __init__(self, prove: Callable[[Planned], Proven], bound: int) -> None:
        self._prove = prove
        self.bound = max(1, bound)
        self._pool = ThreadPoolExecutor(max_workers=self.bound, thread_name_prefix="dws-prove")
        self._queue: collections.deque[tuple[Planned, Future[Proven | None], threading.Event]] = collections.deque()

    def __len__(self) -> int:
        return len(self._queue)

    def has_room(self, *, full: bool = False) -> bool:
        """Whether another range may be planned: `bound` at once, FULL_AHEAD when the next is read in
        full (a busy stretch: the answers are large, and decoding one holds the interpreter while the
        recorder, busy too, waits on it; the provider's latency is then a small part of a range's cost)."""
        return len(self._queue) < (min(self.bound, FULL_AHEAD) if full else self.bound)

    def planned(self) -> Iterable[Planned]:
        return [planned for planned, _, _ in self._queue]

    def submit(self, planned: Planned) -> None:
        dropped = threading.Event()
        self._queue.append((planned, self._pool.submit(self._run, planned, dropped), dropped))

    def _run(self, planned: Planned, dropped: threading.Event) -> Proven | None:
        if dropped.is_set():
            return None  # dropped before its turn came: nothing asked
        return self._prove(planned)

    def next(self) -> Proven:
        """The earliest planned range's proof (waiting for it); its exception, if proving it raised."""
        _, future, _ = self._queue.popleft()
        proven = future.result()
        assert proven is not None  # only a dropped range has none, and a dropped range is no longer queued
        return proven

    def drop(self) -> list[Planned]:
        """Forget every range still planned: none of them is recorded, and one not started is never asked."""
        dropped = []
        while self._queue:
            planned, future, stop = self._queue.popleft()
            stop.set()
            future.cancel()
            dropped.append(planned)
        return dropped

    def close(self) -> None:
        """Drop what is left and let the threads go (a post under way ends within the client's time-outs)."""
        self.drop()
        self._pool.shutdown(wait=False, cancel_futures=True)
