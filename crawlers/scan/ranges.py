"""Reading a range of blocks: one batched request for the range's full blocks (the balance evidence riding
along), one batched request for the coins' Transfer logs to and from the donation address, and one for the
receipts of the transactions moving ETH at it (only when there are any); see crawlers/chain/block_store.py for the
block cache and the debug store.

`read_range` returns the blocks it could prove and, if it stopped early, the `BlockHeld` saying why: the
blocks' parent hashes must chain together and every log and receipt must name the block we fetched. Each
block carries its donations and its raw flows at the donation address, which crawlers/scan/proof.py checks
against the balances.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings

from crawlers.chain.block_store import block_calls, block_well_formed, debug_dump, fetch_blocks_with
from crawlers.chain.rpc import READ_TIMEOUT, Answer, NoEvidence, NoEvidenceError, RpcClient
from crawlers.chain.rpc import Outcome as RpcOutcome
from crawlers.decode import transfers as detection
from crawlers.decode.transfers import BlockHeader, EthCandidate, Transfer
from crawlers.models import FINALIZED, LATEST
from donations.models import amount_scale
from dws_project.config import Config

logger = logging.getLogger("dws.crawlers")

RECONCILE = "reconcile"  # the debug-store name of blocks read by `reconcile` (finalized, so cached too)
NONCE = "nonce"  # the pseudo-asset of the balance proof counting transactions sent from the address
RANGE_BLOCKS = 50  # blocks fetched per batch: one round trip for the blocks, one for the logs
STUCK_POINTER = 'if this persists see docs/operating.md, "a crawler is stuck on a block"'


class BlockHeld(Exception):
    """A block we cannot prove; the cursor stays before it."""

    def __init__(self, number: int, reason: str, *, stuck: bool = True, price_minute: datetime | None = None) -> None:
        self.number = number
        self.stuck = stuck  # False: waiting for something already on its way (a price), not for an operator
        self.price_minute = price_minute  # the minute to file a price request for, once the block rolled back
        super().__init__(reason)

    def describe(self) -> str:
        return stuck_message(self.number, str(self)) if self.stuck else f"block: {self.number} -- {self}"


@dataclass
class ScannedBlock:
    header: BlockHeader
    transfers: list[Transfer] = field(default_factory=list)
    reverted: list[str] = field(default_factory=list)  # ETH txs to us whose receipt says status 0
    # Raw change at the donation address that the block's transactions and logs explain, per asset
    # ("eth" in wei, each coin in its base units, NONCE in transactions sent): arrivals - departures.
    flows: dict[str, int] = field(default_factory=dict)
    logs_bloom: str = ""
    # What the balance proof could not explain (finalized blocks record it): (asset, raw amount).
    unexplained: list[tuple[str, int]] = field(default_factory=list)

    def add_flow(self, asset: str, raw: int) -> None:
        self.flows[asset] = self.flows.get(asset, 0) + raw


def stuck_message(number: int, reason: str) -> str:
    return f"block: {number} -- {reason}; {STUCK_POINTER}"


def make_client(config: Config | None = None) -> RpcClient:
    config = config or settings.CONFIG
    # The read time-out can be lowered (tests) by a Django setting; it is never unbounded.
    return RpcClient(config.eth_rpc_url, read_timeout=getattr(settings, "CRAWLER_RPC_READ_TIMEOUT", READ_TIMEOUT))


PROBE_TIMEOUT = 2.0  # seconds: /health and the admin ask the provider, and must answer even if it hangs


def make_probe_client(config: Config | None = None) -> RpcClient:
    """A client for quick looks (health, admin forms): a hanging provider costs at most a few seconds."""
    config = config or settings.CONFIG
    return RpcClient(config.eth_rpc_url, connect_timeout=PROBE_TIMEOUT / 2, read_timeout=PROBE_TIMEOUT)


@dataclass
class RangeRead:
    """What `read_range` found: the proven prefix of the range, why it stopped early, the extra answers."""

    blocks: list[ScannedBlock]
    held: BlockHeld | None
    extra: list[RpcOutcome]


def read_range(
    client: RpcClient,
    config: Config,
    start: int,
    end: int,
    label: str = LATEST,
    *,
    extra: Sequence[tuple[str, Sequence[Any]]] = (),
    numbers: Sequence[int] | None = None,
    logs: tuple[list[dict], list[dict]] | None = None,
) -> RangeRead:
    """Blocks start..end with their donations and raw flows; stops at the first block it cannot prove.

    The blocks' own parent hashes must chain together and every log and receipt must name the block we
    fetched: a re-org between our requests shows up as a mismatch, which is no evidence either. Besides
    the donations, each block carries its raw flows at the donation address (`ScannedBlock.flows`):
    what arrived and left in wei / coin base units, for the balance proof.

    `numbers` (the sparse path, crawlers/scan/sparse.py) reads only those blocks of the range, with the
    range's Transfer `logs` already in hand; only blocks next to each other must chain.
    """
    eth_scale = amount_scale("eth")
    coin_scale = amount_scale("usdt")
    us = config.donation_address
    numbers = list(numbers) if numbers is not None else range(start, end + 1)
    outcomes, extra_outcomes = fetch_blocks_with(
        client, config, numbers, finalized=label in (FINALIZED, RECONCILE), extra=extra
    )
    blocks: list[dict] = []
    held: BlockHeld | None = None
    for number, outcome in zip(numbers, outcomes, strict=True):
        if isinstance(outcome, NoEvidence) and outcome.kind == "cache-write":
            held = BlockHeld(number, f"DWS_BLOCK_CACHE: could not write the block ({outcome.detail})")
            break
        if isinstance(outcome, NoEvidence):
            held = BlockHeld(number, f"no block from the provider ({outcome.kind}: {outcome.detail})")
            break
        if not block_well_formed(outcome.value, number):
            held = BlockHeld(number, "the provider's block is malformed (wrong number, no hash or no transactions)")
            break
        if (
            blocks
            and int(blocks[-1]["number"], 16) == number - 1
            and outcome.value["parentHash"].lower() != blocks[-1]["hash"].lower()
        ):
            held = BlockHeld(number, "block does not build on the previous one fetched (re-org under way)")
            break
        blocks.append(outcome.value)
        debug_dump(config, f"{label}-{number}.json", outcome.value)
    if not blocks:
        return RangeRead([], held, extra_outcomes)
    last = int(blocks[-1]["number"], 16)
    scanned: dict[int, ScannedBlock] = {}
    candidates: list[EthCandidate] = []  # ETH to us worth recording (non-zero at the column scale)
    moves: list[_Move] = []  # every transaction moving ETH at the donation address, for the raw flows
    for block in blocks:
        header = detection.block_header(block)
        scanned[header.number] = ScannedBlock(header=header, logs_bloom=str(block.get("logsBloom") or ""))
        candidates += detection.eth_candidates(block, us, eth_scale)
        moves += _moves(block, us)

    if logs is not None:  # the sparse path asked them for the whole range: keep those of the blocks read
        to_us, from_us = ([log for log in found if int(log.get("blockNumber") or "0x0", 16) <= last] for found in logs)
    else:
        try:
            to_us, from_us = transfer_logs(client, config, start, last)
        except NoEvidenceError as exc:
            held = BlockHeld(start, f"no Transfer logs for blocks {start}..{last} ({exc})")
            return RangeRead([], held, extra_outcomes)
    coins = {c.contract: c.asset for c in config.stable_coins}
    for logs, sign in ((to_us, 1), (from_us, -1)):
        for log in logs:
            number, block_hash = int(log.get("blockNumber") or "0x0", 16), (log.get("blockHash") or "").lower()
            block = scanned.get(number)
            if block is None or block.header.hash != block_hash:
                cut = min(number, last)
                tx = (log.get("transactionHash") or "").lower()
                return RangeRead(
                    _prefix(scanned, cut),
                    BlockHeld(cut, f"Transfer log of tx '{tx}' names another block hash (re-org under way)"),
                    extra_outcomes,
                )
            asset = coins.get((log.get("address") or "").lower())
            if asset is not None and not log.get("removed"):
                data = log.get("data") or "0x"
                block.add_flow(asset, sign * (int(data, 16) if data not in ("0x", "") else 0))
    for transfer in detection.token_transfers(to_us, config.stable_coins, us, coin_scale):
        scanned[transfer.block_number].transfers.append(transfer)

    wanted = {m.tx_hash for m in moves}
    receipt_list = sorted(wanted)
    receipts = client.batch([("eth_getTransactionReceipt", [h]) for h in receipt_list]) if receipt_list else []
    by_hash = dict(zip(receipt_list, receipts, strict=True))
    recordable = {c.tx_hash: c for c in candidates}
    for move in moves:
        outcome = by_hash[move.tx_hash]
        receipt = outcome.value if isinstance(outcome, Answer) else None
        debug_dump(config, f"txr-{move.tx_hash}.json", receipt)
        if not _receipt_usable(receipt, move.block_hash):
            why = (
                outcome.describe() if isinstance(outcome, NoEvidence) else "receipt of another block or without status"
            )
            logger.warning("receipt of tx %s in block %d unusable: %s", move.tx_hash, move.block_number, why)
            return RangeRead(
                _prefix(scanned, move.block_number),
                BlockHeld(
                    move.block_number,
                    f"no tx receipt for tx '{move.tx_hash}' ({_usable(moves, by_hash, move.block_number)} usable "
                    f"receipt(s) for {sum(m.block_number == move.block_number for m in moves)} tx(s))",
                ),
                extra_outcomes,
            )
        block = scanned[move.block_number]
        succeeded = detection.receipt_succeeded(receipt)  # type: ignore[arg-type]
        if move.sender == us:
            block.add_flow(NONCE, 1)
            block.add_flow("eth", -(move.wei if succeeded else 0) - _fee(receipt))  # type: ignore[arg-type]
        if move.to == us and succeeded:
            block.add_flow("eth", move.wei)
        candidate = recordable.get(move.tx_hash)
        if candidate is None:
            continue
        if succeeded:
            block.transfers.append(detection.eth_transfer(candidate, eth_scale))
        else:
            block.reverted.append(candidate.tx_hash)
    return RangeRead(_prefix(scanned, last + 1), held, extra_outcomes)


def scan_range(
    client: RpcClient, config: Config, start: int, end: int, label: str = LATEST
) -> tuple[list[ScannedBlock], BlockHeld | None]:
    """Blocks start..end with their donations, without the balance proof (see crawlers.scan.proof)."""
    read = read_range(client, config, start, end, label)
    return read.blocks, read.held


@dataclass(frozen=True)
class _Move:
    """A transaction sending ETH to the donation address, or any transaction sent from it."""

    tx_hash: str
    sender: str
    to: str
    wei: int
    block_number: int
    block_hash: str


def _moves(block: dict, us: str) -> list[_Move]:
    number, block_hash = int(block["number"], 16), block["hash"].lower()
    found = []
    for tx in block.get("transactions") or ():
        if not isinstance(tx, dict):
            continue
        sender, to = (tx.get("from") or "").lower(), (tx.get("to") or "").lower()
        wei = int(tx.get("value") or "0x0", 16)
        if sender == us or (to == us and wei > 0):
            found.append(_Move(tx["hash"].lower(), sender, to, wei, number, block_hash))
    return found


def _fee(receipt: dict) -> int:
    """What a transaction cost its sender in wei: gas (and blob gas) at the price it really paid."""
    price = receipt.get("effectiveGasPrice") or receipt.get("gasPrice") or "0x0"
    fee = int(receipt.get("gasUsed") or "0x0", 16) * int(price, 16)
    if receipt.get("blobGasUsed") and receipt.get("blobGasPrice"):
        fee += int(receipt["blobGasUsed"], 16) * int(receipt["blobGasPrice"], 16)
    return fee


def transfer_logs(client: RpcClient, config: Config, start: int, last: int) -> tuple[list[dict], list[dict]]:
    """The coins' Transfer logs to and from the donation address: two filters in one round trip.

    A provider that refuses the span (or either filter) is asked again through `get_logs`, which
    splits the range; anything short of two full answers raises NoEvidenceError.
    """
    if not config.stable_coins:
        return [], []
    if logs_in_one_batch(client, config, start, last):
        outcomes = client.batch(transfer_log_calls(config, start, last))
        if all(isinstance(o, Answer) and isinstance(o.value, list) for o in outcomes):
            return outcomes[0].value, outcomes[1].value
    contracts = [c.contract for c in config.stable_coins]
    to_us, from_us = (
        client.get_logs(addresses=contracts, topics=topics, from_block=start, to_block=last)
        for topics in _transfer_filters(config)
    )
    return to_us, from_us


def _transfer_filters(config: Config) -> tuple[list, list]:
    """The topics of a coin Transfer to the donation address, and of one from it."""
    us = detection.donation_address_topic(config.donation_address)
    return [detection.TRANSFER_TOPIC, None, us], [detection.TRANSFER_TOPIC, us]


def logs_in_one_batch(client: RpcClient, config: Config, start: int, end: int) -> bool:
    """Whether both Transfer filters over start..end go in one batch: there are coins to ask about, and
    the span is within what the provider accepts (else `get_logs` splits it)."""
    return bool(config.stable_coins) and end - start + 1 <= client.log_span


def transfer_log_calls(config: Config, start: int, end: int) -> list[tuple[str, list]]:
    """The two eth_getLogs filters (to and from us) over start..end, for one batch."""
    span = {"address": [c.contract for c in config.stable_coins], "fromBlock": hex(start), "toBlock": hex(end)}
    return [("eth_getLogs", [{**span, "topics": topics}]) for topics in _transfer_filters(config)]


def opening_calls(
    client: RpcClient, config: Config, start: int, end: int, label: str, extra: Sequence[tuple[str, Sequence[Any]]]
) -> list[list[tuple[str, Sequence[Any]]]]:
    """The batches `read_range(start, end, extra=extra)` posts first when nothing holds it (its blocks,
    then its logs), for the crawl loop to read ahead; receipts depend on the blocks and are not here."""
    blocks = block_calls(config, range(start, end + 1), finalized=label in (FINALIZED, RECONCILE), extra=extra)
    logs = transfer_log_calls(config, start, end) if logs_in_one_batch(client, config, start, end) else []
    return [blocks, logs]


def _receipt_usable(receipt: object, block_hash: str) -> bool:
    """A receipt of the block we fetched that says plainly whether the transaction succeeded."""
    return (
        isinstance(receipt, dict)
        and (receipt.get("blockHash") or "").lower() == block_hash
        and receipt.get("status") in ("0x0", "0x1")  # anything else proves neither success nor revert
    )


def _usable(moves: Sequence[_Move], by_hash: dict[str, RpcOutcome], number: int) -> int:
    """How many of block `number`'s receipts we did get (for the stuck line)."""
    return sum(
        isinstance(by_hash[m.tx_hash], Answer) and _receipt_usable(by_hash[m.tx_hash].value, m.block_hash)  # type: ignore[union-attr]
        for m in moves
        if m.block_number == number
    )


def _prefix(scanned: dict[int, ScannedBlock], stop: int) -> list[ScannedBlock]:
    """The scanned blocks before `stop`, in order."""
    return [scanned[n] for n in sorted(scanned) if n < stop]
