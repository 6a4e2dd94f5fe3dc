"""The check provider's word before the old-unconfirmed judge fails a row (DWS_RPC_CHECK_URL).

Failing an unconfirmed row moves money (a lying or forked primary would fail a real donation), so with a
second provider a failure stands only when the check provider gives the same evidence, asked in one batch:

* absent from chain and mempool: the check provider knows no such transaction either (null);
* a finalized block that does not carry it: the check provider has the same hash at that height (a
  block's hash commits to its transactions);
* a receipt that reports a revert, or a re-mined transaction no longer paying us: the same block hash
  and a receipt with the same status, block and logs.

A check provider that answers otherwise is a `Disagreement`: the row is held (left unconfirmed) with a
CRITICAL line naming both answers. One whose finalized block is below the row's block, or that gives no
answer, is waited for: the row is left for a later run, never failed on one provider's word.
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
from crawlers.scan.agreement import Disagreement
from donations.models import Donation
from dws_project.chain_settings import ChainSettings

logger = logging.getLogger("dws.crawlers")

WAITING = "check provider not there yet"
DISAGREE = "providers disagree"


@dataclass(frozen=True)
class ProposedFailure:
    """A failure the primary's answers prove; `block` None: absent from chain and mempool."""

    row: Donation
    reason: str
    block: int | None = None
    block_hash: str | None = None
    receipt: dict[str, Any] | None = None  # the primary's, when the failure rests on one


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
    failure: ProposedFailure, header: RpcOutcome | None, receipt: RpcOutcome | None, their_final: int
) -> Disagreement | str | None:
    """None: the check provider agrees; a str: why it is waited for; a Disagreement naming both answers."""
    row = failure.row
    if failure.block is None:
        assert receipt is not None  # the transaction lookup
        if not isinstance(receipt, Answer):
            return WAITING
        if receipt.value is None:
            return None
        where = receipt.value.get("blockNumber") if isinstance(receipt.value, dict) else receipt.value
        return Disagreement(
            row.block_number,
            f"transaction {row.tx_hash}: ours knows no such transaction, the check provider has it (block {where})",
        )
    if failure.block > their_final or not isinstance(header, Answer) or not isinstance(header.value, dict):
        return WAITING
    theirs = str(header.value.get("hash") or "").lower()
    if theirs != failure.block_hash:
        return Disagreement(
            failure.block, f"block hash: ours says {failure.block_hash}, the check provider says {theirs}"
        )
    if failure.receipt is None:
        return None
    if receipt is None or not isinstance(receipt, Answer) or receipt.value is None:
        return WAITING
    ours, seen = _receipt_facts(failure.receipt), _receipt_facts(receipt.value)
    if ours == seen:
        return None
    return Disagreement(
        failure.block,
        f"receipt of {row.tx_hash}: ours says status {ours[0] if ours else 'none'} in {ours[1] if ours else 'none'}, "
        f"the check provider says status {seen[0] if seen else 'none'} in {seen[1] if seen else 'none'}",
    )


def failures_agreed(
    check: RpcClient,
    primary: RpcClient,
    chain: ChainSettings,
    failures: Sequence[ProposedFailure],
    untouched: Counter[str],
    *,
    label: str,
) -> list[ProposedFailure]:
    """The failures the check provider gives the same evidence for; the rest are counted in `untouched`
    (a disagreement also logged CRITICAL, naming both answers)."""
    if not failures:
        return []
    try:
        their_final = tip_block(check, finalized=True, chain=chain)
    except NoEvidenceError as exc:
        logger.warning("crawl %s: check provider %s gave no evidence (%s); failing nothing", label, check.origin, exc)
        untouched[WAITING] += len(failures)
        return []
    numbers = sorted({f.block for f in failures if f.block is not None})
    receipts = sorted({f.row.tx_hash for f in failures if f.receipt is not None})
    absent = sorted({f.row.tx_hash for f in failures if f.block is None})
    calls: list[Call] = [header_call(n) for n in numbers] + receipt_calls(receipts) + transaction_calls(absent)
    outcomes = check.batch(calls, null_is_answer=True)
    headers = dict(zip(numbers, outcomes[: len(numbers)], strict=True))
    rest = outcomes[len(numbers) :]
    by_receipt = dict(zip(receipts, rest[: len(receipts)], strict=True))
    by_absence = dict(zip(absent, rest[len(receipts) :], strict=True))
    agreed: list[ProposedFailure] = []
    for failure in failures:
        tx = failure.row.tx_hash
        asked = by_absence.get(tx) if failure.block is None else by_receipt.get(tx)
        verdict = _verdict(failure, headers.get(failure.block) if failure.block else None, asked, their_final)
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
    return agreed
