"""The latest and finalized crawlers.

Both walk the chain from their cursor (`last_block`) in ranges: one batched request for the range's
full blocks, one `eth_getLogs` for the coins' Transfer logs to the donation address, and one batched
request for the receipts of the ETH transfers found. A block is written (its donations and the cursor,
in one transaction) only with positive evidence for every donation in it; a block the provider will
not answer for holds the cursor and logs the grep-able "stuck" line.

* latest: from its cursor to the head; inserts donations as unconfirmed. Notices a re-org behind its
  cursor (the chain no longer builds on the block it recorded) and re-crawls from a safe point.
* finalized: from its cursor to the `finalized` tag; confirms every donation of each block (inserting
  it first if the latest crawler missed it), fails a native transfer whose receipt reports a revert,
  and recomputes the campaign, all under the donation_stats lock.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction

from crawlers import detection
from crawlers.detection import BlockHeader, EthCandidate, Transfer
from crawlers.models import CHAIN, FINALIZED, LATEST, LastBlock
from crawlers.rpc import READ_TIMEOUT, Answer, NoEvidence, NoEvidenceError, RpcClient, require
from crawlers.rpc import Outcome as RpcOutcome
from donations.models import Donation, DonationStatus, amount_scale
from donations.services import Outcome, Sighting, donation_record_unconfirmed, finalized_block_record
from dws_project import shutdown
from dws_project.config import Config
from dws_project.locks import exclusive_run
from prices.models import ETH, Price, PriceRequest

logger = logging.getLogger("dws.crawlers")

LABELS = (LATEST, FINALIZED)
RECONCILE = "reconcile"  # the debug-store name of blocks read by `reconcile` (finalized, so cached too)
RANGE_BLOCKS = 50  # blocks fetched per batch: one round trip for the blocks, one for the logs
REORG_REWIND_BLOCKS = 64  # how far back the latest crawler re-crawls after noticing a re-org
PRICE_WINDOW = timedelta(seconds=90)  # ETH price searched within +-1.5 minutes of the block's minute
STUCK_POINTER = "if this persists see 'a crawler is stuck on a block' in the README"


@dataclass
class CrawlResult:
    label: str
    cursor_before: int | None = None
    cursor: int | None = None
    tip: int | None = None  # head (latest) or finalized block the run aimed for
    blocks: int = 0
    inserted: int = 0
    confirmed: int = 0
    failed: int = 0
    held: str | None = None  # why the run stopped short of the tip

    @property
    def more_to_do(self) -> bool:
        """The run stopped at its per-run cap, not at a hold, with blocks before its tip still to do."""
        return self.held is None and self.blocks > 0 and None not in (self.cursor, self.tip) and self.cursor < self.tip

    def summary(self) -> str:
        text = (
            f"crawl {self.label}: cursor {self.cursor_before} -> {self.cursor} (tip {self.tip}), "
            f"{self.blocks} block(s), {self.inserted} inserted, {self.confirmed} confirmed, {self.failed} failed"
        )
        return text + (f"; held: {self.held}" if self.held else "")


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


# --- cursors ------------------------------------------------------------------------------------


def cursor_get(label: str) -> LastBlock | None:
    return LastBlock.objects.filter(chain=CHAIN, label=label).first()


def cursor_set(label: str, value: int, block_hash: str | None = None) -> None:
    LastBlock.objects.update_or_create(chain=CHAIN, label=label, defaults={"value": value, "block_hash": block_hash})


def job_name(label: str) -> str:
    """The non-overlap lock name of a crawler (its Celery task, its command and `set_cursor` share it)."""
    return f"crawl-{label}"


@dataclass(frozen=True)
class ChainTips:
    head: int | None  # None: the provider did not say (error, null, time-out)
    finalized: int | None


def chain_tips(client: RpcClient) -> ChainTips:
    """The provider's head and finalized block numbers, in one batched round trip."""
    head, final = client.batch([("eth_blockNumber", []), ("eth_getBlockByNumber", ["finalized", False])])
    head_number = int(head.value, 16) if isinstance(head, Answer) and isinstance(head.value, str) else None
    final_number = (
        int(final.value["number"], 16)
        if isinstance(final, Answer) and isinstance(final.value, dict) and isinstance(final.value.get("number"), str)
        else None
    )
    return ChainTips(head_number, final_number)


class CursorRefused(Exception):
    """`set_cursor` would not move the cursor; the message says why, for the operator."""


def set_cursor(label: str, value: int, *, operator: str, client: RpcClient | None = None) -> int | None:
    """Move a crawler's cursor (the last block it has processed) by hand; returns the previous value.

    Refused beyond the chain head (or when the provider will not say where the head is), and while a
    run of that crawler holds its lock, so the run cannot write the old position back afterwards.
    """
    if label not in LABELS:
        raise CursorRefused(f"unknown crawler {label!r}")
    if value < 0:
        raise CursorRefused("the block number must be >= 0")
    tips = chain_tips(client or make_client())
    if tips.head is None:
        raise CursorRefused("the provider did not say where its head is; try again")
    if value > tips.head:
        raise CursorRefused(f"block {value} is beyond the chain head {tips.head}")
    with exclusive_run(job_name(label)) as acquired:
        if not acquired:
            raise CursorRefused(f"the {label} crawler is running; try again in a few seconds")
        before = cursor_get(label)
        cursor_set(label, value)
    previous = before.value if before else None
    logger.warning("cursor %s moved by %s: %s -> %d (head %d)", label, operator, previous, value, tips.head)
    return previous


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


# --- pricing --------------------------------------------------------------------------------------


def block_minute(when: datetime) -> datetime:
    return when.replace(second=0, microsecond=0)


def eth_price_near(minute: datetime) -> Price | None:
    """The ETH price row nearest the block's minute within +-1.5 minutes."""
    rows = list(Price.objects.filter(asset=ETH, created_at__range=(minute - PRICE_WINDOW, minute + PRICE_WINDOW)))
    return min(rows, key=lambda r: (abs(r.created_at - minute), r.created_at), default=None)


def price_request_file(minute: datetime) -> PriceRequest:
    """Ask the price service for a historical minute; filing twice is a no-op."""
    request, created = PriceRequest.objects.get_or_create(asset=ETH, requested_at=minute)
    if created:
        logger.info("filed a price request for ETH at %s", minute.isoformat())
    return request


def _sightings(block: ScannedBlock, transfers: Sequence[Transfer]) -> list[Sighting]:
    """A block's transfers with the ETH price of its minute; raises BlockHeld when an ETH transfer has no
    price yet. The price goes into the row as is (`rules.donation_tokens` applies it)."""
    if not transfers:
        return []
    eth_price = None
    if any(t.asset == "eth" for t in transfers):
        minute = block_minute(block.header.time)
        row = eth_price_near(minute)
        if row is None:
            raise BlockHeld(
                block.header.number,
                f"no ETH price within 1.5 minutes of {minute:%Y-%m-%d %H:%M} UTC; a price request is filed, waiting",
                stuck=False,
                price_minute=minute,
            )
        eth_price = row.price
    return [Sighting(transfer=t, block_time=block.header.time, eth_price=eth_price) for t in transfers]


def _unrecorded(transfers: Sequence[Transfer], *, failed_too: bool = False) -> list[Transfer]:
    """The transfers without a row seen in this very block (the rest need no price). `failed_too`: a
    failed row counts as unrecorded, since the finalized crawler records it anew from this sighting."""
    if not transfers:
        return []
    rows = Donation.objects.filter(tx_hash__in={t.tx_hash for t in transfers})
    if failed_too:
        rows = rows.exclude(status=DonationStatus.FAILED)
    known = set(rows.values_list("tx_hash", "log_index", "trace_address", "block_hash"))
    return [t for t in transfers if (t.tx_hash, t.log_index, t.trace_address, t.block_hash) not in known]


# --- writing one block ----------------------------------------------------------------------------


def _write_latest(block: ScannedBlock, config: Config) -> int:
    transfers = _unrecorded(block.transfers)
    inserted = 0
    for sighting in _sightings(block, transfers):
        _, outcome = donation_record_unconfirmed(sighting=sighting, tiers=config.sale_tiers)
        inserted += outcome != Outcome.UNCHANGED
        logger.info(
            "latest: %s donation %s of %s %s from %s in block %d (%s)",
            sighting.transfer.asset,
            sighting.transfer.tx_hash,
            sighting.transfer.amount,
            sighting.transfer.asset,
            sighting.transfer.donor,
            block.header.number,
            outcome,
        )
    return inserted


def _write_finalized(block: ScannedBlock, config: Config) -> tuple[int, int, int]:
    if not block.transfers and not block.reverted:
        return 0, 0, 0
    # Rows already seen in this block keep how they were priced; only new sightings need a price.
    unrecorded = {(t.tx_hash, t.log_index, t.trace_address) for t in _unrecorded(block.transfers, failed_too=True)}
    priced = {
        (s.transfer.tx_hash, s.transfer.log_index, s.transfer.trace_address): s
        for s in _sightings(
            block, [t for t in block.transfers if (t.tx_hash, t.log_index, t.trace_address) in unrecorded]
        )
    }
    sightings = []
    for transfer in block.transfers:
        key = (transfer.tx_hash, transfer.log_index, transfer.trace_address)
        if key in priced:
            sightings.append(priced[key])
        else:
            row = Donation.objects.get(
                tx_hash=transfer.tx_hash, log_index=transfer.log_index, trace_address=transfer.trace_address
            )
            sightings.append(Sighting(transfer=transfer, block_time=block.header.time, eth_price=row.eth_price))
    result = finalized_block_record(sightings=sightings, reverted_tx_hashes=block.reverted, tiers=config.sale_tiers)
    if sightings or result.failed:
        logger.info(
            "finalized: block %d: %d confirmed, %d inserted, %d held (paused), %d failed (reverted)",
            block.header.number,
            result.confirmed,
            result.inserted,
            result.held_paused,
            result.failed,
        )
    return result.inserted, result.confirmed, result.failed


def _write_block(label: str, block: ScannedBlock, config: Config, result: CrawlResult) -> None:
    if label == LATEST:
        result.inserted += _write_latest(block, config)
    else:
        inserted, confirmed, failed = _write_finalized(block, config)
        result.inserted += inserted
        result.confirmed += confirmed
        result.failed += failed


# --- the crawl loop -------------------------------------------------------------------------------


def tip_of(client: RpcClient, label: str) -> int:
    if label == LATEST:
        return client.block_number()
    block = require(client.call("eth_getBlockByNumber", ["finalized", False]))
    return int(block["number"], 16)


def _start_cursor(client: RpcClient, label: str, config: Config) -> LastBlock:
    """A first run begins at DWS_START_BLOCK, else at the current head (the cursor is the block before)."""
    start = config.start_block if config.start_block is not None else client.block_number()
    cursor_set(label, max(start - 1, 0))
    logger.info("crawl %s: no cursor yet; starting at block %d", label, start)
    return cursor_get(label)  # type: ignore[return-value]


def crawl(
    label: str, *, config: Config | None = None, client: RpcClient | None = None, max_blocks: int | None = None
) -> CrawlResult:
    """One run of the `label` crawler: from its cursor towards the tip until caught up or held."""
    config = config or settings.CONFIG
    client = client or make_client(config)
    result = CrawlResult(label)
    try:
        client.check_chain_id(config.chain_id)
        cursor = cursor_get(label) or _start_cursor(client, label, config)
        result.cursor_before = result.cursor = cursor.value
        tip = tip_of(client, label)
    except NoEvidenceError as exc:
        result.held = f"provider gave no evidence: {exc}"
        logger.warning("crawl %s: %s", label, result.held)
        return result
    result.tip = tip
    if tip < cursor.value:
        result.held = (
            f"provider's {label} block {tip} is behind our cursor {cursor.value} (lagging or re-syncing node); waiting"
        )
        logger.warning("crawl %s: %s", label, result.held)
        return result
    position, position_hash = cursor.value, cursor.block_hash
    budget = max_blocks if max_blocks is not None else float("inf")
    while position < tip and result.blocks < budget and not shutdown.requested():
        end = int(min(tip, position + RANGE_BLOCKS, position + budget - result.blocks))
        blocks, held = scan_range(client, config, position + 1, end, label)
        if blocks and position_hash and blocks[0].header.parent_hash != position_hash:
            if label == LATEST:
                position, position_hash = _rewind_after_reorg(client, position, config)
                continue
            result.held = f"finalized block {position + 1} does not build on the finalized block {position} we recorded"
            logger.critical("crawl %s: %s", label, stuck_message(position + 1, result.held))
            return result
        held = _record_blocks(label, blocks, held, config, result, move_cursor=True)
        if held is not None:
            (logger.error if held.stuck else logger.warning)("crawl %s: %s", label, result.held)
            return result
        if blocks:
            position, position_hash = blocks[-1].header.number, blocks[-1].header.hash
    if shutdown.requested() and (result.cursor or 0) < tip:
        result.held = f"shutdown requested; stopped between blocks at {result.cursor}, the next run continues"
    return result


def _record_blocks(
    label: str,
    blocks: Sequence[ScannedBlock],
    held: BlockHeld | None,
    config: Config,
    result: CrawlResult,
    *,
    move_cursor: bool,
) -> BlockHeld | None:
    """Write each scanned block in a transaction of its own (with the cursor, when it moves), stopping at
    the first block that cannot be proven; return that hold, or the scan's own, already reported."""
    try:
        for block in blocks:
            if shutdown.requested():  # SIGTERM: between two blocks, never inside one
                return None
            with transaction.atomic():
                _write_block(label, block, config, result)
                if move_cursor:
                    cursor_set(label, block.header.number, block.header.hash)
            if move_cursor:
                result.cursor = block.header.number
            result.blocks += 1
    except BlockHeld as exc:
        held = exc
    if held is not None:
        # Outside the rolled-back block transaction: ask for the missing price, so the hold resolves.
        if held.price_minute is not None:
            price_request_file(held.price_minute)
        result.held = held.describe()
    return held


def _rewind_after_reorg(client: RpcClient, position: int, config: Config) -> tuple[int, str | None]:
    """The chain no longer builds on our cursor's block: re-crawl from a point the re-org cannot reach."""
    floor = config.start_block - 1 if config.start_block else 0
    target = max(position - REORG_REWIND_BLOCKS, floor)
    with contextlib.suppress(NoEvidenceError):  # without the finalized tag, the fixed rewind will do
        target = max(target, min(tip_of(client, FINALIZED), position - 1))
    logger.warning("crawl latest: re-org detected at block %d; re-crawling from block %d", position, target + 1)
    cursor_set(LATEST, target, None)
    return target, None


def crawl_single_block(
    label: str, number: int, *, config: Config | None = None, client: RpcClient | None = None
) -> CrawlResult:
    """Re-crawl one block without touching the cursor; writes are idempotent, so nothing is duplicated."""
    config = config or settings.CONFIG
    client = client or make_client(config)
    result = CrawlResult(label, cursor_before=number, cursor=number, tip=number)
    try:
        client.check_chain_id(config.chain_id)
        tip = tip_of(client, label)
    except NoEvidenceError as exc:
        result.held = f"provider gave no evidence: {exc}"
        return result
    if number > tip:
        result.held = f"block {number} is beyond the provider's {label} block {tip}"
        return result
    blocks, held = scan_range(client, config, number, number, label)
    if _record_blocks(label, blocks, held, config, result, move_cursor=False) is not None:
        logger.error("crawl %s --single-block: %s", label, result.held)
    return result
