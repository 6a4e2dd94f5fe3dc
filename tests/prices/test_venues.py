"""Each venue adapter against its documented response shapes, served over real HTTP."""

from __future__ import annotations

import os
from datetime import timedelta
from decimal import Decimal

import pytest

from dws_project.config import ConfigError, load_config
from prices import venues
from prices.venues import VenueError, base_urls, client_for
from tests.prices import recorded
from tests.prices.conftest import Reply

TIMEOUT = 1.0


def ask(server, venue: str):
    return venues.VENUES_BY_NAME[venue].quote(
        client_for(venue, urls=server.urls(), timeout=TIMEOUT), recorded.now_utc()
    )


def klines(server, venue: str, start, count: int = 10):
    return venues.VENUES_BY_NAME[venue].klines(client_for(venue, urls=server.urls(), timeout=TIMEOUT), start, count)


# --- binance ----------------------------------------------------------------------------------


def test_binance_quotes_the_spot_last_price_as_an_exact_decimal(venue_server):
    venue_server.route(recorded.BINANCE_TICKER, Reply(recorded.binance_ticker("2001.50123456")))

    price = ask(venue_server, "binance")

    assert price == Decimal("2001.50123456")
    assert isinstance(price, Decimal)
    (hit,) = venue_server.hits_on(recorded.BINANCE_TICKER)
    assert hit.query == {"symbol": "ETHUSDT"}
    assert hit.user_agent == venues.USER_AGENT


def test_binance_answer_for_another_pair_is_rejected(venue_server):
    venue_server.route(recorded.BINANCE_TICKER, Reply(recorded.binance_ticker("1.0002", symbol="USDCUSDT")))

    with pytest.raises(VenueError, match="answered for pair 'USDCUSDT'"):
        ask(venue_server, "binance")


def test_binance_error_object_is_reported_with_its_code(venue_server):
    venue_server.route(recorded.BINANCE_TICKER, Reply(recorded.BINANCE_INVALID_SYMBOL, status=400))

    with pytest.raises(VenueError, match=r"HTTP 400.*-1121"):
        ask(venue_server, "binance")


def test_binance_klines_give_open_minute_and_close(venue_server):
    start = recorded.now_utc().replace(second=0, microsecond=0) - timedelta(minutes=30)
    venue_server.route(recorded.BINANCE_KLINES, Reply(recorded.binance_klines(start, ["2000.1", "2000.2"])))

    got = klines(venue_server, "binance", start)

    assert [(k.minute, k.close) for k in got] == [
        (start, Decimal("2000.1")),
        (start + timedelta(minutes=1), Decimal("2000.2")),
    ]
    (hit,) = venue_server.hits_on(recorded.BINANCE_KLINES)
    assert hit.query == {
        "symbol": "ETHUSDT",
        "interval": "1m",
        "startTime": str(int(start.timestamp()) * 1000),
        "limit": "10",
    }


# --- coinbase ---------------------------------------------------------------------------------


def test_coinbase_quotes_the_spot_amount(venue_server):
    venue_server.route(recorded.COINBASE_SPOT, Reply(recorded.coinbase_spot("2001.47")))

    assert ask(venue_server, "coinbase") == Decimal("2001.47")


def test_coinbase_answer_for_another_currency_is_rejected(venue_server):
    venue_server.route(recorded.COINBASE_SPOT, Reply(recorded.coinbase_spot("1850.10", currency="EUR")))

    with pytest.raises(VenueError, match="answered for pair 'ETH-EUR'"):
        ask(venue_server, "coinbase")


def test_coinbase_errors_array_is_reported(venue_server):
    venue_server.route(recorded.COINBASE_SPOT, Reply(recorded.COINBASE_NOT_FOUND, status=404))

    with pytest.raises(VenueError, match=r"HTTP 404.*Invalid currency"):
        ask(venue_server, "coinbase")


# --- kraken -----------------------------------------------------------------------------------


@pytest.mark.parametrize("spelling", ["XETHZUSD", "ETHUSD"])
def test_kraken_takes_the_single_result_entry_under_either_spelling(venue_server, spelling):
    venue_server.route(recorded.KRAKEN_TICKER, Reply(recorded.kraken_ticker("2001.61000", key=spelling)))

    assert ask(venue_server, "kraken") == Decimal("2001.61000")


def test_kraken_error_array_sent_with_http_200_is_reported(venue_server):
    venue_server.route(recorded.KRAKEN_TICKER, Reply(recorded.kraken_error("EQuery:Unknown asset pair")))

    with pytest.raises(VenueError, match="error array: EQuery:Unknown asset pair"):
        ask(venue_server, "kraken")


def test_kraken_renamed_pair_is_rejected(venue_server):
    venue_server.route(recorded.KRAKEN_TICKER, Reply(recorded.kraken_ticker("1850.0", key="XETHZEUR")))

    with pytest.raises(VenueError, match="answered for pair 'XETHZEUR'"):
        ask(venue_server, "kraken")


def test_kraken_ohlc_rows_are_read_and_limited_to_the_window(venue_server):
    start = recorded.now_utc().replace(second=0, microsecond=0) - timedelta(minutes=30)
    closes = ["1999.9", None, "2000.3"] + ["2000.5"] * 9  # 12 minutes, one without trades
    venue_server.route(recorded.KRAKEN_OHLC, Reply(recorded.kraken_ohlc(start, closes)))

    got = klines(venue_server, "kraken", start)

    assert [k.minute for k in got] == [start] + [start + timedelta(minutes=m) for m in range(2, 10)]
    assert got[0].close == Decimal("1999.9")
    (hit,) = venue_server.hits_on(recorded.KRAKEN_OHLC)
    assert hit.query == {"pair": "ETHUSD", "interval": "1", "since": str(int(start.timestamp()) - 60)}


# --- kucoin -----------------------------------------------------------------------------------


def test_kucoin_fresh_quote_is_used(venue_server):
    venue_server.route(recorded.KUCOIN_TICKER, Reply(recorded.kucoin_level1("2001.3", recorded.now_utc())))

    assert ask(venue_server, "kucoin") == Decimal("2001.3")


def test_kucoin_quote_older_than_two_minutes_is_stale(venue_server):
    taken = recorded.now_utc() - timedelta(minutes=2, seconds=30)
    venue_server.route(recorded.KUCOIN_TICKER, Reply(recorded.kucoin_level1("1990.0", taken)))

    with pytest.raises(VenueError, match=r"stale quote: taken 15\d s ago"):
        ask(venue_server, "kucoin")


def test_kucoin_quote_stamped_in_the_future_is_rejected(venue_server):
    taken = recorded.now_utc() + timedelta(seconds=45)
    venue_server.route(recorded.KUCOIN_TICKER, Reply(recorded.kucoin_level1("2001.3", taken)))

    with pytest.raises(VenueError, match="in the future"):
        ask(venue_server, "kucoin")


def test_kucoin_quote_a_few_seconds_ahead_is_accepted(venue_server):
    taken = recorded.now_utc() + timedelta(seconds=10)
    venue_server.route(recorded.KUCOIN_TICKER, Reply(recorded.kucoin_level1("2001.3", taken)))

    assert ask(venue_server, "kucoin") == Decimal("2001.3")


@pytest.mark.parametrize(
    ("body", "reason"),
    [(recorded.KUCOIN_BAD_SYMBOL, "error 400100"), (recorded.KUCOIN_NO_DATA, "no data")],
)
def test_kucoin_error_shapes_are_reported(venue_server, body, reason):
    venue_server.route(recorded.KUCOIN_TICKER, Reply(body))

    with pytest.raises(VenueError, match=reason):
        ask(venue_server, "kucoin")


def test_kucoin_candles_are_read_newest_first(venue_server):
    start = recorded.now_utc().replace(second=0, microsecond=0) - timedelta(minutes=30)
    venue_server.route(recorded.KUCOIN_CANDLES, Reply(recorded.kucoin_candles(start, ["2000.1", "2000.7"])))

    got = klines(venue_server, "kucoin", start)

    assert sorted((k.minute, k.close) for k in got) == [
        (start, Decimal("2000.1")),
        (start + timedelta(minutes=1), Decimal("2000.7")),
    ]


# --- bitfinex ---------------------------------------------------------------------------------


def test_bitfinex_last_price_from_json_numbers_stays_exact(venue_server):
    venue_server.route(recorded.BITFINEX_TICKER, Reply(recorded.bitfinex_ticker("2001.123456789012345")))

    assert ask(venue_server, "bitfinex") == Decimal("2001.123456789012345")


def test_bitfinex_error_array_is_reported(venue_server):
    venue_server.route(recorded.BITFINEX_TICKER, Reply(recorded.BITFINEX_INVALID_SYMBOL, status=500))

    with pytest.raises(VenueError, match=r"HTTP 500.*10020"):
        ask(venue_server, "bitfinex")


def test_bitfinex_candles_are_read(venue_server):
    start = recorded.now_utc().replace(second=0, microsecond=0) - timedelta(minutes=30)
    venue_server.route(recorded.BITFINEX_CANDLES, Reply(recorded.bitfinex_candles(start, ["2000.25"])))

    (kline,) = klines(venue_server, "bitfinex", start)

    assert (kline.minute, kline.close) == (start, Decimal("2000.25"))


# --- cex.io -----------------------------------------------------------------------------------


def test_cexio_fresh_quote_for_the_pair_is_used(venue_server):
    venue_server.route(recorded.CEXIO_TICKER, Reply(recorded.cexio_ticker("2001.9", recorded.now_utc())))

    assert ask(venue_server, "cexio") == Decimal("2001.9")


def test_cexio_answer_for_another_pair_is_rejected(venue_server):
    venue_server.route(recorded.CEXIO_TICKER, Reply(recorded.cexio_ticker("0.05", recorded.now_utc(), pair="ETH:BTC")))

    with pytest.raises(VenueError, match="answered for pair 'ETH:BTC'"):
        ask(venue_server, "cexio")


def test_cexio_stale_quote_is_rejected(venue_server):
    taken = recorded.now_utc() - timedelta(minutes=20)
    venue_server.route(recorded.CEXIO_TICKER, Reply(recorded.cexio_ticker("1990.0", taken)))

    with pytest.raises(VenueError, match="stale quote"):
        ask(venue_server, "cexio")


def test_cexio_error_object_is_reported(venue_server):
    venue_server.route(recorded.CEXIO_TICKER, Reply(recorded.CEXIO_INVALID_PAIR))

    with pytest.raises(VenueError, match="Invalid Symbols Pair"):
        ask(venue_server, "cexio")


# --- faults common to every venue -----------------------------------------------------------------


@pytest.mark.parametrize("last", ["0", "-2001.5", "NaN", "abc", ""])
def test_a_non_positive_or_unparseable_price_is_rejected(venue_server, last):
    venue_server.route(recorded.COINBASE_SPOT, Reply(recorded.coinbase_spot(last)))

    with pytest.raises(VenueError, match="amount"):
        ask(venue_server, "coinbase")


def test_a_5xx_is_reported_with_its_status(venue_server):
    venue_server.route(recorded.KRAKEN_TICKER, Reply("<html>502 Bad Gateway</html>", status=502))

    with pytest.raises(VenueError, match="HTTP 502 with a body that is not JSON"):
        ask(venue_server, "kraken")


def test_malformed_json_is_reported(venue_server):
    venue_server.route(recorded.BINANCE_TICKER, Reply('{"symbol":"ETHUSDT","lastPrice":"20'))

    with pytest.raises(VenueError, match="not JSON"):
        ask(venue_server, "binance")


def test_a_hanging_venue_times_out_under_the_client_timeout(venue_server):
    venue_server.route(recorded.CEXIO_TICKER, Reply(hang=True))

    with pytest.raises(VenueError, match="no answer within 1 s"):
        ask(venue_server, "cexio")


def test_a_venue_trickling_its_answer_is_cut_at_the_timeout_of_the_whole_call(venue_server):
    # Each byte arrives well inside any per-read time-out; the whole answer would take ~40 s.
    venue_server.route(recorded.CEXIO_TICKER, Reply(recorded.cexio_ticker("2001.5", recorded.now_utc()), trickle=0.2))

    with pytest.raises(VenueError, match="no answer within 1 s"):
        ask(venue_server, "cexio")


def test_a_redirect_is_not_followed(venue_server):
    # A redirect to a server that would answer: taking it would let the venue (or a proxy) send us anywhere.
    venue_server.route("/elsewhere", Reply(recorded.binance_ticker("9999")))
    venue_server.route(recorded.BINANCE_TICKER, Reply("", 302, {"Location": f"{venue_server.url}/elsewhere"}))

    with pytest.raises(VenueError, match="HTTP 302: a redirect, not followed"):
        ask(venue_server, "binance")
    assert venue_server.hits_on("/elsewhere") == []


def test_an_answer_beyond_the_cap_is_refused_unread(venue_server):
    padded = recorded.binance_ticker("2001.5")[:-1] + "," + '"pad":"' + "x" * (300 * 1024) + '"}'
    venue_server.route(recorded.BINANCE_TICKER, Reply(padded))

    with pytest.raises(VenueError, match="answer larger than 256 KiB"):
        ask(venue_server, "binance")


def test_deeply_nested_json_is_refused_before_it_is_parsed(venue_server):
    venue_server.route(recorded.BINANCE_TICKER, Reply("[" * 50_000 + "]" * 50_000))

    with pytest.raises(VenueError, match="nested deeper than"):
        ask(venue_server, "binance")


def test_an_unreachable_venue_is_named_by_origin_only(venue_server):
    venue_server.close()  # nothing listens on the port any more
    urls = {name: venue_server.url for name in venue_server.urls()}

    with pytest.raises(VenueError) as raised:
        venues.coinbase_quote(client_for("coinbase", urls=urls, timeout=TIMEOUT), recorded.now_utc())

    assert str(raised.value) == f"request to {venue_server.url} failed (connection refused)"


def test_a_rate_limited_venue_is_paused_for_every_worker_until_its_window_ends(venue_server):
    venue_server.route(
        recorded.BINANCE_TICKER, Reply('{"code":-1003,"msg":"Too many requests."}', 429, {"Retry-After": "30"})
    )

    with pytest.raises(VenueError, match=r"rate limited \(HTTP 429\)"):
        ask(venue_server, "binance")
    venue_server.route(recorded.BINANCE_TICKER, Reply(recorded.binance_ticker("2001.5")))
    with pytest.raises(VenueError, match="paused after a rate limit"):
        ask(venue_server, "binance")

    assert len(venue_server.hits_on(recorded.BINANCE_TICKER)) == 1  # the window was not spent again
    assert venues.paused_until("binance") is not None


def test_a_venue_rate_limit_whose_retry_after_is_a_non_ascii_digit_pauses_it_for_the_default_window(venue_server):
    # '²' is a digit to str.isdigit and not to int(): the venue's word is ignored, never an exception.
    venue_server.route(recorded.BINANCE_TICKER, Reply('{"code":-1003}', 429, {"Retry-After": "\u00b2"}))

    with pytest.raises(VenueError, match=r"rate limited \(HTTP 429\)"):
        ask(venue_server, "binance")

    assert venues.paused_until("binance") is not None


# --- configuration ------------------------------------------------------------------------------


def test_venue_base_urls_default_to_the_public_apis():
    urls = base_urls({})

    assert urls["kraken"] == "https://api.kraken.com"
    assert urls["cexio"] == "https://cex.io"
    assert set(urls) == {"binance", "coinbase", "kraken", "kucoin", "bitfinex", "cexio"}


def test_a_venue_url_override_comes_from_the_environment():
    config = load_config({**os.environ, "DWS_VENUE_KRAKEN_URL": "http://127.0.0.1:18601/"})

    assert base_urls(config.venue_urls)["kraken"] == "http://127.0.0.1:18601"
    assert base_urls(config.venue_urls)["binance"] == "https://api.binance.com"


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("DWS_VENUE_KRAKEN_URL", "http://proxy.example.org:8080"),
        ("DWS_VENUE_CEXIO_URL", "https://proxy.example.org/api"),
        ("DWS_VENUE_TIMEOUT", "0.1"),
        ("DWS_VENUE_TIMEOUT", "31"),
        ("DWS_VENUE_TIMEOUT", "soon"),
    ],
)
def test_bad_price_settings_are_refused_naming_the_variable(variable, value):
    with pytest.raises(ConfigError) as raised:
        load_config({**os.environ, variable: value})

    assert [var for var, _ in raised.value.problems] == [variable]


def test_the_venue_timeout_is_read_in_seconds():
    assert load_config({**os.environ, "DWS_VENUE_TIMEOUT": "2.5"}).venue_timeout == 2.5
    assert load_config({k: v for k, v in os.environ.items() if k != "DWS_VENUE_TIMEOUT"}).venue_timeout == 5.0
