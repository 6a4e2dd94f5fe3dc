"""The check provider's own reading of blocks whose money the primary's balance proof could not pin down,
before a range is recorded (crawlers/scan/agreement.py): a block where the proof found value it could not
explain (an unexplained inflow: recorded for an operator, never credited) or the address's own money
arriving (a movement, never credited), and a whole range the primary proved nothing about (it keeps no
historical state there, or says so).

Why: a primary that leaves a real donation out of a block body, its logs or its call trace, with every
balance true, makes the proof find that much unexplained in the donation's block (a coin's too, where it
also clears the Transfer from the block's logsBloom); one whose call trace nests a donor's frame under an
invented call of the address's has it taken for the address's own money (crawlers/decode/frames.py
`own_frames`); either way the donation is not credited. A primary that refuses old balances has its
ranges read without the proof (crawlers/scan/proof.py `without_history`), and what it leaves out of them
is not seen at all. The balances and hashes the agreement compares all match then; only reading the
blocks shows it. So the check provider reads and proves those blocks itself, as the crawlers do (never
through DWS_BLOCK_CACHE, which holds the primary's copy): a transfer it finds there that ours does not is
a disagreement (ETH paid by an internal call included: a primary that gives no call traces files those as
unexplained too).

Cost: unexplained inflows are rare (a self-destruct, a rebase, a burn without a log), and so is the
address's own money arriving (a Safe's swap, ETH it bridged to itself); a range the primary proved
nothing about is read again in full by the check provider, where that keeps state at its closing block
(one without state there is no better reading: a WARNING says the range rests on the primary alone).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from crawlers.chain.outcomes import NoEvidence
from crawlers.chain.rpc import RpcClient
from crawlers.scan.proof import prove_range
from crawlers.scan.results import ReadMode, ScannedBlock
from crawlers.scan.transfer_facts import name, ours_and_theirs
from dws_project.chain_settings import ChainSettings

logger = logging.getLogger("dws.crawlers")

CHECK_READING = "check-provider"  # the read mode's name (the debug store's files of its reads)

Shown = tuple[int, str] | NoEvidence | None  # (block, what differs naming both answers), wait, or shown


def unexplained_shown(check: RpcClient, chain: ChainSettings, blocks: Sequence[ScannedBlock], run: str) -> Shown:
    """Each block of `blocks` with an unexplained inflow or the address's own money arriving, read by the
    check provider: no transfer ours lacks."""
    for block in blocks:
        if block.unexplained or block.own:
            number = block.header.number
            verdict = range_shown(check, chain, [block], number, number, run, f" ({_ours_instead(block)})")
            if verdict is not None:
                return verdict
    return None


def _ours_instead(block: ScannedBlock) -> str:
    """What our proof made of the block's arrivals instead of a donation (raw units)."""
    said = [f"an unexplained inflow of {raw} {asset}" for asset, raw in block.unexplained]
    said += [f"its own money: {m.raw} {m.asset} {m.kind}" for m in block.own]
    return "; ".join(said)


def range_shown(
    check: RpcClient,
    chain: ChainSettings,
    blocks: Sequence[ScannedBlock],
    first: int,
    last: int,
    run: str,
    ours_says: str = "",
) -> Shown:
    """Blocks first..last read and proven by the check provider: each block ours read (`blocks`) with the
    same hash, and no transfer in any of them that ours lacks; NoEvidence where its reading gave none."""
    read = prove_range(check, chain, first, last, ReadMode(CHECK_READING, final=False, run=run))
    if read.held is not None or not read.blocks or read.blocks[-1].header.number != last:
        why = read.held.reason if read.held is not None else "not read through"
        return NoEvidence("eth_getBlockByNumber", "error", f"its own reading of blocks {first}..{last}: {why}")
    ours = {block.header.number: block for block in blocks}
    for theirs in read.blocks:
        number = theirs.header.number
        mine = ours.get(number)
        if mine is not None and theirs.header.hash != mine.header.hash:
            return number, f"block hash: {ours_and_theirs(mine.header.hash, theirs.header.hash)}"
        missing = [t for t in theirs.transfers if mine is None or t not in mine.transfers]
        if mine is not None and mine.traces_refused:
            # Ours gives no call traces here: ETH paid by an internal call is the block's open unexplained
            # inflow, for the operator to credit (anyone can pay the address so: holding on it would let a
            # stranger stop the chain). What the check provider's trace shows is said beside it.
            for internal in [t for t in missing if t.trace_address is not None]:
                logger.warning(
                    "check provider: block %d: %s is shown only by its call trace (ours gives none): the block's "
                    "open unexplained inflow holds it for the operator",
                    number,
                    name(internal),
                )
            missing = [t for t in missing if t.trace_address is None]
        if missing:
            return number, (
                f"{name(missing[0])}: ours says nothing pays it{ours_says or ' (ours proved nothing here)'}, "
                "the check provider's block pays it"
            )
    return None
