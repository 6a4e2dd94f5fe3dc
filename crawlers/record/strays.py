"""Coins the sale does not take, as the finalized crawler's cursor passes their blocks: each stray transfer (a
well-known token, DWS_STRAY_TOKENS) is owed back to its sender in the refund register (donations/refunds.py),
every other Transfer naming the address is counted per contract (`ForeignTransferCount`). Called inside the
transaction that moves the cursor, so a block is recorded with it or not at all; a range crawled again records
nothing twice (a refund per Transfer, a contract's count moves only past the last block it counted)."""

from __future__ import annotations

import logging

from crawlers.chain.logs import ForeignLogs
from crawlers.decode.strays import foreign_arrivals
from crawlers.models import ForeignTransferCount
from donations.refund_values import Token
from donations.refunds import refund_owe_strays
from dws_project.chain_settings import ChainSettings

logger = logging.getLogger("dws.crawlers")


def strays_record(chain: ChainSettings, *, foreign: ForeignLogs, through: int) -> None:
    """Record the range's foreign arrivals of blocks up to `through` (see the module doc)."""
    if not foreign.to_us:
        return
    tokens = {t.contract: Token(t.asset, t.contract, t.scale) for t in chain.stray_tokens}
    found = foreign_arrivals(foreign.through(through).to_us, tokens, chain.donation_address)
    for stray in refund_owe_strays(chain=chain.name, strays=found.strays):
        logger.warning(
            "stray transfer: %s %s (a token the sale does not take) from %s in tx %s (block %d of %s): owed back",
            stray.amount.normalize(),
            stray.asset,
            stray.donor,
            stray.source_tx_hash,
            stray.source_block_number,
            chain.name,
        )
    _count(chain.name, found.counted)


def _count(chain: str, counted: dict[tuple[int, str], int]) -> None:
    by_contract: dict[str, dict[int, int]] = {}
    for (block, contract), transfers in counted.items():
        by_contract.setdefault(contract, {})[block] = transfers
    rows = {
        r.contract: r
        for r in ForeignTransferCount.objects.select_for_update().filter(chain=chain, contract__in=by_contract)
    }
    for contract, blocks in by_contract.items():
        row = rows.get(contract)
        new = {b: n for b, n in blocks.items() if row is None or b > row.last_block}
        if not new:
            continue
        if row is None:
            row = ForeignTransferCount(chain=chain, contract=contract, first_block=min(new), last_block=0)
        row.transfers += sum(new.values())
        row.last_block = max(row.last_block, *new)
        row.save()
