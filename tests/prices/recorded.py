"""Responses in the exact shapes the venues document (values are ours), as raw JSON text.

Kept as text rather than built with json.dumps so prices travel exactly as the venues send them:
strings for most, bare JSON numbers for bitfinex.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

BINANCE_TICKER = "/api/v3/ticker/24hr"
BINANCE_KLINES = "/api/v3/klines"
COINBASE_SPOT = "/v2/prices/ETH-USD/spot"
KRAKEN_TICKER = "/0/public/Ticker"
KRAKEN_OHLC = "/0/public/OHLC"
KUCOIN_TICKER = "/api/v1/market/orderbook/level1"
KUCOIN_CANDLES = "/api/v1/market/candles"
BITFINEX_TICKER = "/v2/ticker/tETHUSD"
BITFINEX_CANDLES = "/v2/candles/trade:1m:tETHUSD/hist"
CEXIO_TICKER = "/api/ticker/ETH/USD"


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def binance_ticker(last: str, symbol: str = "ETHUSDT") -> str:
    return (
        f'{{"symbol":"{symbol}","priceChange":"-12.30000000","priceChangePercent":"-0.610",'
        f'"weightedAvgPrice":"1995.11000000","prevClosePrice":"2013.80000000","lastPrice":"{last}",'
        '"lastQty":"0.05000000","bidPrice":"2001.49000000","bidQty":"12.10000000","askPrice":"2001.51000000",'
        '"askQty":"3.20000000","openPrice":"2013.80000000","highPrice":"2030.00000000","lowPrice":"1980.00000000",'
        '"volume":"250000.00000000","quoteVolume":"498000000.00000000","openTime":1700000000000,'
        '"closeTime":1700086399999,"firstId":1,"lastId":1000,"count":1000}'
    )


BINANCE_INVALID_SYMBOL = '{"code":-1121,"msg":"Invalid symbol."}'


def binance_klines(start: datetime, closes: list[str]) -> str:
    rows = []
    for i, close in enumerate(closes):
        opened = start + timedelta(minutes=i)
        rows.append(
            f'[{_ms(opened)},"{close}","{close}","{close}","{close}","10.5",{_ms(opened) + 59999},'
            f'"21000.1",42,"5.1","10200.2","0"]'
        )
    return "[" + ",".join(rows) + "]"


def coinbase_spot(amount: str, base: str = "ETH", currency: str = "USD") -> str:
    return f'{{"data":{{"amount":"{amount}","base":"{base}","currency":"{currency}"}}}}'


COINBASE_NOT_FOUND = '{"errors":[{"id":"not_found","message":"Invalid currency"}]}'


def kraken_ticker(last: str, key: str = "XETHZUSD") -> str:
    return (
        f'{{"error":[],"result":{{"{key}":{{"a":["2001.60000","3","3.000"],"b":["2001.40000","1","1.000"],'
        f'"c":["{last}","0.01000000"],"v":["1000.1","5000.2"],"p":["1999.1","1998.2"],"t":[1200,6400],'
        '"l":["1980.00000","1975.00000"],"h":["2030.00000","2035.00000"],"o":"2013.80000"}}}'
    )


def kraken_error(*messages: str) -> str:
    return json.dumps({"error": list(messages)})


def kraken_ohlc(start: datetime, closes: list[str | None], key: str = "XETHZUSD") -> str:
    """Rows for consecutive minutes from `start`; None leaves a gap (no trades, no row)."""
    rows = []
    for i, close in enumerate(closes):
        if close is None:
            continue
        opened = int((start + timedelta(minutes=i)).timestamp())
        rows.append(f'[{opened},"{close}","{close}","{close}","{close}","{close}","1.25",7]')
    last = int((start + timedelta(minutes=len(closes) - 1)).timestamp())
    return f'{{"error":[],"result":{{"{key}":[{",".join(rows)}],"last":{last}}}}}'


def kucoin_level1(price: str, quoted_at: datetime) -> str:
    return (
        f'{{"code":"200000","data":{{"time":{_ms(quoted_at)},"sequence":"1550467636704","price":"{price}",'
        '"size":"0.17","bestBid":"2001.4","bestBidSize":"0.5","bestAsk":"2001.6","bestAskSize":"1.2"}}'
    )


KUCOIN_BAD_SYMBOL = '{"code":"400100","msg":"This pair is not provided at present"}'
KUCOIN_NO_DATA = '{"code":"200000","data":null}'


def kucoin_candles(start: datetime, closes: list[str]) -> str:
    rows = []
    for i, close in enumerate(closes):
        opened = int((start + timedelta(minutes=i)).timestamp())
        rows.append(f'["{opened}","{close}","{close}","{close}","{close}","3.1","6200.5"]')
    return '{"code":"200000","data":[' + ",".join(reversed(rows)) + "]}"  # newest first


def bitfinex_ticker(last: str) -> str:
    return f"[2001.4,12.5,2001.6,8.25,-12.3,-0.0061,{last},25000.5,2030,1980]"


BITFINEX_INVALID_SYMBOL = '["error",10020,"symbol: invalid"]'


def bitfinex_candles(start: datetime, closes: list[str]) -> str:
    rows = []
    for i, close in enumerate(closes):
        rows.append(f"[{_ms(start + timedelta(minutes=i))},{close},{close},{close},{close},2.5]")
    return "[" + ",".join(rows) + "]"


def cexio_ticker(last: str, quoted_at: datetime, pair: str = "ETH:USD") -> str:
    return (
        f'{{"timestamp":"{int(quoted_at.timestamp())}","low":"1980","high":"2030","last":"{last}",'
        f'"volume":"1500.2","volume30d":"45000.1","bid":2001.4,"ask":2001.6,"priceChange":"-12.3",'
        f'"priceChangePercentage":"-0.61","pair":"{pair}"}}'
    )


CEXIO_INVALID_PAIR = '{"error":"Invalid Symbols Pair"}'


def now_utc() -> datetime:
    return datetime.now(UTC)
