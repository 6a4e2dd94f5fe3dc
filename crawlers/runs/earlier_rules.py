"""Rows the old rules confirmed stay: what `reconcile` says about them.

Before issue #19 the crawlers credited some of the donation address's own money: a self-transfer, value
returned in a transaction the address signed or called out in (a refund, a swap, a WETH withdrawal). Those
rows are confirmed; a row is never deleted and confirmed tokens never change (DESIGN.md, invariant 4). The
chain still shows the value (the balance proof hands it on as an internal movement), but no longer as a
donation, so such a row is not "absent from its block": it is listed as credited under an earlier rule,
which is no drift and freezes nothing (docs/operating.md, "credited under an earlier rule").

Before the crawlers read who bridged ETH through an OP-stack rollup's standard bridge (the relayed call's
`_from`, crawlers/decode/bridge.py), they credited the L2StandardBridge predeploy, the contract that made the
paying call. Such a row is the same frame on chain (the same identity, so no second row appears), now from
the L1 account that bridged it, or the address's own money when that was the address itself (an internal
movement, above). The row keeps its donor and tokens; `reconcile` names it with who the chain says bridged
it, for an operator, instead of calling the other donor drift.
"""

from __future__ import annotations

from collections.abc import Collection

from crawlers.decode.bridge import L2_STANDARD_BRIDGE
from donations.models import Donation, DonationStatus
from donations.sightings import DonationKey, Transfer

POINTER = 'docs/operating.md, "credited under an earlier rule"'


def set_aside_earlier_rules(
    rows: dict[DonationKey, Donation],
    on_chain: Collection[DonationKey],
    own: Collection[tuple[str, str]],
    donation_address: str,
) -> list[str]:
    """Take out of `rows` the confirmed rows the current rules no longer credit (their transaction and
    asset are an internal movement `own` the range's proof found, or their donor is the address itself)
    and return a note for each."""
    notes = []
    for key, row in sorted(rows.items(), key=lambda kv: (kv[1].block_number, kv[1].id)):
        if row.status != DonationStatus.CONFIRMED or key in on_chain:
            continue
        if (row.tx_hash, row.asset) not in own and row.address != donation_address:
            continue
        del rows[key]
        why = "from the donation address itself" if row.address == donation_address else "the address's own money"
        notes.append(
            f"block {row.block_number}: donation id {row.id} ({row.tx_hash}) credited under an earlier rule "
            f"({row.asset} {row.amount} {why}); it stays confirmed with its {row.tokens} tokens ({POINTER})"
        )
    return notes


def credited_to_the_bridge(row: Donation, transfer: Transfer) -> str | None:
    """A note for a row credited to the L2StandardBridge predeploy that the chain shows as the same frame and
    amount from the L1 account that bridged it; None for any other difference (drift, as ever)."""
    if (
        row.address != L2_STANDARD_BRIDGE
        or transfer.donor == row.address
        or row.trace_address is None
        or (row.asset, row.amount, row.block_hash) != (transfer.asset, transfer.amount, transfer.block_hash)
    ):
        return None
    return (
        f"block {row.block_number}: donation id {row.id} ({row.tx_hash}) credited under an earlier rule "
        f"({row.asset} {row.amount} to the L2StandardBridge contract; the chain says {transfer.donor} bridged it "
        f"from L1); it stays {row.status} with its {row.tokens} tokens ({POINTER})"
    )
