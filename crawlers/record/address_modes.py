"""The donation address's mode per chain (`address_mode`): written by whoever read the address's code there
(a crawler run, a worker's start), read back by crawlers/runs/address_code.py for every decision.

Code never leaves an address (EIP-6780: SELFDESTRUCT removes it only in the transaction that created it), so
once the address was read as a contract on a chain, a provider now saying it has no code there is a node
behind (a syncing node behind a load balancer, a lagging replica), not the chain: the contract stays on
record, and the chains sharing the address stay refused. Only the operator forgets it (deleting the row,
docs/operating.md), e.g. after a development chain started again from genesis.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from crawlers.models import AddressMode, AddressModeKind

logger = logging.getLogger("dws.crawlers")


def address_mode_record(*, chain: str, address: str, mode: str) -> str:
    """Note that `address` has `mode` on `chain` now (one row per chain, the newest reading), unless it was
    read as a contract before: then it stays one. Returns the mode on record."""
    address = address.lower()
    with transaction.atomic():
        row = AddressMode.objects.select_for_update().filter(chain=chain).first()
        if row is not None and row.address == address and row.mode == AddressModeKind.CONTRACT and mode != row.mode:
            logger.warning(
                "donation address %s on %s read as %s where it was read as a contract: code never leaves an "
                "address, so the provider's node is behind; it stays a contract",
                address,
                chain,
                mode,
            )
            return row.mode
        AddressMode.objects.update_or_create(
            chain=chain, defaults={"address": address, "mode": mode, "read_at": timezone.now()}
        )
    return mode


def address_modes() -> dict[str, tuple[str, str]]:
    """Chain -> (address, mode), for every chain whose address's code was ever read."""
    return {row.chain: (row.address, row.mode) for row in AddressMode.objects.all()}
