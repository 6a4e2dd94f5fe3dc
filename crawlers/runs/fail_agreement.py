"""The check provider's word before the old-unconfirmed judge fails a row (DWS_RPC_CHECK_URL).

Failing an unconfirmed row moves money (a lying or forked primary would fail a real donation), so with a
second provider a failure stands only on the check provider's own evidence, asked in one batch (a matching
block hash alone is never enough: a primary can serve a block body that leaves a transaction out under the
true hash):

* absent from chain and mempool: the check provider knows no such transaction either (null), and its block
  at the row's height does not list it;
* a finalized block that does not carry it: the check provider has the same hash at that height, its block
  does not list the transaction, and it knows no such transaction either;
* a receipt that reports a revert, or a re-mined transaction no longer paying us: the same block hash, the
  transaction in that block's list, and a receipt with the same status, block and logs; where the failure
  rests on a call trace (an internal frame no longer paying us), the check provider's trace of the
  transaction must not show the frame either.

A check provider that answers otherwise is a `Disagreement`: the row is held (left unconfirmed) with a
CRITICAL line naming both answers. One whose finalized block is below the row's block, or that gives no
answer (no trace, where one is needed), is waited for: the row is left for a later run, never failed on
one provider's word.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from crawlers.chain.calls import header_call, receipt_calls, transaction_calls
from crawlers.chain.outcomes import Answer, Call, NoEvidenceError, RpcOutcome
from crawlers.chain.rpc import RpcClient
from crawlers.chain.tips import tip_block
from crawlers.decode.blocks import block_carries
from crawlers.runs.evidence import frame_shown
from crawlers.scan.agreement import Disagreement
from crawlers.scan.traces import TracesUnavailable
from donations.models import Donation
from dws_project.chain_settings import ChainSettings

logger = logging.getLogger("dws.crawlers")

WAITING = "check provider not there yet"
NO_TRACE = "check provider gives no trace to judge by"
DISAGREE = "providers disagree"


@dataclass(frozen=True)
class ProposedFailure:
    """A failure the primary's answers prove; `block` None: absent from chain and mempool; `receipt` None
    (with a block): that block does not carry it; `by_trace`: it rests on the transaction's call trace."""

    row: Donation
    reason: str
    block: int | None = None
    block_hash: str | None = None
    receipt: dict[str, Any] | None = None  # the primary's, when the failure rests on one
    by_trace: bool = False


def answered(outcome: RpcOutcome) -> Any:
    """The answer's value; None for no evidence."""
    return outcome.value if isinstance(outcome, Answer) else None


def block_hash_of(outcome: RpcOutcome) -> str | None:
    block = answered(outcome)
    return str(block.get("hash") or "").lower() if isinstance(block, dict) else None


def _receipt_facts(receipt: object) -> tuple[object, ...] | None:
    if not isinstance(receipt, dict):
        return None
    logs = [
        (str(log.get("address") or "").lower(), [str(t).lower() for t in log.get("topics") or []], log.get("data"))
        for log in receipt.get("logs") or []
        if isinstance(log, dict)
    ]
    return (str(receipt.get("status") or ""), str(receipt.get("blockHash") or "").lower(), logs)


def _verdict(
    failure: ProposedFailure,
    header: RpcOutcome | None,
    receipt: RpcOutcome | None,
    lookup: RpcOutcome | None,
    final: int,
) -> Disagreement | str | None:
    """None: the check provider's own answers show the failure; a str: why it is waited for; a Disagreement
    naming both answers."""
    at = failure.block if failure.block is not None else failure.row.block_number
    if at > final or not isinstance(header, Answer) or not isinstance(header.value, dict):
        return WAITING
    body = header.value
    if failure.block is None:
        return _absence_verdict(failure.row.tx_hash, at, body, lookup)
    theirs = str(body.get("hash") or "").lower()
    if theirs != failure.block_hash:
        return Disagreement(at, f"block hash: ours says {failure.block_hash}, the check provider says {theirs}")
    if failure.receipt is None:
        return _not_carried_verdict(failure.row.tx_hash, at, body, lookup)
    return _receipt_verdict(failure.row.tx_hash, at, body, failure.receipt, receipt)


def _absence_verdict(tx: str, at: int, body: dict, lookup: RpcOutcome | None) -> Disagreement | str | None:
    """Absent from chain and mempool: the check provider knows no such transaction, nor lists it at its height."""
    if not isinstance(lookup, Answer):
        return WAITING
    ours = f"transaction {tx}: ours knows no such transaction"
    if lookup.value is not None:
        return Disagreement(at, f"{ours}, the check provider has it (block {_placed(lookup.value)})")
    if block_carries(body, tx):
        return Disagreement(at, f"{ours}, the check provider's block lists it")
    return None


def _not_carried_verdict(tx: str, at: int, body: dict, lookup: RpcOutcome | None) -> Disagreement | str | None:
    """Its block does not carry it: not in the check provider's block either, and unknown to it."""
    ours = f"transaction {tx}: ours says the block does not carry it"
    if block_carries(body, tx):
        return Disagreement(at, f"{ours}, the check provider's lists it")
    if not isinstance(lookup, Answer):
        return WAITING
    if lookup.value is not None:
        return Disagreement(at, f"{ours}, the check provider has it (block {_placed(lookup.value)})")
    return None


def _receipt_verdict(
    tx: str, at: int, body: dict, ours_receipt: dict[str, Any], receipt: RpcOutcome | None
) -> Disagreement | str | None:
    """A revert, or a re-mined transaction no longer paying us: in the check provider's block, with the same receipt."""
    if not block_carries(body, tx):
        return Disagreement(
            at, f"transaction {tx}: ours has its receipt in this block, the check provider's does not list it"
        )
    if receipt is None or not isinstance(receipt, Answer) or receipt.value is None:
        return WAITING
    ours, seen = _receipt_facts(ours_receipt), _receipt_facts(receipt.value)
    if ours == seen:
        return None
    return Disagreement(
        at,
        f"receipt of {tx}: ours says status {ours[0] if ours else 'none'} in {ours[1] if ours else 'none'}, "
        f"the check provider says status {seen[0] if seen else 'none'} in {seen[1] if seen else 'none'}",
    )


def _placed(tx: object) -> object:
    return tx.get("blockNumber") if isinstance(tx, dict) else tx


def _trace_verdict(check: RpcClient, chain: ChainSettings, failure: ProposedFailure) -> Disagreement | str | None:
    """A failure resting on a call trace: the check provider's own trace must not show the frame either."""
    try:
        shown = frame_shown(failure.row, check, chain)
    except (TracesUnavailable, NoEvidenceError):
        return NO_TRACE
    if not shown:
        return None
    return Disagreement(
        failure.block or failure.row.block_number,
        f"transaction {failure.row.tx_hash}: ours says its call tree no longer pays this frame "
        f"({failure.row.trace_address}), the check provider's trace shows it",
    )


def failures_agreed(
    check: RpcClient,
    primary: RpcClient,
    chain: ChainSettings,
    failures: Sequence[ProposedFailure],
    untouched: Counter[str],
    *,
    label: str,
    waited: set[int],
) -> list[ProposedFailure]:
    """The failures the check provider gives the same evidence for; the rest are counted in `untouched`
    (a disagreement also logged CRITICAL, naming both answers), and the rows only waiting for the check
    provider's answer are added to `waited`."""
    if not failures:
        return []
    try:
        their_final = tip_block(check, finalized=True, chain=chain)
    except NoEvidenceError as exc:
        logger.warning("crawl %s: check provider %s gave no evidence (%s); failing nothing", label, check.origin, exc)
        untouched[WAITING] += len(failures)
        waited.update(f.row.id for f in failures)
        return []
    numbers = sorted({f.block if f.block is not None else f.row.block_number for f in failures})
    receipts = sorted({f.row.tx_hash for f in failures if f.receipt is not None})
    lookups = sorted({f.row.tx_hash for f in failures if f.receipt is None})
    calls: list[Call] = [header_call(n) for n in numbers] + receipt_calls(receipts) + transaction_calls(lookups)
    outcomes = iter(check.batch(calls, null_is_answer=True))
    headers = {n: next(outcomes) for n in numbers}
    by_receipt = {h: next(outcomes) for h in receipts}
    by_lookup = {h: next(outcomes) for h in lookups}
    agreed: list[ProposedFailure] = []
    for failure in failures:
        tx = failure.row.tx_hash
        at = failure.block if failure.block is not None else failure.row.block_number
        verdict = _verdict(failure, headers[at], by_receipt.get(tx), by_lookup.get(tx), their_final)
        if verdict is None and failure.by_trace:
            verdict = _trace_verdict(check, chain, failure)
        if verdict is None:
            agreed.append(failure)
        elif isinstance(verdict, Disagreement):
            untouched[DISAGREE] += 1
            logger.critical(
                "crawl %s: %s; not failing donation %s (%s) on one provider's word",
                label,
                verdict.describe(primary.origin, check.origin),
                failure.row.id,
                failure.reason,
            )
        else:
            untouched[verdict] += 1
            waited.add(failure.row.id)
    return agreed
