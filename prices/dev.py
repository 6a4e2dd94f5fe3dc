"""The development price source: a fixed ETH/USD price, for a local dev chain only (`make run`).

Configuration refuses `DWS_DEV_ETH_PRICE` unless `DWS_CHAIN_ID` is a development chain, so this never
runs where money is real. When it is set, the minute cycle and the historical price requests take
their price from here instead of the six venues (unreachable, and meaningless for a local chain),
and the `price` rows say so in `sources`: `{"dev": {...}}`.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from django.conf import settings

from prices.aggregation import Aggregate


def dev_eth_price() -> Decimal | None:
    """The configured dev price, or None (always None on a chain that is not a dev chain)."""
    return settings.CONFIG.dev_eth_price


def dev_sources(*, price: Decimal, minute: datetime) -> dict:
    """The audit trail of a dev price row."""
    return {
        "dev": {
            "price": str(price),
            "minute": minute.isoformat(),
            "chain_id": settings.CONFIG.first_chain.chain_id,
            "chain_ids": [chain.chain_id for chain in settings.CONFIG.chains],
            "variable": "DWS_DEV_ETH_PRICE",
        }
    }


def dev_aggregate(price: Decimal) -> Aggregate:
    """The minute cycle's outcome in the venues' shape: one price, no quotes used or dropped."""
    return Aggregate(price=price, median=price, used=(), dropped=(), reason=None)
