"""The six exchanges the ETH price is taken from: one small adapter per venue.

Each adapter asks one documented public REST endpoint for a spot quote (and, for four of them, for
one-minute klines), checks what the venue says about the answer (the pair it answered for, the time
its quote was taken, the error shapes it uses) and returns a `Decimal` parsed straight from the JSON
text. Anything it cannot vouch for raises `VenueError` with a short reason that is safe to log and to
store in the price's audit trail: the venue then drops out of the cycle.

Every call goes through dws_project/egress.py with a descriptive User-Agent: the whole exchange ends
within the client time-out (a venue trickling its answer a byte at a time cannot stretch it), the answer
is read up to MAX_ANSWER_BYTES and nested at most MAX_ANSWER_DEPTH deep, and a redirect is an answer,
never followed. Whatever breaks one of those bounds drops the venue from the cycle, like any other
failure. A venue's base URL comes from `DWS_VENUE_<NAME>_URL` when set (an egress proxy, or a local
server in the tests) and the adapter appends the documented path.

A 429 (or binance's 418) pauses that venue for every worker: the pause lives in Redis, because the
request budget is shared by all our processes, and asking again inside the window only burns it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from redis.exceptions import RedisError

from dws_project import egress
from dws_project.digits import whole_number
from dws_project.json_limits import json_depth
from dws_project.redaction import redact, redact_url
from dws_project.redis_client import get_redis

logger = logging.getLogger("dws.prices.venues")

USER_AGENT = "dws-price-service/1.0 (ETH/USD spot and 1m klines; public market data only)"
MAX_QUOTE_AGE = timedelta(minutes=2)  # older venue-stamped quotes are stale
MAX_QUOTE_LEAD = timedelta(seconds=30)  # a quote stamped further in the future is not trusted
DEFAULT_RATE_LIMIT_PAUSE = 60  # seconds, when a 429 carries no usable Retry-After
MAX_RATE_LIMIT_PAUSE = 600
# A ticker is under 1 KB; kraken's OHLC since a minute half a day back is ~50 KB (720 rows).
MAX_ANSWER_BYTES = 256 * 1024
MAX_ANSWER_DEPTH = 8  # the venues' shapes nest 4 deep at most


class VenueError(Exception):
    """A venue gave no usable answer; the message is the reason, safe for logs and the audit trail."""


@dataclass(frozen=True)
class Kline:
    """One closed-or-not one-minute candle: the minute it opened and its close price."""

    venue: str
    minute: datetime  # UTC, second 0
    close: Decimal


def _pause_key(venue: str) -> str:
    return f"dws:venue-pause:{venue}"


def paused_until(venue: str) -> datetime | None:
    """When a venue's rate-limit pause ends, or None when it may be asked."""
    try:
        value = get_redis().get(_pause_key(venue))
    except RedisError:
        return None  # a Redis outage must not stop the price feed
    if not value:
        return None
    return datetime.fromisoformat(value.decode() if isinstance(value, bytes) else value)


def _pause(venue: str, retry_after: str | None) -> datetime:
    seconds = DEFAULT_RATE_LIMIT_PAUSE
    if (asked := whole_number(retry_after)) is not None:
        seconds = min(max(asked, 1), MAX_RATE_LIMIT_PAUSE)
    until = datetime.now(UTC) + timedelta(seconds=seconds)
    try:
        get_redis().set(_pause_key(venue), until.isoformat(), ex=seconds)
    except RedisError as exc:
        logger.warning("venue %s: could not record its rate-limit pause: %s", venue, redact(exc))
    return until


# --- the common request path ------------------------------------------------------------------


_HEADERS = {"User-Agent": USER_AGENT, "Accept": "application/json"}


@dataclass(frozen=True)
class VenueClient:
    """How one venue is reached in this run: its base URL and the time-out of each call (all of it)."""

    venue: str
    base_url: str
    timeout: float

    def get_json(self, path: str, params: Mapping[str, str | int] | None = None) -> Any:
        """GET base_url+path and decode the body with every JSON number as a Decimal."""
        until = paused_until(self.venue)
        if until is not None:
            raise VenueError(f"paused after a rate limit until {until:%H:%M:%S} UTC")
        url = self.base_url + path + (f"?{urlencode(params)}" if params else "")
        try:
            # The operator names the venue's base URL (DWS_VENUE_*_URL), so any address it resolves to is
            # allowed; the answer is still bounded in time, size and depth.
            reply = egress.request(
                "GET", url, headers=_HEADERS, timeout=self.timeout, max_bytes=MAX_ANSWER_BYTES, public_only=False
            )
        except egress.EgressTimeout:
            raise VenueError(f"no answer within {self.timeout:g} s") from None
        except egress.EgressTooLarge:
            raise VenueError(f"answer larger than {MAX_ANSWER_BYTES // 1024} KiB") from None
        except egress.EgressError as exc:
            # Never the URL (an egress proxy's may carry a token): the origin and the kind of failure only.
            raise VenueError(f"request to {redact_url(self.base_url)} failed ({exc})") from None
        if reply.status in (418, 429):
            until = _pause(self.venue, reply.headers.get("retry-after"))
            raise VenueError(f"rate limited (HTTP {reply.status}), paused until {until:%H:%M:%S} UTC")
        if 300 <= reply.status < 400:
            raise VenueError(f"HTTP {reply.status}: a redirect, not followed")
        body = _decode(reply)
        if reply.status >= 400:
            raise VenueError(f"HTTP {reply.status}: {_describe_error(body)}")
        return body


def _decode(reply: egress.Reply) -> Any:
    try:
        text = reply.body.decode("utf-8")
    except UnicodeDecodeError:
        raise VenueError(f"HTTP {reply.status} with a body that is not UTF-8") from None
    if json_depth(text) > MAX_ANSWER_DEPTH:
        raise VenueError(f"HTTP {reply.status} with JSON nested deeper than {MAX_ANSWER_DEPTH}")
    try:
        return json.loads(text, parse_float=Decimal)
    except ValueError:
        raise VenueError(f"HTTP {reply.status} with a body that is not JSON") from None


def _describe_error(body: Any) -> str:
    """The venue's own words from its error shape, shortened; never more than 200 characters."""
    text = json.dumps(body, default=str)
    return text[:200]


def to_price(value: Any, what: str = "price") -> Decimal:
    """A strictly positive, finite Decimal from a JSON string or number (never via float)."""
    if isinstance(value, bool) or value is None or isinstance(value, float):
        raise VenueError(f"{what} is not a decimal: {value!r}")
    try:
        price = Decimal(value) if isinstance(value, (int, Decimal)) else Decimal(str(value).strip())
    except (InvalidOperation, ValueError):
        raise VenueError(f"{what} is not a decimal: {str(value)[:40]!r}") from None
    if not price.is_finite():
        raise VenueError(f"{what} is not finite: {value!r}")
    if price <= 0:
        raise VenueError(f"non-positive {what}: {price}")
    return price


def check_pair(asked: str, answered: Any) -> None:
    """A venue that echoes the instrument must echo the one we asked for (a renamed pair is not ETH)."""
    if answered != asked:
        raise VenueError(f"answered for pair {str(answered)[:40]!r}, asked for {asked!r}")


def check_quote_time(stamped: datetime, now: datetime) -> None:
    """Reject a venue-stamped quote older than 2 minutes or more than 30 s ahead of our clock."""
    if stamped < now - MAX_QUOTE_AGE:
        raise VenueError(f"stale quote: taken {int((now - stamped).total_seconds())} s ago")
    if stamped > now + MAX_QUOTE_LEAD:
        raise VenueError(f"quote stamped {int((stamped - now).total_seconds())} s in the future")


def _epoch(value: Any, *, millis: bool) -> datetime:
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        raise VenueError(f"timestamp is not a number: {str(value)[:40]!r}") from None
    if not number.is_finite():
        raise VenueError("timestamp is not finite")
    seconds = number / 1000 if millis else number
    return datetime.fromtimestamp(int(seconds), tz=UTC)


def _expect(condition: bool, reason: str) -> None:
    if not condition:
        raise VenueError(reason)


# --- binance ------------------------------------------------------------------------------------


def binance_quote(client: VenueClient, now: datetime) -> Decimal:
    """binance spot: GET /api/v3/ticker/24hr?symbol=ETHUSDT.

    Verified (binance-spot-api-docs rest-api, "24hr ticker price change statistics"): an object with
    `symbol` and string prices incl. `lastPrice` (spot; `weightedAvgPrice` lags and is not used);
    errors come as HTTP 4xx `{"code": -1121, "msg": "Invalid symbol."}`. Quoted in USDT.
    """
    body = client.get_json("/api/v3/ticker/24hr", {"symbol": "ETHUSDT"})
    _expect(isinstance(body, dict), "answer is not an object")
    if "code" in body and "msg" in body:
        raise VenueError(f"error {body['code']}: {str(body['msg'])[:120]}")
    check_pair("ETHUSDT", body.get("symbol"))
    return to_price(body.get("lastPrice"), "lastPrice")


def binance_klines(client: VenueClient, start: datetime, count: int) -> list[Kline]:
    """GET /api/v3/klines?symbol=ETHUSDT&interval=1m&startTime=<ms>&limit=<n>.

    Verified (binance docs "Kline/Candlestick data"): an array of arrays
    `[openTime ms, open, high, low, close, volume, closeTime ms, ...]`, prices as strings; the last row
    is the candle still in progress when the window reaches the present.
    """
    body = client.get_json(
        "/api/v3/klines",
        {"symbol": "ETHUSDT", "interval": "1m", "startTime": int(start.timestamp()) * 1000, "limit": count},
    )
    if isinstance(body, dict) and "code" in body:
        raise VenueError(f"error {body['code']}: {str(body.get('msg'))[:120]}")
    _expect(isinstance(body, list), "klines answer is not an array")
    klines = [Kline("binance", _epoch(row[0], millis=True), to_price(row[4], "close")) for row in _rows(body, 5)]
    end = start + timedelta(minutes=count)
    return [k for k in klines if start <= k.minute < end]


# --- coinbase -----------------------------------------------------------------------------------


def coinbase_quote(client: VenueClient, now: datetime) -> Decimal:
    """coinbase: GET /v2/prices/ETH-USD/spot (no authentication needed).

    Verified (docs.cdp.coinbase.com "Data API - Prices", Get Spot Price, no authentication):
    `{"data": {"amount": "...", "base": "ETH", "currency": "USD"}}`. The v2 API's error body is
    `{"errors": [{"id": ..., "message": ...}]}` (not found in the search index; from its conventions).
    The echoed base/currency is checked against ETH-USD.
    """
    body = client.get_json("/v2/prices/ETH-USD/spot")
    _expect(isinstance(body, dict), "answer is not an object")
    if body.get("errors"):
        raise VenueError(f"errors: {_describe_error(body['errors'])}")
    data = body.get("data")
    _expect(isinstance(data, dict), "answer has no data object")
    check_pair("ETH-USD", f"{data.get('base')}-{data.get('currency')}")
    return to_price(data.get("amount"), "amount")


# --- kraken -------------------------------------------------------------------------------------

KRAKEN_PAIR_SPELLINGS = frozenset({"XETHZUSD", "ETHUSD"})


def _kraken_result(body: Any) -> dict:
    _expect(isinstance(body, dict), "answer is not an object")
    errors = body.get("error")
    if errors:  # kraken reports errors in this array while still answering HTTP 200
        raise VenueError(f"error array: {', '.join(str(e)[:80] for e in errors)}")
    result = body.get("result")
    _expect(isinstance(result, dict), "answer has no result object")
    return result


def _kraken_single_pair(result: dict) -> Any:
    pairs = [key for key in result if key != "last"]
    _expect(len(pairs) == 1, f"expected one pair in the result, got {len(pairs)}")
    _expect(pairs[0] in KRAKEN_PAIR_SPELLINGS, f"answered for pair {pairs[0][:40]!r}, asked for ETHUSD (XETHZUSD)")
    return result[pairs[0]]


def kraken_quote(client: VenueClient, now: datetime) -> Decimal:
    """kraken: GET /0/public/Ticker?pair=ETHUSD.

    Verified (docs.kraken.com "Get Ticker Information"): `{"error": [], "result": {"XETHZUSD": {"c":
    [last trade price, lot volume], ...}}}`. The result is keyed by kraken's own spelling of the pair,
    so its single entry is taken and checked under either spelling; a populated `error` array (sent
    with HTTP 200) is reported.
    """
    ticker = _kraken_single_pair(_kraken_result(client.get_json("/0/public/Ticker", {"pair": "ETHUSD"})))
    _expect(isinstance(ticker, dict), "ticker entry is not an object")
    last = ticker.get("c")
    _expect(isinstance(last, list) and len(last) >= 1, "ticker has no last trade (c)")
    return to_price(last[0], "last trade price")


def kraken_klines(client: VenueClient, start: datetime, count: int) -> list[Kline]:
    """GET /0/public/OHLC?pair=ETHUSD&interval=1&since=<s>.

    Verified (docs.kraken.com "Get OHLC Data"): `result` holds the pair's rows `[time s, open, high,
    low, close, vwap, volume, count]` and `last`; the last row is the current, not yet committed
    frame; only the 720 most recent rows are served.
    """
    since = int(start.timestamp()) - 60  # kraken returns rows after `since`
    rows = _kraken_single_pair(
        _kraken_result(client.get_json("/0/public/OHLC", {"pair": "ETHUSD", "interval": 1, "since": since}))
    )
    _expect(isinstance(rows, list), "OHLC entry is not an array")
    klines = [Kline("kraken", _epoch(row[0], millis=False), to_price(row[4], "close")) for row in _rows(rows, 5)]
    end = start + timedelta(minutes=count)
    return [k for k in klines if start <= k.minute < end]


# --- kucoin -------------------------------------------------------------------------------------


def _kucoin_data(body: Any) -> Any:
    _expect(isinstance(body, dict), "answer is not an object")
    if body.get("code") != "200000":
        raise VenueError(f"error {str(body.get('code'))[:20]}: {str(body.get('msg'))[:120]}")
    return body.get("data")


def kucoin_quote(client: VenueClient, now: datetime) -> Decimal:
    """kucoin: GET /api/v1/market/orderbook/level1?symbol=ETH-USDT.

    Verified (path and `data` fields `time` ms, `sequence`, `price`, `size`, `bestBid`, `bestAsk`... in the
    kucoin_api client's Ticker model; the envelope `{"code": "200000", "data": ...}`, any other code
    being an error with `msg`, is KuCoin's documented convention). The body names no instrument;
    the quote time is checked (older than 2 min or more than 30 s ahead is rejected). Quoted in USDT.
    """
    data = _kucoin_data(client.get_json("/api/v1/market/orderbook/level1", {"symbol": "ETH-USDT"}))
    _expect(isinstance(data, dict), "answer has no data (unknown symbol?)")
    check_quote_time(_epoch(data.get("time"), millis=True), now)
    return to_price(data.get("price"), "price")


def kucoin_klines(client: VenueClient, start: datetime, count: int) -> list[Kline]:
    """GET /api/v1/market/candles?type=1min&symbol=ETH-USDT&startAt=<s>&endAt=<s>.

    Verified (KuCoin's documented row shape as quoted by client code in the search index): `data` is an
    array, newest first, of string rows `[start s, open, close, high, low, volume, turnover]`.
    """
    end = start + timedelta(minutes=count)
    data = _kucoin_data(
        client.get_json(
            "/api/v1/market/candles",
            {
                "type": "1min",
                "symbol": "ETH-USDT",
                "startAt": int(start.timestamp()),
                "endAt": int(end.timestamp()),
            },
        )
    )
    _expect(isinstance(data, list), "klines data is not an array")
    klines = [Kline("kucoin", _epoch(row[0], millis=False), to_price(row[2], "close")) for row in _rows(data, 3)]
    return [k for k in klines if start <= k.minute < end]


# --- bitfinex -----------------------------------------------------------------------------------


def _bitfinex_check(body: Any) -> None:
    if isinstance(body, list) and body and body[0] == "error":
        raise VenueError(f"error {_describe_error(body[1:])}")


def bitfinex_quote(client: VenueClient, now: datetime) -> Decimal:
    """bitfinex: GET /v2/ticker/tETHUSD on the public API host.

    Verified (docs.bitfinex.com "Public Endpoints": public calls go to api-pub.bitfinex.com; "Ticker",
    trading pairs): a flat array `[BID, BID_SIZE, ASK, ASK_SIZE, DAILY_CHANGE, DAILY_CHANGE_RELATIVE,
    LAST_PRICE, VOLUME, HIGH, LOW]` of JSON numbers. Errors come as `["error", <code>, "<message>"]`
    (v2 convention; no page found in the index). The pair-specific path is the only instrument check.
    """
    body = client.get_json("/v2/ticker/tETHUSD")
    _bitfinex_check(body)
    _expect(isinstance(body, list) and len(body) >= 10, "ticker is not a 10-field array")
    return to_price(body[6], "LAST_PRICE")


def bitfinex_klines(client: VenueClient, start: datetime, count: int) -> list[Kline]:
    """GET /v2/candles/trade:1m:tETHUSD/hist?start=<ms>&end=<ms>&limit=<n>&sort=1.

    Verified (docs.bitfinex.com candles, same row layout on REST and websocket): rows
    `[MTS, OPEN, CLOSE, HIGH, LOW, VOLUME]` as JSON numbers.
    """
    end = start + timedelta(minutes=count)
    body = client.get_json(
        "/v2/candles/trade:1m:tETHUSD/hist",
        {
            "start": int(start.timestamp()) * 1000,
            "end": int(end.timestamp()) * 1000 - 1,
            "limit": count,
            "sort": 1,
        },
    )
    _bitfinex_check(body)
    _expect(isinstance(body, list), "candles answer is not an array")
    klines = [Kline("bitfinex", _epoch(row[0], millis=True), to_price(row[2], "close")) for row in _rows(body, 3)]
    return [k for k in klines if start <= k.minute < end]


# --- cex.io -------------------------------------------------------------------------------------


def cexio_quote(client: VenueClient, now: datetime) -> Decimal:
    """cex.io: GET /api/ticker/ETH/USD.

    Verified (path from client code; shape from a recorded cex.io response in public test code):
    `{"timestamp": "<s>", "low", "high", "last", "volume", "volume30d", "bid", "ask", "priceChange",
    "priceChangePercentage", "pair": "ETH:USD"}`. Errors are taken to be `{"error": "..."}` (not
    verified; any other shape still fails on the pair check). The echoed pair and quote time are checked.
    """
    body = client.get_json("/api/ticker/ETH/USD")
    _expect(isinstance(body, dict), "answer is not an object")
    if "error" in body:
        raise VenueError(f"error: {str(body['error'])[:120]}")
    check_pair("ETH:USD", body.get("pair"))
    check_quote_time(_epoch(body.get("timestamp"), millis=False), now)
    return to_price(body.get("last"), "last")


def _rows(rows: list, width: int) -> list[list]:
    for row in rows:
        _expect(isinstance(row, list) and len(row) >= width, "kline row has the wrong shape")
    return rows


# --- the registry ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Venue:
    name: str
    default_base_url: str
    quote: Callable[[VenueClient, datetime], Decimal]
    klines: Callable[[VenueClient, datetime, int], list[Kline]] | None = None


VENUES: tuple[Venue, ...] = (
    Venue("binance", "https://api.binance.com", binance_quote, binance_klines),
    Venue("coinbase", "https://api.coinbase.com", coinbase_quote),
    Venue("kraken", "https://api.kraken.com", kraken_quote, kraken_klines),
    Venue("kucoin", "https://api.kucoin.com", kucoin_quote, kucoin_klines),
    Venue("bitfinex", "https://api-pub.bitfinex.com", bitfinex_quote, bitfinex_klines),
    Venue("cexio", "https://cex.io", cexio_quote),
)
VENUES_BY_NAME = {venue.name: venue for venue in VENUES}
# Kline fallback order: USD-quoted venues first, the USDT-quoted ones after them.
KLINE_VENUES: tuple[str, ...] = ("kraken", "bitfinex", "binance", "kucoin")


def base_urls(overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """Each venue's base URL: the override (argument, else DWS_VENUE_<NAME>_URL) or its public one."""
    configured = settings.CONFIG.venue_urls if overrides is None else overrides
    return {venue.name: configured.get(venue.name, venue.default_base_url) for venue in VENUES}


def client_for(venue: str, *, urls: Mapping[str, str], timeout: float | None = None) -> VenueClient:
    return VenueClient(
        venue=venue,
        base_url=urls[venue].rstrip("/"),
        timeout=settings.CONFIG.venue_timeout if timeout is None else timeout,
    )
