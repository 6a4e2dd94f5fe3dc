"""What `reconcile` may call drift, and what it may not: the records are judged only against evidence.

* ETH that arrived in a block whose call traces reconcile cannot read (DWS_TRACE=off, or a provider
  that refuses them) is "not checked" when the block's internal donations on record account for it:
  without the traces nothing confirms or refutes those rows. More than they account for is still drift
  (the balance says so, traces or not).
* A transfer the chain shows that is not recorded, in a block whose inflow of that asset is open, is
  the money of that inflow (the crawler could not see the transfer and said so): it waits for an
  operator, like the inflow, and is never drift.
* An unconfirmed row proven but held by a pause (`donation.held_at`) is "pending" until the
  old-unconfirmed crawler has judged it (it confirms the pause's backlog first once the campaign is
  not paused), whether the pause was lifted by the admin or by SQL.
* What reconcile's provider could not show because an answer was past DWS_RPC_MAX_ANSWER_MB even alone (a
  coin's logs of a block, a mint's receipt, a transaction's call trace) is "not checked": another provider
  may encode the same answer longer than the crawlers' did, so what they credited may not fit here, and a
  stranger who sized his spam to fall between the two must not freeze the sale.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from crawlers.chain.outcomes import NoEvidenceError
from crawlers.chain.rpc import RpcClient
from crawlers.decode.amounts import WEI_PER_ETH
from crawlers.decode.transfers import MINTED
from crawlers.scan.proof import COLUMN_UNIT_WEI
from crawlers.scan.results import ScannedBlock
from crawlers.scan.traces import TracesUnavailable, internal_eth_transfers
from donations.models import Donation, DonationStatus
from dws_project.chain_settings import ChainSettings

ETH = "eth"


def traces_unreadable(client: RpcClient, chain: ChainSettings, block: ScannedBlock) -> str | None:
    """Why reconcile cannot read this block's call traces, or None when it can."""
    if chain.trace_mode == "off":
        return "DWS_TRACE=off"
    try:
        internal_eth_transfers(client, chain, block_number=block.header.number, block_hash=block.header.hash)
    except TracesUnavailable as exc:
        return f"the provider gives no call traces ({exc})"
    except NoEvidenceError as exc:
        return f"the call traces gave no evidence ({exc})"
    return None


def internal_rows(chain: str, block_hash: str) -> list[Donation]:
    """The internal-ETH rows recorded in this block of `chain` (not failed)."""
    return list(
        Donation.objects.filter(chain=chain, block_hash=block_hash, trace_address__isnull=False, asset=ETH).exclude(
            status=DonationStatus.FAILED
        )
    )


def accounted_for(raw_wei: int, rows: Sequence[Donation]) -> bool:
    """Whether `rows` explain `raw_wei` of unexplained ETH, within the column's rounding (each row is
    stored rounded down to 8 decimals)."""
    recorded = sum(int(Decimal(row.amount) * WEI_PER_ETH) for row in rows)
    return bool(rows) and 0 <= raw_wei - recorded < COLUMN_UNIT_WEI * (len(rows) + 1)


def past_the_cap(block: ScannedBlock) -> dict[str, str]:
    """Per asset, why reconcile's provider could not show all of it in this block: answers past
    DWS_RPC_MAX_ANSWER_MB even alone (a coin's logs, a mint's receipt, a transaction's call trace)."""
    cap = "an answer past DWS_RPC_MAX_ANSWER_MB at this provider"
    unread = {asset: f"{cap} (its Transfer logs in the block)" for asset in block.unread_logs}
    for movement in block.own:
        if movement.kind == MINTED and movement.tx_hash in block.unread_receipts:
            unread.setdefault(movement.asset, f"{cap} (the receipt of {movement.tx_hash}, which minted it)")
    if block.untraced:
        unread.setdefault("eth", f"{cap} (the call trace of {', '.join(block.untraced[:3])})")
    return unread
