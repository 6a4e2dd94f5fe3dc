"""The price service: the price rows and the minute cycle (six venues → one ETH price). Historical price
requests (a block waiting for its minute) are prices/requests.py.

Writes go through `price_insert`, an INSERT ... ON CONFLICT (asset, created_at) DO NOTHING: a minute
already on record keeps its price, so a re-run, an overlapping kline window or two racing workers
never change or duplicate a price a donation may already have been valued with. The one exception is
a past minute only one venue quoted (`single_venue`): no donation is valued with it (one malicious venue
API, or one egress proxy, would set the price alone), and `price_record` completes that same row once a
second venue agrees within the gate.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.conf import settings
from django.db import connection
from django.utils import timezone

from dws_project.redaction import redact
from prices import dev
from prices.aggregation import Aggregate, VenueQuote, aggregate
from prices.models import ETH
from prices.venues import VENUES, Venue, VenueError, base_urls, client_for

logger = logging.getLogger("dws.prices")

PRICE_QUANTUM = Decimal("0.00000001")  # price.price is NUMERIC(20, 8)
# Extra wait beyond the client time-out before a venue that still has not answered is given up on
# (a server trickling bytes can keep a read alive past the per-read time-out).
COLLECT_GRACE_SECONDS = 0.25


def minute_of(moment: datetime) -> datetime:
    return moment.replace(second=0, microsecond=0)


def price_insert(*, asset: str, created_at: datetime, price: Decimal, sources: dict) -> bool:
    """Record one price unless its (asset, minute) is already on record; True when written."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO price (asset, price, created_at, sources) VALUES (%s, %s, %s, %s::jsonb) "
            "ON CONFLICT (asset, created_at) DO NOTHING RETURNING id",
            [asset, price.quantize(PRICE_QUANTUM), created_at, json.dumps(sources)],
        )
        return cursor.fetchone() is not None


# A flagged one-venue minute is replaced by its cross-checked price, in place; any other row stays as it is.
_RECORD = (
    "INSERT INTO price (asset, price, created_at, sources, single_venue) VALUES (%s, %s, %s, %s::jsonb, %s) "
    "ON CONFLICT (asset, created_at) DO UPDATE SET price = EXCLUDED.price, sources = EXCLUDED.sources, "
    "single_venue = false WHERE price.single_venue AND NOT EXCLUDED.single_venue RETURNING id"
)


def price_record(*, asset: str, created_at: datetime, price: Decimal, sources: dict, single_venue: bool) -> bool:
    """Record a kline minute: a new row (flagged when one venue alone quoted it), or the completion of a
    flagged row by a cross-checked price; True when a row was written."""
    with connection.cursor() as cursor:
        cursor.execute(_RECORD, [asset, price.quantize(PRICE_QUANTUM), created_at, json.dumps(sources), single_venue])
        return cursor.fetchone() is not None


# --- the minute cycle ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CycleResult:
    minute: datetime
    aggregate: Aggregate
    written: bool  # False when nothing was usable, or the minute was already on record

    @property
    def outcome(self) -> str:
        """written; kept (a price, but the minute was already on record); nothing-written."""
        if self.written:
            return "written"
        return "kept" if self.aggregate.price is not None else "nothing-written"


def _ask(venue: Venue, urls: Mapping[str, str], timeout: float | None, now: datetime) -> VenueQuote:
    try:
        return VenueQuote(venue.name, venue.quote(client_for(venue.name, urls=urls, timeout=timeout), now))
    except VenueError as exc:
        return VenueQuote(venue.name, None, redact(exc))
    except Exception as exc:  # noqa: BLE001 - a broken adapter drops its venue, never the cycle
        logger.warning("venue %s: adapter raised %s: %s", venue.name, type(exc).__name__, redact(exc)[:200])
        return VenueQuote(venue.name, None, f"adapter raised {type(exc).__name__}")


def collect_quotes(
    *, now: datetime, urls: Mapping[str, str] | None = None, timeout: float | None = None
) -> list[VenueQuote]:
    """Ask all six venues at once; a venue still silent after the time-out counts as failed."""
    urls = base_urls(urls)
    limit = settings.CONFIG.venue_timeout if timeout is None else timeout
    executor = ThreadPoolExecutor(max_workers=len(VENUES), thread_name_prefix="venue")
    try:
        futures = {executor.submit(_ask, venue, urls, limit, now): venue for venue in VENUES}
        done, _ = wait(futures, timeout=limit + COLLECT_GRACE_SECONDS)
        quotes = []
        for future, venue in futures.items():
            if future in done:
                quotes.append(future.result())
            else:
                quotes.append(VenueQuote(venue.name, None, f"no answer within {limit:g} s"))
        return quotes
    finally:
        executor.shutdown(wait=False, cancel_futures=True)  # a hung call finishes on its own


def audit_trail(result: Aggregate, *, minute: datetime) -> dict:
    """What `price.sources` records: every venue, its quote as a string, used or dropped and why."""
    return {
        "method": "mean of the spot quotes within 10% of their median",
        "minute": minute.isoformat(),
        "median": None if result.median is None else str(result.median),
        "used": [{"venue": q.venue, "quote": str(q.price)} for q in result.used],
        "dropped": [
            {"venue": d.venue, "quote": None if d.price is None else str(d.price), "reason": d.reason}
            for d in result.dropped
        ],
    }


def fetch_prices(
    *, now: datetime | None = None, urls: Mapping[str, str] | None = None, timeout: float | None = None
) -> CycleResult:
    """One cycle: ask the six venues, combine their quotes, record the minute's ETH price."""
    now = now or timezone.now()
    minute = minute_of(now)
    if (dev_price := dev.dev_eth_price()) is not None:
        written = price_insert(
            asset=ETH, created_at=minute, price=dev_price, sources=dev.dev_sources(price=dev_price, minute=minute)
        )
        logger.info("price %s: eth %s from DWS_DEV_ETH_PRICE, written=%s", minute.isoformat(), dev_price, written)
        return CycleResult(minute, dev.dev_aggregate(dev_price), written=written)
    result = aggregate(collect_quotes(now=now, urls=urls, timeout=timeout))
    for dropped in result.dropped:
        logger.warning("price %s: %s dropped: %s", minute.isoformat(), dropped.venue, dropped.reason)
    if result.price is None:
        logger.error("price %s: nothing written: %s", minute.isoformat(), result.reason)
        return CycleResult(minute, result, written=False)
    written = price_insert(asset=ETH, created_at=minute, price=result.price, sources=audit_trail(result, minute=minute))
    used = ", ".join(q.venue for q in result.used)
    if written:
        logger.info("price %s: eth %s from %s", minute.isoformat(), result.price.quantize(PRICE_QUANTUM), used)
    else:
        logger.info("price %s: already on record, kept", minute.isoformat())
    return CycleResult(minute, result, written=written)
