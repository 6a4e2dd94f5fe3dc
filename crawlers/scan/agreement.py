"""A second, independent provider's word on what the finalized crawler is about to record (DWS_RPC_CHECK_URL).

Nothing is confirmed that the check provider's own answers do not show. Before a finalized range is
recorded, one batch asks the check provider for:

* the header of the range's closing block (the one the cursor moves to) and of every block that credits
  or fails something or holds an unexplained inflow: its hash, and its list of transactions;
* the donation address's balances (ETH, nonce, each coin) at the block before the range, at the closing
  block and around every crediting block and every block with an unexplained inflow (before and after
  it: on a busy chain one block's "after" is the next one's "before", asked once), and the address's code
  at the block before the range and at the closing block;
* the receipt of every transaction credited or failed, and the transaction object of every top-level
  ETH transfer.

The range is recorded only when the check provider's answers show the same thing:

* the same block hashes and times (the time prices an ETH donation), and every transaction credited or
  failed in its block's own list;
* the opening and closing balances the primary's balance proof started and ended at: a transfer the primary
  left out of a range (dropped from a log answer or from a block body, with its balances bent to match
  after it, or before it: each range's proof asks the primary for its opening afresh) shows here;
* no code at either edge where the primary proved the range as a plain account (by its balances alone), and
  the same Safe proxy code where the primary's was one (a Safe may be read by its events); for a Safe read
  by its events, its storage at both edges showing that reading (crawlers/scan/safe.py `claim_differs`: an
  execution left out of the primary's logs, with the Safe's nonce bent to match, shows in the nonce);
* for ETH paid by an internal call, the check provider's trace of the transaction showing the frame from
  that donor (a balance shows the amount, not whose it is);
* each crediting block moving the balances as the primary's proof says it did: ETH that never arrived
  (an invented call frame, with the balances bent to match) shows here; so does each block with an
  unexplained inflow, which the check provider also reads and proves itself (crawlers/scan/second_reading.py:
  a donation the primary left out with its balances true is filed as one);
* for each transfer, a successful receipt in that block and, for a coin, the Transfer log at that index
  of that contract paying the donation address from the donor, of that amount; for a top-level ETH
  transfer, the same sender, recipient and value; for a transaction the primary reports reverted, a
  receipt reporting the revert in that block.

Where the check provider keeps no state for a block (learnt by its behaviour, as for the primary:
crawlers/scan/history.py; a first refusal waits), its balances and code cannot be compared there: a
crediting block is then shown by its transactions instead, in a second batch (each credited transaction's
object, in that block) and, for ETH paid by an internal call, the transaction's call trace showing the
frame (path, donor, amount); opening and closing balances it cannot give are not compared (a WARNING says so: what
the range left out then rests on the primary's proof alone), nor its code at an edge it has no state for.

What the range writes to the refund register is shown by the check provider's receipts too
(crawlers/scan/register_facts.py): each stray coin arriving (a refund owed) and each payout (a refund
marked paid), which no balance compared here would show.

Where the primary proved nothing about the range (it keeps no state there, or says so), or found an
unexplained inflow or the address's own money arriving in a block, the check provider reads and proves
those blocks itself (crawlers/scan/second_reading.py): a transfer it finds that ours does not is a
disagreement.

A check provider that does not answer (a time-out, a null, an error) is no evidence: the range waits.
An answer that differs is a `Disagreement` naming both answers: the run holds the chain on it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from crawlers.chain.calls import balance_calls, code_call, header_call, receipt_calls, transaction_calls
from crawlers.chain.logs import ForeignLogs
from crawlers.chain.outcomes import Answer, Call, NoEvidence, NoEvidenceError, RpcOutcome
from crawlers.chain.rpc import RpcClient
from crawlers.decode.authorizations import address_mode
from crawlers.decode.balances import Balances, StateUnavailable, balances_from, balances_in_batch
from crawlers.decode.blocks import BlockHeader, block_carries, header_of
from crawlers.decode.frames import shows_frame
from crawlers.scan import history, traces
from crawlers.scan.ledger import SpanLedger, UnprovenSpan
from crawlers.scan.receipt_stand_ins import receipt_stand_ins
from crawlers.scan.register_facts import frame_payouts_shown, register_differs, register_hashes, strays_of
from crawlers.scan.results import ScannedBlock
from crawlers.scan.safe import SafeClaim, claim_differs, known_proxy, storage_at, storage_calls
from crawlers.scan.second_reading import range_shown, unexplained_shown
from crawlers.scan.transfer_facts import name, ours_and_theirs, reverted_differs, transfer_differs
from crawlers.scan.with_code import PLAIN, mode_of
from donations.refund_values import StrayTransfer
from donations.sightings import Transfer, amount_scale
from dws_project.chain_settings import ChainSettings

logger = logging.getLogger("dws.crawlers")


@dataclass(frozen=True)
class Disagreement:
    """The two providers answered differently about a block we were about to record."""

    number: int
    what: str  # names both answers

    def describe(self, primary: str, check: str) -> str:
        return f"providers disagree on block {self.number}: {self.what} (provider {primary}, check provider {check})"


@dataclass(frozen=True)
class RangeClaim:
    """What the primary's answers say about a range the finalized crawler is about to record."""

    opening: int  # the block before the range
    blocks: Sequence[ScannedBlock]  # the blocks to be recorded (a sparse range: those read in full)
    closing: BlockHeader | None  # the block the range is recorded through (None: nothing is)
    ledger: SpanLedger | UnprovenSpan | None  # the balance proof's account of the range
    codes: Mapping[int, str]  # the donation address's code as the primary gave it, by block
    run: str = ""  # the crawler run asking (crawlers/scan/history.py tells a refusal's first sighting by it)
    foreign: ForeignLogs | None = None  # the range's logs of other tokens (its stray arrivals: refunds owed)
    safe: SafeClaim | None = None  # a Safe read by its events (crawlers/scan/safe.py): what that rested on

    def balances_at(self, number: int) -> dict[str, int] | None:
        """The balances the primary's proof holds at the end of block `number`, or None where it holds none."""
        if isinstance(self.ledger, SpanLedger):
            return self.ledger.balances_at(number)
        if isinstance(self.ledger, UnprovenSpan) and self.ledger.closing is not None and self.ledger.end == number:
            return dict(self.ledger.closing)
        unproven = self.ledger if isinstance(self.ledger, UnprovenSpan) else None
        if unproven is not None and unproven.opening is not None and unproven.first == number + 1:
            return dict(unproven.opening)
        return None

    def change_in(self, number: int) -> dict[str, int] | None:
        """How the primary's proof says block `number` moved the balances, or None where it did not prove it."""
        return self.ledger.changes.get(number, {}) if isinstance(self.ledger, SpanLedger) else None


Verdict = Disagreement | NoEvidence | None  # None: the check provider shows everything asked


@dataclass
class _Asked:
    """The batch's calls, in order, and where each part's answers start."""

    calls: list[Call]
    strays: list[StrayTransfer]
    headers: list[int]
    balances: list[int]  # blocks whose balances are asked (balances_in_batch answers each)
    edges: list[int]  # blocks whose code is asked
    receipts: list[str]
    transactions: list[str]
    safe_edges: list[int]  # blocks whose Safe storage is asked (a range read by the Safe's events)


def _asked(chain: ChainSettings, claim: RangeClaim, closing: BlockHeader) -> _Asked:
    blocks = claim.blocks
    # A block with an unexplained inflow or a payout too: its change must be the check provider's.
    crediting = [b.header.number for b in blocks if _moved(b)]
    headers = sorted({b.header.number for b in blocks if _moved(b) or b.reverted} | {closing.number})
    # The opening too: each range's proof asks the primary for it afresh, and a primary that added a left-out
    # transfer to every balance before it would close the range's identity with the true closing balances.
    opening = {claim.opening} if claim.opening >= 0 and claim.balances_at(claim.opening) is not None else set()
    balances = sorted({closing.number} | opening | {n for b in crediting if b > 0 for n in (b - 1, b)})
    edges = sorted({e for e in (claim.opening, closing.number) if e >= 0})
    strays = strays_of(chain, claim.foreign, closing.number)
    register_receipts, register_txs = register_hashes(blocks, strays)
    receipts = sorted(
        {t.tx_hash for b in blocks for t in b.transfers} | {h for b in blocks for h in b.reverted} | register_receipts
    )
    eth_txs = sorted(
        {t.tx_hash for b in blocks for t in b.transfers if t.log_index is None and not t.trace_address} | register_txs
    )
    calls = [header_call(n) for n in headers] + [c for n in balances for c in balance_calls(chain, n)]
    calls += [code_call(chain.donation_address, e) for e in edges] + receipt_calls(receipts)
    calls += transaction_calls(eth_txs)
    safe_edges = edges if claim.safe is not None and len(edges) == 2 else []
    calls += [c for e in safe_edges for c in storage_calls(chain, e)]
    return _Asked(calls, strays, headers, balances, edges, receipts, eth_txs, safe_edges)


def _moved(block: ScannedBlock) -> bool:
    """Whether the proof says the block moved money: a credit, an unexplained inflow, a payout."""
    return bool(block.transfers or block.unexplained or block.payouts)


def cross_check(check: RpcClient, chain: ChainSettings, claim: RangeClaim) -> Verdict:
    """None when the check provider's own answers show what `claim` is about to record (see the module doc)."""
    closing = claim.closing
    if closing is None:
        return None
    asked = _asked(chain, claim, closing)
    outcomes = iter(check.batch(asked.calls))
    headers = {n: next(outcomes) for n in asked.headers}
    balance_answers = {n: [next(outcomes) for _ in range(balances_in_batch(chain))] for n in asked.balances}
    codes = {e: next(outcomes) for e in asked.edges}
    receipts = {h: next(outcomes) for h in asked.receipts}
    transactions = {h: next(outcomes) for h in asked.transactions}
    storage = {e: [next(outcomes) for _ in storage_calls(chain, e)] for e in asked.safe_edges}
    # The block hashes first: on another history everything else differs too, the hash says why.
    verdict = _headers_differ(claim, headers)
    if verdict is not None:
        return verdict
    try:
        theirs = _balances(check, chain, balance_answers, claim.run)
    except NoEvidenceError as exc:
        return exc.outcome
    codes = {e: code for e, code in codes.items() if not _stateless(check, chain, e, code, claim.run)}
    # A receipt past the answer cap even alone (a donation beside a megabyte log) is shown by smaller answers.
    receipts, by_trace = receipt_stand_ins(check, chain, claim.blocks, receipts)
    missing = _missing([*codes.values(), *receipts.values(), *transactions.values()])
    if missing is not None:
        return missing
    stateless: list[ScannedBlock] = list(by_trace)
    for block in claim.blocks:
        verdict = _facts_differ(chain, block, receipts, transactions)
        if verdict is None and _moved(block):
            verdict = _change_differs(claim, block, theirs, [] if block in by_trace else stateless)
        if verdict is not None:
            return verdict
    register = register_differs(
        chain, claim.blocks, asked.strays, _values(receipts), _values(transactions)
    ) or frame_payouts_shown(check, chain, claim.blocks)
    if register is not None:
        return Disagreement(*register) if isinstance(register, tuple) else register
    verdict = (
        _edge_differs(claim, claim.opening, theirs.get(claim.opening), check)
        or _edge_differs(claim, closing.number, theirs.get(closing.number), check)
        or _code_differs(claim, codes)
        or _safe_differs(check, chain, claim, storage)
    )
    if verdict is not None:
        return verdict
    verdict = _shown_by_transactions(check, chain, stateless) if stateless else None
    if verdict is not None:
        return verdict
    compared = {id(b) for b in stateless}
    verdict = _donors_shown(check, chain, [b for b in claim.blocks if id(b) not in compared])
    if verdict is not None:
        return verdict
    if not isinstance(claim.ledger, SpanLedger) and theirs.get(closing.number) is not None:
        # The primary proved nothing about the range (no state, or says so): the check provider's reading.
        shown = range_shown(check, chain, claim.blocks, claim.opening + 1, closing.number, claim.run)
    else:
        shown = unexplained_shown(check, chain, claim.blocks, claim.run)
    return Disagreement(*shown) if isinstance(shown, tuple) else shown


def _missing(outcomes: Sequence[RpcOutcome]) -> NoEvidence | None:
    return next((o for o in outcomes if isinstance(o, NoEvidence)), None)


def _headers_differ(claim: RangeClaim, headers: Mapping[int, RpcOutcome]) -> Verdict:
    """The same hash and time at every height asked (the time prices an ETH donation, and a primary's answer
    can carry another time under the true hash), and each credited or failed transaction in its block's list."""
    missing = _missing(list(headers.values()))
    if missing is not None:
        return missing
    ours = {b.header.number: b.header for b in claim.blocks}
    if claim.closing is not None:
        ours[claim.closing.number] = claim.closing
    bodies: dict[int, dict] = {}
    for number, outcome in headers.items():
        header = outcome.value if isinstance(outcome, Answer) else None
        theirs = header_of(header)
        found = theirs.hash if theirs is not None else None
        if found != ours[number].hash:
            return Disagreement(number, f"block hash: {ours_and_theirs(ours[number].hash, found)}")
        if theirs is not None and theirs.time != ours[number].time:
            times = ours_and_theirs(ours[number].time.isoformat(), theirs.time.isoformat())
            return Disagreement(number, f"block time: {times}")
        bodies[number] = header if isinstance(header, dict) else {}
    for block in claim.blocks:
        number = block.header.number
        named = [(name(t), t.tx_hash) for t in block.transfers] + [(f"eth {h} (reverted)", h) for h in block.reverted]
        for what, tx_hash in named:
            if not block_carries(bodies[number], tx_hash):
                return Disagreement(
                    number, f"{what}: ours says it is in this block, the check provider's does not list it"
                )
    return None


def _balances(
    check: RpcClient, chain: ChainSettings, answers: Mapping[int, list[RpcOutcome]], run: str
) -> dict[int, Balances | None]:
    """The check provider's balances by block; None where it keeps no state, learnt by its behaviour as for
    the primary (crawlers/scan/history.py: an old block, refused on two runs while its head answers). Raises
    NoEvidenceError for anything else short of an answer, a first refusal included: the range waits."""
    found: dict[int, Balances | None] = {}
    for number, outcomes in answers.items():
        try:
            found[number] = balances_from(chain, number, outcomes)
        except (StateUnavailable, NoEvidenceError) as exc:
            refused = _missing(outcomes)
            if refused is not None and _stateless(check, chain, number, refused, run):
                found[number] = None
                continue
            if isinstance(exc, NoEvidenceError) or refused is None:
                raise
            raise NoEvidenceError(refused) from exc
    return found


def _stateless(check: RpcClient, chain: ChainSettings, block: int, outcome: RpcOutcome, run: str) -> bool:
    """Whether an answer refused at `block` is the check provider keeping no state there (its code at an old
    edge: not compared), learnt as for its balances."""
    refused = isinstance(outcome, NoEvidence) and outcome.kind == "error"
    return refused and history.history_missing(check, chain, block, run)


def _facts_differ(
    chain: ChainSettings, block: ScannedBlock, receipts: Mapping[str, RpcOutcome], txs: Mapping[str, RpcOutcome]
) -> Disagreement | None:
    number = block.header.number
    for transfer in block.transfers:
        tx = txs.get(transfer.tx_hash)
        differs = transfer_differs(
            chain, transfer, _value(receipts[transfer.tx_hash]), _value(tx) if tx is not None else None
        )
        if differs is not None:
            return Disagreement(number, f"{name(transfer)}: {differs}")
    for tx_hash in block.reverted:
        differs = reverted_differs(block.header.hash, _value(receipts[tx_hash]))
        if differs is not None:
            return Disagreement(number, f"eth {tx_hash} (reverted): {differs}")
    return None


def _value(outcome: RpcOutcome) -> object:
    return outcome.value if isinstance(outcome, Answer) else None


def _values(outcomes: Mapping[str, RpcOutcome]) -> dict[str, object]:
    return {key: _value(outcome) for key, outcome in outcomes.items()}


def _change_differs(
    claim: RangeClaim, block: ScannedBlock, theirs: Mapping[int, Balances | None], stateless: list[ScannedBlock]
) -> Disagreement | None:
    """The crediting block moved the check provider's balances as the primary's proof says; a block either
    side keeps no state for (or the primary proved nothing about) goes to `stateless`."""
    number = block.header.number
    before, after, ours = theirs.get(number - 1), theirs.get(number), claim.change_in(number)
    if before is None or after is None or ours is None:
        stateless.append(block)
        return None
    seen = {asset: after.values[asset] - before.values[asset] for asset in after.values}
    differs = [
        f"{asset}: {ours_and_theirs(_signed(ours.get(asset, 0)), _signed(moved))}"
        for asset, moved in seen.items()
        if ours.get(asset, 0) != moved
    ]
    if not differs:
        return None
    return Disagreement(
        number, "how the block moved the donation address's balances (raw units): " + "; ".join(differs)
    )


def _edge_differs(claim: RangeClaim, edge: int, theirs: Balances | None, check: RpcClient) -> Disagreement | None:
    """The balances the primary's proof holds at one edge of the range (the block before it, its closing
    block) against the check provider's there (an edge asked: one it keeps state for)."""
    ours, closing = claim.balances_at(edge), edge != claim.opening
    last = claim.closing.number if claim.closing is not None else edge
    if theirs is None and (closing or ours is not None):
        logger.warning(
            "check provider %s keeps no state for block %d: the %s balances of blocks %d..%d are not compared",
            check.origin,
            edge,
            "closing" if closing else "opening",
            claim.opening + 1,
            last,
        )
    if theirs is None or ours is None:
        return None
    differs = [
        f"{asset}: {ours_and_theirs(ours.get(asset), value)}"
        for asset, value in theirs.values.items()
        if ours.get(asset) != value
    ]
    if not differs:
        return None
    where = f"the donation address's balances {'after' if closing else 'before'} blocks {claim.opening + 1}..{last}"
    return Disagreement(edge, f"{where} (raw units): " + "; ".join(differs))


def _code_differs(claim: RangeClaim, codes: Mapping[int, RpcOutcome]) -> Disagreement | None:
    """Where the primary proved the range as a plain account (its balances alone), the check provider's
    code at both edges must say plain too: with code, value can move in and out unseen by the balances.
    Where the primary's code is a Safe's proxy (the range may have been read by the Safe's events,
    crawlers/scan/safe.py), the check provider's must be that same code."""
    ours = list(claim.codes.values())
    if ours and all(known_proxy(code) for code in ours):
        for number, outcome in codes.items():
            if (code := str(_value(outcome) or "")) != claim.codes.get(number, ours[-1]):
                return Disagreement(
                    number,
                    f"the donation address's code: ours says a {known_proxy(ours[-1])}, "
                    f"the check provider says {address_mode(code)} ({code[:50]})",
                )
        return None
    if not claim.codes or mode_of(ours) != PLAIN:
        return None  # with code, the primary read the address's calls from its traces: nothing to lose
    for number, outcome in codes.items():
        code = str(_value(outcome) or "")
        if address_mode(code) != PLAIN:
            return Disagreement(
                number,
                "the donation address's code: ours says none (the range proven by its balances alone), "
                f"the check provider says it is {address_mode(code)} ({code[:50]})",
            )
    return None


def _safe_differs(
    check: RpcClient, chain: ChainSettings, claim: RangeClaim, storage: Mapping[int, list[RpcOutcome]]
) -> Verdict:
    """A Safe read by its events: the check provider's storage of it at both edges shows that reading (an
    edge it keeps no state for is not compared, as its code there is not)."""
    if claim.safe is None or len(storage) != 2:
        return None
    found = []
    for number, outcomes in sorted(storage.items()):
        refused = _missing(outcomes)
        if refused is not None:
            return None if _stateless(check, chain, number, refused, claim.run) else refused
        found.append(storage_at(number, outcomes))
    opening, closing = found
    if opening is None or closing is None:
        return NoEvidence("eth_getStorageAt", "malformed", "the check provider's Safe storage is no storage word")
    differs = claim_differs(claim.safe, opening, closing)
    return Disagreement(closing.block, differs) if differs is not None else None


def _signed(raw: int) -> str:
    return f"{raw:+d}"


def _shown_by_transactions(check: RpcClient, chain: ChainSettings, blocks: Sequence[ScannedBlock]) -> Verdict:
    """Crediting blocks without balances to compare: each credited transaction in that block by the check
    provider's own transaction object (its receipt was compared already) and, for ETH paid by an internal
    call, by its call trace showing the frame."""
    tx_hashes = sorted({t.tx_hash for b in blocks for t in b.transfers})
    outcomes = check.batch(transaction_calls(tx_hashes))
    missing = _missing(outcomes)
    if missing is not None:
        return missing
    found = dict(zip(tx_hashes, (_value(o) for o in outcomes), strict=True))
    for block in blocks:
        for transfer in block.transfers:
            tx = found[transfer.tx_hash]
            where = str(tx.get("blockHash") or "").lower() if isinstance(tx, dict) else None
            if where != transfer.block_hash:
                return Disagreement(
                    block.header.number,
                    f"{name(transfer)}: the transaction {ours_and_theirs(f'in {transfer.block_hash}', f'in {where}')}",
                )
            if transfer.trace_address is not None:
                verdict = _frame_shown(check, chain, transfer)
                if verdict is not None:
                    return verdict
    return None


def _donors_shown(check: RpcClient, chain: ChainSettings, blocks: Sequence[ScannedBlock]) -> Verdict:
    """ETH paid by an internal call, in a block whose balance change was compared: the change shows its
    amount, not whose it is (a primary naming another sender for a real frame moves no balance), so the
    check provider's trace of its transaction must show the frame from that donor. A check provider that
    gives no traces leaves the donor to the primary alone (a WARNING)."""
    for block in blocks:
        for transfer in block.transfers:
            if transfer.trace_address is not None:
                verdict = _frame_shown(check, chain, transfer, required=False)
                if verdict is not None:
                    return verdict
    return None


def _frame_shown(check: RpcClient, chain: ChainSettings, transfer: Transfer, *, required: bool = True) -> Verdict:
    """The check provider's trace of the transfer's transaction shows its frame (path, donor, amount).
    Without traces: no evidence (the range waits) where `required`, else a WARNING."""
    number = transfer.block_number
    try:
        frames = traces.transaction_trace(check, chain, transfer.tx_hash)
    except NoEvidenceError as exc:
        return exc.outcome
    except traces.TracesUnavailable as exc:
        if not required:
            logger.warning(
                "check provider %s gives no call trace of %s (%s): the donor of its internal ETH rests on the "
                "primary alone (its amount was compared)",
                check.origin,
                transfer.tx_hash,
                exc,
            )
            return None
        return NoEvidence(
            "debug_traceTransaction",
            "error",
            f"the check provider keeps no state for block {number} and gives no call trace of {transfer.tx_hash} "
            f"({exc}): its internal ETH cannot be shown",
        )
    shown = shows_frame(
        frames,
        chain.donation_address,
        trace_address=transfer.trace_address or "",
        donor=transfer.donor,
        amount=transfer.amount,
        eth_scale=amount_scale("eth"),
    )
    if shown:
        return None
    paying = f"a frame paying {transfer.amount} from {transfer.donor}"
    return Disagreement(number, f"{name(transfer)}: {ours_and_theirs(paying, 'no such frame in its trace')}")
