"""Historical price requests: a block whose minute has no ETH price files one (`price_request_file`), and
the poller (`serve_price_requests`) fetches that minute's klines from the venues that serve them and records
it, through the same rows and the same aggregation as the minute cycle (prices/services.py).

A request is claimed (`claimed_at`) by one poller at a time; seed 000's status `new|failed|succeeded` is
kept as it is, so a claimed request is in progress, not failed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from dws_project.redaction import redact
from prices import dev
from prices.aggregation import Aggregate, VenueQuote, aggregate
from prices.lookup import eth_price_lookup
from prices.models import ETH, Price, PriceRequest, PriceRequestStatus
from prices.services import COLLECT_GRACE_SECONDS, audit_trail, minute_of, price_insert, price_record
from prices.venues import KLINE_VENUES, VENUES_BY_NAME, Kline, VenueError, base_urls, client_for

logger = logging.getLogger("dws.prices")

KLINE_COUNT = 10  # klines fetched per request, starting at the requested minute
RETRY_AFTER = timedelta(minutes=5)  # a failed request is asked again after this
CLAIM_TTL = RETRY_AFTER  # a claim this old is a dead poller's: the request is taken again
OVERDUE_AFTER = timedelta(hours=1)  # unfulfilled this long: error-level log on every poll
POLL_BATCH = 20
POLL_BUDGET_SECONDS = 60  # a poll claims no new request after this; the rest wait for the next poll
OVERDUE_LOG_LINES = 10


def price_request_file(minute: datetime) -> PriceRequest:
    """Ask the price service for a historical ETH minute (a block waits for it); filing twice is a no-op."""
    request, created = PriceRequest.objects.get_or_create(asset=ETH, requested_at=minute)
    if created:
        logger.info("filed a price request for ETH at %s", minute.isoformat())
    return request


# --- historical price requests -------------------------------------------------------------------


@dataclass(frozen=True)
class ServeResult:
    claimed: int
    succeeded: int
    failed: int
    overdue: int


def _unclaimed(now: datetime) -> Q:
    return Q(claimed_at__isnull=True) | Q(claimed_at__lt=now - CLAIM_TTL)


def price_requests_due(*, now: datetime) -> list[PriceRequest]:
    """`new` requests, and `failed` ones left alone for RETRY_AFTER (the price_req poll index), that no
    live poller has claimed."""
    due = Q(status=PriceRequestStatus.NEW) | Q(status=PriceRequestStatus.FAILED, modified_at__lt=now - RETRY_AFTER)
    return list(PriceRequest.objects.filter(due & _unclaimed(now)).order_by("requested_at")[:POLL_BATCH])


def price_request_claim(request: PriceRequest, *, now: datetime) -> bool:
    """Take a request for this poller alone.

    The conditional UPDATE succeeds for exactly one of several concurrent pollers. It sets `claimed_at`
    and leaves the status as it was: a claimed request is in progress, not failed. A poller that dies
    mid-way leaves its claim to expire after CLAIM_TTL (the ordinary retry delay); the attempt's end
    clears it, as `failed` (`price_request_release`) or `succeeded` (`price_request_close`).
    """
    claimed = (
        PriceRequest.objects.filter(pk=request.pk, status=request.status, modified_at=request.modified_at)
        .filter(_unclaimed(now))
        .update(claimed_at=now, modified_at=now, attempts=F("attempts") + 1)
    )
    if claimed == 1:
        request.claimed_at = request.modified_at = now
    return claimed == 1


def price_request_release(request: PriceRequest, *, now: datetime) -> None:
    """This poller's attempt did not serve the request: `failed`, asked again after RETRY_AFTER."""
    PriceRequest.objects.filter(pk=request.pk, claimed_at=request.claimed_at).exclude(
        status=PriceRequestStatus.SUCCEEDED
    ).update(status=PriceRequestStatus.FAILED, claimed_at=None, modified_at=now)


def price_request_close(request: PriceRequest, *, now: datetime) -> None:
    """`succeeded` is terminal: set once, by the attempt that served the request, and never reopened."""
    PriceRequest.objects.filter(pk=request.pk).exclude(status=PriceRequestStatus.SUCCEEDED).update(
        status=PriceRequestStatus.SUCCEEDED, claimed_at=None, modified_at=now
    )


def _venue_klines(name: str, urls: Mapping[str, str], timeout: float | None, start: datetime) -> list[Kline] | str:
    """One venue's klines from `start`, or why it gave none (a broken adapter drops only its venue)."""
    klines = VENUES_BY_NAME[name].klines
    if klines is None:  # KLINE_VENUES names only venues with klines
        return "the venue serves no klines"
    try:
        return klines(client_for(name, urls=urls, timeout=timeout), start, KLINE_COUNT)
    except VenueError as exc:
        return redact(exc)
    except Exception as exc:  # noqa: BLE001
        logger.warning("klines from %s: adapter raised %s: %s", name, type(exc).__name__, redact(exc)[:200])
        return f"adapter raised {type(exc).__name__}"


def collect_klines(
    *, start: datetime, urls: Mapping[str, str], timeout: float | None = None
) -> dict[str, list[Kline] | str]:
    """Ask every kline venue at once; a venue still silent after the time-out counts as failed."""
    limit = settings.CONFIG.venue_timeout if timeout is None else timeout
    executor = ThreadPoolExecutor(max_workers=len(KLINE_VENUES), thread_name_prefix="klines")
    try:
        futures = {executor.submit(_venue_klines, name, urls, limit, start): name for name in KLINE_VENUES}
        done, _ = wait(futures, timeout=limit + COLLECT_GRACE_SECONDS)
        return {
            name: future.result() if future in done else f"no answer within {limit:g} s"
            for future, name in futures.items()
        }
    finally:
        executor.shutdown(wait=False, cancel_futures=True)


def _minute_quotes(answers: Mapping[str, list[Kline] | str], minute: datetime) -> list[VenueQuote]:
    quotes = []
    for name, answer in answers.items():
        if isinstance(answer, str):
            quotes.append(VenueQuote(name, None, answer))
            continue
        close = next((k.close for k in answer if k.minute == minute), None)
        quotes.append(VenueQuote(name, close, None if close is not None else "no kline for the minute"))
    return quotes


def _kline_sources(result: Aggregate, *, minute: datetime, request: PriceRequest) -> dict:
    trail = audit_trail(result, minute=minute)
    trail["method"] = "mean of the one-minute kline closes within 10% of their median (a majority must survive)"
    trail["request"] = request.requested_at.isoformat()
    trail["single_venue"] = len(result.used) == 1  # accepted, but nothing cross-checked it
    return trail


def price_request_serve(
    request: PriceRequest, *, now: datetime, urls: Mapping[str, str], timeout: float | None
) -> bool:
    """Write the closed minutes around a requested minute from every kline venue; True once served.

    Every kline venue is asked at once (bounded by the venue time-out) and each closed minute is made
    from their closes by the minute cycle's rules (`aggregation.aggregate`) scaled to what answered:
    median reference, 10 % gate, mean of the survivors, a majority of the answers surviving. A minute
    only one venue covers is written flagged `single_venue` (it values nothing, so the request stays
    open and is retried; a later answer of a second venue completes the row); a minute the venues
    disagree on beyond the gate is not written, so the request stays unserved and is retried.
    """
    requested = minute_of(request.requested_at)
    if request.asset != ETH:
        # Klines are ETH/USD; the sale token's price is set by the crawler, never fetched.
        logger.error("price request %s asks for asset %r, which has no klines", requested.isoformat(), request.asset)
        return False
    if eth_price_lookup(requested).row is not None:
        return True  # the minute cycle (or an earlier request's window) already covers it
    if (dev_price := dev.dev_eth_price()) is not None:
        # A dev chain: the requested minute gets the fixed dev price; no venue is asked.
        price_insert(
            asset=ETH, created_at=requested, price=dev_price, sources=dev.dev_sources(price=dev_price, minute=requested)
        )
        return True
    answers = collect_klines(start=requested, urls=urls, timeout=timeout)
    for name, answer in answers.items():
        if isinstance(answer, str):
            logger.warning("price request %s: %s klines unusable: %s", requested.isoformat(), name, answer)
    current = minute_of(now)
    minutes = sorted({k.minute for answer in answers.values() if not isinstance(answer, str) for k in answer})
    written = 0
    for minute in minutes:
        if minute >= current:
            # Still in progress: its close keeps moving, and a stored value would be permanent.
            logger.info("price request %s: kline %s still open, discarded", requested.isoformat(), minute.isoformat())
            continue
        result = aggregate(_minute_quotes(answers, minute), quorum=1, min_survivors=None)
        if result.price is None:
            logger.warning(
                "price request %s: minute %s not written: %s", requested.isoformat(), minute.isoformat(), result.reason
            )
            continue
        single = len(result.used) == 1
        if single:
            venue = result.used[0].venue
            logger.warning(
                "price request %s: minute %s from %s alone: flagged, it values nothing until a second venue agrees",
                requested.isoformat(),
                minute.isoformat(),
                venue,
            )
        written += price_record(
            asset=request.asset,
            created_at=minute,
            price=result.price,
            sources=_kline_sources(result, minute=minute, request=request),
            single_venue=single,
        )
    if eth_price_lookup(requested).row is not None:
        logger.info("price request %s: served from klines (%d new rows)", requested.isoformat(), written)
        return True
    if Price.objects.filter(asset=request.asset, single_venue=True, created_at=requested).exists():
        logger.warning("price request %s: one venue alone has quoted the minute; asked again", requested.isoformat())
    else:
        logger.warning("price request %s: the klines leave the minute uncovered", requested.isoformat())
    return False


def _log_overdue(now: datetime) -> int:
    overdue = PriceRequest.objects.exclude(status=PriceRequestStatus.SUCCEEDED).filter(
        created_at__lt=now - OVERDUE_AFTER
    )
    count = overdue.count()
    for request in overdue.order_by("requested_at")[:OVERDUE_LOG_LINES]:
        logger.error(
            "price request %s (%s) unfulfilled for over an hour: %d attempts, status %s%s",
            request.requested_at.isoformat(),
            request.asset,
            request.attempts,
            request.status,
            f", claimed at {request.claimed_at.isoformat()}" if request.claimed_at else "",
        )
    if count > OVERDUE_LOG_LINES:
        logger.error("%d price requests unfulfilled for over an hour in all", count)
    return count


def serve_price_requests(
    *, now: datetime | None = None, urls: Mapping[str, str] | None = None, timeout: float | None = None
) -> ServeResult:
    """One poll: claim each due request and serve it from klines; report the overdue ones."""
    now = now or timezone.now()
    urls = base_urls(urls)
    claimed = succeeded = failed = 0
    started = time.monotonic()
    for request in price_requests_due(now=now):
        if time.monotonic() - started > POLL_BUDGET_SECONDS:
            break  # still `new` or due: the next poll takes them
        if not price_request_claim(request, now=now):
            continue  # another poller has it
        claimed += 1
        if price_request_serve(request, now=now, urls=urls, timeout=timeout):
            price_request_close(request, now=now)
            succeeded += 1
        else:
            price_request_release(request, now=now)
            failed += 1
            logger.warning(
                "price request %s not served; retried after %d minutes",
                request.requested_at.isoformat(),
                RETRY_AFTER.seconds // 60,
            )
    overdue = _log_overdue(now)
    return ServeResult(claimed=claimed, succeeded=succeeded, failed=failed, overdue=overdue)
