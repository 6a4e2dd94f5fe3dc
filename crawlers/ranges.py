"""Reading a range of blocks: one batched request for the range's full blocks, one `eth_getLogs` for the
coins' Transfer logs to the donation address, one batched request for the receipts of the ETH transfers
found; finalized blocks through DWS_BLOCK_CACHE, raw answers kept in DWS_DEBUG_DATA_STORE.

`scan_range` returns the blocks it could prove and, if it stopped early, the `BlockHeld` saying why: the
blocks' parent hashes must chain together and every log and receipt must name the block we fetched.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from django.conf import settings

from crawlers import detection
from crawlers.detection import BlockHeader, EthCandidate, Transfer
from crawlers.models import FINALIZED, LATEST
from crawlers.rpc import READ_TIMEOUT, Answer, NoEvidence, NoEvidenceError, RpcClient
from crawlers.rpc import Outcome as RpcOutcome
from donations.models import amount_scale
from dws_project.config import Config

logger = logging.getLogger("dws.crawlers")

RECONCILE = "reconcile"  # the debug-store name of blocks read by `reconcile` (finalized, so cached too)
RANGE_BLOCKS = 50  # blocks fetched per batch: one round trip for the blocks, one for the logs
STUCK_POINTER = "if this persists see 'a crawler is stuck on a block' in the README"


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


# --- reading the chain ----------------------------------------------------------------------------


def write_private(directory: str, name: str, text: str) -> None:
    """Write `directory/name` readable by its owner only (0600), creating the directory on first use.

    Written to a temporary name and renamed, so a reader (or a crash) never sees half a file.
    """
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    temporary = folder / f".{name}.{os.getpid()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # an existing file keeps its mode through O_CREAT; the umask may widen it
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    os.replace(temporary, target)


def debug_dump(config: Config, name: str, payload: object) -> None:
    """DWS_DEBUG_DATA_STORE: keep a raw provider answer for replay; a failed write never stops a crawl."""
    if not config.debug_data_store:
        return
    try:
        write_private(config.debug_data_store, name, json.dumps(payload))
    except (OSError, TypeError, ValueError) as exc:
        logger.warning("debug data store: could not write %s: %s", name, type(exc).__name__)


# --- DWS_BLOCK_CACHE: finalized blocks kept on disk ---------------------------------------------


class BlockCacheWriteError(Exception):
    """A fetched finalized block could not be written to DWS_BLOCK_CACHE: the block is retried next run."""


def _cached_block(config: Config, number: int) -> dict | None:
    """The cached copy of finalized block `number`; a copy that does not parse (or is not that block) is
    discarded, so the caller fetches it again."""
    path = Path(config.block_cache) / f"fb-{number}.json"  # type: ignore[arg-type]
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except OSError as exc:
        logger.warning("block cache: cannot read %s (%s); asking the provider", path.name, type(exc).__name__)
        return None
    try:
        block = json.loads(text)
    except ValueError:
        block = None
    if not _block_well_formed(block, number):
        logger.warning("block cache: %s is corrupt; discarded, fetching the block again", path.name)
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    return block


def fetch_blocks(client: RpcClient, config: Config, numbers: Sequence[int], *, finalized: bool) -> list[RpcOutcome]:
    """Full blocks by number, in one batch; finalized ones through DWS_BLOCK_CACHE when it is set.

    A block fetched for the cache that cannot be written there comes back as NoEvidence of kind
    "cache-write": the caller holds it, exactly like a block the provider did not give.
    """
    use_cache = finalized and bool(config.block_cache)
    outcomes: dict[int, RpcOutcome] = {}
    if use_cache:
        for number in numbers:
            cached = _cached_block(config, number)
            if cached is not None:
                outcomes[number] = Answer(cached)
    missing = [n for n in numbers if n not in outcomes]
    fetched = client.batch([("eth_getBlockByNumber", [hex(n), True]) for n in missing]) if missing else []
    for number, outcome in zip(missing, fetched, strict=True):
        if use_cache and isinstance(outcome, Answer) and _block_well_formed(outcome.value, number):
            try:
                write_private(config.block_cache, f"fb-{number}.json", json.dumps(outcome.value))  # type: ignore[arg-type]
            except OSError as exc:
                logger.error("block cache: could not write fb-%d.json (%s); block retried next run", number, exc)
                outcome = NoEvidence("eth_getBlockByNumber", "cache-write", f"fb-{number}.json: {type(exc).__name__}")
        outcomes[number] = outcome
    return [outcomes[n] for n in numbers]


def scan_range(
    client: RpcClient, config: Config, start: int, end: int, label: str = LATEST
) -> tuple[list[ScannedBlock], BlockHeld | None]:
    """Blocks start..end with their donations; stops at the first block it cannot prove.

    Returns the proven prefix and, if it stopped early, why. The blocks' own parent hashes must chain
    together and every log and receipt must name the block we fetched: a re-org between our requests
    shows up as a mismatch, which is no evidence either.
    """
    eth_scale = amount_scale("eth")
    coin_scale = amount_scale("usdt")
    outcomes = fetch_blocks(client, config, range(start, end + 1), finalized=label in (FINALIZED, RECONCILE))
    blocks: list[dict] = []
    held: BlockHeld | None = None
    for number, outcome in zip(range(start, end + 1), outcomes, strict=True):
        if isinstance(outcome, NoEvidence) and outcome.kind == "cache-write":
            held = BlockHeld(number, f"DWS_BLOCK_CACHE: could not write the block ({outcome.detail})")
            break
        if isinstance(outcome, NoEvidence):
            held = BlockHeld(number, f"no block from the provider ({outcome.kind}: {outcome.detail})")
            break
        if not _block_well_formed(outcome.value, number):
            held = BlockHeld(number, "the provider's block is malformed (wrong number, no hash or no transactions)")
            break
        if blocks and outcome.value["parentHash"].lower() != blocks[-1]["hash"].lower():
            held = BlockHeld(number, "block does not build on the previous one fetched (re-org under way)")
            break
        blocks.append(outcome.value)
        debug_dump(config, f"{label}-{number}.json", outcome.value)
    if not blocks:
        return [], held
    last = int(blocks[-1]["number"], 16)
    scanned = {}
    for block in blocks:
        header = detection.block_header(block)
        scanned[header.number] = (header, detection.eth_candidates(block, config.donation_address, eth_scale))

    logs: list[dict] = []
    if config.stable_coins:
        try:
            logs = client.get_logs(
                addresses=[c.contract for c in config.stable_coins],
                topics=[detection.TRANSFER_TOPIC, None, detection.donation_address_topic(config.donation_address)],
                from_block=start,
                to_block=last,
            )
        except NoEvidenceError as exc:
            return [], BlockHeld(start, f"no Transfer logs for blocks {start}..{last} ({exc})")
    transfers_by_block: dict[int, list[Transfer]] = {n: [] for n in scanned}
    for transfer in detection.token_transfers(logs, config.stable_coins, config.donation_address, coin_scale):
        header = scanned.get(transfer.block_number, (None, None))[0]
        if header is None or header.hash != transfer.block_hash:
            cut = min(transfer.block_number, last)
            return _prefix(scanned, transfers_by_block, {}, cut), BlockHeld(
                cut, f"Transfer log of tx '{transfer.tx_hash}' names another block hash (re-org under way)"
            )
        transfers_by_block[transfer.block_number].append(transfer)

    candidates = [c for _, cands in scanned.values() for c in cands]
    receipts = client.batch([("eth_getTransactionReceipt", [c.tx_hash]) for c in candidates]) if candidates else []
    reverted: dict[int, list[str]] = {}
    for candidate, outcome in zip(candidates, receipts, strict=True):
        receipt = outcome.value if isinstance(outcome, Answer) else None
        debug_dump(config, f"txr-{candidate.tx_hash}.json", receipt)
        if not _receipt_usable(receipt, candidate.block_hash):
            usable = _usable_receipts(scanned[candidate.block_number][1], candidates, receipts)
            total = len(scanned[candidate.block_number][1])
            why = (
                outcome.describe() if isinstance(outcome, NoEvidence) else "receipt of another block or without status"
            )
            logger.warning("receipt of tx %s in block %d unusable: %s", candidate.tx_hash, candidate.block_number, why)
            return _prefix(scanned, transfers_by_block, reverted, candidate.block_number), BlockHeld(
                candidate.block_number,
                f"no tx receipt for tx '{candidate.tx_hash}' ({usable} usable receipt(s) for {total} tx(s))",
            )
        if detection.receipt_succeeded(receipt):
            transfers_by_block[candidate.block_number].append(detection.eth_transfer(candidate, eth_scale))
        else:
            reverted.setdefault(candidate.block_number, []).append(candidate.tx_hash)
    return _prefix(scanned, transfers_by_block, reverted, last + 1), held


def _block_well_formed(block: object, number: int) -> bool:
    return (
        isinstance(block, dict)
        and isinstance(block.get("hash"), str)
        and isinstance(block.get("parentHash"), str)
        and isinstance(block.get("transactions"), list)
        and isinstance(block.get("number"), str)
        and int(block["number"], 16) == number
    )


def _receipt_usable(receipt: object, block_hash: str) -> bool:
    """A receipt of the block we fetched that says plainly whether the transaction succeeded."""
    return (
        isinstance(receipt, dict)
        and (receipt.get("blockHash") or "").lower() == block_hash
        and receipt.get("status") in ("0x0", "0x1")  # anything else proves neither success nor revert
    )


def _usable_receipts(block_candidates: Sequence[EthCandidate], candidates: Sequence[EthCandidate], receipts) -> int:
    wanted = {c.tx_hash: c.block_hash for c in block_candidates}
    count = 0
    for candidate, outcome in zip(candidates, receipts, strict=True):
        if candidate.tx_hash in wanted and isinstance(outcome, Answer):
            count += _receipt_usable(outcome.value, wanted[candidate.tx_hash])
    return count


def _prefix(scanned, transfers_by_block, reverted, stop: int) -> list[ScannedBlock]:
    """The scanned blocks before `stop`, in order."""
    return [
        ScannedBlock(header=scanned[n][0], transfers=transfers_by_block.get(n, []), reverted=reverted.get(n, []))
        for n in sorted(scanned)
        if n < stop
    ]
