"""What a range writes to the refund register, against a second provider's own receipts (crawlers/scan/agreement.py).

The finalized crawler records a stray coin arriving (DWS_STRAY_TOKENS: owed back to its sender) and value
leaving the address (a payout: it marks the owed refund it matches paid). Stray tokens are outside the
balance proof, and a payout changes no balance the agreement would otherwise look at, so a lying primary
could owe a stranger a refund of a coin that never arrived, or mark a refund paid that never was, by one
invented Transfer log. So each is shown by the check provider's own answers, read with the same rules:

* a stray arrival: the check provider's receipt of its transaction carries the same Transfer
  (crawlers/decode/strays.py `foreign_arrivals`);
* a payout: a successful receipt in that block and, for a token, the same Transfer from the address in
  it (`token_payouts`); for ETH the address sent, its transaction object (from it, to the recipient, of
  that value); for ETH a call of the address sent (a Safe), its transaction's call trace showing the frame
  (`frame_payouts`, a second round trip; a check provider without traces leaves it to the block's balance
  change, which the agreement compares for every block with a payout).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crawlers.chain.logs import ForeignLogs
from crawlers.chain.outcomes import NoEvidence, NoEvidenceError
from crawlers.chain.rpc import RpcClient
from crawlers.decode.strays import foreign_arrivals, frame_payouts, token_payouts
from crawlers.scan import traces
from crawlers.scan.results import ScannedBlock
from crawlers.scan.transfer_facts import ours_and_theirs
from donations.refund_values import Payout, StrayTransfer, chain_tokens
from dws_project.chain_settings import ChainSettings


def strays_of(chain: ChainSettings, foreign: ForeignLogs | None, through: int) -> list[StrayTransfer]:
    """The stray arrivals the range records, through block `through` (crawlers/record/strays.py reads them so)."""
    if foreign is None:
        return []
    return foreign_arrivals(foreign.through(through).to_us, chain_tokens(chain), chain.donation_address).strays


def register_hashes(blocks: Sequence[ScannedBlock], strays: Sequence[StrayTransfer]) -> tuple[set[str], set[str]]:
    """The transactions whose receipts show the range's register facts, and those whose transaction object
    must (ETH the address sent)."""
    payouts = [p for b in blocks for p in b.payouts]
    receipts = {p.tx_hash for p in payouts} | {s.tx_hash for s in strays}
    return receipts, {p.tx_hash for p in payouts if p.log_index is None and not p.trace_address}


def _where(p: Payout) -> str:
    at = f" log {p.log_index}" if p.log_index is not None else (f" frame {p.trace_address}" if p.trace_address else "")
    return f"{p.token.asset} payout {p.tx_hash}{at}"


def register_differs(
    chain: ChainSettings,
    blocks: Sequence[ScannedBlock],
    strays: Sequence[StrayTransfer],
    receipts: Mapping[str, Any],
    txs: Mapping[str, Any],
) -> tuple[int, str] | None:
    """(block, what differs naming both answers) for the first stray arrival or payout the check provider's
    receipts and transactions do not show; None when they show all (a frame payout's trace aside)."""
    us, tokens = chain.donation_address, chain_tokens(chain)
    for stray in strays:
        receipt = receipts.get(stray.tx_hash)
        logs = (receipt.get("logs") or []) if isinstance(receipt, dict) else []
        if stray not in foreign_arrivals(logs, tokens, us).strays:
            what = f"{stray.token.asset} stray transfer {stray.tx_hash} log {stray.log_index}"
            return stray.block_number, f"{what}: {ours_and_theirs(f'{stray.raw} from {stray.sender}', 'no such log')}"
    for block in blocks:
        for payout in block.payouts:
            differs = _payout_differs(chain, block, payout, receipts.get(payout.tx_hash), txs.get(payout.tx_hash))
            if differs is not None:
                return block.header.number, f"{_where(payout)}: {differs}"
    return None


def _payout_differs(chain: ChainSettings, block: ScannedBlock, payout: Payout, receipt: Any, tx: Any) -> str | None:
    if not isinstance(receipt, dict):
        return ours_and_theirs("a receipt", "no receipt object")
    status, where = str(receipt.get("status") or ""), str(receipt.get("blockHash") or "").lower()
    if (status, where) != ("0x1", block.header.hash):
        return ours_and_theirs(f"success in {block.header.hash}", f"status {status or 'none'} in {where or 'none'}")
    paid = f"{payout.raw} to {payout.recipient}"
    if payout.log_index is not None:
        logs = [log for log in receipt.get("logs") or [] if isinstance(log, dict)]
        shown = payout in token_payouts(logs, chain_tokens(chain), chain.donation_address)
        return None if shown else ours_and_theirs(paid, "no such Transfer in its receipt")
    if payout.trace_address:
        return None  # shown by its trace (`frame_payouts_shown`) and the block's balance change
    sent = (
        (str(tx.get("from") or "").lower(), str(tx.get("to") or "").lower(), _wei(tx.get("value")))
        if isinstance(tx, dict)
        else None
    )
    expected = (chain.donation_address, payout.recipient, payout.raw)
    return None if sent == expected else ours_and_theirs(expected, sent)


def _wei(value: object) -> int | None:
    try:
        return int(str(value), 16)
    except ValueError:
        return None


def frame_payouts_shown(
    check: RpcClient, chain: ChainSettings, blocks: Sequence[ScannedBlock]
) -> tuple[int, str] | NoEvidence | None:
    """Each payout by a call of the address (a Safe's) in the check provider's own trace of its transaction;
    NoEvidence where the trace gave none (wait). A check provider without traces shows none (the block's
    balance change was compared)."""
    for block in blocks:
        for payout in block.payouts:
            if not payout.trace_address:
                continue
            try:
                frames = traces.transaction_trace(check, chain, payout.tx_hash)
            except NoEvidenceError as exc:
                return exc.outcome
            except traces.TracesUnavailable:
                return None
            if payout not in frame_payouts(frames, chain.donation_address, block.header.number):
                paid = f"{payout.raw} to {payout.recipient}"
                return block.header.number, f"{_where(payout)}: {ours_and_theirs(paid, 'no such frame in its trace')}"
    return None
