"""Sparse ranges: read no block body where the balances and the logs prove there is nothing for us.

One batched request asks, for a range start..end: the donation address's balances (ETH, nonce, every
coin) at start-1 and at end, its code at end, the headers of blocks start and end, and the coins'
Transfer logs to and from it. When the balances are equal at both ends and no log names a block, the
range holds nothing for us: the cursor moves over it in one statement (the end header gives its hash,
the start header's parent the continuity check against the cursor).

Why equal balances prove a quiet range for an address without code (an EOA): ETH can only leave it
through a transaction it signs, which moves its nonce; the nonce never goes back; so with the nonce
unchanged, ETH can only have arrived, and an unchanged balance means nothing arrived. Coins move with a
Transfer log, which the log filters see even where the balance nets out (almost: a coin can be burnt
without one, see below).

Where a balance moved by other than what the logs inside say (ETH and the nonce: at all), the range is
bisected (balances at split points, every open interval of one level in one batch) down to the single
blocks where it did; an interval is quiet only when its balance change equals what its logs explain
(equal ends with a coin log inside are not quiet: a coin burnt without a log moved it back, and the
block of the burn must be read, where the proof records it; where every coin's change over the whole
range equals its logs, the bisection asks only ETH and the nonce, as the full scan bisects only an
asset whose range residual is not zero). Those blocks, the blocks the logs name and
the blocks our own rows name (for a final read: the caller's `recorded_blocks`, since a reverted
transfer changes no balance) are read in full and proven one by one (crawlers/scan/proof.py), each
against the change the bisection already holds for it (`_known_changes`: no balance is asked twice; a
block that does not close on it is asked again pinned by hash, as every suspect block is; the blocks
proven must add up to the range's change, else a balance asked by number misled the verdict on an
interval, and the range is read in full). A level
splits an interval into up to 8 parts, all of the level's in one post. Nothing here writes: the result
says whether the whole range was proven.

A genuine Safe (crawlers/scan/safe.py: code we can check) is read so too, by its events: its execution
blocks are cut out of the range (balances around each asked, each read in full and traced), and between
them ETH can only arrive, so an interval is quiet when its ETH change is what its SafeReceived events
announce (`moves` carries them as it carries the coins' logs); the blocks they name are read in full.

Never sparse (the caller scans in full): any other address with code (a contract we cannot check, an
EIP-7702 account can move value without its nonce), a Safe whose storage or trace_filter contradicts
its events, a provider without historical state, the genesis block, any answer short of
evidence (the full scan then holds or falls back exactly as before), and for the latest crawler a range
beyond the finalized block (only the finalized chain guarantees the blocks in between build on the
cursor, which the end header alone cannot show).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from crawlers.chain.calls import balance_calls, code_call, edge_calls, header_call, transfer_log_calls
from crawlers.chain.logs import ForeignLogs, RangeLogs, TransferLogs, answered_logs, logs_in_one_batch, range_logs
from crawlers.chain.outcomes import Answer, Call, NoEvidenceError, RpcOutcome
from crawlers.chain.rpc import RpcClient
from crawlers.decode.amounts import log_amount, log_block_number
from crawlers.decode.balances import (
    ETH,
    NONCE,
    Balances,
    StateUnavailable,
    balances_from,
    balances_in_batch,
    edge_balances,
    split_points,
)
from crawlers.decode.blocks import BlockHeader, header_of
from crawlers.scan import safe, with_code
from crawlers.scan.ledger import SpanLedger, ledger_from_blocks
from crawlers.scan.proof import balance_change, settle, settle_located, unexplained
from crawlers.scan.ranges import read_range
from crawlers.scan.results import BlockHeld, ReadMode, ScannedBlock
from crawlers.scan.strays import stray_blocks
from dws_project.chain_settings import ChainSettings

logger = logging.getLogger("dws.crawlers")

RecordedBlocks = Callable[[int, int], Iterable[int]]  # start, end -> the blocks our rows name in that range

BUSY_INTERVALS = 8  # open intervals at one bisection level beyond which a range is read in full


class _TooBusy(Exception):
    pass


@dataclass
class SparseScan:
    """A range read the sparse way: its proven blocks with something in them, and how far it reaches."""

    blocks: list[ScannedBlock]  # blocks read in full, proven, in order
    held: BlockHeld | None
    first_parent: str  # block start's parent hash: must be the cursor's block
    reach: BlockHeader | None  # the range's end when all of it is proven (the cursor's target)
    read: list[int] = field(default_factory=list)  # the blocks read in full (for the span's growth)
    proven: bool = False  # the whole range start..end is proven complete (the run records it)
    ledger: SpanLedger | None = None  # what a final read publishes (crawlers/record/proof_ranges.py)
    foreign: ForeignLogs = field(default_factory=ForeignLogs)  # the range's logs of coins the sale does not take
    codes: dict[int, str] = field(default_factory=dict)  # the address's code as read, by block (none: plain)
    safe_claim: safe.SafeClaim | None = None  # a Safe read by its events: what the check provider must show


TOO_BUSY = SparseScan([], None, "", None)  # a range too busy to bisect: the caller reads it in full


def sparse_first_batch(client: RpcClient, chain: ChainSettings, start: int, end: int) -> list[Call]:
    """The one batch a sparse range starts with: the balances at both ends, the code, the two headers and
    (within the provider's log span) the Transfer logs. The crawl loop reads it ahead too."""
    us = chain.donation_address
    heads = [code_call(us, start - 1), code_call(us, end), header_call(start), header_call(end)]
    logs = transfer_log_calls(chain, start, end) if logs_in_one_batch(client, chain, start, end) else []
    # A Safe read by its events on the last range: its evidence rides along (crawlers/scan/safe.py).
    evidence = safe.range_calls(client, chain, start, end) if safe.believed(chain) else []
    return edge_calls(chain, start, end) + heads + logs + evidence


def scan_sparse(
    client: RpcClient,
    chain: ChainSettings,
    start: int,
    end: int,
    mode: ReadMode,
    *,
    recorded_blocks: RecordedBlocks | None = None,
) -> SparseScan | None:
    """The range start..end the sparse way; None when it must be scanned in full (see the module doc),
    TOO_BUSY when reading it in full is cheaper. `recorded_blocks` (the finalized crawler's): the blocks
    our rows name in a range, each read in full whatever the balances say."""
    if start == 0:
        return None
    with_logs = logs_in_one_batch(client, chain, start, end)
    edges = len(edge_calls(chain, start, end))
    asked = sparse_first_batch(client, chain, start, end)
    outcomes = client.batch(asked)
    try:
        before, after = edge_balances(chain, start, end, outcomes[:edges])
    except (StateUnavailable, NoEvidenceError):
        return None  # the full scan asks again, and holds or falls back as the proof requires
    code_before, code, first, last = outcomes[edges : edges + 4]
    logs_end = edges + 4 + (2 if with_logs else 0)
    found_safe = None
    if any(not isinstance(c, Answer) or c.value not in ("0x", "0x0", "") for c in (code_before, code)):
        # Code at the address at either edge (or no answer about it): its nonce proves nothing, unless it is
        # a Safe whose code we know, read by its events.
        found_safe = safe.read_safe(
            client, chain, start, end, (code_before, code), asked[logs_end:], outcomes[logs_end:]
        )
        if found_safe is None:
            return None
    else:
        with_code.note_mode(chain, with_code.PLAIN, blocks=end - start + 1)
    first_header = header_of(first.value, start) if isinstance(first, Answer) else None
    end_header = header_of(last.value, end) if isinstance(last, Answer) else None
    if first_header is None or end_header is None:
        return None
    logs = _logs(client, chain, start, end, outcomes[edges + 4 : logs_end] if with_logs else None)
    if logs is None:
        return None
    named = {log_block_number(log) for found in logs.coins for log in found}
    # A stray token reaching us or leaving us (a refund paid in it) moves no balance the proof reads: its block
    # is read too (a stray is believed only as far as its block shows it, crawlers/scan/strays.py).
    named |= {log_block_number(log) for log in logs.foreign.from_us} | stray_blocks(chain, logs.foreign.to_us)
    if any(not start <= n <= end for n in named):
        return None  # a log outside what we asked: the full scan holds on it
    moves = _log_moves(chain, logs.coins)
    if moves is None:
        return None
    coins_too = not _coins_close(chain, before, after, moves)
    executed: list[int] = []
    try:
        intervals: list[tuple[Balances, Balances]] = [(before, after)]
        opened: dict[int, tuple[Balances, Balances]] = {}
        if found_safe is not None:
            executed = sorted(found_safe.events.executed())
            by_events = safe.cut_at_executions(client, chain, found_safe, before, after, moves)
            if isinstance(by_events, str):
                safe.logged_reason(chain, start, end, by_events)
                return None
            intervals, opened = by_events
            named |= found_safe.events.named() | (found_safe.value_in or set())
            with_code.note_mode(
                chain, "contract", reading=found_safe.label, traced=len(executed), blocks=end - start + 1
            )
        changed = {**_bisect(client, chain, intervals, moves, coins_too=coins_too), **opened}
    except (StateUnavailable, NoEvidenceError):
        return None
    except _TooBusy:
        return TOO_BUSY
    if recorded_blocks is not None:
        named |= set(recorded_blocks(start, end))
    wanted = sorted(set(changed) | named)
    # plain at both edges, or a Safe's proxy (read through the sparse path only then): what a check provider
    # must show
    codes = {c_block: c.value for c_block, c in ((start - 1, code_before), (end, code)) if isinstance(c, Answer)}
    claim = safe.claim_of(found_safe) if found_safe is not None else None
    if not wanted:
        ledger = ledger_from_blocks(start, before.values, [], end, after.values)
        return SparseScan(
            [],
            None,
            first_header.parent_hash,
            end_header,
            proven=True,
            ledger=ledger,
            foreign=logs.foreign,
            codes=codes,
            safe_claim=claim,
        )
    known = _known_changes(chain, wanted, changed, moves, coins_too=coins_too)
    blocks, held = _read_proven(client, chain, start, end, mode, wanted, logs, known, traced=executed)
    if found_safe is not None and (why := _announced_differs(blocks, changed, moves)) is not None:
        safe.logged_reason(chain, start, end, why)
        return None
    if held is None and (why := _unbalanced(before, after, blocks)) is not None:
        # Balances asked by number (the bisection's, a Safe's points) that the blocks' own, pinned by hash,
        # contradict: what a quiet interval was judged on was not the chain's. Never a guess.
        logger.warning("blocks %d..%d of %s are read in full: %s", start, end, chain.name, why)
        return None
    if with_code.authorized_in(blocks):
        # The address signed an EIP-7702 authorization inside the range (its nonce moved there): between
        # it and a clear, delegated code can move ETH in and out without a nonce move, unseen by the
        # balances. The full scan reads such a range through its traces.
        return None
    reach = None if held else end_header
    ledger = ledger_from_blocks(start, before.values, blocks, None if held else end, None if held else after.values)
    proven = bool(blocks) and held is None
    return SparseScan(
        blocks,
        held,
        first_header.parent_hash,
        reach,
        wanted,
        proven=proven,
        ledger=ledger,
        foreign=logs.foreign,
        codes=codes,
        safe_claim=claim,
    )


def _logs(
    client: RpcClient, chain: ChainSettings, start: int, end: int, answers: list[RpcOutcome] | None
) -> RangeLogs | None:
    """The Transfer logs to and from us over the range, or None without full evidence."""
    if answers and (found := answered_logs(chain, answers)) is not None:
        return found
    try:
        return range_logs(client, chain, start, end)  # splits a span the provider refuses
    except NoEvidenceError:
        return None


def _log_moves(chain: ChainSettings, logs: TransferLogs) -> dict[int, dict[str, int]] | None:
    """Per block, how the range's Transfer logs move each coin's balance (to us +, from us -); None for
    a log that is not one of our coins' or was removed (the full scan holds on it)."""
    coins = {c.contract: c.asset for c in chain.stable_coins}
    moves: dict[int, dict[str, int]] = {}
    for found, sign in zip(logs, (1, -1), strict=True):
        for log in found:
            asset = coins.get((log.get("address") or "").lower())
            if asset is None or log.get("removed"):
                return None
            moved = moves.setdefault(log_block_number(log), {})
            moved[asset] = moved.get(asset, 0) + sign * log_amount(log)
    return moves


def _quiet(low: Balances, high: Balances, moves: dict[int, dict[str, int]]) -> bool:
    """Whether blocks low.block+1..high.block moved each balance by exactly what their logs say (for ETH
    and the nonce: not at all). The blocks the logs name are read in full anyway; an interval whose ends
    are equal while a log inside it moved a coin is not quiet: something else moved it back (a coin
    burnt without a log, USDT's destroyBlackFunds)."""
    explained: dict[str, int] = {}
    for number, moved in moves.items():
        if low.block < number <= high.block:
            for asset, raw in moved.items():
                explained[asset] = explained.get(asset, 0) + raw
    return all(high.values[asset] - low.values[asset] == explained.get(asset, 0) for asset in low.values)


def _coins_close(chain: ChainSettings, before: Balances, after: Balances, moves: dict[int, dict[str, int]]) -> bool:
    """Whether each coin's balance moved over the whole range by exactly what its Transfer logs say.

    Then the blocks the logs name (read in full and proven one by one) hold every coin movement the
    balances can show, and the bisection need only look for ETH and the nonce (half the calls). This is
    the full scan's own verdict too: it bisects only an asset whose range residual is not zero.
    """
    coins = [coin.asset for coin in chain.stable_coins]
    moved = dict.fromkeys(coins, 0)
    for per_block in moves.values():
        for asset, raw in per_block.items():
            moved[asset] = moved.get(asset, 0) + raw
    return all(after.values[asset] - before.values[asset] == moved[asset] for asset in coins)


def _bisect(
    client: RpcClient,
    chain: ChainSettings,
    intervals: list[tuple[Balances, Balances]],
    moves: dict,
    *,
    coins_too: bool,
) -> dict[int, tuple[Balances, Balances]]:
    """The blocks inside `intervals` (each: the balances before its first block and at its last) where a
    balance or the nonce moved by other than what `moves` (per block: the Transfer logs; for a Safe, the
    ETH its SafeReceived events announce) explain (the coins only `coins_too`), each with the balances
    the bisection holds before and after it (asked by number, as the range's edges are).

    A level splits each open interval into up to SPLIT_PARTS parts (crawlers/decode/balances.py
    `split_points`), every interval of the level in one batch: about a third of the levels halving
    needs, each a round trip, for more calls in each."""
    if not intervals:
        return {}
    span = intervals[-1][1].block - intervals[0][0].block
    if not coins_too:
        chain = dataclasses.replace(chain, stable_coins=())
        keep = (ETH, NONCE)
        intervals = [(_only(low, keep), _only(high, keep)) for low, high in intervals]
    changed: dict[int, tuple[Balances, Balances]] = {}
    size = balances_in_batch(chain)
    level = list(intervals)
    while level:
        split: list[tuple[Balances, list[int], Balances]] = []
        for low, high in level:
            if _quiet(low, high, moves):
                continue
            if high.block - low.block == 1:
                changed[high.block] = (low, high)
            else:
                split.append((low, split_points(low.block, high.block), high))
        if not split:
            break
        if len(split) > max(BUSY_INTERVALS, span // 16):
            raise _TooBusy  # a busy stretch: reading every block costs fewer calls than bisecting it
        outcomes = client.batch(
            [call for _, points, _ in split for point in points for call in balance_calls(chain, point)]
        )
        level = []
        answered = iter(range(0, len(outcomes), size))
        for low, points, high in split:
            bounds = [low]
            for point in points:
                at = next(answered)
                bounds.append(balances_from(chain, point, outcomes[at : at + size]))
            level += list(zip(bounds, [*bounds[1:], high], strict=True))
    return dict(sorted(changed.items()))


def _announced_differs(blocks: Sequence[ScannedBlock], changed: dict, moves: dict) -> str | None:
    """Where a Safe's proven block in a quiet interval (its change taken from its SafeReceived events alone)
    moved its ETH by other than they announce: the logs were wrong, and so is the verdict on its interval
    (another block there moved the difference), or None. Its balances pinned by hash show the block's own
    change; an honest Safe's receive() announces exactly what it takes, and a block where more arrived is
    in an interval that does not close, bisected to it."""
    for block in blocks:
        number = block.header.number
        if number in changed:
            continue
        moved = block.flows.get(ETH, 0) + block.settled.get(ETH, 0)
        told = moves.get(number, {}).get(ETH, 0)
        if moved != told:
            return f"block {number} moved its ETH by {moved} wei, its SafeReceived events say {told}"
    return None


def _unbalanced(before: Balances, after: Balances, blocks: Sequence[ScannedBlock]) -> str | None:
    """Where the proven blocks' changes (each its own balances' or its transactions') do not add up to
    the range's change between its edges, what differs; None when they do, as they must when every block
    that moved a balance was read."""
    for asset, opening in before.values.items():
        moved = sum(b.flows.get(asset, 0) + b.settled.get(asset, 0) for b in blocks)
        if after.values[asset] - opening != moved:
            return f"its {asset} moved by {after.values[asset] - opening}, the blocks read add up to {moved}"
    return None


def _only(balances: Balances, keep: Sequence[str]) -> Balances:
    return Balances(balances.block, {k: balances.values[k] for k in keep})


def _known_changes(
    chain: ChainSettings,
    wanted: list[int],
    changed: dict[int, tuple[Balances, Balances]],
    moves: dict,
    *,
    coins_too: bool,
) -> dict[int, dict[str, int]]:
    """Per wanted block, each balance's change over it where the bisection and the range's closed identity
    already prove it, so that no balance need be asked for the block again:

    * ETH and the nonce: the bisection's balances around a block where they moved; zero in a quiet
      interval (without a transaction it signed, ETH can only arrive at an address without code, so an
      interval whose ETH and nonce did not move holds no block where they did);
    * the coins, when the bisection left them out (their change over the range equals their logs): the
      block's own logs, the full scan's verdict on a range whose residual is zero. When the bisection
      asked them, only a block it narrowed down to alone (a changed one) has them.

    A block missing here has its balances asked with its body, as before."""
    coins = [coin.asset for coin in chain.stable_coins]
    known: dict[int, dict[str, int]] = {}
    for number in wanted:
        if number in changed:
            low, high = changed[number]
            change = balance_change(low, high)
        else:  # a quiet interval: ETH only arrived there, by what its SafeReceived events say (a plain one: none)
            change = {ETH: moves.get(number, {}).get(ETH, 0), NONCE: 0}
        if not coins_too:
            change.update({asset: moves.get(number, {}).get(asset, 0) for asset in coins})
        if all(asset in change for asset in (ETH, NONCE, *coins)):
            known[number] = change
    return known


def _read_proven(
    client: RpcClient,
    chain: ChainSettings,
    start: int,
    end: int,
    mode: ReadMode,
    wanted: list[int],
    logs: RangeLogs,
    known: dict[int, dict[str, int]],
    *,
    traced: Sequence[int] = (),
) -> tuple[list[ScannedBlock], BlockHeld | None]:
    """The `wanted` blocks in full, each proven against its own balances (`known` changes, or asked with
    the bodies); stops at the first it cannot prove. A block that does not close on its known change is
    asked again pinned by hash (crawlers/scan/proof.py `settle_located`), as every suspect block is.
    The `traced` blocks (a Safe's executions) have their call frames at the address read first."""
    asked = [n for n in wanted if n not in known]
    extra = [call for n in asked for call in edge_calls(chain, n, n)]
    read = read_range(client, chain, start, end, mode, extra=extra, numbers=wanted, logs=logs)
    untraced = with_code.trace_blocks(client, chain, [b for b in read.blocks if b.header.number in traced])
    size = 2 * balances_in_batch(chain)
    pairs = {n: read.extra[i * size : (i + 1) * size] for i, n in enumerate(asked)}
    proven: list[ScannedBlock] = []
    for block in read.blocks:
        number = block.header.number
        if untraced is not None and number >= untraced.number:
            return proven, untraced  # the blocks before it are recorded proven, as any hold's are
        try:
            if number in known:
                broken = unexplained([block], known[number])
                settled, held = settle_located(client, chain, [block], [(block, broken, False)], mode)
            else:
                before, after = edge_balances(chain, number, number, pairs[number])
                settled, held = settle(client, chain, [block], before, after, mode)
        except (StateUnavailable, NoEvidenceError) as exc:
            return proven, BlockHeld(number, f"no balance evidence for block {number} ({exc})")
        if held is not None:
            return proven, held
        proven += settled
    return proven, read.held
