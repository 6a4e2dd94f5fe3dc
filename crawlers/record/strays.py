"""Coins the sale does not take, as the finalized crawler passes their blocks: each stray transfer (a
well-known token, DWS_STRAY_TOKENS) is owed back to its sender in the refund register (donations/refunds.py)
with its block, in the block's transaction, before the block's payouts are matched (so a refund paid back
in a later block of the same range finds its row); every other Transfer naming the address is counted per
contract (`ForeignTransferCount`) as the cursor passes it. A range crawled again records nothing twice (a
refund per Transfer, a contract's count moves only past the last block it counted)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from crawlers.chain.logs import ForeignLogs
from crawlers.decode.blocks import BlockHeader
from crawlers.decode.strays import foreign_arrivals
from crawlers.models import ForeignTransferCount
from donations.refund_values import StrayTransfer, amount_text, stray_tokens
from donations.refunds import refund_owe_strays
from dws_project.chain_settings import ChainSettings

logger = logging.getLogger("dws.crawlers")


def strays_record(chain: ChainSettings, *, block: BlockHeader, strays: Sequence[StrayTransfer]) -> None:
    """Owe back the stray transfers of a finalized block (crawlers/scan/strays.py found them in it)."""
    for stray in refund_owe_strays(chain=chain.name, strays=strays):
        logger.warning(
            "stray transfer: %s %s (a token the sale does not take) from %s in tx %s (block %d of %s): owed back",
            amount_text(stray.amount),
            stray.asset,
            stray.donor,
            stray.source_tx_hash,
            block.number,
            chain.name,
        )


def foreign_counts_record(chain: ChainSettings, *, foreign: ForeignLogs, through: int) -> None:
    """Count the range's foreign arrivals of blocks up to `through` that are not stray transfers."""
    if not foreign.to_us:
        return
    found = foreign_arrivals(foreign.through(through).to_us, stray_tokens(chain), chain.donation_address)
    by_contract: dict[str, dict[int, int]] = {}
    for (number, contract), transfers in found.counted.items():
        by_contract.setdefault(contract, {})[number] = transfers
    rows = {
        r.contract: r
        for r in ForeignTransferCount.objects.select_for_update().filter(chain=chain.name, contract__in=by_contract)
    }
    for contract, blocks in by_contract.items():
        row = rows.get(contract)
        new = {b: n for b, n in blocks.items() if row is None or b > row.last_block}
        if not new:
            continue
        if row is None:
            row = ForeignTransferCount(chain=chain.name, contract=contract, first_block=min(new), last_block=0)
        row.transfers += sum(new.values())
        row.last_block = max(row.last_block, *new)
        row.save()
