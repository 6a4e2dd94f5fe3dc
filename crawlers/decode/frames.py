"""Call traces as pure data: the two JSON shapes providers answer in, decoded into one list of frames.

Nothing here talks to the node. `crawlers/scan/traces.py` fetches; these functions decode and decide.

A *frame* is one message call (or create, or self-destruct) inside a transaction. Its *trace address*
is its path in the transaction's call tree: the top-level call is `()`, its second sub-call `(1,)`,
that one's first sub-call `(1, 0)`; written "1.0" in the database. This is the identity an internal
ETH donation keeps across a re-org into another block: `(tx_hash, trace_address)` depends only on
the transaction's execution, not on the block it lands in.

* `trace_block` (Parity/Erigon/Nethermind/reth/anvil) states the path as `traceAddress`.
* `debug_traceBlockByNumber` with the `callTracer` (geth/anvil/reth) nests sub-calls in `calls`;
  the path is the index in each `calls` list.

Calls to precompiled contracts (ecrecover, sha256, ...) are listed by some tracers and not by others
(geth's callTracer and anvil's trace_block list them, OpenEthereum-style trace_block leaves out those
without value). So the path counts only the other sub-calls: a value-less call to a precompile below
the top level takes no index, in either shape. Then both methods, on any of these nodes, give the same
path to the same frame, and it equals `traceAddress` on a node that leaves precompiles out.

What counts (see `donation_frames`): a CALL frame below the top level that moved value > 0 to the
donation address and neither failed nor sits under a frame that failed. DELEGATECALL and STATICCALL
move no value (a delegatecall's `value` is its parent's, echoed). CALLCODE runs the callee's code in
the caller's own account, so no value leaves it. CREATE/CREATE2 cannot target an existing address,
and a SELFDESTRUCT's beneficiary receives the balance of a contract that no longer exists: neither is
counted here; such value shows up in the balance proof as an unexplained inflow for the operator.
The top-level frame is left out: a transaction paying us directly is the ETH detector's business
(`crawlers/decode/transfers.py`), proven by its receipt.

Who sent a frame's ETH (`Frame.donor`) is the frame's `from`, the contract that made the call, with one
exception: on an OP-stack rollup, ETH bridged from L1 through the standard bridge is paid by a CALL from
the L2StandardBridge predeploy under the relayed `finalizeBridgeETH` / `finalizeDeposit` call, and is the
ETH of that call's `_from`, the L1 account that bridged it (`crawlers/decode/bridge.py`). The relayed call
is the nearest frame above the payment that is a CALL into the bridge (the proxy's DELEGATECALL frames in
between run the bridge's code); it must come from L2CrossDomainMessenger (the bridge accepts no other
caller) and name this recipient and amount. Anything else, or calldata that does not decode cleanly, leaves
the frame's `from` the donor, as for any contract. Only the calldata of calls into the bridge is kept:
every frame's would hold a block's whole calldata in memory.

The donation address's own money is no donation (`own_frames`): value that reaches it inside a call
it made itself (every frame of a transaction it signed; with code, the call tree under its own outgoing
call: a Safe's owner signs, the Safe calls a router, WETH's `withdraw` pays back) is a `Movement`
(RETURNED), not a donation. Only what is nested under that call: anyone can make a Safe call out (a
call it has no function for goes to its fallback handler), so a donor's contract that pokes the
address and then pays it in the same transaction is still a donor. A DELEGATECALL or STATICCALL from
it (a Safe proxy running its singleton on every call it receives) does not count: it moves nothing and
starts nothing outside the address. Coins (`own_coin_calls`) follow the same rule by the call frames
into the coin's contract: its Transfer to the address is own money only when every such frame of the
transaction sits under the address's own call. ETH whose donor is the address itself, which it bridged
from L1 to itself (the sale topping up its L2 address from its L1 treasury), is a `Movement` too (BRIDGED).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal

from crawlers.decode.amounts import ETH_DECIMALS, scaled_amount
from crawlers.decode.bridge import L2_CROSS_DOMAIN_MESSENGER, L2_STANDARD_BRIDGE, RelayedEth, relayed_eth
from crawlers.decode.transfers import BRIDGED, RETURNED, Movement
from donations.sightings import Transfer

# Precompiled contracts: 0x01-0x11 (up to Prague's BLS set) and 0x100 (P-256 verification).
_PRECOMPILES = frozenset([*range(1, 0x12), 0x100])


class MalformedTrace(ValueError):
    """The answer is not in a shape we can read with certainty: no evidence, never "no donation"."""


@dataclass(frozen=True)
class Frame:
    tx_hash: str
    path: tuple[int, ...]
    kind: str  # call | delegatecall | staticcall | callcode | create | create2 | selfdestruct | ...
    sender: str
    to: str
    wei: int
    failed: bool  # this frame itself reverted or failed
    reverted: bool  # this frame or one of its ancestors failed: nothing it did stands
    input: str = field(default="", repr=False)  # the calldata, kept only for a call into L2StandardBridge
    l1_sender: str = ""  # the bridge paying out ETH relayed from L1: the L1 account that bridged it

    @property
    def trace_address(self) -> str:
        return ".".join(str(i) for i in self.path)

    @property
    def donor(self) -> str:
        """Whose ETH the frame moves: the L1 sender of ETH the standard bridge relayed, else its `from`."""
        return self.l1_sender or self.sender


def _hex_int(value: object) -> int:
    if value in (None, "", "0x"):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value, 16)
        except ValueError:
            pass
    raise MalformedTrace(f"not a hex quantity: {str(value)[:40]}")


def _address(value: object) -> str:
    return value.lower() if isinstance(value, str) else ""


def _is_precompile(address: str) -> bool:
    try:
        return bool(address) and int(address, 16) in _PRECOMPILES
    except ValueError:
        return False


def _is_quiet_precompile_call(call: dict) -> bool:
    return _is_precompile(_address(call.get("to"))) and _hex_int(call.get("value")) == 0


def call_tracer_frames(result: object, block_tx_hashes: Sequence[str]) -> list[Frame]:
    """Frames of a `debug_traceBlockByNumber(n, {"tracer": "callTracer"})` answer.

    Each element is `{"txHash": ..., "result": {call}}` (older geth omits `txHash`; the position in
    the block names the transaction then). One element per transaction of the block, in order, or the
    answer is malformed: a trace that skipped a transaction would hide its transfers.
    """
    if not isinstance(result, list) or len(result) != len(block_tx_hashes):
        raise MalformedTrace("the trace does not list every transaction of the block")
    frames: list[Frame] = []
    for position, item in enumerate(result):
        if not isinstance(item, dict) or not isinstance(item.get("result"), dict):
            raise MalformedTrace(f"transaction {position} has no call trace")
        tx_hash = _address(item.get("txHash")) or block_tx_hashes[position]
        if tx_hash != block_tx_hashes[position]:
            raise MalformedTrace(f"trace {position} names another transaction than the block")
        _walk_call(item["result"], tx_hash, (), False, frames)
    return _with_l1_senders(frames)


def _walk_call(call: dict, tx_hash: str, path: tuple[int, ...], under_failure: bool, out: list[Frame]) -> None:
    kind = str(call.get("type") or "").lower()
    if not kind:
        raise MalformedTrace(f"a frame of {tx_hash} has no type")
    failed = bool(call.get("error"))
    reverted = under_failure or failed
    to = _address(call.get("to"))
    out.append(
        Frame(
            tx_hash=tx_hash,
            path=path,
            kind=kind,
            sender=_address(call.get("from")),
            to=to,
            wei=_hex_int(call.get("value")),
            failed=failed,
            reverted=reverted,
            input=_bridge_input(to, call.get("input")),
        )
    )
    children = call.get("calls") or []
    if not isinstance(children, list):
        raise MalformedTrace(f"a frame of {tx_hash} has malformed sub-calls")
    index = 0
    for child in children:
        if not isinstance(child, dict):
            raise MalformedTrace(f"a frame of {tx_hash} has a malformed sub-call")
        if _is_quiet_precompile_call(child):
            continue  # not numbered by Parity-style traces; keeps both paths identical
        _walk_call(child, tx_hash, (*path, index), reverted, out)
        index += 1


def parity_frames(result: object, block_hash: str, block_tx_hashes: Sequence[str]) -> list[Frame]:
    """Frames of a `trace_block(n)` answer (a flat list), checked against the block it must describe.

    Every trace must name `block_hash` (a trace of another block is a re-org between our calls), and
    every transaction of the block must have its top-level trace: an empty or short list for a block
    with transactions is no evidence.
    """
    if not isinstance(result, list):
        raise MalformedTrace("trace_block did not answer a list")
    raw: list[tuple[str, tuple[int, ...], str, str, str, int, bool, str]] = []
    for item in result:
        if not isinstance(item, dict):
            raise MalformedTrace("a trace is not an object")
        if _address(item.get("blockHash")) != block_hash:
            raise MalformedTrace("a trace names another block")
        tx_hash = _address(item.get("transactionHash"))
        kind = str(item.get("type") or "").lower()
        if not tx_hash:
            if kind == "reward":
                continue  # block and uncle rewards belong to no transaction
            raise MalformedTrace("a transaction trace has no transaction hash")
        action = item.get("action")
        path = item.get("traceAddress")
        if not isinstance(action, dict) or not isinstance(path, list) or not all(isinstance(i, int) for i in path):
            raise MalformedTrace(f"a trace of {tx_hash} lacks its action or trace address")
        if kind == "call":
            kind = str(action.get("callType") or "call").lower()
            sender, to, wei = action.get("from"), action.get("to"), _hex_int(action.get("value"))
        elif kind == "create":
            outcome = item.get("result")
            created = outcome if isinstance(outcome, dict) else {}
            kind = str(action.get("creationMethod") or "create").lower()
            sender, to, wei = action.get("from"), created.get("address"), _hex_int(action.get("value"))
        elif kind == "suicide":
            kind = "selfdestruct"
            sender, to, wei = action.get("address"), action.get("refundAddress"), _hex_int(action.get("balance"))
        else:
            sender, to, wei = action.get("from"), action.get("to"), _hex_int(action.get("value"))
        calldata = _bridge_input(_address(to), action.get("input"))
        raw.append((tx_hash, tuple(path), kind, _address(sender), _address(to), wei, bool(item.get("error")), calldata))
    tops = [tx for tx, path, *_ in raw if path == ()]
    if tops != list(block_tx_hashes):
        raise MalformedTrace("the traces do not cover the block's transactions, in order")
    failed_paths = {(tx, path) for tx, path, *_, failed, _ in raw if failed}
    quiet = {(tx, path) for tx, path, _, _, to, wei, *_ in raw if path and wei == 0 and _is_precompile(to)}
    canonical = _renumbered([(tx, path) for tx, path, *_ in raw], quiet)
    return _with_l1_senders(
        [
            Frame(
                tx_hash=tx,
                path=canonical[(tx, path)],
                kind=kind,
                sender=sender,
                to=to,
                wei=wei,
                failed=failed,
                reverted=any((tx, path[:depth]) in failed_paths for depth in range(len(path) + 1)),
                input=calldata,
            )
            for tx, path, kind, sender, to, wei, failed, calldata in raw
            if (tx, path) not in quiet
        ]
    )


def _renumbered(
    keys: Sequence[tuple[str, tuple[int, ...]]], quiet: set[tuple[str, tuple[int, ...]]]
) -> dict[tuple[str, tuple[int, ...]], tuple[int, ...]]:
    """Each frame's path with quiet precompile calls taking no index among their siblings."""
    canonical: dict[tuple[str, tuple[int, ...]], tuple[int, ...]] = {}
    for tx, path in sorted(keys, key=lambda key: (key[0], len(key[1]), key[1])):  # parents first
        if not path:
            canonical[(tx, path)] = ()
            continue
        parent = path[:-1]
        if (tx, parent) not in canonical:
            raise MalformedTrace(f"a trace of {tx} has no parent frame")
        skipped = sum(1 for i in range(path[-1]) if (tx, (*parent, i)) in quiet)
        canonical[(tx, path)] = (*canonical[(tx, parent)], path[-1] - skipped)
    return canonical


# --- ETH the standard bridge relayed from L1 (crawlers/decode/bridge.py) --------------------------------


def _bridge_input(to: str, calldata: object) -> str:
    """The calldata of a call into the L2StandardBridge predeploy (the only calldata a rule reads), else ""."""
    return calldata if to == L2_STANDARD_BRIDGE and isinstance(calldata, str) else ""


def _relayed(frame: Frame, by_path: Mapping[tuple[str, tuple[int, ...]], Frame]) -> RelayedEth | None:
    """The relayed deposit a CALL from the bridge pays out, or None (see the module's docstring)."""
    context = by_path.get((frame.tx_hash, frame.path[:-1]))
    # The predeploy is a proxy: its implementation runs by DELEGATECALL in the bridge's account, with the
    # same calldata. Up through those to the call into the bridge.
    while context is not None and context.kind == "delegatecall" and context.sender == L2_STANDARD_BRIDGE:
        context = by_path.get((frame.tx_hash, context.path[:-1])) if context.path else None
    if (
        context is None
        or context.kind != "call"
        or context.to != L2_STANDARD_BRIDGE
        or context.sender != L2_CROSS_DOMAIN_MESSENGER
    ):
        return None
    relayed = relayed_eth(context.input)
    if relayed is None or (relayed.recipient, relayed.wei, context.wei) != (frame.to, frame.wei, frame.wei):
        return None
    return relayed


def _with_l1_senders(frames: list[Frame]) -> list[Frame]:
    """The frames, each CALL by which the bridge pays out ETH relayed from L1 carrying its L1 sender."""
    by_path = {(frame.tx_hash, frame.path): frame for frame in frames}
    out = []
    for frame in frames:
        if frame.sender == L2_STANDARD_BRIDGE and frame.kind == "call" and frame.wei > 0 and frame.path:
            relayed = _relayed(frame, by_path)
            if relayed is not None:
                frame = replace(frame, l1_sender=relayed.sender)
        out.append(frame)
    return out


# Frames by which an account acts outside itself; a delegatecall or staticcall from it does not.
_ACTING_KINDS = frozenset(["call", "callcode", "create", "create2", "selfdestruct"])


def _own_calls(frames: Iterable[Frame], donation_address: str) -> dict[str, list[tuple[int, ...]]]:
    """Per transaction, the paths of the calls the donation address itself made (`()`: it signed it),
    whether or not they succeeded."""
    calls: dict[str, list[tuple[int, ...]]] = {}
    for frame in frames:
        if frame.sender == donation_address and frame.kind in _ACTING_KINDS:
            calls.setdefault(frame.tx_hash, []).append(frame.path)
    return calls


def _under(frame: Frame, own_calls: dict[str, list[tuple[int, ...]]]) -> bool:
    """The frame is one of the address's own calls or nested under one."""
    return any(frame.path[: len(path)] == path for path in own_calls.get(frame.tx_hash, ()))


def own_coin_calls(frames: Sequence[Frame], donation_address: str, contracts: Iterable[str]) -> set[tuple[str, str]]:
    """(transaction, coin contract) pairs whose coin arrivals are the address's own money: the contract
    runs in the transaction, and every succeeded call into it sits under a call the address made."""
    own = _own_calls(frames, donation_address)
    wanted = {contract.lower() for contract in contracts}
    into: dict[tuple[str, str], bool] = {}
    for frame in frames:
        if frame.to in wanted and frame.kind == "call" and not frame.reverted:
            key = (frame.tx_hash, frame.to)
            into[key] = into.get(key, True) and _under(frame, own)
    return {key for key, all_own in into.items() if all_own}


def _arriving_frames(frames: Iterable[Frame], donation_address: str) -> list[Frame]:
    """Successful CALL frames below the top level that moved value to the donation address."""
    return [
        frame
        for frame in frames
        if frame.path and frame.kind == "call" and frame.to == donation_address and frame.wei > 0 and not frame.reverted
    ]


def donation_frames(frames: Sequence[Frame], donation_address: str) -> list[Frame]:
    """Frames that are internal ETH donations (from `Frame.donor`): see the module's docstring for the rule."""
    own = _own_calls(frames, donation_address)
    return [
        frame
        for frame in _arriving_frames(frames, donation_address)
        if not _under(frame, own) and frame.donor != donation_address
    ]


def shows_frame(
    frames: Sequence[Frame], donation_address: str, *, trace_address: str, donor: str, amount: Decimal, eth_scale: int
) -> bool:
    """Whether `frames` hold the donation frame at `trace_address` paying `amount` (at `eth_scale`) from `donor`:
    what proves one internal ETH donation from a trace of its transaction."""
    return any(
        (frame.trace_address, frame.donor, scaled_amount(frame.wei, ETH_DECIMALS, eth_scale))
        == (trace_address, donor, amount)
        for frame in donation_frames(frames, donation_address)
    )


def own_frames(frames: Sequence[Frame], donation_address: str) -> list[Movement]:
    """ETH that reached the donation address by its own doing: back inside calls it made itself (RETURNED),
    or bridged from L1 by itself through the standard bridge (BRIDGED). Movements, never donations."""
    own = _own_calls(frames, donation_address)
    found = []
    for frame in _arriving_frames(frames, donation_address):
        if _under(frame, own):
            found.append(Movement(frame.tx_hash, "eth", frame.wei, RETURNED))
        elif frame.donor == donation_address:
            found.append(Movement(frame.tx_hash, "eth", frame.wei, BRIDGED))
    return found


def internal_transfers(
    frames: Sequence[Frame], *, donation_address: str, eth_scale: int, block_number: int, block_hash: str
) -> list[Transfer]:
    """The donation frames as `Transfer`s (donor = `Frame.donor`), dropping those zero at `eth_scale`."""
    found = []
    for frame in donation_frames(frames, donation_address):
        amount = scaled_amount(frame.wei, ETH_DECIMALS, eth_scale)
        if amount == 0:
            continue
        found.append(
            Transfer(
                tx_hash=frame.tx_hash,
                log_index=None,
                donor=frame.donor,
                asset="eth",
                amount=amount,
                block_number=block_number,
                block_hash=block_hash,
                trace_address=frame.trace_address,
            )
        )
    return found


def dust_wei(frames: Sequence[Frame], *, donation_address: str, eth_scale: int) -> int:
    """The wei of the donation frames that are zero at `eth_scale` (dust): never credited, never an
    inflow; the balance proof counts them as explained, like a top-level transfer of a few wei."""
    return sum(
        frame.wei
        for frame in donation_frames(frames, donation_address)
        if scaled_amount(frame.wei, ETH_DECIMALS, eth_scale) == 0
    )


def transaction_frames(kind: str, result: object, tx_hash: str, block_hash: str | None = None) -> list[Frame]:
    """Frames of one transaction: `debug_traceTransaction` (callTracer, kind "debug") or
    `trace_transaction` (kind "trace"), for the old-unconfirmed crawler's proof of one row."""
    if kind == "debug":
        if not isinstance(result, dict):
            raise MalformedTrace("debug_traceTransaction did not answer a call")
        frames: list[Frame] = []
        _walk_call(result, tx_hash, (), False, frames)
        return _with_l1_senders(frames)
    if not isinstance(result, list) or not result:
        raise MalformedTrace("trace_transaction did not answer a non-empty list")
    hash_of_block = block_hash or _address(result[0].get("blockHash") if isinstance(result[0], dict) else None)
    return parity_frames(result, hash_of_block, [tx_hash])
