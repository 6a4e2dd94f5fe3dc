"""The balance proof: every wei and coin unit that reached or left the donation address in a range is accounted for.

With each range the crawlers read, the same batch as its blocks asks the donation address's ETH balance,
its nonce and each coin's `balanceOf` at the block before the range and at its last block. For every
asset the identity must close, in raw units (wei, coin base units; never the 8-decimal donation scale,
which rounds down):

    balance(end) - balance(start - 1) = what arrived (ETH txs with status 1, Transfer logs to us,
                                                      the mint of an OP-stack deposit we made)
                                        - what left (txs sent from us: value + fee; Transfer logs from us)

with the fee by the chain's rules as its receipt states it (crawlers/decode/receipts.py: an OP-stack
rollup's L1 and operator fees, nothing for a deposit), and the nonce must grow by the number of
transactions we saw leave. A range that closes is *proven
complete*. Where it does not, balances at split points (pinned by block hash; each level splits every
interval that does not close into up to 8 parts, all in one post) narrow it down to the single blocks
where it breaks, and each is settled (a block found between two pinned answers is not asked again):

* ETH that arrived unexplained: internal transfers from call traces (`crawlers/scan/traces.py`), credited like
  any ETH donation; what traces cannot show is an *unexplained inflow* (recorded for finalized blocks),
  and the cursor moves on. A trace provider giving no evidence right now holds the block.
* Coins that arrived or left unexplained while the block's logsBloom says a Transfer of that coin
  involving us may be there: eth_getLogs answered short (a lagging node), so the block is held and
  retried. A bloom that rules such a log out makes it an unexplained inflow instead: a negative one
  where the coin fell (burnt without a log: USDT's destroyBlackFunds), on record for the operator with
  its block, asset and amount; ETH and the other coins go on.
* ETH that left without a transaction we saw, or a nonce that does not match: the answers contradict
  each other; the block is held.

A provider without historical state (a full node asked far behind its head, a node loaded from a state
dump) cannot prove old ranges. That is learnt by behaviour (crawlers/scan/history.py): until it is
known, the range holds. Then the range is read with the call traces of every block (internal donations
have no top-level flow to find them by) and the result says it is unproven (`ProvenRange.unproven`,
an `UnprovenSpan` with the balances the provider did give around it); where the traces are refused
too, that is its reason. The run records it for /health ("completeness unproven before N") and the
published proof. The proof writes nothing: it returns what it proved.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from crawlers.chain.calls import balance_calls
from crawlers.chain.logs import ForeignLogs
from crawlers.chain.outcomes import Answer, NoEvidenceError, RpcOutcome
from crawlers.chain.rpc import RpcClient
from crawlers.decode.balances import (
    ETH,
    NONCE,
    Balances,
    StateUnavailable,
    balances_from,
    balances_in_batch,
    split_points,
)
from crawlers.decode.bloom import bloom_may_hold_transfer
from crawlers.scan import history, traces, with_code
from crawlers.scan.ledger import SpanLedger, UnprovenSpan, ledger_from_blocks
from crawlers.scan.own import drop_own_coin_transfers
from crawlers.scan.ranges import read_range
from crawlers.scan.results import BlockHeld, RangeRead, ReadMode, ScannedBlock
from dws_project.chain_settings import ChainSettings

logger = logging.getLogger("dws.crawlers")

# Traced transfers come at the 8-decimal column scale, rounded down (and zero-at-scale frames dropped):
# each leaves less than one column unit unexplained, which is rounding, not a missing donation.
COLUMN_UNIT_WEI = 10**10
# Why a range is published unproven (docs/proof.md).
GENESIS = "no balance before the genesis block"
NO_HISTORY = "the provider keeps no historical state for these blocks"
NO_HISTORY_UNTRACED = (
    "the provider keeps no historical state for these blocks and gives no call traces: "
    "ETH that arrived by an internal call is not seen"
)


@dataclass(frozen=True)
class Unproven:
    """Blocks before `before` were scanned without the proof (no state to prove them with), and why."""

    before: int
    why: str


@dataclass
class ProvenRange:
    """What the proof found: the blocks it may hand on, why it stopped early, and what it proved."""

    blocks: list[ScannedBlock]
    held: BlockHeld | None
    proven: tuple[int, int] | None = None  # (first, last): proven complete by the balances
    unproven: Unproven | None = None
    ledger: SpanLedger | UnprovenSpan | None = None  # what a final read publishes (crawlers/record/proof_ranges.py)
    foreign: ForeignLogs = field(default_factory=ForeignLogs)  # the range's logs of coins the sale does not take
    # The donation address's code as the provider gave it at the range's edges, by block: the mode the
    # proof worked in, which a second provider must confirm (crawlers/scan/agreement.py).
    codes: dict[int, str] = field(default_factory=dict)


def balances_at(client: RpcClient, chain: ChainSettings, number: int, block_hash: str | None = None) -> Balances:
    return balances_from(chain, number, client.batch(balance_calls(chain, block_hash or number)))


def prove_range(client: RpcClient, chain: ChainSettings, start: int, end: int, mode: ReadMode) -> ProvenRange:
    """Blocks start..end with their donations, proven complete by the balances; stops at the first block
    that cannot be proven (returns the proven prefix and the hold)."""
    if start == 0:
        read = read_range(client, chain, start, end, mode)
        last = read.blocks[-1].header.number if read.blocks else None
        unproven = Unproven(last + 1, GENESIS) if last is not None else None
        return ProvenRange(
            read.blocks, read.held, unproven=unproven, ledger=UnprovenSpan(start, GENESIS), foreign=read.foreign
        )
    read = read_range(client, chain, start, end, mode, extra=with_code.proof_calls(chain, start, end))
    if not read.blocks:
        return ProvenRange([], read.held)
    half = balances_in_batch(chain)
    codes = answered_codes((start - 1, end), read.extra[2 * half :])
    last = read.blocks[-1].header.number
    try:
        before = _edge(chain, start - 1, read.extra[:half])
        if last == end:
            after = _edge(chain, end, read.extra[half : 2 * half])
        else:
            header = read.blocks[-1].header
            after = _edge(chain, last, client.batch(balance_calls(chain, header.hash)))
    except NoEvidenceError as exc:
        return ProvenRange([], BlockHeld(start, f"no balance evidence for blocks {start}..{last} ({exc})"))
    if isinstance(before, str) or isinstance(after, str):
        refused, why = (start - 1, before) if isinstance(before, str) else (last, str(after))
        if not history.history_missing(client, chain, refused, mode.run):
            # A recent block (a node lagging its peers), or a first refusal: no evidence, asked again later.
            reason = f"no balance evidence for blocks {start}..{last}: the balance at block {refused} was refused"
            reason += f" ({why})"
            return ProvenRange([], BlockHeld(start, reason))
        without = without_history(
            client,
            chain,
            read,
            mode,
            opening=before if isinstance(before, Balances) else None,
            closing=after if isinstance(after, Balances) else None,
        )
        without.codes = codes
        return without
    _forget_skipped_authorizations(read.blocks, before, after)
    code_held = with_code.read_calls(client, chain, start, read.blocks, read.extra[2 * half :])
    if code_held is not None:
        return ProvenRange([], code_held)
    try:
        blocks, held = settle(client, chain, read.blocks, before, after, mode)
    except (StateUnavailable, NoEvidenceError) as exc:
        return ProvenRange([], BlockHeld(start, f"no balance evidence for blocks {start}..{last} ({exc})"))
    proven = (start, blocks[-1].header.number) if blocks else None
    if proven:
        logger.info("balance proof: blocks %d..%d proven complete (%s)", *proven, mode.name)
    ledger = ledger_from_blocks(start, before.values, blocks, after.block, after.values)
    return ProvenRange(blocks, held or read.held, proven=proven, ledger=ledger, foreign=read.foreign, codes=codes)


def _forget_skipped_authorizations(blocks: Sequence[ScannedBlock], before: Balances, after: Balances) -> None:
    """EIP-7702 authorizations the address signed that the EVM skipped are no sign of delegated code: a signed
    authorization is public once used, and anyone can put it in a type-4 transaction again, where its nonce is
    past and nothing happens. Only one that was applied moves the address's nonce beyond the transactions it
    sent; where none did in the range, its blocks' authorizations are dropped (a stranger's replay would
    otherwise have the range read through traces, or held for good on a provider without them)."""
    sent = sum(block.flows.get(NONCE, 0) for block in blocks)
    if after.values[NONCE] - before.values[NONCE] <= sent:
        for block in blocks:
            block.authorized = 0


def answered_codes(blocks: Sequence[int], outcomes: Sequence[RpcOutcome]) -> dict[int, str]:
    """The answers to `eth_getCode` at `blocks` that are evidence, by block."""
    return {
        number: outcome.value
        for number, outcome in zip(blocks, outcomes, strict=False)
        if isinstance(outcome, Answer) and isinstance(outcome.value, str)
    }


def _edge(chain: ChainSettings, block: int, outcomes: Sequence[RpcOutcome]) -> Balances | str:
    """The balances at `block`, or what the provider said refusing one (a definite error object, which
    may mean it keeps no state there: crawlers/scan/history.py decides). Anything else short of an
    answer (a time-out, a 429, a null) raises NoEvidenceError: hold."""
    try:
        return balances_from(chain, block, outcomes)
    except StateUnavailable as exc:
        return str(exc)
    except NoEvidenceError as exc:
        if exc.outcome.kind == "error":
            return exc.outcome.detail
        raise


def without_history(
    client: RpcClient,
    chain: ChainSettings,
    read: RangeRead,
    mode: ReadMode,
    *,
    opening: Balances | None,
    closing: Balances | None,
) -> ProvenRange:
    """A range the provider keeps no state for: no balance can prove it, and an internal donation has no
    top-level flow to find it by, so the call traces of every block are read. Where the traces are
    refused too (for good, or for a block on two runs: crawlers/scan/history.py's `untraceable`), the
    range is published unproven with the balances the provider did give around it (the operator sees its
    span and ETH change); a trace answer short of evidence holds the block."""
    blocks, held, reason = read.blocks, read.held, NO_HISTORY
    # Every block's trace in one post where the trace method is known; each is checked as it is used.
    prefetched = traces.prefetch_traces(client, chain, [block.header.number for block in blocks])
    for i, block in enumerate(blocks):
        number = block.header.number
        try:
            traced_block = traces.traced_block(
                client, chain, block_number=number, block_hash=block.header.hash, stateless=True, prefetched=prefetched
            )
        except NoEvidenceError as exc:
            reason_held = f"no historical state for block {number}, and its call traces gave no evidence ({exc})"
            blocks, held = blocks[:i], BlockHeld(number, reason_held)
            break
        except traces.TracesUnavailable as exc:
            if isinstance(exc, traces.BlockUntraceable) and not history.untraceable(client, number, mode.run):
                reason_held = f"no historical state for block {number}, and its call traces were refused once ({exc})"
                blocks, held = blocks[:i], BlockHeld(number, reason_held)
                break
            logger.error(
                "balance proof: blocks %d..%d: no historical state and no call traces (%s): published unproven; "
                "ETH sent to the donation address by a contract in these blocks is not seen",
                blocks[0].header.number,
                blocks[-1].header.number,
                exc,
            )
            reason = NO_HISTORY_UNTRACED
            break
        block.transfers.extend(traced_block.donations)
        block.own.extend(traced_block.own)
        drop_own_coin_transfers(chain, block, traced_block.own_coin_calls)
    if not blocks:
        return ProvenRange([], held)
    first, last = blocks[0].header.number, blocks[-1].header.number
    ledger = UnprovenSpan(
        first,
        reason,
        opening=opening.values if opening is not None else None,
        end=closing.block if closing is not None else None,
        closing=closing.values if closing is not None else None,
    )
    return ProvenRange(blocks, held, unproven=Unproven(last + 1, reason), ledger=ledger, foreign=read.foreign)


def balance_change(before: Balances, after: Balances) -> dict[str, int]:
    """Per asset: how far its balance (or the nonce) moved from `before` to `after`."""
    return {asset: after.values[asset] - before.values[asset] for asset in before.values}


def unexplained(blocks: Sequence[ScannedBlock], change: Mapping[str, int]) -> dict[str, int]:
    """Per asset: the part of `change` no transaction or log of these blocks explains, where it is not 0."""
    residual = {asset: moved - sum(b.flows.get(asset, 0) for b in blocks) for asset, moved in change.items()}
    return {asset: r for asset, r in residual.items() if r != 0}


Located = tuple[ScannedBlock, dict[str, int], bool]  # a block, what is unexplained there, asked pinned


def _locate(
    client: RpcClient, chain: ChainSettings, blocks: Sequence[ScannedBlock], before: Balances, after: Balances
) -> list[Located]:
    """The single blocks where the identity breaks, with what is unexplained there, in block order.

    A level splits every interval that does not close into up to SPLIT_PARTS parts and asks the balances
    at all their cuts in one batch, each pinned by its block's hash; a block found between two pinned
    answers is marked so (its residual is then what `_pinned_residual` would ask again)."""
    found: list[Located] = []
    # Each interval: blocks[lo:hi], the balances before and after it, and whether each was asked pinned.
    level = [(0, len(blocks), before, after, False, False)]
    while level:
        asks: list[tuple[int, int, Balances, Balances, bool, bool, list[int]]] = []
        for lo, hi, low, high, low_pinned, high_pinned in level:
            broken = unexplained(blocks[lo:hi], balance_change(low, high))
            if not broken:
                continue
            if hi - lo == 1:
                found.append((blocks[lo], broken, low_pinned and high_pinned))
            else:
                asks.append((lo, hi, low, high, low_pinned, high_pinned, [lo + c for c in split_points(0, hi - lo)]))
        if not asks:
            break
        cuts = [cut for *_, points in asks for cut in points]
        outcomes = client.batch([call for cut in cuts for call in balance_calls(chain, blocks[cut - 1].header.hash)])
        size = balances_in_batch(chain)
        at = {
            cut: balances_from(chain, blocks[cut - 1].header.number, outcomes[i * size : (i + 1) * size])
            for i, cut in enumerate(cuts)
        }
        level = []
        for lo, hi, low, high, low_pinned, high_pinned, points in asks:
            edges = [(lo, low, low_pinned)] + [(cut, at[cut], True) for cut in points] + [(hi, high, high_pinned)]
            level += [(a, b, x, y, xp, yp) for (a, x, xp), (b, y, yp) in itertools.pairwise(edges)]
    return sorted(found, key=lambda located: located[0].header.number)


def settle(
    client: RpcClient,
    chain: ChainSettings,
    blocks: list[ScannedBlock],
    before: Balances,
    after: Balances,
    mode: ReadMode,
) -> tuple[list[ScannedBlock], BlockHeld | None]:
    """Close the identity over `blocks` (balances `before` the first and `after` the last): each block
    where it breaks is explained (traces, bloom) or its inflow noted; a hold at the first it cannot."""
    return settle_located(client, chain, blocks, _locate(client, chain, blocks, before, after), mode)


def settle_located(
    client: RpcClient, chain: ChainSettings, blocks: list[ScannedBlock], located: Sequence[Located], mode: ReadMode
) -> tuple[list[ScannedBlock], BlockHeld | None]:
    """Settle each located block of `blocks` (in block order); a hold at the first that cannot be."""
    for block, suspect, pinned in located:
        if not suspect:
            continue
        number = block.header.number
        # Balances asked by number (the range's edges, a sparse range's bisection) are asked again pinned to
        # this block and its parent, so an answer about another fork (a re-org between requests) is not
        # taken for missing money; balances the bisection already asked pinned are not asked twice.
        broken = suspect if pinned else _pinned_residual(client, chain, block)
        if not broken:
            logger.info("balance proof: block %d closes when pinned by hash (was %s)", number, suspect)
            continue
        logger.info("balance proof: block %d does not close at first look: %s", number, broken)
        reason = _settle_block(client, chain, block, broken, mode)
        if reason is not None:
            return [b for b in blocks if b.header.number < number], BlockHeld(number, reason)
        block.settled = broken
    return blocks, None


def touching(block: ScannedBlock) -> set[str]:
    """The block's transactions known to touch the donation address (its transfers, its own movements):
    traced first where the block must be traced one transaction at a time."""
    return {t.tx_hash for t in block.transfers} | {m.tx_hash for m in block.own}


def unread_reason(unread: Sequence[str]) -> str:
    """Why ETH stays unexplained where transactions' traces were too large to read, or "" when none were."""
    if not unread:
        return ""
    named = ", ".join(unread[:5]) + (f" and {len(unread) - 5} more" if len(unread) > 5 else "")
    return (
        f"the call trace of transaction(s) {named} is past DWS_RPC_MAX_ANSWER_MB even alone: what the balances "
        "say arrived in the block and nothing read explains is recorded for the operator"
    )


def _pinned_residual(client: RpcClient, chain: ChainSettings, block: ScannedBlock) -> dict[str, int]:
    header = block.header
    calls = balance_calls(chain, header.parent_hash) + balance_calls(chain, header.hash)
    outcomes = client.batch(calls)
    half = len(calls) // 2
    before = balances_from(chain, header.number - 1, outcomes[:half])
    after = balances_from(chain, header.number, outcomes[half:])
    return unexplained([block], balance_change(before, after))


def _settle_block(
    client: RpcClient, chain: ChainSettings, block: ScannedBlock, broken: dict[str, int], mode: ReadMode
) -> str | None:
    """Explain a block's residuals (traces, bloom) or set its unexplained inflows; a reason to hold, or None."""
    number = block.header.number
    nonce = broken.get(NONCE, 0)
    if nonce and not 0 < nonce <= block.authorized:  # an EIP-7702 authorization it signed moves it too
        signed = f" and the {block.authorized} EIP-7702 authorization(s) it signed" if block.authorized else ""
        return f"the donation address's nonce moved by {nonce} more than the transactions it sent{signed}"
    coins = {coin.asset: coin for coin in chain.stable_coins}
    for asset, raw in broken.items():
        if asset == NONCE:
            continue
        if asset in coins:
            if asset in block.unread_logs:  # anyone can make one block's logs of a coin larger than the cap
                why = (
                    f"the {asset} Transfer logs at the donation address in this block are past DWS_RPC_MAX_ANSWER_MB "
                    "even alone (thousands of transfers): what the balances say arrived is recorded for the operator"
                )
                block.add_unexplained(asset, raw, why)
                continue
            if bloom_may_hold_transfer(block.logs_bloom, coins[asset].contract, chain.donation_address):
                moved = f"rose by {raw}" if raw > 0 else f"fell by {-raw}"
                return (
                    f"the {asset} balance {moved} raw units more than the Transfer logs show and the "
                    "block's logsBloom says a Transfer involving us may be there: eth_getLogs answered short, retrying"
                )
            # No Transfer log can be there: the coin moved our balance itself (a rebase, or a burn without a
            # log, USDT's destroyBlackFunds: a negative amount). On record for the operator; ETH and the
            # other coins go on.
            block.add_unexplained(asset, raw)
            continue
        if block.traced:  # an address with code: its call traces are in the flows already
            if raw < 0:
                return f"{-raw} wei left the donation address that no transaction or call trace shows"
            # A self-destruct's or a withdrawal's: no frame shows it; or a transaction's trace too large to read.
            block.add_unexplained(ETH, raw, unread_reason(block.untraced))
            continue
        if raw < 0:
            return f"{-raw} raw units of {asset} left the donation address that no transaction or log shows"
        try:
            traced_block = traces.traced_block(
                client, chain, block_number=number, block_hash=block.header.hash, arrived=raw, touching=touching(block)
            )
        except NoEvidenceError as exc:
            return f"ETH arrived that no transaction explains and the call traces gave no evidence ({exc})"
        except traces.TracesUnavailable as exc:
            logger.warning("balance proof: block %d: no call traces (%s)", number, exc)
            block.add_unexplained(ETH, raw)
            block.traces_refused = True
            continue
        found = traced_block.donations
        # The address's own ETH (back in its own transactions, bridged from L1 by itself), and dust frames,
        # close the identity too; neither is a donation.
        traced = traced_block.explained_wei()
        left = raw - traced
        if left < 0:
            return f"the call traces show {traced} wei arriving, the balance only {raw}"
        block.transfers.extend(found)
        block.own.extend(traced_block.own)
        drop_own_coin_transfers(chain, block, traced_block.own_coin_calls)
        if left >= COLUMN_UNIT_WEI * (len(found) + 1):
            block.add_unexplained(ETH, left, unread_reason(traced_block.unread))
    if block.unexplained and not mode.final:
        logger.warning(
            "balance proof: block %d: unexplained %s (recorded once the block is final)", number, block.unexplained
        )
    return None
