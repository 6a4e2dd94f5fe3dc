"""The minute cycle end to end: six local venues over HTTP, the price row and its audit trail."""

from __future__ import annotations

import logging
import time
from datetime import timedelta
from decimal import Decimal

import pytest

from prices.models import ETH, Price
from prices.services import fetch_prices
from tests.prices import recorded
from tests.prices.conftest import Reply

pytestmark = pytest.mark.django_db

TIMEOUT = 1.0


def serve_all(server, *, binance="2000.10", coinbase="2001.20", kraken="2002.30", kucoin="2003.40",
              bitfinex="2004.50", cexio="2005.60") -> None:  # fmt: skip
    now = recorded.now_utc()
    server.route(recorded.BINANCE_TICKER, Reply(recorded.binance_ticker(binance)))
    server.route(recorded.COINBASE_SPOT, Reply(recorded.coinbase_spot(coinbase)))
    server.route(recorded.KRAKEN_TICKER, Reply(recorded.kraken_ticker(kraken)))
    server.route(recorded.KUCOIN_TICKER, Reply(recorded.kucoin_level1(kucoin, now)))
    server.route(recorded.BITFINEX_TICKER, Reply(recorded.bitfinex_ticker(bitfinex)))
    server.route(recorded.CEXIO_TICKER, Reply(recorded.cexio_ticker(cexio, now)))


def test_a_cycle_records_the_minutes_price_with_every_venue_in_its_audit_trail(venue_server):
    serve_all(venue_server)

    result = fetch_prices(urls=venue_server.urls(), timeout=TIMEOUT)

    row = Price.objects.get(asset=ETH)
    assert result.written
    assert row.created_at == result.minute
    assert row.created_at.second == 0
    assert row.price == Decimal("2002.85")
    assert row.sources["used"] == [
        {"venue": "binance", "quote": "2000.10"},
        {"venue": "coinbase", "quote": "2001.20"},
        {"venue": "kraken", "quote": "2002.30"},
        {"venue": "kucoin", "quote": "2003.40"},
        {"venue": "bitfinex", "quote": "2004.50"},
        {"venue": "cexio", "quote": "2005.60"},
    ]
    assert row.sources["dropped"] == []
    assert row.sources["median"] == "2002.85"


def test_failing_and_deviating_venues_are_dropped_with_their_reasons(venue_server, caplog):
    serve_all(venue_server, cexio="1700.00")
    venue_server.route(recorded.KRAKEN_TICKER, Reply(recorded.kraken_error("EService:Unavailable")))

    with caplog.at_level(logging.WARNING, logger="dws.prices"):
        fetch_prices(urls=venue_server.urls(), timeout=TIMEOUT)

    row = Price.objects.get(asset=ETH)
    assert row.price == Decimal("2002.30")  # binance, coinbase, kucoin, bitfinex
    assert row.sources["dropped"] == [
        {"venue": "cexio", "quote": "1700.00", "reason": "deviates 15.05% from the median 2001.20"},
        {"venue": "kraken", "quote": None, "reason": "error array: EService:Unavailable"},
    ]
    assert "kraken dropped: error array: EService:Unavailable" in caplog.text
    assert "cexio dropped: deviates 15.05%" in caplog.text


def test_a_second_cycle_in_the_same_minute_keeps_the_recorded_price(venue_server):
    serve_all(venue_server)
    first = fetch_prices(urls=venue_server.urls(), timeout=TIMEOUT)
    serve_all(
        venue_server, binance="2100", coinbase="2100", kraken="2100", kucoin="2100", bitfinex="2100", cexio="2100"
    )

    second = fetch_prices(now=first.minute + timedelta(seconds=30), urls=venue_server.urls(), timeout=TIMEOUT)

    assert not second.written
    assert Price.objects.get(asset=ETH).price == Decimal("2002.85")


def test_when_every_venue_fails_nothing_is_written_and_an_error_is_logged(venue_server, caplog):
    # No routes: every venue answers 404 with an error body.
    with caplog.at_level(logging.ERROR, logger="dws.prices"):
        result = fetch_prices(urls=venue_server.urls(), timeout=TIMEOUT)

    assert not result.written
    assert result.aggregate.price is None
    assert not Price.objects.exists()
    assert "nothing written: quorum not met: 0 usable quotes, 4 needed" in caplog.text


@pytest.mark.alone
def test_one_hanging_venue_costs_the_cycle_one_timeout_not_six(venue_server):
    serve_all(venue_server)
    venue_server.route(recorded.BITFINEX_TICKER, Reply(hang=True))  # holds the connection open for 20 s

    started = time.monotonic()
    result = fetch_prices(urls=venue_server.urls(), timeout=TIMEOUT)
    elapsed = time.monotonic() - started

    # The cycle waited for the hung venue about one time-out, and not for the 20 s it hangs.
    assert elapsed < 3 * TIMEOUT
    assert result.written
    assert Price.objects.get(asset=ETH).sources["dropped"] == [
        {"venue": "bitfinex", "quote": None, "reason": "no answer within 1 s"}
    ]


@pytest.mark.alone
def test_a_venue_trickling_its_answer_is_given_up_on_after_the_timeout(venue_server):
    serve_all(venue_server)
    # Each byte arrives within the per-read time-out, so only the cycle's own deadline stops it.
    venue_server.route(recorded.KRAKEN_TICKER, Reply(recorded.kraken_ticker("2002.30"), trickle=0.3))

    started = time.monotonic()
    result = fetch_prices(urls=venue_server.urls(), timeout=TIMEOUT)
    elapsed = time.monotonic() - started

    assert elapsed < 3 * TIMEOUT  # the full answer would take over 60 s
    assert result.written
    assert Price.objects.get(asset=ETH).sources["dropped"] == [
        {"venue": "kraken", "quote": None, "reason": "no answer within 1 s"}
    ]


def test_two_usdt_venues_depegged_are_dropped_and_the_usd_venues_price_is_written(venue_server):
    serve_all(venue_server, binance="2353.00", kucoin="2354.00")

    fetch_prices(urls=venue_server.urls(), timeout=TIMEOUT)

    row = Price.objects.get(asset=ETH)
    assert {d["venue"] for d in row.sources["dropped"]} == {"binance", "kucoin"}
    assert row.price == Decimal("2003.40")
