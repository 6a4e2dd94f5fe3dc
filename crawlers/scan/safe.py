"""A genuine Safe at the donation address, read by its events on the sparse path (crawlers/scan/sparse.py).

A contract can move ETH out without its nonce moving, so equal balances prove nothing about an address
with code, and every other contract is read in full through its call traces (crawlers/scan/with_code.py).
A Safe whose code we can check (crawlers/decode/safe.py: the proxy's code hash, the singleton its slot 0
names and that singleton's code hash) announces everything it does with ETH: `SafeReceived` for what its
receive() takes, an execution event for everything it sends out. And we do not take the events' word for
the executions either: its storage nonce (slot 5) grows with every execTransaction, so between two blocks
where it stands still, and while no module is enabled, no execution happened whatever the logs say; where
a module is enabled, `trace_filter` (a second source, from the node's traces rather than its logs) must
show no value leaving the Safe in a block without an execution event. What cannot be shown so (no module
check possible, an answer short of evidence, code or storage we do not know) is read in full: never a
guess.

This module asks for that evidence over a range and judges it; sparse.py turns it into intervals to bisect
(ETH explained by the SafeReceived inside them) and blocks to read in full and trace (the executions).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from crawlers.chain.calls import balance_calls, code_call
from crawlers.chain.logs import logs_in_one_batch
from crawlers.chain.outcomes import Answer, Call, NoEvidence, NoEvidenceError, RpcOutcome
from crawlers.chain.rpc import RpcClient
from crawlers.decode.balances import ETH, Balances, balances_from, balances_in_batch
from crawlers.decode.safe import (
    EVENTS,
    KNOWN_PROXIES,
    KNOWN_SINGLETONS,
    STORAGE_SLOTS,
    VERSION_CALL,
    SafeEvents,
    SafeStorage,
    code_hash,
    safe_events,
    storage_from,
    version_from,
    word,
)
from crawlers.scan import trace_filter
from dws_project.chain_settings import ChainSettings

logger = logging.getLogger("dws.crawlers")

_proxies: dict[str, str | None] = {}  # runtime code -> the known proxy it is (None: not one)
_singletons: dict[tuple[str, str], str] = {}  # (chain, singleton) -> its version, code hash checked
_believed: dict[str, str] = {}  # chain -> the singleton of the Safe this process last read there


@dataclass
class SafeRange:
    """What a range's evidence says about the Safe at the donation address."""

    version: str
    singleton: str
    before: SafeStorage
    after: SafeStorage
    events: SafeEvents
    # From trace_filter, where it answered: blocks where value reached the Safe by a call frame, and blocks
    # where value left it; None when it did not answer (refused, or no evidence).
    value_in: set[int] | None = None
    value_out: set[int] | None = None
    points: dict[int, SafeStorage] = field(default_factory=dict)  # its storage around each execution

    @property
    def label(self) -> str:
        return f"Safe {self.version}: read by its events"


def storage_calls(chain: ChainSettings, block: int) -> list[Call]:
    return [("eth_getStorageAt", [chain.donation_address, slot, hex(block)]) for slot in STORAGE_SLOTS]


def storage_at(block: int, outcomes: Sequence[RpcOutcome]) -> SafeStorage | None:
    return storage_from(block, [word(o.value) if isinstance(o, Answer) else None for o in outcomes])


def range_calls(client: RpcClient, chain: ChainSettings, start: int, end: int) -> list[Call]:
    """The Safe's evidence over start..end, for one batch: its storage at both edges, its events (within
    the provider's log span) and the two trace_filter filters (where the provider may serve them)."""
    us = chain.donation_address
    calls = storage_calls(chain, start - 1) + storage_calls(chain, end)
    if logs_in_one_batch(client, chain, start, end):
        calls.append(("eth_getLogs", [{"address": us, "topics": [list(EVENTS)], **_span(start, end)}]))
    if trace_filter.may_ask(client, chain):
        calls += [("trace_filter", [{**_span(start, end), key: [us]}]) for key in ("toAddress", "fromAddress")]
    return calls


def _span(start: int, end: int) -> dict[str, str]:
    return {"fromBlock": hex(start), "toBlock": hex(end)}


def believed(chain: ChainSettings) -> bool:
    """Whether the last range this process read here found a genuine Safe (its evidence then rides in the
    range's first batch)."""
    return chain.name in _believed


def known_proxy(code: object) -> str | None:
    """The known Safe proxy whose runtime code this is, or None."""
    if not isinstance(code, str) or len(code) < 4:
        return None
    if code not in _proxies:
        _proxies[code] = KNOWN_PROXIES.get(code_hash(code))
    return _proxies[code]


def read_safe(
    client: RpcClient,
    chain: ChainSettings,
    start: int,
    end: int,
    codes: Sequence[RpcOutcome],
    asked: Sequence[Call],
    answers: Sequence[RpcOutcome],
) -> SafeRange | None:
    """The Safe's evidence over start..end (`answers` to the calls `asked` in the first batch, when they
    were `range_calls`), or None: not a genuine Safe at both edges, or evidence short (the range is read in
    full)."""
    if not all(isinstance(c, Answer) and known_proxy(c.value) for c in codes):
        _believed.pop(chain.name, None)
        return None
    calls = range_calls(client, chain, start, end)
    if list(asked) != calls or len(answers) != len(calls):
        answers = client.batch(calls)
    slots = len(STORAGE_SLOTS)
    before, after = storage_at(start - 1, answers[:slots]), storage_at(end, answers[slots : 2 * slots])
    if before is None or after is None or before.singleton is None or before.singleton != after.singleton:
        _believed.pop(chain.name, None)
        return None  # a singleton changed inside the range (an execution did it): read in full
    version = _singleton_version(client, chain, before.singleton, end)
    if version is None:
        _believed.pop(chain.name, None)
        return None
    _believed[chain.name] = before.singleton
    rest, found = answers[2 * slots :], None
    if calls[2 * slots : 2 * slots + 1] and calls[2 * slots][0] == "eth_getLogs":
        logs, rest = rest[0], rest[1:]
        found = logs.value if isinstance(logs, Answer) and isinstance(logs.value, list) else None
    if found is None:  # past the batch's span, or refused there: asked in the spans the provider takes
        found = _all_events(client, chain, start, end)
    events = safe_events(found, chain.donation_address) if found is not None else None
    if events is None or any(not start <= n <= end for n in events.named()):
        return None
    safe = SafeRange(version, before.singleton, before, after, events)
    if rest:
        safe.value_in, safe.value_out = trace_filter.value_blocks(client, chain, start, end, rest)
    return safe


def _all_events(client: RpcClient, chain: ChainSettings, start: int, end: int) -> list[dict] | None:
    try:
        return client.get_logs(
            addresses=[chain.donation_address], topics=[list(EVENTS)], from_block=start, to_block=end
        )
    except NoEvidenceError:
        return None


def _singleton_version(client: RpcClient, chain: ChainSettings, singleton: str, end: int) -> str | None:
    """The version of a known singleton at that address (its code hash checked once per process; a Safe
    singleton has no way to change its code), read through the proxy's VERSION() for the label."""
    key = (chain.name, singleton)
    if key in _singletons:
        return _singletons[key]
    code, said = client.batch(
        [code_call(singleton, end), ("eth_call", [{"to": chain.donation_address, "data": VERSION_CALL}, hex(end)])]
    )
    if not isinstance(code, Answer) or not isinstance(code.value, str):
        return None
    version = KNOWN_SINGLETONS.get(code_hash(code.value))
    if version is None:
        logger.warning(
            "donation address %s on %s: a Safe proxy whose singleton %s is no Safe we know: read in full",
            chain.donation_address,
            chain.name,
            singleton,
        )
        return None
    told = version_from(said.value) if isinstance(said, Answer) else None
    if told is not None and told != version:
        return None  # the code we know says another version than it tells: nothing to trust
    _singletons[key] = version
    return version


def executions_proven(safe: SafeRange, opaque: Sequence[int]) -> str | None:
    """Why the Safe's executions are not all among `opaque` (its execution blocks, read in full), or None.

    Between the points around them (the range's edges and each execution block's parent and itself), the
    storage nonce must stand still (no execTransaction the logs left out) and move by one for each
    execTransaction event across an execution block, the singleton stay the one we
    checked, and no module may be enabled unless trace_filter answered and saw no value leave the Safe
    outside an execution block."""
    points = {safe.before.block: safe.before, safe.after.block: safe.after, **safe.points}
    if any(p.singleton != safe.singleton for p in points.values()):
        return "its singleton changed inside the range"
    if not all(p.set_up for p in points.values()):
        return "it was not set up (anyone may call its setup() with a delegatecall of their own)"
    executed = set(opaque)
    ordered = sorted(points)
    for low, high in itertools.pairwise(ordered):
        inside = [n for n in executed if low < n <= high]
        if not inside and points[low].nonce != points[high].nonce:
            return f"its transaction nonce moved in blocks {low + 1}..{high} with no execution event there"
        # Each execTransaction moves it by exactly one, failed or not; a delegatecall can write it (and log
        # anything): then it no longer counts the executions, here or for a check provider.
        told, moved = sum(safe.events.executions.get(n, 0) for n in inside), points[high].nonce - points[low].nonce
        if inside and moved != told:
            return f"its transaction nonce moved by {moved} in blocks {low + 1}..{high}, which log {told} execution(s)"
    if safe.value_out is not None and (left := sorted(safe.value_out - executed)):
        return f"trace_filter shows value leaving it in block {left[0]}, which has no execution event"
    if any(p.modules for p in points.values()) and safe.value_out is None:
        return "a module is enabled and trace_filter does not answer to show what the module executions moved"
    return None


def cut_at_executions(
    client: RpcClient, chain: ChainSettings, found: SafeRange, before: Balances, after: Balances, moves: dict
) -> tuple[list[tuple[Balances, Balances]], dict[int, tuple[Balances, Balances]]] | str:
    """A Safe's range cut at its executions: the intervals between them, where ETH can only arrive (each
    quiet when its ETH change is what its SafeReceived events announce, which `moves` gains), and each
    execution block with the balances around it (asked here, one batch with the Safe's storage there);
    or why its executions are not all known (crawlers/scan/safe.py `executions_proven`)."""
    executed = sorted(found.events.executed())
    for number, wei in found.events.received.items():
        if number not in executed:
            moved = moves.setdefault(number, {})
            moved[ETH] = moved.get(ETH, 0) + wei
    at = {before.block: before, after.block: after}
    points = sorted({p for e in executed for p in (e - 1, e)} - set(at))
    if points:
        size = balances_in_batch(chain)
        calls = [call for p in points for call in balance_calls(chain, p) + storage_calls(chain, p)]
        outcomes = client.batch(calls)
        step = size + len(storage_calls(chain, 0))
        for i, point in enumerate(points):
            answers = outcomes[i * step : (i + 1) * step]
            at[point] = balances_from(chain, point, answers[:size])
            storage = storage_at(point, answers[size:])
            if storage is None:
                return f"no evidence of its storage at block {point}"
            found.points[point] = storage
    why = executions_proven(found, executed)
    if why is not None:
        return why
    ordered = sorted(at)
    intervals, opened = [], {}
    for low, high in itertools.pairwise(ordered):
        if high in executed and low == high - 1:
            opened[high] = (at[low], at[high])
        else:
            intervals.append((at[low], at[high]))
    return intervals, opened


def logged_reason(chain: ChainSettings, start: int, end: int, why: str) -> None:
    logger.warning(
        "donation address %s on %s: blocks %d..%d are read in full through call traces: %s",
        chain.donation_address,
        chain.name,
        start,
        end,
        why,
    )


def no_evidence(outcome: RpcOutcome) -> bool:
    return isinstance(outcome, NoEvidence)


def reading_of(chain: ChainSettings) -> str | None:
    """The reading of the Safe this process last found at the address ("Safe 1.4.1: read by its events"),
    or None: what a range of it read in full (too busy to bisect) still says on /health."""
    singleton = _believed.get(chain.name)
    version = _singletons.get((chain.name, singleton)) if singleton else None
    return f"Safe {version}: read by its events" if version else None


@dataclass(frozen=True)
class SafeClaim:
    """What a range read by the Safe's events rests on (the primary's word), for a check provider to show
    (crawlers/scan/agreement.py): a primary that left an execution out of its logs and bent the Safe's
    storage to match, as a dropped transfer with the balances bent is shown by the balances."""

    singleton: str
    executions: dict[int, int]  # block -> execTransaction events in the primary's logs
    modules: bool  # a module was enabled at a point the primary read (then trace_filter spoke for them)


def claim_of(found: SafeRange) -> SafeClaim:
    points = [found.before, found.after, *found.points.values()]
    return SafeClaim(found.singleton, dict(found.events.executions), any(p.modules for p in points))


def claim_differs(claim: SafeClaim, opening: SafeStorage, closing: SafeStorage) -> str | None:
    """Where the check provider's storage of the Safe at the recorded stretch's edges does not show the
    primary's reading, what differs: the same singleton, no module where the primary saw none, and its
    transaction nonce grown by exactly the execTransaction events the primary's logs gave in between (each
    one, failed or not, moves it by one)."""
    for edge in (opening, closing):
        if edge.singleton != claim.singleton:
            return f"the Safe's singleton at block {edge.block}: ours says {claim.singleton}, theirs {edge.singleton}"
        if edge.modules and not claim.modules:
            return f"a module of the Safe at block {edge.block}: ours says none is enabled, theirs one is"
    ours = sum(n for block, n in claim.executions.items() if opening.block < block <= closing.block)
    if closing.nonce - opening.nonce != ours:
        return (
            f"the Safe's transaction nonce over blocks {opening.block + 1}..{closing.block}: ours says {ours} "
            f"execution(s), theirs moved it by {closing.nonce - opening.nonce}"
        )
    return None
