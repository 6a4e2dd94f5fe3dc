"""A second, independent provider's word on what the finalized crawler is about to confirm (DWS_RPC_CHECK_URL).

Before a finalized range is recorded, the check provider is asked, in one batch, for the header of every
block that credits something and of the range's closing block (the one its balance proof ends at), the
receipt of every transaction credited, and the transaction object of every top-level ETH transfer. The
range is recorded only when the check provider gives the same block hashes and, for each transfer, the
same facts: a successful receipt in that block; for a coin, the Transfer log at that index of that
contract paying the donation address from the donor, of the same amount; for ETH, the same sender,
recipient and value. An ETH transfer inside a contract call (a frame) is checked through its
transaction's receipt (success, block), not by a second trace: a check provider need not offer traces.

A check provider that does not answer (a time-out, a null, an error) is no evidence: the range waits.
An answer that differs is a `Disagreement` naming both answers: the run holds the chain on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from crawlers.chain.calls import TRANSFER_TOPIC, header_call, receipt_calls, transaction_calls
from crawlers.chain.outcomes import Answer, Call, NoEvidence, RpcOutcome
from crawlers.chain.rpc import RpcClient
from crawlers.decode.amounts import ETH_DECIMALS, log_amount, scaled_amount
from crawlers.decode.blocks import BlockHeader
from crawlers.decode.mints import mint_depositor
from crawlers.decode.transfers import ZERO_ADDRESS, topic_address
from crawlers.scan.results import ScannedBlock
from donations.sightings import Transfer, amount_scale
from dws_project.chain_settings import ChainSettings


@dataclass(frozen=True)
class Disagreement:
    """The two providers answered differently about a block we were about to record."""

    number: int
    what: str  # names both answers

    def describe(self, primary: str, check: str) -> str:
        return f"providers disagree on block {self.number}: {self.what} (provider {primary}, check provider {check})"


def _ours_and_theirs(ours: object, theirs: object) -> str:
    return f"ours says {ours}, the check provider says {theirs}"


def _calls(blocks: Sequence[ScannedBlock], closing: BlockHeader | None) -> tuple[list[int], list[str], list[str]]:
    numbers = sorted({b.header.number for b in blocks if b.transfers} | ({closing.number} if closing else set()))
    txs = sorted({t.tx_hash for b in blocks for t in b.transfers})
    eth_txs = sorted({t.tx_hash for b in blocks for t in b.transfers if t.log_index is None and not t.trace_address})
    return numbers, txs, eth_txs


def cross_check(
    check: RpcClient, chain: ChainSettings, blocks: Sequence[ScannedBlock], closing: BlockHeader | None
) -> Disagreement | NoEvidence | None:
    """None when the check provider agrees on everything `blocks` credit and on the closing block."""
    numbers, txs, eth_txs = _calls(blocks, closing)
    if not numbers:
        return None
    calls: list[Call] = [header_call(n) for n in numbers] + receipt_calls(txs) + transaction_calls(eth_txs)
    outcomes = check.batch(calls)
    # The block hashes first: on another history a receipt is simply missing, the hash says why.
    first = _missing(outcomes[: len(numbers)])
    if first is not None:
        return first
    ours = {b.header.number: b.header.hash for b in blocks} | ({closing.number: closing.hash} if closing else {})
    for number, outcome in zip(numbers, outcomes, strict=False):
        header = outcome.value if isinstance(outcome, Answer) else None
        theirs = str(header.get("hash") or "").lower() if isinstance(header, dict) else None
        if theirs != ours[number]:
            return Disagreement(number, f"block hash: {_ours_and_theirs(ours[number], theirs)}")
    rest = _missing(outcomes[len(numbers) :])
    if rest is not None:
        return rest
    values = [o.value for o in outcomes[len(numbers) :] if isinstance(o, Answer)]
    receipts = dict(zip(txs, values[: len(txs)], strict=True))
    transactions = dict(zip(eth_txs, values[len(txs) :], strict=True))
    for block in blocks:
        for transfer in block.transfers:
            differs = _transfer_differs(chain, transfer, receipts[transfer.tx_hash], transactions.get(transfer.tx_hash))
            if differs is not None:
                return Disagreement(block.header.number, f"{_name(transfer)}: {differs}")
    return None


def _missing(outcomes: Sequence[RpcOutcome]) -> NoEvidence | None:
    return next((o for o in outcomes if isinstance(o, NoEvidence)), None)


def _name(t: Transfer) -> str:
    where = "" if t.log_index is None else f" log {t.log_index}"
    where += "" if t.trace_address is None else f" frame {t.trace_address}"
    return f"{t.asset} transfer {t.tx_hash}{where}"


def _transfer_differs(chain: ChainSettings, t: Transfer, receipt: Any, tx: Any) -> str | None:
    if not isinstance(receipt, dict):
        return _ours_and_theirs("a receipt", "no receipt object")
    status = str(receipt.get("status") or "")
    block_hash = str(receipt.get("blockHash") or "").lower()
    if (status, block_hash) != ("0x1", t.block_hash):
        return _ours_and_theirs(f"success in {t.block_hash}", f"status {status or 'none'} in {block_hash or 'none'}")
    if t.log_index is not None:
        return _log_differs(chain, t, receipt)
    if t.trace_address is None:
        return _eth_differs(chain, t, tx)
    return None


def _log_differs(chain: ChainSettings, t: Transfer, receipt: dict) -> str | None:
    coin = chain.stable_coin(t.asset)
    log = next(
        (
            entry
            for entry in receipt.get("logs") or []
            if isinstance(entry, dict)
            and isinstance(entry.get("logIndex"), str)
            and int(entry["logIndex"], 16) == t.log_index
        ),
        None,
    )
    if coin is None or log is None:
        return _ours_and_theirs(f"a Transfer at log {t.log_index}", "no such log")
    topics = [str(x).lower() for x in log.get("topics") or []]
    sender = topic_address(topics[1]) if len(topics) == 3 else None
    if sender == ZERO_ADDRESS:  # a mint: its donor is whom the mint rule names from the same receipt
        sender = mint_depositor(log, receipt.get("logs") or [], chain.donation_address) or sender
    seen = (
        str(log.get("address") or "").lower(),
        topics[0] if topics else None,
        sender,
        topic_address(topics[2]) if len(topics) == 3 else None,
        scaled_amount(log_amount(log), coin.scale, amount_scale(t.asset)),
    )
    expected = (coin.contract, TRANSFER_TOPIC, t.donor, chain.donation_address, t.amount)
    return None if seen == expected else _ours_and_theirs(_describe(expected), _describe(seen))


def _eth_differs(chain: ChainSettings, t: Transfer, tx: Any) -> str | None:
    if not isinstance(tx, dict):
        return _ours_and_theirs("a transaction", "no transaction object")
    try:
        wei = int(str(tx.get("value") or "0x0"), 16)
    except ValueError:
        return _ours_and_theirs("a value", f"value {tx.get('value')!r}")
    seen = (
        str(tx.get("from") or "").lower(),
        str(tx.get("to") or "").lower(),
        scaled_amount(wei, ETH_DECIMALS, amount_scale("eth")),
    )
    expected = (t.donor, chain.donation_address, t.amount)
    return None if seen == expected else _ours_and_theirs(_describe(expected), _describe(seen))


def _describe(parts: tuple[object, ...]) -> str:
    return "(" + ", ".join(str(p) for p in parts) + ")"
