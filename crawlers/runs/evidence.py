"""What the old-unconfirmed judge (crawlers/runs/old_unconfirmed.py) reads as proof about one row, from a
finalized block, a receipt or a trace: proven there, proven gone, or no evidence either way.

Proven gone needs a read answer that rules the transfer out: a receipt of the block the transaction is
in now that reports a revert, or that succeeded without the row's Transfer (same coin, donor and amount)
in its logs; a trace of the transaction that shows no frame paying us the row's amount from its donor
at its path (its donor as the crawler reads it: for ETH the OP-stack standard bridge relayed, the L1 account
that bridged it). An answer that is missing, malformed or of another block proves nothing.
"""

from __future__ import annotations

from collections import Counter

from crawlers.chain.outcomes import NoEvidenceError
from crawlers.chain.rpc import RpcClient
from crawlers.decode.frames import shows_frame
from crawlers.decode.mints import mint_depositors
from crawlers.decode.receipts import receipt_has_transfer, receipt_succeeded
from crawlers.decode.transfers import coin_mints, token_transfers
from crawlers.scan.traces import TracesUnavailable, transaction_trace
from donations.models import Donation
from donations.sightings import amount_scale
from dws_project.chain_settings import ChainSettings

# Why a re-mined internal ETH row is gone: its failure rests on a call trace (the check provider's must agree).
NO_LONGER_FRAMED = "where its call tree no longer pays the donation address this frame"


def receipt_proves(row: Donation, receipt: object, block_hash: str, chain: ChainSettings) -> bool | None:
    """True: the receipt proves the donation; False: it proves a revert; None: it proves nothing."""
    if not isinstance(receipt, dict):
        return None  # not a receipt at all (receipt_succeeded would say the same)
    succeeded = receipt_succeeded(receipt, block_hash)
    if not succeeded or row.log_index is None:
        return succeeded
    coin = chain.stable_coin(row.asset)
    if coin is not None and receipt_has_transfer(
        receipt,
        log_index=row.log_index,
        contract=coin.contract,
        recipient=chain.donation_address,
    ):
        return True
    return None  # succeeded, but the recorded Transfer log is not in it: no evidence for this row


def frame_shown(row: Donation, client: RpcClient, chain: ChainSettings) -> bool:
    """Whether a trace of the row's transaction shows its frame (path, donor, amount); raises
    TracesUnavailable / NoEvidenceError when there is no trace to judge by."""
    return shows_frame(
        transaction_trace(client, chain, row.tx_hash),
        chain.donation_address,
        trace_address=row.trace_address or "",
        donor=row.address,
        amount=row.amount,
        eth_scale=amount_scale("eth"),
    )


def internal_frame_shown(row: Donation, client: RpcClient, chain: ChainSettings, untouched: Counter[str]) -> bool:
    """Whether a trace of the row's transaction shows its internal ETH frame; False also for no evidence
    (counted in `untouched`, with why)."""
    try:
        if frame_shown(row, client, chain):
            return True
    except TracesUnavailable:
        untouched["internal ETH, provider gives no trace"] += 1
        return False
    except NoEvidenceError as exc:
        untouched[f"internal ETH, no trace ({exc.outcome.kind})"] += 1
        return False
    untouched["internal ETH, the trace does not show the frame"] += 1
    return False


def absent_from_new_block(
    row: Donation, receipt: object, number: int, block_hash: str, client: RpcClient, chain: ChainSettings
) -> str | None:
    """For a row whose transaction now sits in another finalized block (`number`, `block_hash`, read):
    why that block proves its transfer gone, or None (it still pays us there, or nothing proves either)."""
    where = f"re-mined in finalized block {number}"
    succeeded = receipt_succeeded(receipt, block_hash)
    if succeeded is False:
        return f"{where}, whose receipt reports a revert"
    if succeeded is None or not isinstance(receipt, dict):
        return None
    if row.log_index is not None:
        coin = chain.stable_coin(row.asset)
        if coin is None:
            return None
        logs = [log for log in receipt.get("logs") or [] if isinstance(log, dict)]
        try:
            us = chain.donation_address
            depositors = mint_depositors(coin_mints(logs, [coin], us), {row.tx_hash: logs}, us)
            paid = token_transfers(logs, [coin], us, amount_scale(row.asset), depositors=depositors)
        except (KeyError, TypeError, ValueError):
            return None  # a malformed log proves nothing
        if any((t.donor, t.amount) == (row.address, row.amount) for t in paid):
            return None
        return f"{where}, where its transaction no longer pays the donation address {row.amount} {row.asset}"
    if row.trace_address is not None:
        try:
            if frame_shown(row, client, chain):
                return None
        except (TracesUnavailable, NoEvidenceError):
            return None
        return f"{where}, {NO_LONGER_FRAMED}"
    return None
