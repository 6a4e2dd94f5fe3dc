"""Benchmark: wall time of one price cycle's venue round with six local venues, one of them hanging.

Target: at most the venue time-out + 0.5 s (the six venues are asked at once, so a hung venue costs
one time-out, not six). Measures collect_quotes + aggregate, the part the venues decide; the single
INSERT that follows is not included.

    DATABASE_URL=... REDIS_URL=... .venv/bin/python bench/price_cycle.py [--timeout 2] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django

django.setup()

from prices.aggregation import aggregate  # noqa: E402
from prices.services import collect_quotes  # noqa: E402
from tests.prices import recorded  # noqa: E402
from tests.prices.conftest import Reply, VenueServer  # noqa: E402


def serve_six(server: VenueServer, *, hanging: str | None) -> None:
    now = recorded.now_utc()
    routes = {
        "binance": (recorded.BINANCE_TICKER, recorded.binance_ticker("2000.10")),
        "coinbase": (recorded.COINBASE_SPOT, recorded.coinbase_spot("2001.20")),
        "kraken": (recorded.KRAKEN_TICKER, recorded.kraken_ticker("2002.30")),
        "kucoin": (recorded.KUCOIN_TICKER, recorded.kucoin_level1("2003.40", now)),
        "bitfinex": (recorded.BITFINEX_TICKER, recorded.bitfinex_ticker("2004.50")),
        "cexio": (recorded.CEXIO_TICKER, recorded.cexio_ticker("2005.60", now)),
    }
    for venue, (path, body) in routes.items():
        server.route(path, Reply(hang=True) if venue == hanging else Reply(body))


def measure(server: VenueServer, *, timeout: float, runs: int, hanging: str | None) -> list[float]:
    times = []
    for _ in range(runs):
        serve_six(server, hanging=hanging)
        started = time.monotonic()
        result = aggregate(collect_quotes(now=recorded.now_utc(), urls=server.urls(), timeout=timeout))
        times.append(time.monotonic() - started)
        assert result.price is not None, result.reason
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=2.0)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    server = VenueServer()
    try:
        healthy = measure(server, timeout=args.timeout, runs=args.runs, hanging=None)
        hung = measure(server, timeout=args.timeout, runs=args.runs, hanging="bitfinex")
    finally:
        server.close()
    target = args.timeout + 0.5
    for label, times in (("six healthy venues", healthy), ("one venue hanging", hung)):
        print(
            f"{label:20s} runs={len(times)} min={min(times):.3f}s median={statistics.median(times):.3f}s "
            f"max={max(times):.3f}s"
        )
    verdict = "met" if max(hung) <= target else "MISSED"
    print(f"target: one hanging venue <= timeout + 0.5 s = {target:.1f}s: {verdict}")


if __name__ == "__main__":
    main()
