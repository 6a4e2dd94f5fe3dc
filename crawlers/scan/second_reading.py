"""The check provider's own reading of a block where the primary's balance proof found value it could not
explain (an unexplained inflow: recorded for an operator, never credited), before that range is recorded
(crawlers/scan/agreement.py).

Why: a primary that leaves a real donation out of a block body, its logs or its call trace, with every
balance true, makes the proof find that much unexplained in the donation's block (a coin's too, where it
also clears the Transfer from the block's logsBloom), and the donation would be filed as an unexplained
inflow instead of credited. The balances and hashes the agreement compares all match then; only reading
the block shows it. So the check provider reads and proves that block itself, as the crawlers do
(crawlers/scan/proof.py, never through DWS_BLOCK_CACHE, which holds the primary's copy): a transfer it
finds there that ours does not is a disagreement (ETH paid by an internal call included: a primary
that gives no call traces files those as unexplained too). Unexplained inflows are rare (a self-destruct,
a rebase, a burn without a log), so this costs nothing on a chain without them.
"""

from __future__ import annotations

from collections.abc import Sequence

from crawlers.chain.outcomes import NoEvidence
from crawlers.chain.rpc import RpcClient
from crawlers.scan.proof import prove_range
from crawlers.scan.results import ReadMode, ScannedBlock
from crawlers.scan.transfer_facts import name, ours_and_theirs
from dws_project.chain_settings import ChainSettings

CHECK_READING = "check-provider"  # the read mode's name (the debug store's files of its reads)


def unexplained_shown(
    check: RpcClient, chain: ChainSettings, blocks: Sequence[ScannedBlock], run: str
) -> tuple[int, str] | NoEvidence | None:
    """None when the check provider's own reading of every block of `blocks` with an unexplained inflow
    finds no transfer ours does not; else (block, what differs, naming both answers), or NoEvidence when
    its reading gave none (wait). (That the unexplained amount is the check provider's too, the agreement
    sees in the block's balance change.)"""
    for block in blocks:
        if not block.unexplained:
            continue
        number = block.header.number
        read = prove_range(check, chain, number, number, ReadMode(CHECK_READING, final=False, run=run))
        if read.held is not None or not read.blocks:
            why = read.held.reason if read.held is not None else "nothing read"
            return NoEvidence("eth_getBlockByNumber", "error", f"its own reading of block {number}: {why}")
        theirs = read.blocks[0]
        if theirs.header.hash != block.header.hash:
            return number, f"block hash: {ours_and_theirs(block.header.hash, theirs.header.hash)}"
        missing = [t for t in theirs.transfers if t not in block.transfers]
        if missing:
            inflow = ", ".join(f"{raw} {asset}" for asset, raw in block.unexplained)
            return number, (
                f"{name(missing[0])}: ours says nothing pays it (an unexplained inflow of {inflow} raw units), "
                "the check provider's block pays it"
            )
    return None
