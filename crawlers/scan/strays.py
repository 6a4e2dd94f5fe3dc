"""Stray coins in the scanned blocks: the Transfers to the donation address of a well-known token the sale does
not take (DWS_STRAY_TOKENS), each put into its block's `strays` (a finalized block's write owes it back to its
sender, donations/refunds.py, before its payouts are matched: a refund paid in a later block of the same
range finds its row).

No balance the proof reads shows a stray token, so its Transfer is believed only as far as the block shows
it: the log must name a block we read, by its hash, and a transaction that block holds. A log that does not
(a re-org under way, a provider's stale fork or made-up answer) holds the range at its block, as a coin's log
naming another block does (crawlers/scan/flows.py): nobody is owed money the chain never moved. And the
address's own money is never owed back (DESIGN, "Crediting"): a stray token that reached it in a transaction
it signed (a swap's leg, a pull it made) is left out here; under a call an address with code made, by
crawlers/scan/with_code.py from the traces.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from crawlers.decode.amounts import log_block_number
from crawlers.decode.strays import stray_transfer
from crawlers.scan.results import BlockHeld, ScannedBlock
from donations.refund_values import stray_tokens
from dws_project.chain_settings import ChainSettings


def stray_blocks(chain: ChainSettings, to_us: Sequence[dict]) -> set[int]:
    """The blocks the stray transfers among `to_us` name (the sparse path reads each of them)."""
    tokens = stray_tokens(chain)
    return {log_block_number(log) for log in to_us if stray_transfer(log, tokens, chain.donation_address) is not None}


def _transactions(block: dict) -> set[str]:
    return {str(tx.get("hash") if isinstance(tx, dict) else tx or "").lower() for tx in block.get("transactions") or []}


def account_strays(
    chain: ChainSettings,
    scanned: dict[int, ScannedBlock],
    blocks: Sequence[dict],
    to_us: Sequence[dict],
    last: int,
    signed: Collection[str],
) -> BlockHeld | None:
    """Put the stray transfers among `to_us` (the range's foreign logs) of blocks up to `last` into their
    blocks' `strays`, leaving out those in a transaction the address `signed`; a hold at the first block a
    stray's log names that the scan does not show holding it (`blocks`: the full blocks read)."""
    tokens = stray_tokens(chain)
    if not tokens:
        return None
    bodies = {int(block["number"], 16): block for block in blocks}
    holds: list[BlockHeld] = []
    for log in to_us:
        stray = stray_transfer(log, tokens, chain.donation_address)
        if stray is None or stray.block_number > last:
            continue
        number, block = stray.block_number, scanned.get(stray.block_number)
        named = f"Transfer log of tx '{stray.tx_hash}' ({stray.token.asset}, a stray token)"
        if block is None or block.header.hash != str(log.get("blockHash") or "").lower():
            holds.append(BlockHeld(min(number, last), f"{named} names another block hash (re-org under way)"))
        elif stray.tx_hash not in _transactions(bodies[number]):
            holds.append(BlockHeld(number, f"{named} names a transaction block {number} does not hold"))
        elif stray.tx_hash not in signed:  # what came back in its own transaction is its own money
            block.strays.append(stray)
    return min(holds, key=lambda held: held.number, default=None)
