"""A donation address with code (a Safe, an EIP-7702 delegated account): its calls are read from traces.

Such an address can send ETH by an internal call (a Safe's owner signs, the Safe calls) and can take ETH
in and send it out again inside one range, so a zero net balance change proves nothing there, and
value leaving it shows in no transaction. So for every range, the blocks in which the address takes
part in a call are found (`trace_filter` where the provider serves it, otherwise every block of the
range), their call traces are read, and each succeeded frame below the top level that moved ETH is a
flow: a CALL to us (arriving; credited like any internal donation by `crawlers/decode/frames.py`'s
rule) and a CALL, CREATE or SELFDESTRUCT from us (leaving). Then the balance identity closes on what
the traces say, block by block, and the proof stands again. Top-level transactions stay the ETH
detector's and the receipts' business. A provider that cannot trace such an address holds the range
with that reason: never a guess.

This is how a range read in full treats such an address. A genuine Safe (code we can check) is read the
sparse way instead, by its events (crawlers/scan/safe.py, crawlers/scan/sparse.py), and only its execution
blocks are traced here (`trace_blocks`); a range of it that is too busy to bisect, or whose events its
storage contradicts, comes here like any contract's.

The address's *mode* (`plain`, `contract`, `delegated`) comes from its code at the range's edges; it is
logged once per process at the first range and again when it changes (a 7702 delegation can come
later), and shown on /health with how it is read ("contract, Safe 1.4.1: read by its events") and how its
calls are found (`crawlers/selectors.py` reads it back).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

from redis.exceptions import RedisError

from crawlers.chain.calls import code_call, edge_calls
from crawlers.chain.outcomes import Answer, Call, NoEvidenceError, RpcOutcome
from crawlers.chain.rpc import RpcClient
from crawlers.decode.authorizations import address_mode
from crawlers.decode.balances import ETH
from crawlers.decode.frames import Frame, internal_transfers, own_coin_calls, own_frames
from crawlers.decode.strays import frame_payouts
from crawlers.scan import safe, traces
from crawlers.scan.own import drop_own_coin_transfers, drop_own_strays
from crawlers.scan.results import BlockHeld, ScannedBlock
from crawlers.scan.trace_filter import blocks_with_calls
from donations.sightings import amount_scale
from dws_project.chain_settings import ChainSettings
from dws_project.redis_client import get_redis

logger = logging.getLogger("dws.crawlers")

PLAIN = "plain"
CONTRACT = "contract"  # any other code (crawlers/decode/authorizations.py address_mode)
DELEGATED = "delegated"  # crawlers/decode/authorizations.py address_mode's name for a 0xef0100 code
BY_FILTER = "trace_filter"
BY_BLOCK = "the traces of every block"
_LEAVING = frozenset(["call", "create", "create2", "selfdestruct"])
_logged: dict[str, str] = {}  # chain -> the mode this process logged last


def status_key(chain: str) -> str:
    return f"dws:donation-address:{chain}"


def mode_of(codes: Sequence[str]) -> str:
    """The address's mode over a range from its code at the edges: any code makes it not plain (the
    latest edge's kind wins)."""
    modes = [address_mode(code) for code in codes]
    return next((m for m in reversed(modes) if m != PLAIN), PLAIN)


def describe_reading(mode: str, reading: str | None = None) -> str:
    """How the address is read, in words: "plain: read by its balances", "contract, Safe 1.4.1: read by its
    events", "contract: read in full through call traces"."""
    if reading:
        return f"{mode}, {reading}"
    return f"{mode}: read by its balances" if mode == PLAIN else f"{mode}: read in full through call traces"


def note_mode(
    chain: ChainSettings,
    mode: str,
    *,
    found_by: str | None = None,
    traced: int = 0,
    blocks: int = 0,
    reading: str | None = None,
) -> None:
    """Log the mode at the first range and on change; keep it (and how calls were found) for /health.
    `reading`: a genuine Safe read by its events (crawlers/scan/safe.py); a range of it read in full (too
    busy to bisect) keeps that reading, so the line is not logged again for it."""
    if reading is None and mode == CONTRACT:
        reading = safe.reading_of(chain)
    said = describe_reading(mode, reading)
    if _logged.get(chain.name) != said:
        if reading:
            logger.info("donation address %s on %s is %s", chain.donation_address, chain.name, said)
        else:
            by = found_by or "as the provider allows"
            how = "" if mode == PLAIN else f"; its calls are read from call traces ({by})"
            level = logging.INFO if mode == PLAIN else logging.WARNING
            logger.log(level, "donation address %s on %s is %s%s", chain.donation_address, chain.name, mode, how)
        _logged[chain.name] = said
    status = {
        "mode": mode,
        "reading": said,
        "calls_found_by": found_by,
        "last_range_blocks": blocks,
        "last_range_traced": traced,
    }
    try:
        get_redis().set(status_key(chain.name), json.dumps(status))
    except RedisError as exc:
        logger.warning("donation address status not shared: %s", type(exc).__name__)


def read_status(chain: str) -> dict | None:
    """What `note_mode` kept for /health, or None (not crawled yet, or Redis unavailable)."""
    try:
        raw = get_redis().get(status_key(chain))
    except RedisError:
        return None
    if raw is None:
        return None
    value = json.loads(raw)
    return value if isinstance(value, dict) else None


def model_calls(client: RpcClient, chain: ChainSettings, blocks: Sequence[ScannedBlock]) -> tuple[str, int]:
    """Read the traces of every block in which the address takes part in a call and put their ETH frames
    at it into the blocks' flows (and its internal donations into their transfers). Returns how the
    blocks were found and how many were traced. Raises NoEvidenceError (hold and retry) or
    TracesUnavailable (the provider cannot trace: hold with that reason)."""
    hashes = {b.header.number: b.header.hash.lower() for b in blocks}
    numbers = blocks_with_calls(client, chain, hashes)
    found_by = BY_FILTER if numbers is not None else BY_BLOCK
    wanted = set(numbers) if numbers is not None else set(hashes)
    for block in blocks:
        number = block.header.number
        if number not in wanted:
            continue
        frames, unread = traces.traced_frames(client, chain, block_number=number, block_hash=hashes[number])
        account_frames(chain, block, frames)
        block.untraced.extend(unread)
    return found_by, len(wanted)


def account_frames(chain: ChainSettings, block: ScannedBlock, frames: Sequence[Frame]) -> None:
    """The block's succeeded ETH frames below the top level at the donation address, as flows."""
    us = chain.donation_address
    for frame in frames:
        if not frame.path or frame.reverted or frame.wei <= 0 or frame.sender == frame.to:
            continue
        if frame.to == us and frame.kind == "call":
            block.add_flow(ETH, frame.wei)
        elif frame.sender == us and frame.kind in _LEAVING:
            block.add_flow(ETH, -frame.wei)
    block.transfers.extend(
        internal_transfers(
            frames,
            donation_address=us,
            eth_scale=amount_scale("eth"),
            block_number=block.header.number,
            block_hash=block.header.hash.lower(),
        )
    )
    # The address's own money (value back inside a call it made, ETH it bridged from L1 to itself): in the
    # flows above, never a donation; recorded as a movement.
    block.own.extend(own_frames(frames, us))
    drop_own_coin_transfers(chain, block, own_coin_calls(frames, us, [c.contract for c in chain.stable_coins]))
    drop_own_strays(block, own_coin_calls(frames, us, [t.contract for t in chain.stray_tokens]))
    # What its calls paid out to others (a Safe paying refunds): for the refund register.
    block.payouts.extend(frame_payouts(frames, us, block.header.number))
    block.traced = True


def proof_calls(chain: ChainSettings, start: int, end: int) -> list[Call]:
    """What rides along with a range's blocks: the balances at its edges and the address's code there."""
    us = chain.donation_address
    return [*edge_calls(chain, start, end), code_call(us, start - 1), code_call(us, end)]


def read_calls(
    client: RpcClient, chain: ChainSettings, start: int, blocks: Sequence[ScannedBlock], codes: Sequence[RpcOutcome]
) -> BlockHeld | None:
    """An address with code: its calls, from the call traces, into the blocks' flows
    (crawlers/scan/py); a hold where they cannot be read. A plain address: nothing to do."""
    found = [o.value for o in codes if isinstance(o, Answer) and isinstance(o.value, str)]
    if len(found) != 2:
        return BlockHeld(start, "no evidence of the donation address's code (eth_getCode gave no answer)")
    kind = mode_of(found)
    signed = authorized_in(blocks)
    if kind == PLAIN and not signed:
        note_mode(chain, kind, blocks=len(blocks))
        return None
    # Code at an edge, or an EIP-7702 authorization the address signed inside the range (set or cleared): both
    # edges may look plain while delegated code moved ETH in and out between them without a nonce move.
    has = f"has code ({kind})" if kind != PLAIN else f"signed an EIP-7702 authorization in block {signed[0]}"
    try:
        found_by, traced = model_calls(client, chain, blocks)
    except (NoEvidenceError, traces.TracesUnavailable) as exc:
        return _untraced(start, has, exc)
    note_mode(chain, kind if kind != PLAIN else DELEGATED, found_by=found_by, traced=traced, blocks=len(blocks))
    return None


def _untraced(number: int, has: str, exc: Exception) -> BlockHeld:
    """The hold where the calls of an address with code cannot be read from the traces."""
    if isinstance(exc, NoEvidenceError):
        why = f"the donation address {has}: its calls are read from call traces, which gave no evidence"
        return BlockHeld(number, f"{why} ({exc})")
    return BlockHeld(
        number,
        f"the donation address {has}: value can leave it by an internal call and hide in a net-zero "
        f"balance, and the provider gives no call traces ({exc}); held, never guessed: point ETH_RPC_URL at a "
        "provider that answers trace_block or debug_traceBlockByNumber",
    )


def trace_blocks(client: RpcClient, chain: ChainSettings, blocks: Sequence[ScannedBlock]) -> BlockHeld | None:
    """A Safe's execution blocks read by its events (crawlers/scan/sparse.py): their call frames at the
    address into their flows, as `model_calls` does for every block of a contract read in full; a hold at
    the first that cannot be traced."""
    for block in blocks:
        number = block.header.number
        try:
            frames, unread = traces.traced_frames(client, chain, block_number=number, block_hash=block.header.hash)
        except (NoEvidenceError, traces.TracesUnavailable) as exc:
            return _untraced(number, f"is a Safe that executed a transaction in block {number}", exc)
        account_frames(chain, block, frames)
        block.untraced.extend(unread)
    return None


def authorized_in(blocks: Sequence[ScannedBlock]) -> list[int]:
    """The blocks in which the donation address signed an EIP-7702 authorization (a delegation set or
    cleared): a range holding one is read through its traces whatever its edges say."""
    return [block.header.number for block in blocks if block.authorized]
