"""The ETH price a block's minute is valued at: the one rule the crawlers and the price-request server share.

Only a cross-checked price counts: a past minute one exchange alone has quoted (`Price.single_venue`)
values no donation, so one malicious venue API (or one egress proxy) cannot set the price a donation is
credited at. Until a second venue agrees, the lookup says why there is no price, and the crawler holds
the block with that reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from prices.models import ETH, Price

# A block's ETH price is searched within +-1.5 minutes of its minute (by the crawler and the request server).
MATCH_WINDOW = timedelta(seconds=90)


@dataclass(frozen=True)
class EthPriceLookup:
    """The price row nearest a minute that may value a donation, or why there is none (for the hold)."""

    row: Price | None
    missing: str | None = None


def eth_price_lookup(minute: datetime) -> EthPriceLookup:
    """The cross-checked ETH price row nearest `minute` within +-1.5 minutes (a minute quoted by one venue
    alone values nothing: it waits for a second venue to agree), or why there is none."""
    rows = list(Price.objects.filter(asset=ETH, created_at__range=(minute - MATCH_WINDOW, minute + MATCH_WINDOW)))
    usable = [r for r in rows if not r.single_venue]
    nearest = min(usable, key=lambda r: (abs(r.created_at - minute), r.created_at), default=None)
    if nearest is not None:
        return EthPriceLookup(nearest)
    when = f"{minute:%Y-%m-%d %H:%M} UTC"
    if rows:
        venues = sorted({u["venue"] for r in rows for u in r.sources.get("used", [])})
        return EthPriceLookup(
            None,
            f"the ETH price near {when} is quoted by one exchange only ({', '.join(venues) or 'one venue'}); "
            "waiting for a second to agree; a price request is filed",
        )
    return EthPriceLookup(None, f"no ETH price within 1.5 minutes of {when}; a price request is filed, waiting")


def eth_price_near(minute: datetime) -> Decimal | None:
    """The ETH price a block's ETH donation is valued at (the crawlers' `price_at`), or None while there is
    no cross-checked one."""
    row = eth_price_lookup(minute).row
    return row.price if row is not None else None


def eth_price_missing(minute: datetime) -> str | None:
    """Why a block of `minute` has no ETH price yet (the hold's reason), or None when it has one."""
    return eth_price_lookup(minute).missing
