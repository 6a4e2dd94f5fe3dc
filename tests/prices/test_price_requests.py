"""Historical price requests on PostgreSQL: new → served, failed → retried, succeeded is terminal."""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection

from prices.lookup import eth_price_lookup
from prices.models import ETH, Price, PriceRequest, PriceRequestStatus
from prices.requests import price_request_claim, serve_price_requests
from tests.prices import recorded
from tests.prices.conftest import Reply

TIMEOUT = 1.0


def minute_now() -> datetime:
    return recorded.now_utc().replace(second=0, microsecond=0)


def kraken_klines(up_to: datetime, *, missing: frozenset[datetime] = frozenset(), close: str = "2000.5", delay=0.0):
    """kraken's OHLC as it would answer at `up_to` (that minute's row still open), with optional gaps."""

    def reply(query: dict[str, str]) -> Reply:
        start = datetime.fromtimestamp(int(query["since"]) + 60, tz=up_to.tzinfo)
        minutes = int((up_to - start).total_seconds() // 60) + 1
        closes = [None if start + timedelta(minutes=i) in missing else close for i in range(max(minutes, 0))]
        return Reply(recorded.kraken_ohlc(start, closes), delay=delay)

    return reply


def binance_klines(up_to: datetime, *, missing: frozenset[datetime] = frozenset(), close: str = "2000.5", delay=0.0):
    """binance's klines as it would answer at `up_to` for the window asked (startTime, limit)."""

    def reply(query: dict[str, str]) -> Reply:
        start = datetime.fromtimestamp(int(query["startTime"]) / 1000, tz=up_to.tzinfo)
        minutes = min(int(query["limit"]), int((up_to - start).total_seconds() // 60) + 1)
        opened = [start + timedelta(minutes=i) for i in range(max(minutes, 0))]
        rows = [m for m in opened if m not in missing]
        body = "[" + ",".join(recorded.binance_klines(m, [close])[1:-1] for m in rows) + "]"
        return Reply(body, delay=delay)

    return reply


def two_venues(server, up_to: datetime, **options) -> None:
    """kraken and binance answer the same closes: a minute two venues agree on (a price may credit)."""
    server.route(recorded.KRAKEN_OHLC, kraken_klines(up_to, **options))
    server.route(recorded.BINANCE_KLINES, binance_klines(up_to, **options))


def serve(server, now: datetime):
    return serve_price_requests(now=now, urls=server.urls(), timeout=TIMEOUT)


def prices_at() -> dict[datetime, Decimal]:
    return dict(Price.objects.filter(asset=ETH).values_list("created_at", "price"))


@pytest.mark.django_db
def test_a_new_request_is_served_from_ten_klines_starting_at_its_minute(venue_server):
    requested = minute_now() - timedelta(minutes=30)
    request = PriceRequest.objects.create(asset=ETH, requested_at=requested)
    two_venues(venue_server, minute_now())

    result = serve(venue_server, recorded.now_utc())

    request.refresh_from_db()
    assert (result.claimed, result.succeeded) == (1, 1)
    assert (request.status, request.attempts) == (PriceRequestStatus.SUCCEEDED, 1)
    assert sorted(prices_at()) == [requested + timedelta(minutes=m) for m in range(10)]
    row = Price.objects.get(created_at=requested)
    assert (row.price, row.single_venue) == (Decimal("2000.5"), False)
    assert row.sources["method"].startswith("mean of the one-minute kline closes")
    assert row.sources["used"] == [{"venue": "binance", "quote": "2000.5"}, {"venue": "kraken", "quote": "2000.5"}]


@pytest.mark.django_db
def test_the_kline_of_the_minute_in_progress_is_never_stored(venue_server):
    current = minute_now()
    PriceRequest.objects.create(asset=ETH, requested_at=current - timedelta(minutes=3))
    two_venues(venue_server, current)  # last row: the open minute

    serve(venue_server, recorded.now_utc())

    assert sorted(prices_at()) == [current - timedelta(minutes=m) for m in (3, 2, 1)]


@pytest.mark.django_db
def test_a_request_for_the_minute_in_progress_waits_until_it_has_closed(venue_server):
    current = minute_now()
    request = PriceRequest.objects.create(asset=ETH, requested_at=current)
    two_venues(venue_server, current)
    now = recorded.now_utc()

    first = serve(venue_server, now)

    request.refresh_from_db()
    assert (first.failed, request.status) == (1, PriceRequestStatus.FAILED)
    assert not Price.objects.exists()

    two_venues(venue_server, current + timedelta(minutes=6))
    serve(venue_server, now + timedelta(minutes=6))

    request.refresh_from_db()
    assert (request.status, request.attempts) == (PriceRequestStatus.SUCCEEDED, 2)
    assert Price.objects.filter(created_at=current).exists()


@pytest.mark.django_db
def test_a_gap_in_the_klines_fails_the_request_which_is_retried_after_five_minutes(venue_server):
    requested = minute_now() - timedelta(minutes=30)
    request = PriceRequest.objects.create(asset=ETH, requested_at=requested)
    gap = frozenset(requested + timedelta(minutes=m) for m in range(-2, 5))  # no trades around the minute
    two_venues(venue_server, minute_now(), missing=gap)
    now = recorded.now_utc()

    first = serve(venue_server, now)

    request.refresh_from_db()
    assert (first.failed, request.status, request.attempts) == (1, PriceRequestStatus.FAILED, 1)
    assert min(prices_at()) == requested + timedelta(minutes=5)  # closed minutes after the gap are kept
    asked_kline_venues = sorted(hit.path for hit in venue_server.hits)  # all at once
    assert asked_kline_venues == sorted(
        [recorded.KRAKEN_OHLC, recorded.BITFINEX_CANDLES, recorded.BINANCE_KLINES, recorded.KUCOIN_CANDLES]
    )

    too_soon = serve(venue_server, now + timedelta(minutes=4))
    request.refresh_from_db()
    assert (too_soon.claimed, request.attempts) == (0, 1)
    assert len(venue_server.hits) == 4

    two_venues(venue_server, minute_now())  # the venues have filled the gap
    serve(venue_server, now + timedelta(minutes=5, seconds=1))

    request.refresh_from_db()
    assert (request.status, request.attempts) == (PriceRequestStatus.SUCCEEDED, 2)
    assert requested in prices_at()


@pytest.mark.django_db
def test_venues_without_usable_klines_are_dropped_with_their_reason(venue_server):
    requested = minute_now() - timedelta(minutes=30)
    request = PriceRequest.objects.create(asset=ETH, requested_at=requested)
    venue_server.route(recorded.KRAKEN_OHLC, Reply(recorded.kraken_error("EGeneral:Too many requests")))
    venue_server.route(recorded.BITFINEX_CANDLES, Reply(recorded.BITFINEX_INVALID_SYMBOL, status=500))
    venue_server.route(
        recorded.BINANCE_KLINES, Reply(recorded.binance_klines(requested, [f"2000.{m}" for m in range(10)]))
    )

    serve(venue_server, recorded.now_utc())

    request.refresh_from_db()
    assert request.status == PriceRequestStatus.FAILED  # one venue alone: asked again later
    row = Price.objects.get(created_at=requested)
    sources = row.sources
    assert sources["used"] == [{"venue": "binance", "quote": "2000.0"}]
    assert sources["single_venue"] is True
    assert row.single_venue is True
    reasons = {d["venue"]: d["reason"] for d in sources["dropped"]}
    assert sorted(reasons) == ["bitfinex", "kraken", "kucoin"]
    assert "Too many requests" in reasons["kraken"]


@pytest.mark.django_db
def test_a_succeeded_request_is_never_revisited(venue_server):
    requested = minute_now() - timedelta(minutes=30)
    request = PriceRequest.objects.create(asset=ETH, requested_at=requested)
    two_venues(venue_server, minute_now())
    now = recorded.now_utc()
    serve(venue_server, now)
    request.refresh_from_db()
    closed_at = request.modified_at

    for later in (timedelta(minutes=6), timedelta(hours=2)):
        assert serve(venue_server, now + later).claimed == 0

    request.refresh_from_db()
    assert (request.status, request.attempts, request.modified_at) == (PriceRequestStatus.SUCCEEDED, 1, closed_at)
    assert len(venue_server.hits) == 4  # the one poll that served it asked each kline venue once


@pytest.mark.django_db
def test_a_request_already_covered_by_a_recorded_price_succeeds_without_asking_a_venue(venue_server):
    requested = minute_now() - timedelta(minutes=30)
    Price.objects.create(asset=ETH, price=Decimal("2001"), created_at=requested + timedelta(minutes=1))
    request = PriceRequest.objects.create(asset=ETH, requested_at=requested)

    serve(venue_server, recorded.now_utc())

    request.refresh_from_db()
    assert request.status == PriceRequestStatus.SUCCEEDED
    assert venue_server.hits == []


@pytest.mark.django_db
def test_klines_never_overwrite_a_minute_already_on_record(venue_server):
    requested = minute_now() - timedelta(minutes=30)
    Price.objects.create(asset=ETH, price=Decimal("1999.25"), created_at=requested + timedelta(minutes=3))
    PriceRequest.objects.create(asset=ETH, requested_at=requested)
    venue_server.route(recorded.KRAKEN_OHLC, kraken_klines(minute_now()))

    serve(venue_server, recorded.now_utc())

    recorded_prices = prices_at()
    assert len(recorded_prices) == 10
    assert recorded_prices[requested + timedelta(minutes=3)] == Decimal("1999.25")


@pytest.mark.django_db
def test_a_request_unfulfilled_for_over_an_hour_is_logged_at_error_level_each_poll(venue_server, caplog):
    requested = minute_now() - timedelta(minutes=30)
    PriceRequest.objects.create(asset=ETH, requested_at=requested)
    done = PriceRequest.objects.create(asset=ETH, requested_at=requested - timedelta(hours=1))
    PriceRequest.objects.filter(pk=done.pk).update(status=PriceRequestStatus.SUCCEEDED)
    later = recorded.now_utc() + timedelta(minutes=61)

    with caplog.at_level(logging.ERROR, logger="dws.prices"):
        first = serve(venue_server, later)  # every venue answers 404
        second = serve(venue_server, later + timedelta(seconds=10))  # a poll that claims nothing

    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert (first.overdue, second.overdue) == (1, 1)
    assert (
        errors
        == [f"price request {requested.isoformat()} (eth) unfulfilled for over an hour: 1 attempts, status failed"] * 2
    )


@pytest.mark.django_db
def test_a_request_for_an_asset_without_klines_is_not_served_from_eth_klines(venue_server, caplog):
    request = PriceRequest.objects.create(asset="dws", requested_at=minute_now() - timedelta(minutes=30))
    venue_server.route(recorded.KRAKEN_OHLC, kraken_klines(minute_now()))

    with caplog.at_level(logging.ERROR, logger="dws.prices"):
        serve(venue_server, recorded.now_utc())

    request.refresh_from_db()
    assert request.status == PriceRequestStatus.FAILED
    assert venue_server.hits == []
    assert not Price.objects.exists()
    assert "asks for asset 'dws', which has no klines" in caplog.text


@pytest.mark.django_db
def test_of_two_pollers_holding_the_same_request_only_one_claims_it():
    request = PriceRequest.objects.create(asset=ETH, requested_at=minute_now() - timedelta(minutes=30))
    seen_by_a = PriceRequest.objects.get(pk=request.pk)
    seen_by_b = PriceRequest.objects.get(pk=request.pk)
    now = recorded.now_utc()

    assert price_request_claim(seen_by_a, now=now) is True
    assert price_request_claim(seen_by_b, now=now) is False
    request.refresh_from_db()
    assert request.attempts == 1


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_pollers_never_serve_a_request_twice(venue_server):
    base = minute_now() - timedelta(minutes=30)
    requested = [base - timedelta(minutes=15 * i) for i in range(4)]  # windows far enough apart not to overlap
    for minute in requested:
        PriceRequest.objects.create(asset=ETH, requested_at=minute)
    two_venues(venue_server, minute_now(), delay=0.3)
    now = recorded.now_utc()
    start = threading.Barrier(2)
    results = []

    def poller() -> None:
        try:
            start.wait()
            results.append(serve(venue_server, now))
        finally:
            connection.close()

    threads = [threading.Thread(target=poller) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert sum(r.claimed for r in results) == 4
    assert all(r.claimed >= 1 for r in results)  # both pollers took part
    assert set(PriceRequest.objects.values_list("status", "attempts")) == {(PriceRequestStatus.SUCCEEDED, 1)}
    asked_since = sorted(hit.query["since"] for hit in venue_server.hits_on(recorded.KRAKEN_OHLC))
    assert asked_since == sorted(str(int(m.timestamp()) - 60) for m in requested)


def every_kline_venue(server, requested: datetime, closes: dict[str, str]) -> None:
    """The named kline venues answer ten closed minutes from `requested`, each at its own close; the
    others are not routed (404)."""
    minutes = 10
    if "kraken" in closes:
        server.route(recorded.KRAKEN_OHLC, kraken_klines(minute_now(), close=closes["kraken"]))
    if "binance" in closes:
        server.route(recorded.BINANCE_KLINES, Reply(recorded.binance_klines(requested, [closes["binance"]] * minutes)))
    if "kucoin" in closes:
        server.route(recorded.KUCOIN_CANDLES, Reply(recorded.kucoin_candles(requested, [closes["kucoin"]] * minutes)))
    if "bitfinex" in closes:
        server.route(
            recorded.BITFINEX_CANDLES, Reply(recorded.bitfinex_candles(requested, [closes["bitfinex"]] * minutes))
        )


@pytest.mark.django_db
def test_a_historical_minute_is_the_mean_of_the_venues_within_10_percent_of_their_median(venue_server):
    requested = minute_now() - timedelta(minutes=30)
    request = PriceRequest.objects.create(asset=ETH, requested_at=requested)
    every_kline_venue(
        venue_server, requested, {"kraken": "2000.5", "bitfinex": "2001.5", "binance": "2000", "kucoin": "2400.6"}
    )

    serve(venue_server, recorded.now_utc())

    request.refresh_from_db()
    assert request.status == PriceRequestStatus.SUCCEEDED
    row = Price.objects.get(asset=ETH, created_at=requested)
    assert row.price == Decimal("2000.66666667")  # (2000 + 2000.5 + 2001.5) / 3; kucoin 20 % off is dropped
    assert sorted(u["venue"] for u in row.sources["used"]) == ["binance", "bitfinex", "kraken"]
    (dropped,) = row.sources["dropped"]
    assert (dropped["venue"], dropped["quote"]) == ("kucoin", "2400.6")
    assert dropped["reason"] == "deviates 19.97% from the median 2001.0"
    assert row.sources["single_venue"] is False
    assert {hit.path for hit in venue_server.hits} == {
        recorded.KRAKEN_OHLC,
        recorded.BITFINEX_CANDLES,
        recorded.BINANCE_KLINES,
        recorded.KUCOIN_CANDLES,
    }


@pytest.mark.django_db
def test_a_minute_only_one_venue_answers_for_is_flagged_and_completed_when_a_second_agrees(venue_server, caplog):
    """Issue 21 (medium 10): one venue's close is written flagged (it values no donation) and the request
    stays open; when a second venue answers within the gate, the same row becomes the cross-checked price."""
    requested = minute_now() - timedelta(minutes=30)
    request = PriceRequest.objects.create(asset=ETH, requested_at=requested)
    every_kline_venue(venue_server, requested, {"bitfinex": "2001.25"})  # the others answer 404
    now = recorded.now_utc()

    with caplog.at_level(logging.WARNING, logger="dws.prices"):
        first = serve(venue_server, now)

    request.refresh_from_db()
    assert (first.failed, request.status) == (1, PriceRequestStatus.FAILED)
    row = Price.objects.get(asset=ETH, created_at=requested)
    assert (row.price, row.single_venue) == (Decimal("2001.25"), True)
    assert row.sources["used"] == [{"venue": "bitfinex", "quote": "2001.25"}]
    assert sorted(d["venue"] for d in row.sources["dropped"]) == ["binance", "kraken", "kucoin"]
    assert f"minute {requested.isoformat()} from bitfinex alone: flagged" in caplog.text
    assert eth_price_lookup(requested).row is None  # nothing may be valued with it

    every_kline_venue(venue_server, requested, {"bitfinex": "2001.25", "kraken": "2000.75"})
    serve(venue_server, now + timedelta(minutes=5, seconds=1))

    request.refresh_from_db()
    assert (request.status, request.attempts) == (PriceRequestStatus.SUCCEEDED, 2)
    completed = Price.objects.get(asset=ETH, created_at=requested)
    assert completed.pk == row.pk  # the same row, completed
    assert (completed.price, completed.single_venue) == (Decimal("2001"), False)
    assert eth_price_lookup(requested).row == completed


@pytest.mark.django_db
def test_a_second_venue_disagreeing_beyond_the_gate_leaves_the_minute_flagged(venue_server):
    requested = minute_now() - timedelta(minutes=30)
    PriceRequest.objects.create(asset=ETH, requested_at=requested)
    every_kline_venue(venue_server, requested, {"bitfinex": "2001.25"})
    now = recorded.now_utc()
    serve(venue_server, now)

    every_kline_venue(venue_server, requested, {"bitfinex": "2001.25", "kraken": "2600"})  # 30 % apart
    serve(venue_server, now + timedelta(minutes=5, seconds=1))

    row = Price.objects.get(asset=ETH, created_at=requested)
    assert (row.price, row.single_venue) == (Decimal("2001.25"), True)
    assert PriceRequest.objects.get().status == PriceRequestStatus.FAILED


@pytest.mark.django_db
def test_venues_disagreeing_beyond_the_gate_write_no_price_and_the_request_is_retried(venue_server, caplog):
    requested = minute_now() - timedelta(minutes=30)
    request = PriceRequest.objects.create(asset=ETH, requested_at=requested)
    every_kline_venue(venue_server, requested, {"kraken": "2000", "binance": "2600"})  # 30 % apart
    now = recorded.now_utc()

    with caplog.at_level(logging.WARNING, logger="dws.prices"):
        first = serve(venue_server, now)

    request.refresh_from_db()
    assert (first.failed, request.status, request.attempts) == (1, PriceRequestStatus.FAILED, 1)
    assert not Price.objects.exists()
    assert f"minute {requested.isoformat()} not written: only 0 quotes within 10% of the median" in caplog.text

    every_kline_venue(venue_server, requested, {"kraken": "2000", "binance": "2010"})  # the venues agree again
    serve(venue_server, now + timedelta(minutes=5, seconds=1))

    request.refresh_from_db()
    assert (request.status, request.attempts) == (PriceRequestStatus.SUCCEEDED, 2)
    assert Price.objects.get(created_at=requested).price == Decimal("2005")


# --- a claim is not a failure (issue 22): claimed_at beside seed 000's new|failed|succeeded -------------


@pytest.mark.django_db(transaction=True)
def test_a_request_being_served_is_claimed_not_failed(venue_server):
    request = PriceRequest.objects.create(asset=ETH, requested_at=minute_now() - timedelta(minutes=30))
    two_venues(venue_server, minute_now(), delay=0.8)  # the venues take a while: the poll is under way
    now = recorded.now_utc()

    def poll_once() -> None:
        try:
            serve(venue_server, now)
        finally:
            connection.close()

    poll = threading.Thread(target=poll_once)
    poll.start()
    try:
        deadline = time.monotonic() + 10
        while PriceRequest.objects.get(pk=request.pk).claimed_at is None:
            assert time.monotonic() < deadline, "the poll never claimed the request"
            time.sleep(0.02)
        in_progress = PriceRequest.objects.get(pk=request.pk)
    finally:
        poll.join(timeout=30)

    assert (in_progress.status, in_progress.attempts) == (PriceRequestStatus.NEW, 1)  # not "failed"
    assert in_progress.claimed_at == now
    request.refresh_from_db()
    assert (request.status, request.claimed_at) == (PriceRequestStatus.SUCCEEDED, None)


@pytest.mark.django_db
def test_a_request_not_served_is_failed_and_unclaimed(venue_server):
    requested = minute_now() - timedelta(minutes=30)
    request = PriceRequest.objects.create(asset=ETH, requested_at=requested)
    two_venues(venue_server, minute_now(), missing=frozenset(requested + timedelta(minutes=m) for m in range(-2, 5)))

    serve(venue_server, recorded.now_utc())

    request.refresh_from_db()
    assert (request.status, request.claimed_at, request.attempts) == (PriceRequestStatus.FAILED, None, 1)


@pytest.mark.django_db
def test_the_claim_of_a_poller_that_died_expires_and_the_request_is_served(venue_server):
    now = recorded.now_utc()
    dead = PriceRequest.objects.create(asset=ETH, requested_at=minute_now() - timedelta(minutes=30))
    live = PriceRequest.objects.create(asset=ETH, requested_at=minute_now() - timedelta(minutes=60))
    PriceRequest.objects.filter(pk=dead.pk).update(claimed_at=now - timedelta(minutes=6), attempts=1)
    PriceRequest.objects.filter(pk=live.pk).update(claimed_at=now - timedelta(minutes=1), attempts=1)
    two_venues(venue_server, minute_now())

    result = serve(venue_server, now)

    dead.refresh_from_db()
    live.refresh_from_db()
    assert result.claimed == 1
    assert (dead.status, dead.claimed_at, dead.attempts) == (PriceRequestStatus.SUCCEEDED, None, 2)
    assert (live.status, live.attempts) == (PriceRequestStatus.NEW, 1)  # another poller is still on it
