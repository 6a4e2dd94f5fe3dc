"""Internal ETH transfers: value that reaches the donation address inside a transaction, from a contract.

The balance proof calls `internal_eth_transfers` for a block whose ETH balance change no top-level
transaction explains. The decoding and the rule of what counts live in `crawlers/decode/frames.py`;
this module asks the provider.

Which trace method: `DWS_TRACE` (the chain's `trace_mode`).

* `debug`: `debug_traceBlockByNumber(n, {"tracer": "callTracer"})` only; `trace`: `trace_block(n)` only;
  `off`: never ask, `TracesUnavailable`.
* `auto`: the method the provider answered last time, else debug then trace. What it answers is
  remembered in Redis per provider origin (like the rate-limit back-off in `crawlers/chain/rpc.py`), so every
  worker shares one discovery; when the remembered method starts refusing, the others are tried again.

A refusal ("method not found", "not supported", "not available on your plan", JSON-RPC code -32601)
for every allowed method is `TracesUnavailable`: the caller records an unexplained inflow. Anything
else (an error object, a null, a 429, a time-out, an answer we cannot read, a block that changed
between our calls) is `NoEvidenceError`: hold the block and retry. Never "no internal transfer".

Each trace is asked in one batch with the block's header: the header's hash must be the `block_hash`
the caller scanned (a re-org between the calls is no evidence), and the trace must cover exactly the
block's transactions, in order.

A block whose trace is past DWS_RPC_MAX_ANSWER_MB (a contract making a hundred thousand empty calls beside
a donation: anyone can send one) is asked per transaction instead (`debug_traceTransaction` /
`trace_transaction`, in batches the client halves until each answer fits): the transactions known to
touch the address first, then the others, and no further once what arrived is explained. A transaction
whose own trace is still too large is left unread and named (`TracedBlock.unread`): what the balances say
arrived and nothing read explains is then an unexplained inflow with that reason, never a hold.

Identity of an internal ETH donation: `(tx_hash, trace_address)`, the call frame's path in its
transaction's call tree ("0.1"); it does not depend on the block, so it survives a re-org. Both
methods give the same path to the same frame (see `crawlers/decode/frames.py`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TypeGuard, TypeVar

from redis.exceptions import RedisError

from crawlers.chain.calls import header_call
from crawlers.chain.outcomes import Answer, Call, NoEvidence, NoEvidenceError, RpcOutcome, require, too_large
from crawlers.chain.rpc import RpcClient
from crawlers.decode.amounts import WEI_PER_ETH
from crawlers.decode.frames import (
    Frame,
    MalformedTrace,
    call_tracer_frames,
    dust_wei,
    internal_transfers,
    own_coin_calls,
    own_frames,
    parity_frames,
    transaction_frames,
)
from crawlers.decode.transfers import Movement
from donations.sightings import Transfer, amount_scale
from dws_project.chain_settings import ChainSettings
from dws_project.redis_client import get_redis

logger = logging.getLogger("dws.crawlers.scan.traces")

DEBUG = "debug"
TRACE = "trace"
FAMILIES = (DEBUG, TRACE)  # auto's order of discovery
_BLOCK_METHOD = {DEBUG: "debug_traceBlockByNumber", TRACE: "trace_block"}
_TX_METHOD = {DEBUG: "debug_traceTransaction", TRACE: "trace_transaction"}
_CALL_TRACER = {"tracer": "callTracer"}

_REFUSAL_TEXT = re.compile(
    r"method not found|unknown method|unsupported method|tracer not found|unknown tracer|"
    r"\b(method|namespace|api|debug_\w+|trace_\w+)\b.{0,80}?\b(not found|does not exist|is not available|"
    r"not available|not supported|unsupported|not enabled|not allowed|not whitelisted|disabled)",
    re.IGNORECASE,
)

T = TypeVar("T")


class TracesUnavailable(Exception):
    """The provider answers no trace method we know (or DWS_TRACE=off): internal transfers cannot be seen."""


class BlockUntraceable(TracesUnavailable):
    """Every trace method answered this block with an error (no state to replay it on), none said it is
    not served: a provider without historical state, or a load balancer's passing failure; one sighting
    does not tell them apart (crawlers/scan/history.py's memory does)."""


class _Refused(Exception):
    """The provider will not trace: for good (`lasting`: the method is not served), or only this block
    (no state to replay it on: a provider without historical state)."""

    def __init__(self, outcome: NoEvidence, *, lasting: bool = True) -> None:
        self.outcome = outcome
        self.lasting = lasting
        super().__init__(outcome.describe())


class TraceTooLarge(Exception):
    """The block's trace is past the answer cap; its transactions (from the header checked against the
    block scanned) are to be traced one by one."""

    def __init__(self, tx_hashes: list[str]) -> None:
        self.tx_hashes = tx_hashes
        super().__init__(f"the block's trace is past DWS_RPC_MAX_ANSWER_MB ({len(tx_hashes)} transaction(s))")


def is_refusal(outcome: RpcOutcome) -> TypeGuard[NoEvidence]:
    """The provider said definitely that it does not serve the method (not a passing failure)."""
    if not isinstance(outcome, NoEvidence) or outcome.kind != "error":
        return False
    return "code -32601" in outcome.detail or bool(_REFUSAL_TEXT.search(outcome.detail))


# --- which method the provider answers, shared by every worker ----------------------------------------


def memory_key(client: RpcClient) -> str:
    return f"dws:trace-method:{client.endpoint}"


def remembered_family(client: RpcClient) -> str | None:
    try:
        value = get_redis().get(memory_key(client))
    except RedisError:
        return None  # no shared memory: discover again, which costs a round trip, never a decision
    if isinstance(value, bytes):
        value = value.decode()
    return value if value in FAMILIES else None


def _remember(client: RpcClient, family: str | None) -> None:
    try:
        if family is None:
            get_redis().delete(memory_key(client))
        else:
            get_redis().set(memory_key(client), family)
    except RedisError as exc:
        logger.warning("provider %s: could not share the trace method: %s", client.origin, type(exc).__name__)


def _with_traces(client: RpcClient, chain: ChainSettings, ask: Callable[[str], T]) -> T:
    """`ask(family)` with the allowed families in turn until one is not refused; discovery remembered."""
    mode = chain.trace_mode
    if mode == "off":
        raise TracesUnavailable("DWS_TRACE=off: internal ETH transfers are not looked for")
    if mode in FAMILIES:
        try:
            return ask(mode)
        except _Refused as exc:
            unavailable = TracesUnavailable if exc.lasting else BlockUntraceable
            raise unavailable(f"provider {client.origin} refuses {exc.outcome.method} (DWS_TRACE={mode})") from exc
    known = remembered_family(client)
    order = [known] + [f for f in FAMILIES if f != known] if known else list(FAMILIES)
    refusals = []
    lasting = False
    for family in order:
        try:
            value = ask(family)
        except _Refused as exc:
            refusals.append(exc.outcome.method)
            if not exc.lasting:
                continue  # this block only: what is remembered stays
            lasting = True
            if family == known:
                logger.warning("provider %s now refuses %s; looking for another trace method", client.origin, family)
                _remember(client, None)
                known = None
            continue
        if known is None:
            logger.info("provider %s answers %s traces; remembered for every worker", client.origin, family)
            _remember(client, family)
        return value
    unavailable = TracesUnavailable if lasting else BlockUntraceable
    raise unavailable(f"provider {client.origin} refuses every trace method ({', '.join(refusals)})")


def _answer(outcome: RpcOutcome, *, stateless: bool = False) -> object:
    if is_refusal(outcome):
        raise _Refused(outcome)
    if stateless and isinstance(outcome, NoEvidence) and outcome.kind == "error":
        raise _Refused(outcome, lasting=False)  # replaying the block needs the state the provider lacks
    return require(outcome)


def _replay_refused(method: str, block_number: int, result: object) -> NoEvidence | None:
    """A callTracer answer whose transactions carry an error instead of a trace (anvil loaded from a
    dump: "Resource not found"): the provider could not replay them without their state."""
    if isinstance(result, list):
        for item in result:
            if isinstance(item, dict) and "result" not in item and item.get("error"):
                return NoEvidence(method, "error", f"block {block_number}: {str(item['error'])[:100]}")
    return None


def _malformed(method: str, client: RpcClient, exc: Exception) -> NoEvidenceError:
    return NoEvidenceError(NoEvidence(method, "malformed", f"{client.origin}: {exc}"))


# --- a block ------------------------------------------------------------------------------------------


def _block_calls(family: str, block_number: int) -> list[Call]:
    """A block's trace by one method, and its header (to check the trace is of the block scanned)."""
    method = _BLOCK_METHOD[family]
    params: list[object] = [hex(block_number), _CALL_TRACER] if family == DEBUG else [hex(block_number)]
    return [(method, params), header_call(block_number)]


@dataclass(frozen=True)
class Prefetched:
    """Blocks' traces asked together, by the method known to answer: per block, [trace, header]."""

    family: str
    answers: dict[int, list[RpcOutcome]]

    def of(self, family: str, block_number: int) -> list[RpcOutcome] | None:
        """The block's answers when they are all evidence and by that method; else None (asked again)."""
        found = self.answers.get(block_number) if family == self.family else None
        return found if found is not None and all(isinstance(o, Answer) for o in found) else None


def prefetch_traces(client: RpcClient, chain: ChainSettings, numbers: Sequence[int]) -> Prefetched | None:
    """Every block's trace and header in as few posts as the batch limit allows, by the method configured
    or remembered (None when none is known yet: the first block discovers it). A range read without
    the balance proof (crawlers/scan/proof.py `without_history`) traces every block: one post for 50
    blocks instead of one each. An answer short of evidence is never used: `block_frames` asks again."""
    family = chain.trace_mode if chain.trace_mode in FAMILIES else remembered_family(client)
    if family not in FAMILIES or not numbers:
        return None
    outcomes = client.batch([call for number in numbers for call in _block_calls(family, number)])
    return Prefetched(family, {number: outcomes[2 * i : 2 * i + 2] for i, number in enumerate(numbers)})


def block_frames(
    client: RpcClient,
    family: str,
    *,
    block_number: int,
    block_hash: str,
    stateless: bool = False,
    prefetched: Prefetched | None = None,
) -> list[Frame]:
    """Every frame of the block, by one method, checked against the block the caller scanned.

    `stateless`: the provider is known to keep no state for the block (crawlers/scan/history.py), so an
    error where a trace should be is that method's refusal for this block, not a passing failure.
    `prefetched`: the block's answers asked beforehand with others' (`prefetch_traces`), when they are
    evidence."""
    method = _BLOCK_METHOD[family]
    in_hand = prefetched.of(family, block_number) if prefetched is not None else None
    trace_outcome, header_outcome = in_hand or client.batch(_block_calls(family, block_number))
    if too_large(trace_outcome):
        raise TraceTooLarge(_checked_transactions(client, header_outcome, block_number, block_hash))
    result = _answer(trace_outcome, stateless=stateless)
    if stateless and (refused := _replay_refused(method, block_number, result)) is not None:
        raise _Refused(refused, lasting=False)
    tx_hashes = _checked_transactions(client, header_outcome, block_number, block_hash)
    try:
        if family == DEBUG:
            return call_tracer_frames(result, tx_hashes)
        return parity_frames(result, block_hash, tx_hashes)
    except MalformedTrace as exc:
        raise _malformed(method, client, exc) from exc


def _checked_transactions(
    client: RpcClient, header_outcome: RpcOutcome, block_number: int, block_hash: str
) -> list[str]:
    """The block's transaction hashes, from a header that must be the block the caller scanned."""
    header = require(header_outcome)
    if not isinstance(header, dict) or not isinstance(header.get("hash"), str):
        raise _malformed("eth_getBlockByNumber", client, ValueError("block header without a hash"))
    if header["hash"].lower() != block_hash:
        raise NoEvidenceError(
            NoEvidence("eth_getBlockByNumber", "reorged", f"block {block_number} is no longer {block_hash[:18]}")
        )
    return [h.lower() for h in header.get("transactions") or [] if isinstance(h, str)]


def _transaction_call(family: str, tx_hash: str) -> Call:
    method = _TX_METHOD[family]
    return (method, [tx_hash, _CALL_TRACER] if family == DEBUG else [tx_hash])


def frames_by_transaction(
    client: RpcClient,
    family: str,
    *,
    block_number: int,
    block_hash: str,
    tx_hashes: Sequence[str],
    touching: Collection[str] = (),
    enough: Callable[[list[Frame]], bool] | None = None,
) -> tuple[list[Frame], list[str]]:
    """A block too large to trace whole, one transaction at a time: those in `touching` first, then the
    others in block order, none after `enough` says the frames read explain what the caller needs. Returns
    the frames and the transactions whose own trace is still past the cap (unread). Each batch asks the
    header again: the transactions must still be the block's (a re-org between the calls is no evidence)."""
    first = [h for h in tx_hashes if h in touching]
    groups = [group for group in (first, [h for h in tx_hashes if h not in touching]) if group]
    frames: list[Frame] = []
    unread: list[str] = []
    for group in groups:
        outcomes = client.batch([*(_transaction_call(family, h) for h in group), header_call(block_number)])
        _checked_transactions(client, outcomes[-1], block_number, block_hash)
        for tx_hash, outcome in zip(group, outcomes, strict=False):
            if too_large(outcome):
                unread.append(tx_hash)
                continue
            try:
                frames += transaction_frames(family, _answer(outcome), tx_hash, block_hash if family == TRACE else None)
            except MalformedTrace as exc:
                raise _malformed(_TX_METHOD[family], client, exc) from exc
        if enough is not None and enough(frames):
            break
    if unread:
        logger.warning(
            "block %d: the call trace of %d transaction(s) is past DWS_RPC_MAX_ANSWER_MB even alone: %s",
            block_number,
            len(unread),
            ", ".join(unread[:5]),
        )
    return frames, unread


@dataclass(frozen=True)
class TracedBlock:
    """What a block's call traces say reached the donation address: internal ETH donations, the ETH that is
    its own money (back inside its own calls, or bridged from L1 by itself), the (transaction, coin contract)
    pairs whose coin arrivals are its own money likewise, and the wei of donation frames below the column's
    scale (dust)."""

    donations: list[Transfer]
    own: list[Movement]
    own_coin_calls: set[tuple[str, str]]
    dust: int = 0
    # Transactions whose trace alone is past DWS_RPC_MAX_ANSWER_MB: what they moved is not in the above.
    unread: tuple[str, ...] = ()

    def explained_wei(self) -> int:
        """The ETH these frames account for: donations at the column's scale, the address's own, dust."""
        return sum(int(t.amount * WEI_PER_ETH) for t in self.donations) + sum(m.raw for m in self.own) + self.dust


def traced_block(
    client: RpcClient,
    chain: ChainSettings,
    *,
    block_number: int,
    block_hash: str,
    stateless: bool = False,
    prefetched: Prefetched | None = None,
    arrived: int | None = None,
    touching: Collection[str] = (),
) -> TracedBlock:
    """The block's traces read for the balance proof; the same errors as `internal_eth_transfers`.
    `arrived`: the wei the balances say arrived unexplained, where a block too large to trace whole need
    be read per transaction only until that is explained (`touching`: its transactions known to touch
    the address, read first)."""
    block_hash = block_hash.lower()

    def traced(frames: list[Frame], unread: Sequence[str] = ()) -> TracedBlock:
        us, scale = chain.donation_address, amount_scale("eth")
        donations = internal_transfers(
            frames, donation_address=us, eth_scale=scale, block_number=block_number, block_hash=block_hash
        )
        dust = dust_wei(frames, donation_address=us, eth_scale=scale)
        coins = [coin.contract for coin in chain.stable_coins]
        return TracedBlock(donations, own_frames(frames, us), own_coin_calls(frames, us, coins), dust, tuple(unread))

    def ask(family: str) -> TracedBlock:
        try:
            return traced(
                block_frames(
                    client,
                    family,
                    block_number=block_number,
                    block_hash=block_hash,
                    stateless=stateless,
                    prefetched=prefetched,
                )
            )
        except TraceTooLarge as big:
            frames, unread = frames_by_transaction(
                client,
                family,
                block_number=block_number,
                block_hash=block_hash,
                tx_hashes=big.tx_hashes,
                touching=touching,
                enough=None if arrived is None else lambda found: traced(found).explained_wei() >= arrived,
            )
            return traced(frames, unread)

    return _with_traces(client, chain, ask)


def internal_eth_transfers(
    client: RpcClient, chain: ChainSettings, *, block_number: int, block_hash: str, stateless: bool = False
) -> list[Transfer]:
    """Every successful call frame below the top level that moved ETH to the donation address in the block.

    Returns `Transfer`s with `asset="eth"`, `log_index=None`, `donor` = `Frame.donor` (the frame's `from`;
    for ETH the OP-stack standard bridge relayed, the L1 account that bridged it), the amount at
    the ETH column scale (rounded down, zero-at-scale dropped), and `trace_address` set (never None).
    Raises `NoEvidenceError` for a transient provider failure (hold the block and retry) and
    `TracesUnavailable` when the provider cannot trace at all (record an unexplained inflow instead), or,
    `stateless` (see `block_frames`), cannot trace this block.
    """
    return traced_block(client, chain, block_number=block_number, block_hash=block_hash, stateless=stateless).donations


def traced_frames(
    client: RpcClient, chain: ChainSettings, *, block_number: int, block_hash: str
) -> tuple[list[Frame], list[str]]:
    """Every frame of the block (an address with code: its outflows too), and the transactions whose
    trace alone is past the answer cap (their frames are not among them); the same errors as
    `internal_eth_transfers`."""
    block_hash = block_hash.lower()

    def ask(family: str) -> tuple[list[Frame], list[str]]:
        try:
            return block_frames(client, family, block_number=block_number, block_hash=block_hash), []
        except TraceTooLarge as big:
            return frames_by_transaction(
                client, family, block_number=block_number, block_hash=block_hash, tx_hashes=big.tx_hashes
            )

    return _with_traces(client, chain, ask)


# --- one transaction (the old-unconfirmed crawler's proof of an internal ETH row) ---------------------


def transaction_trace(client: RpcClient, chain: ChainSettings, tx_hash: str) -> list[Frame]:
    """The frames of one transaction; same method discovery and the same errors as for a block."""

    def ask(family: str) -> list[Frame]:
        method = _TX_METHOD[family]
        params: list[object] = [tx_hash, _CALL_TRACER] if family == DEBUG else [tx_hash]
        result = _answer(client.call(method, params))
        try:
            return transaction_frames(family, result, tx_hash)
        except MalformedTrace as exc:
            raise _malformed(method, client, exc) from exc

    return _with_traces(client, chain, ask)
