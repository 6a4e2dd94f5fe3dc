"""Internal movements: what reached the donation address by its own doing (crawlers/decode/transfers.py,
`Movement`), recorded with its finalized block for the admin; never a donation, never an inflow."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence

from crawlers.decode.balances import display_amount
from crawlers.decode.blocks import BlockHeader
from crawlers.decode.transfers import Movement
from crawlers.models import InternalMovement
from dws_project.chain_settings import ChainSettings

logger = logging.getLogger("dws.crawlers")


def movements_record(chain: ChainSettings, *, block: BlockHeader, movements: Sequence[Movement]) -> None:
    """One row per transaction, asset and kind of the block (amounts summed); idempotent on a re-crawl.
    Called inside the finalized block's transaction."""
    summed: dict[tuple[str, str, str], int] = defaultdict(int)
    for movement in movements:
        summed[(movement.tx_hash, movement.asset, movement.kind)] += movement.raw
    for (tx_hash, asset, kind), raw in summed.items():
        _, created = InternalMovement.objects.get_or_create(
            chain=chain.name,
            block_hash=block.hash,
            tx_hash=tx_hash,
            asset=asset,
            kind=kind,
            defaults={
                "block_number": block.number,
                "amount_raw": raw,
                "amount": display_amount(chain, asset, raw),
            },
        )
        if created:
            logger.info(
                "internal movement: %s %s %s in tx %s (block %d of %s), the donation address's own money, "
                "not a donation",
                display_amount(chain, asset, raw),
                asset,
                kind,
                tx_hash,
                block.number,
                chain.name,
            )
