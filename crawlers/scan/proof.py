"""The balance proof: every wei and coin unit that reached or left the donation address in a range is accounted for.

With each range the crawlers read, the same batch as its blocks asks the donation address's ETH balance,
its nonce and each coin's `balanceOf` at the block before the range and at its last block. For every
asset the identity must close, in raw units (wei, coin base units; never the 8-decimal donation scale,
which rounds down):

    balance(end) - balance(start - 1) = what arrived (ETH txs with status 1, Transfer logs to us)
                                        - what left (txs sent from us: value + fee; Transfer logs from us)

and the nonce must grow by the number of transactions we saw leave. A range that closes is *proven
complete*. Where it does not, balances at midpoints (pinned by block hash) bisect it down to the single
blocks where it breaks, and each is settled:

* ETH that arrived unexplained: internal transfers from call traces (`crawlers.scan.traces`), credited like
  any ETH donation; what traces cannot show is an *unexplained inflow* (recorded for finalized blocks),
  and the cursor moves on. A trace provider giving no evidence right now holds the block.
* Coins that arrived unexplained while the block's logsBloom says a Transfer of that coin involving us
  may be there: eth_getLogs answered short (a lagging node), so the block is held and retried. A bloom
  that rules such a log out makes it an unexplained inflow instead.
* Anything that left without a transaction or log we saw, or a nonce that does not match: the answers
  contradict each other; the block is held.

A provider without historical state (a full node asked far behind its head) cannot prove old ranges:
they are scanned as before, logged once, and reported on /health ("completeness unproven before N").
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from eth_hash.auto import keccak

from crawlers.chain.rpc import NoEvidence, NoEvidenceError, RpcClient
from crawlers.chain.rpc import Outcome as RpcOutcome
from crawlers.decode.transfers import TRANSFER_TOPIC, donation_address_topic
from crawlers.models import FINALIZED, LATEST, Completeness
from crawlers.scan import traces
from crawlers.scan.ranges import NONCE, BlockHeld, ScannedBlock, opening_calls, read_range
from dws_project.config import Config

logger = logging.getLogger("dws.crawlers")

ETH = "eth"
WEI_PER_ETH = 10**18
# Traced transfers come at the 8-decimal column scale, rounded down (and zero-at-scale frames dropped):
# each leaves less than one column unit unexplained, which is rounding, not a missing donation.
COLUMN_UNIT_WEI = 10**10
HISTORICAL_STATE = re.compile(
    r"missing trie node|header not found|state (is )?not available|historical state|state .*(pruned|not found)",
    re.IGNORECASE,
)
RECENT_STATES = 128  # blocks of state a full node keeps behind its head (geth's default)
_warned_unproven: set[str] = set()  # labels already warned about in this process (the log line only)


class StateUnavailable(Exception):
    """The provider keeps no state for that block: the balance proof is impossible there."""

    def __init__(self, block: int, detail: str) -> None:
        self.block = block
        super().__init__(detail)


@dataclass(frozen=True)
class Balances:
    block: int
    values: dict[str, int]  # "eth" (wei), NONCE, and each coin asset (base units)


def _block_param(block: int | str) -> Any:
    """A number, or a block hash pinned through EIP-1898 (the balance of exactly that block)."""
    return {"blockHash": block} if isinstance(block, str) else hex(block)


def balance_calls(config: Config, block: int | str) -> list[tuple[str, list[Any]]]:
    us = config.donation_address
    at = _block_param(block)
    data = "0x70a08231" + donation_address_topic(us)[2:]  # balanceOf(us)
    return [("eth_getBalance", [us, at]), ("eth_getTransactionCount", [us, at])] + [
        ("eth_call", [{"to": coin.contract, "data": data}, at]) for coin in config.stable_coins
    ]


def parse_balances(config: Config, block: int, outcomes: Sequence[RpcOutcome]) -> Balances:
    """Raises StateUnavailable (no historical state) or NoEvidenceError (anything else short of an answer)."""
    assets = [ETH, NONCE] + [coin.asset for coin in config.stable_coins]
    values: dict[str, int] = {}
    for asset, outcome in zip(assets, outcomes, strict=True):
        if isinstance(outcome, NoEvidence):
            if outcome.kind == "error" and HISTORICAL_STATE.search(outcome.detail):
                raise StateUnavailable(block, outcome.detail)
            raise NoEvidenceError(outcome)
        value = outcome.value
        if value == "0x" and asset not in (ETH, NONCE):
            value = "0x0"  # a call to an address without code (the coin not deployed yet at that block)
        if not isinstance(value, str) or not value.startswith("0x") or len(value) < 3:
            raise NoEvidenceError(NoEvidence(outcome_method(asset), "malformed", f"balance of {asset} is {value!r}"))
        values[asset] = int(value, 16)
    return Balances(block, values)


def outcome_method(asset: str) -> str:
    return {ETH: "eth_getBalance", NONCE: "eth_getTransactionCount"}.get(asset, "eth_call")


def balances_at(client: RpcClient, config: Config, number: int, block_hash: str | None = None) -> Balances:
    return parse_balances(config, number, client.batch(balance_calls(config, block_hash or number)))


def scan_range(
    client: RpcClient, config: Config, start: int, end: int, label: str = LATEST
) -> tuple[list[ScannedBlock], BlockHeld | None]:
    """Blocks start..end with their donations, proven complete by the balances; stops at the first block
    that cannot be proven (returns the proven prefix and the hold)."""
    if start == 0:
        return _unproven(client, config, start, end, label)
    calls = edge_calls(config, start, end)
    read = read_range(client, config, start, end, label, extra=calls)
    if not read.blocks:
        return [], read.held
    half = len(calls) // 2
    last = read.blocks[-1].header.number
    try:
        before = parse_balances(config, start - 1, read.extra[:half])
        after = (
            parse_balances(config, end, read.extra[half:])
            if last == end
            else balances_at(client, config, last, read.blocks[-1].header.hash)
        )
        blocks, held = _settle(client, config, read.blocks, before, after, label)
    except StateUnavailable as exc:
        if not _far_behind(client, exc.block):
            # The same words from a node that lags its peers (a load balancer) about a recent block: that
            # is no evidence, and skipping the proof there would trust the very answers it checks.
            return [], BlockHeld(start, f"no balance evidence for blocks {start}..{last} (recent block: {exc})")
        _note_unproven(label, last, str(exc))
        return read.blocks, read.held
    except NoEvidenceError as exc:
        return [], BlockHeld(start, f"no balance evidence for blocks {start}..{last} ({exc})")
    if blocks:
        _note_proven(label, start, blocks[-1].header.number)
    return blocks, held or read.held


def edge_calls(config: Config, start: int, end: int) -> list[tuple[str, list[Any]]]:
    """The balances at the block before the range and at its end, riding in the blocks' batch."""
    return balance_calls(config, start - 1) + balance_calls(config, end) if start else []


def scan_range_opening(
    client: RpcClient, config: Config, start: int, end: int, label: str
) -> list[list[tuple[str, Sequence[Any]]]]:
    """The batches `scan_range` posts first, for the crawl loop to read ahead."""
    return opening_calls(client, config, start, end, label, edge_calls(config, start, end))


def _note_proven(label: str, start: int, last: int) -> None:
    """Blocks start..last are proven complete: logged, and the crawler's high-water mark for /health."""
    logger.info("balance proof: blocks %d..%d proven complete (%s)", start, last, label)
    if label not in (LATEST, FINALIZED):
        return
    row, _ = Completeness.objects.get_or_create(label=label)
    if row.proven_through is None or row.proven_through < last:  # a single-block re-crawl never lowers it
        row.proven_through = last
        row.save(update_fields=["proven_through", "modified_at"])


def _far_behind(client: RpcClient, block: int) -> bool:
    """Whether `block` is beyond the recent states every full node keeps (so its state may be pruned)."""
    try:
        return client.block_number() - block > RECENT_STATES
    except NoEvidenceError:
        return False


def _unproven(client: RpcClient, config: Config, start: int, end: int, label: str):
    read = read_range(client, config, start, end, label)
    if read.blocks:
        _note_unproven(label, read.blocks[-1].header.number, "no balance before the genesis block")
    return read.blocks, read.held


def _note_unproven(label: str, last: int, why: str) -> None:
    """Today's scan without proof for blocks up to `last`: on /health, and one WARNING per process."""
    if label not in (LATEST, FINALIZED):
        return
    row, _ = Completeness.objects.get_or_create(label=label)
    if row.unproven_before is None or row.unproven_before <= last:
        row.unproven_before = last + 1
        row.save(update_fields=["unproven_before", "modified_at"])
    if label not in _warned_unproven:
        _warned_unproven.add(label)
        logger.warning(
            "crawl %s: the provider keeps no historical state (%s); completeness unproven before block %d, "
            "those blocks are scanned without the balance proof",
            label,
            why,
            last + 1,
        )


def _residual(blocks: Sequence[ScannedBlock], before: Balances, after: Balances) -> dict[str, int]:
    """Per asset: the balance change no transaction or log of these blocks explains (0 = closes)."""
    return {
        asset: after.values[asset] - before.values[asset] - sum(b.flows.get(asset, 0) for b in blocks)
        for asset in before.values
    }


def _locate(
    client: RpcClient, config: Config, blocks: Sequence[ScannedBlock], before: Balances, after: Balances
) -> list[tuple[ScannedBlock, dict[str, int]]]:
    """The single blocks where the identity breaks, with what is unexplained there, in block order."""
    broken = {asset: r for asset, r in _residual(blocks, before, after).items() if r != 0}
    if not broken:
        return []
    if len(blocks) == 1:
        return [(blocks[0], broken)]
    mid = len(blocks) // 2
    header = blocks[mid - 1].header
    middle = balances_at(client, config, header.number, header.hash)
    return _locate(client, config, blocks[:mid], before, middle) + _locate(client, config, blocks[mid:], middle, after)


def _settle(
    client: RpcClient, config: Config, blocks: list[ScannedBlock], before: Balances, after: Balances, label: str
) -> tuple[list[ScannedBlock], BlockHeld | None]:
    for block, suspect in _locate(client, config, blocks, before, after):
        number = block.header.number
        # The range's edges were asked by number; ask again pinned to this block and its parent, so an
        # answer about another fork (a re-org between requests) is not taken for missing money.
        broken = _pinned_residual(client, config, block)
        if not broken:
            logger.info("balance proof: block %d closes when pinned by hash (was %s)", number, suspect)
            continue
        logger.info("balance proof: block %d does not close at first look: %s", number, broken)
        reason = _settle_block(client, config, block, broken, label)
        if reason is not None:
            return [b for b in blocks if b.header.number < number], BlockHeld(number, reason)
    return blocks, None


def _pinned_residual(client: RpcClient, config: Config, block: ScannedBlock) -> dict[str, int]:
    header = block.header
    calls = balance_calls(config, header.parent_hash) + balance_calls(config, header.hash)
    outcomes = client.batch(calls)
    half = len(calls) // 2
    before = parse_balances(config, header.number - 1, outcomes[:half])
    after = parse_balances(config, header.number, outcomes[half:])
    return {asset: r for asset, r in _residual([block], before, after).items() if r != 0}


def _settle_block(
    client: RpcClient, config: Config, block: ScannedBlock, broken: dict[str, int], label: str
) -> str | None:
    """Explain a block's residuals (traces, bloom) or set its unexplained inflows; a reason to hold, or None."""
    number = block.header.number
    if broken.get(NONCE):
        return f"the donation address's nonce moved by {broken[NONCE]} more than the transactions it sent"
    coins = {coin.asset: coin for coin in config.stable_coins}
    for asset, raw in broken.items():
        if asset == NONCE:
            continue
        if raw < 0:
            return f"{-raw} raw units of {asset} left the donation address that no transaction or log shows"
        if asset in coins:
            if bloom_may_hold_transfer(block.logs_bloom, coins[asset].contract, config.donation_address):
                return (
                    f"the {asset} balance rose by {raw} raw units more than the Transfer logs show and the "
                    "block's logsBloom says a Transfer involving us may be there: eth_getLogs answered short, retrying"
                )
            block.unexplained.append((asset, raw))
            continue
        try:
            found = traces.internal_eth_transfers(client, config, block_number=number, block_hash=block.header.hash)
        except NoEvidenceError as exc:
            return f"ETH arrived that no transaction explains and the call traces gave no evidence ({exc})"
        except traces.TracesUnavailable as exc:
            logger.warning("balance proof: block %d: no call traces (%s)", number, exc)
            block.unexplained.append((ETH, raw))
            continue
        traced = sum(int(t.amount * WEI_PER_ETH) for t in found)
        left = raw - traced
        if left < 0:
            return f"the call traces show {traced} wei arriving, the balance only {raw}"
        block.transfers.extend(found)
        if left >= COLUMN_UNIT_WEI * (len(found) + 1):
            block.unexplained.append((ETH, left))
    if block.unexplained and label == LATEST:
        logger.warning(
            "balance proof: block %d: unexplained %s (recorded once the block is final)", number, block.unexplained
        )
    return None


def display_amount(config: Config, asset: str, raw: int) -> Decimal:
    """A raw amount in the asset's own units (ETH, whole coins)."""
    decimals = 18 if asset == ETH else next(c.scale for c in config.stable_coins if c.asset == asset)
    return Decimal(raw).scaleb(-decimals)


def _bloom_bits(item: bytes) -> list[int]:
    digest = keccak(item)
    return [((digest[i] << 8) | digest[i + 1]) & 0x7FF for i in (0, 2, 4)]


def bloom_contains(bloom: str, item: bytes) -> bool:
    """Whether a 2048-bit logsBloom may contain `item` (an address or a topic); False only when it cannot."""
    try:
        data = bytes.fromhex(bloom.removeprefix("0x"))
    except ValueError:
        return True  # an unreadable bloom proves nothing: assume it may
    if len(data) != 256:
        return True
    return all(data[255 - bit // 8] & (1 << (bit % 8)) for bit in _bloom_bits(item))


def bloom_may_hold_transfer(bloom: str, contract: str, donation_address: str) -> bool:
    """A Transfer log of `contract` with the donation address as sender or recipient may be in the block."""
    us = bytes.fromhex(donation_address_topic(donation_address)[2:])
    return (
        bloom_contains(bloom, bytes.fromhex(contract.removeprefix("0x")))
        and bloom_contains(bloom, bytes.fromhex(TRANSFER_TOPIC[2:]))
        and bloom_contains(bloom, us)
    )
