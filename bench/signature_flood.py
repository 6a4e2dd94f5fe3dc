"""The signature flood of issue 21 (high 1): a visitor's `GET /` while one client sends bad signatures.

gunicorn with the production worker count (3 sync workers) in front of anvil behind the test proxy,
which makes the provider take `--latency` seconds (0.5 s by default) for every request. A visitor asks
for the page `--visitor-rate` times a second, first alone, then while an attacker posts `POST
/affiliate/code` with a fresh key whose signature does not recover at `--attack-rate` requests a second
(the contract-wallet path, which asks the provider): from one client address, inside the signed
endpoints' budget of 10/s, or spread over `--attack-clients` addresses. Prints the visitor's latency
(median, p90, max) alone and under attack, what the attacker got back, and how many requests reached
the provider.

    .venv/bin/python bench/signature_flood.py            # 20 s per phase
    .venv/bin/python bench/signature_flood.py --seconds 30 --latency 0.5

Uses the test settings and a throwaway test database (like the other benches), and ports from
TEST_PORT_RANGE when set.
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

import requests  # noqa: E402
from django.test.utils import setup_databases, teardown_databases  # noqa: E402
from eth_account import Account  # noqa: E402

from tests.api.support import wallet_headers, wallet_ts  # noqa: E402
from tests.chain import Anvil  # noqa: E402
from tests.rpc_proxy import RpcProxy  # noqa: E402
from tests.web_server import gunicorn  # noqa: E402

ATTACKER = "203.0.113.66"


def paced(rate: float, seconds: float, action) -> None:
    """Call `action()` `rate` times a second for `seconds`, on schedule (late calls do not pile up)."""
    interval = 1 / rate
    next_at = time.monotonic()
    deadline = next_at + seconds
    while time.monotonic() < deadline:
        time.sleep(max(0.0, next_at - time.monotonic()))
        next_at = max(next_at + interval, time.monotonic() - interval)
        action()


def visitor(base: str, rate: float, seconds: float) -> list[float]:
    session = requests.Session()
    session.headers["X-Forwarded-For"] = "198.51.100.7"
    latencies: list[float] = []

    def one() -> None:
        started = time.monotonic()
        session.get(f"{base}/", timeout=60).raise_for_status()
        latencies.append(time.monotonic() - started)

    paced(rate, seconds, one)
    return latencies


def attacker(base: str, rate: float, clients: int, stop: threading.Event, counts: collections.Counter) -> None:
    """`rate` bad signatures a second from `clients` addresses in turn, each on its own thread (an
    attacker does not wait for answers)."""
    sent = iter(range(10**9))

    def one() -> None:
        client = ATTACKER if clients == 1 else f"203.0.113.{next(sent) % clients + 1}"
        # A fresh key each time, so each message is new: its timestamp can be the current second.
        signed = wallet_headers(Account.create(), "affiliate code", signer=Account.create(), ts=wallet_ts())
        headers = {k.removeprefix("HTTP_").replace("_", "-").lower(): v for k, v in signed.items()}
        status: int | str  # the HTTP status, or the name of the exception that stood in for an answer
        try:
            status = requests.post(
                f"{base}/affiliate/code", headers={**headers, "X-Forwarded-For": client}, timeout=60
            ).status_code
        except requests.RequestException as exc:
            status = type(exc).__name__
        counts[str(status)] += 1

    while not stop.is_set():
        threading.Thread(target=one, daemon=True).start()
        stop.wait(1 / rate)


def summary(label: str, latencies: list[float]) -> str:
    ordered = sorted(latencies)
    p90 = ordered[int(0.9 * (len(ordered) - 1))]
    return (
        f"{label}: {len(ordered)} requests, median {statistics.median(ordered) * 1000:.1f} ms, "
        f"p90 {p90 * 1000:.1f} ms, max {ordered[-1] * 1000:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each phase")
    parser.add_argument("--latency", type=float, default=0.5, help="seconds the provider takes per request")
    parser.add_argument("--visitor-rate", type=float, default=5.0)
    parser.add_argument("--attack-rate", type=float, default=10.0)
    parser.add_argument("--attack-clients", type=int, default=1, help="addresses the attack comes from")
    parser.add_argument("--workers", type=int, default=3)
    args = parser.parse_args()

    old_config = setup_databases(verbosity=0, interactive=False)
    try:
        with Anvil() as node, RpcProxy(node.url) as provider:
            provider.arm("*", "hang", count=None, seconds=args.latency)
            env = {"ETH_RPC_URL": provider.url("/rpc"), "DWS_TRUSTED_PROXIES": "127.0.0.1/32"}
            with gunicorn(workers=args.workers, env=env) as base:
                # Warm-up: every worker has served the page and a signed request once (the first of each kind
                # in a worker imports its code: seconds on a loaded machine, paid once, not per request).
                visitor(base, args.visitor_rate, 3)
                warm: collections.Counter = collections.Counter()
                stop_warming = threading.Event()
                warming = threading.Thread(target=attacker, args=(base, 3.0, 3, stop_warming, warm), daemon=True)
                warming.start()
                time.sleep(4)
                stop_warming.set()
                warming.join()
                time.sleep(args.latency + 3)  # the budget refills; the warm-up's answers are in
                idle = visitor(base, args.visitor_rate, args.seconds)
                provider.seen.clear()
                counts: collections.Counter = collections.Counter()
                stop = threading.Event()
                attack = (base, args.attack_rate, args.attack_clients, stop, counts)
                flood = threading.Thread(target=attacker, args=attack, daemon=True)
                started = time.monotonic()
                flood.start()
                attacked = visitor(base, args.visitor_rate, args.seconds)
                stop.set()
                flood.join()
                elapsed = time.monotonic() - started
                time.sleep(args.latency + 2.5)  # the last attacks' answers
                posts = len(provider.seen)
    finally:
        teardown_databases(old_config, verbosity=0)

    print(
        f"provider latency {args.latency} s, {args.workers} gunicorn workers, "
        f"attack {args.attack_rate}/s from {args.attack_clients} address(es)"
    )
    print(summary("GET / alone       ", idle))
    print(summary("GET / under attack", attacked))
    ratio = statistics.median(attacked) / statistics.median(idle)
    print(f"median under attack / alone: {ratio:.2f}")
    print(f"attacker's answers: {dict(sorted(counts.items()))}")
    print(f"provider: {posts} requests in {elapsed:.1f} s of attack ({posts / elapsed:.2f}/s)")


if __name__ == "__main__":
    main()
