"""Sparse ranges: read no block body where the balances and the logs prove there is nothing for us.

One batched request asks, for a range start..end: the donation address's balances (ETH, nonce, every
coin) at start-1 and at end, its code at end, the headers of blocks start and end, and the coins'
Transfer logs to and from it. When the balances are equal at both ends and no log names a block, the
range holds nothing for us: the cursor moves over it in one statement (the end header gives its hash,
the start header's parent the continuity check against the cursor).

Why equal balances prove a quiet range for an address without code (an EOA): ETH can only leave it
through a transaction it signs, which moves its nonce; the nonce never goes back; so with the nonce
unchanged, ETH can only have arrived, and an unchanged balance means nothing arrived. Coins move only
with a Transfer log, which the log filters see even where the balance nets out.

Where a balance changed, the range is bisected (balances at midpoints, every open interval of one
level in one batch) down to the single blocks where it changed; those blocks, the blocks the logs name
and the blocks our own rows name are read in full and proven one by one (crawlers/scan/proof.py).

Never sparse (the caller scans in full): an address with code (a Safe, an EIP-7702 account can move
value without its nonce), a provider without historical state, the genesis block, any answer short of
evidence (the full scan then holds or falls back exactly as before), and for the latest crawler a range
beyond the finalized block (only the finalized chain guarantees the blocks in between build on the
cursor, which the end header alone cannot show).
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field

from django.conf import settings

from crawlers.chain.rpc import Answer, NoEvidenceError, RpcClient
from crawlers.decode import transfers as detection
from crawlers.decode.transfers import BlockHeader
from crawlers.models import FINALIZED
from crawlers.scan.proof import (
    ETH,
    Balances,
    StateUnavailable,
    _note_proven,
    _settle,
    balance_calls,
    edge_calls,
    parse_balances,
)
from crawlers.scan.ranges import (
    NONCE,
    BlockHeld,
    ScannedBlock,
    logs_in_one_batch,
    read_range,
    transfer_log_calls,
    transfer_logs,
)
from donations.models import Donation
from dws_project.config import Config

logger = logging.getLogger("dws.crawlers")


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


TOO_BUSY = SparseScan([], None, "", None)  # a range too busy to bisect: the caller reads it in full


def enabled() -> bool:
    """The sparse path is on unless a Django setting (tests comparing it with the full scan) turns it off."""
    return bool(getattr(settings, "CRAWLER_SPARSE", True))


def _header(outcome: object, number: int) -> BlockHeader | None:
    if not isinstance(outcome, Answer) or not isinstance(outcome.value, dict):
        return None
    block = outcome.value
    if not all(isinstance(block.get(k), str) for k in ("number", "hash", "parentHash", "timestamp")):
        return None
    if int(block["number"], 16) != number:
        return None
    return detection.block_header(block)


def opening_calls(client: RpcClient, config: Config, start: int, end: int) -> list[tuple[str, list]]:
    """The one batch a sparse range starts with: the balances at both ends, the code, the two headers and
    (within the provider's log span) the Transfer logs. The crawl loop reads it ahead too."""
    us = config.donation_address
    heads = [
        ("eth_getCode", [us, hex(end)]),
        ("eth_getBlockByNumber", [hex(start), False]),
        ("eth_getBlockByNumber", [hex(end), False]),
    ]
    logs = transfer_log_calls(config, start, end) if logs_in_one_batch(client, config, start, end) else []
    return edge_calls(config, start, end) + heads + logs


def scan_sparse(client: RpcClient, config: Config, start: int, end: int, label: str) -> SparseScan | None:
    """The range start..end the sparse way; None when it must be scanned in full (see the module doc),
    TOO_BUSY when reading it in full is cheaper."""
    if start == 0 or not enabled():
        return None
    with_logs = logs_in_one_batch(client, config, start, end)
    edges = edge_calls(config, start, end)
    outcomes = client.batch(opening_calls(client, config, start, end))
    half = len(edges) // 2
    try:
        before = parse_balances(config, start - 1, outcomes[:half])
        after = parse_balances(config, end, outcomes[half : len(edges)])
    except (StateUnavailable, NoEvidenceError):
        return None  # the full scan asks again, and holds or falls back as the proof requires
    code, first, last = outcomes[len(edges) : len(edges) + 3]
    if not isinstance(code, Answer) or code.value not in ("0x", "0x0", ""):
        return None  # code at the address (or no answer about it): its nonce proves nothing
    first_header, end_header = _header(first, start), _header(last, end)
    if first_header is None or end_header is None:
        return None
    logs = _logs(client, config, start, end, outcomes[len(edges) + 3 :] if with_logs else None)
    if logs is None:
        return None
    named = {int(log.get("blockNumber") or "0x0", 16) for found in logs for log in found}
    if any(not start <= n <= end for n in named):
        return None  # a log outside what we asked: the full scan holds on it
    try:
        changed = _bisect(client, config, before, after, coins_too=not _coins_close(config, before, after, logs))
    except (StateUnavailable, NoEvidenceError):
        return None
    except _TooBusy:
        return TOO_BUSY
    if label == FINALIZED:
        # A row of ours in the range (seen by the latest crawler) is confirmed or failed only by reading
        # its block: a reverted transfer changes no balance.
        named |= set(Donation.objects.filter(block_number__range=(start, end)).values_list("block_number", flat=True))
    wanted = sorted(set(changed) | named)
    if not wanted:
        _note_proven(label, start, end)
        return SparseScan([], None, first_header.parent_hash, end_header)
    blocks, held = _read_proven(client, config, start, end, label, wanted, logs)
    if blocks and held is None:
        _note_proven(label, start, end)
    return SparseScan(blocks, held, first_header.parent_hash, None if held else end_header, wanted)


def _logs(client: RpcClient, config: Config, start: int, end: int, answers: list | None):
    """The Transfer logs to and from us over the range, or None without full evidence."""
    if not config.stable_coins:
        return [], []
    if answers and all(isinstance(a, Answer) and isinstance(a.value, list) for a in answers):
        return answers[0].value, answers[1].value
    try:
        return transfer_logs(client, config, start, end)  # splits a span the provider refuses
    except NoEvidenceError:
        return None


def _coins_close(config: Config, before: Balances, after: Balances, logs) -> bool:
    """Whether each coin's balance moved by exactly what the range's Transfer logs say.

    Then the blocks the logs name (read in full and proven one by one) hold every coin movement, and
    the bisection need only look for ETH and the nonce (half the calls).
    """
    coins = {c.contract: c.asset for c in config.stable_coins}
    moved = dict.fromkeys(coins.values(), 0)
    for found, sign in zip(logs, (1, -1), strict=True):
        for log in found:
            asset = coins.get((log.get("address") or "").lower())
            if asset is None or log.get("removed"):
                return False
            data = log.get("data") or "0x"
            moved[asset] += sign * (int(data, 16) if data not in ("0x", "") else 0)
    return all(after.values[asset] - before.values[asset] == raw for asset, raw in moved.items())


def _bisect(client: RpcClient, config: Config, before: Balances, after: Balances, *, coins_too: bool) -> list[int]:
    """The blocks after `before` up to `after` where the ETH balance or the nonce changed (and any coin
    balance, with `coins_too`)."""
    if not coins_too:
        config = dataclasses.replace(config, stable_coins=())
        keep = (ETH, NONCE)
        before = Balances(before.block, {k: before.values[k] for k in keep})
        after = Balances(after.block, {k: after.values[k] for k in keep})
    changed: list[int] = []
    level = [(before, after)]
    while level:
        split: list[tuple[Balances, int, Balances]] = []
        for low, high in level:
            if low.values == high.values:
                continue
            if high.block - low.block == 1:
                changed.append(high.block)
            else:
                split.append((low, (low.block + high.block) // 2, high))
        if not split:
            break
        if len(split) > max(BUSY_INTERVALS, (after.block - before.block) // 16):
            raise _TooBusy  # a busy stretch: reading every block costs fewer calls than bisecting it
        calls = [call for _, mid, _ in split for call in balance_calls(config, mid)]
        outcomes = client.batch(calls)
        size = len(calls) // len(split)
        level = []
        for i, (low, mid, high) in enumerate(split):
            middle = parse_balances(config, mid, outcomes[i * size : (i + 1) * size])
            level += [(low, middle), (middle, high)]
    return sorted(changed)


def _read_proven(
    client: RpcClient, config: Config, start: int, end: int, label: str, wanted: list[int], logs
) -> tuple[list[ScannedBlock], BlockHeld | None]:
    """The `wanted` blocks in full, each proven against its own balances; stops at the first it cannot prove."""
    extra = [call for n in wanted for call in edge_calls(config, n, n)]
    read = read_range(client, config, start, end, label, extra=extra, numbers=wanted, logs=logs)
    size = len(extra) // len(wanted) // 2
    proven: list[ScannedBlock] = []
    for i, block in enumerate(read.blocks):
        pair = read.extra[2 * i * size : 2 * (i + 1) * size]
        try:
            before = parse_balances(config, block.header.number - 1, pair[:size])
            after = parse_balances(config, block.header.number, pair[size:])
            settled, held = _settle(client, config, [block], before, after, label)
        except (StateUnavailable, NoEvidenceError) as exc:
            number = block.header.number
            return proven, BlockHeld(number, f"no balance evidence for block {number} ({exc})")
        if held is not None:
            return proven, held
        proven += settled
    return proven, read.held
