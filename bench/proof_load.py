"""The public proof under a hostile client (issue 35): the page's `/donation/data` beside one client spreading
`/proof.json`'s `from_block` over every value and another downloading `/proof/donations.csv` in a loop.

A throw-away test database gets DONATIONS confirmed donations (bench/load_donations.sql's shape) and RANGES
published proof ranges over them; the CSV is built once, as its task does. Then gunicorn (3 sync workers,
the shared proof cache on, the production rate limits, visitors named by a trusted local proxy) serves:

1. idle: visitors only, `/donation/data` at VISITOR_RATE requests/s, each from its own address;
2. attacked: the same visitors, plus one client at PROOF_RATE requests/s on `/proof.json` with a random
   `from_block` and `limit` (at twice its budget of 5/s), plus one client downloading the CSV in a loop
   (honouring its own budget's 429s and `Retry-After`).

The proof's pages are first walked once (what any earlier reader leaves in the shared cache), and the
attackers run in a niced process of their own (in a real attack they are on other machines). Prints the
visitors' latency (median, p95, p99) in each phase and what the attackers got.
**Target:** `/donation/data`'s p99 while attacked stays within 2x of idle.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dws_proofload REDIS_URL=redis://127.0.0.1:6379/2 \\
        .venv/bin/python bench/proof_load.py            # BENCH_SECONDS=20 per phase by default
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

import requests  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import setup_databases, teardown_databases  # noqa: E402

from donations.export import proof_csv_refresh  # noqa: E402
from dws_project.redis_client import get_redis  # noqa: E402
from tests.web_server import gunicorn  # noqa: E402

DONATIONS = int(os.environ.get("BENCH_DONATIONS", "100000"))
RANGES = int(os.environ.get("BENCH_RANGES", "4000"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "20"))
VISITOR_RATE = float(os.environ.get("BENCH_VISITOR_RATE", "30"))
PROOF_RATE = float(os.environ.get("BENCH_PROOF_RATE", "10"))
ATTACKERS = set(os.environ.get("BENCH_ATTACKERS", "proof,csv").split(","))  # which attackers run
FIRST = 18_000_000

_LOAD_SQL = [
    """
    INSERT INTO donation (chain, tx_hash, log_index, address, asset, amount, usd_amount, price, tokens, status,
                          block_number, block_hash, block_time, absent_count, created_at, modified_at, confirmed_at)
    SELECT 'eth', '0x' || lpad(to_hex(i), 64, '0'), NULL, '0x' || lpad(to_hex(1048576 + i %% 20000), 40, '0'),
           (ARRAY['eth', 'usdt', 'usdc'])[1 + i %% 3], round(0.01 + (i %% 997) / 100.0, 8),
           round(20 + (i %% 997) * 2.5, 2), 0.00100, (20 + (i %% 997) * 2.5) * 1000, 'confirmed',
           %(first)s + i / 4, '0x' || lpad(to_hex(%(first)s + i / 4), 64, '0'),
           timestamptz '2025-01-01 00:00:00+00' + make_interval(secs => i * 3), 0, now(), now(), now()
    FROM generate_series(1, %(donations)s) AS i
    """,
    """
    INSERT INTO user_data (address, total, tokens, staked, reward, status, created_at, modified_at)
    SELECT address, sum(usd_amount), sum(tokens), 0, 0, 'none', now(), now() FROM donation GROUP BY address
    """,
    """
    UPDATE donation_stats SET total = s.total, tokens = s.tokens
    FROM (SELECT sum(usd_amount) AS total, sum(tokens) AS tokens FROM donation) AS s
    """,
    """
    INSERT INTO proof_range (chain, ordinal, first_block, last_block, last_block_hash, status, reason, nonce_opening,
                             nonce_closing, checked_at, created_at)
    SELECT 'eth', i, %(first)s + i * %(span)s, %(first)s + i * %(span)s + %(span)s - 1,
           '0x' || lpad(to_hex(%(first)s + i * %(span)s + %(span)s - 1), 64, '0'), 'proven', '', 7, 7, now(), now()
    FROM generate_series(0, %(ranges)s - 1) AS i
    """,
    """
    INSERT INTO proof_range_asset (proof_range_id, asset, opening, closing, "left")
    SELECT r.id, a.asset, 10^24, 10^24, 0
    FROM proof_range r CROSS JOIN (VALUES ('eth'), ('usdt'), ('usdc')) AS a(asset)
    """,
    "ANALYZE",
]


class Recorder:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latencies: list[float] = []
        self.statuses: Counter[int] = Counter()
        self.bytes = 0

    def note(self, seconds: float, status: int, size: int = 0) -> None:
        with self.lock:
            self.latencies.append(seconds * 1000)
            self.statuses[status] += 1
            self.bytes += size


def paced(rate: float, seconds: float, request, threads: int = 6) -> None:
    """Call `request(n)` at `rate` per second in total for `seconds`, from `threads` threads."""
    deadline = time.monotonic() + seconds
    interval = threads / rate

    def run(index: int) -> None:
        n, next_at = index, time.monotonic() + index * interval / threads
        while time.monotonic() < deadline:
            time.sleep(max(0.0, next_at - time.monotonic()))
            next_at += interval
            request(n)
            n += threads

    workers = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def visitors(base: str, seconds: float) -> Recorder:
    record = Recorder()
    sessions = threading.local()

    def visit(n: int) -> None:
        session = getattr(sessions, "session", None) or requests.Session()
        sessions.session = session
        forwarded = f"10.{n // 65536 % 256}.{n // 256 % 256}.{n % 256}"  # a new visitor each time
        started = time.monotonic()
        answer = session.get(f"{base}/donation/data", headers={"X-Forwarded-For": forwarded}, timeout=60)
        record.note(time.monotonic() - started, answer.status_code)

    paced(VISITOR_RATE, seconds, visit)
    return record


def proof_spreader(base: str, seconds: float, record: Recorder) -> None:
    """One client, within its budget: every request a new from_block and limit."""
    session, last = requests.Session(), FIRST + RANGES * 25

    def ask(n: int) -> None:
        params = {"from_block": random.randrange(FIRST, last), "limit": random.randrange(1, 501)}
        started = time.monotonic()
        answer = session.get(
            f"{base}/proof.json", params=params, headers={"X-Forwarded-For": "203.0.113.7"}, timeout=60
        )
        record.note(time.monotonic() - started, answer.status_code, len(answer.content))

    paced(PROOF_RATE, seconds, ask, threads=2)


def csv_downloader(base: str, seconds: float, record: Recorder) -> None:
    """One client downloading the CSV again and again, waiting out its budget's 429s as told."""
    session, deadline = requests.Session(), time.monotonic() + seconds
    while time.monotonic() < deadline:
        started = time.monotonic()
        answer = session.get(f"{base}/proof/donations.csv", headers={"X-Forwarded-For": "203.0.113.8"}, timeout=120)
        record.note(time.monotonic() - started, answer.status_code, len(answer.content))
        if answer.status_code == 429:
            time.sleep(min(float(answer.headers.get("Retry-After", "1")), max(0.0, deadline - time.monotonic())))


def summary(label: str, record: Recorder) -> str:
    times = sorted(record.latencies)
    if not times:
        return f"{label}: no requests"
    p = statistics.quantiles(times, n=100) if len(times) > 1 else [times[0]] * 99
    return (
        f"{label}: {len(times)} requests {dict(record.statuses)}, median {statistics.median(times):.0f} ms, "
        f"p95 {p[94]:.0f} ms, p99 {p[98]:.0f} ms"
    )


def redis_proof_bytes() -> tuple[int, int]:
    redis = get_redis()
    keys = list(redis.scan_iter("*proof-report*"))
    return len(keys), sum(redis.memory_usage(k) or 0 for k in keys)


def attack(base: str) -> None:
    """The attackers, side by side for SECONDS; prints what they got."""
    proof, downloads = Recorder(), Recorder()
    attackers = [
        threading.Thread(target=run, args=(base, SECONDS, record), daemon=True)
        for name, run, record in (("proof", proof_spreader, proof), ("csv", csv_downloader, downloads))
        if name in ATTACKERS
    ]
    for attacker in attackers:
        attacker.start()
    for attacker in attackers:
        attacker.join()
    print(summary("         /proof.json (spread from_block)", proof))
    print(summary("         /proof/donations.csv (loop)", downloads) + f", {downloads.bytes / 2**20:.0f} MiB")


def warm(base: str) -> float:
    """One walk through every page of /proof.json (what any earlier reader leaves in the cache); seconds."""
    started, query = time.monotonic(), {"from_block": 0, "limit": 500}
    session = requests.Session()
    while True:
        answer = session.get(f"{base}/proof.json", params=query, headers={"X-Forwarded-For": "192.0.2.1"}, timeout=120)
        if answer.status_code == 429:
            time.sleep(float(answer.headers.get("Retry-After", "1")))
            continue
        following = answer.json()["chains"][0]["next_from_block"]
        if following is None:
            return time.monotonic() - started
        query["from_block"] = following


def main() -> None:
    if sys.argv[1:2] == ["attack"]:
        attack(sys.argv[2])
        return
    os.environ["TEST_PROOF_CACHE_SECONDS"] = "3600"  # the production cache, in the gunicorn below
    old_config = setup_databases(verbosity=0, interactive=False)
    try:
        with connection.cursor() as cursor:
            for statement in _LOAD_SQL:
                cursor.execute(statement, {"first": FIRST, "donations": DONATIONS, "ranges": RANGES, "span": 25})
        started = time.perf_counter()
        parts = proof_csv_refresh()
        print(
            f"{DONATIONS:,} donations, {RANGES:,} ranges; the CSV task built {parts} parts in "
            f"{time.perf_counter() - started:.1f} s"
        )
        for key in get_redis().scan_iter("*proof-report*"):
            get_redis().delete(key)
        for key in get_redis().scan_iter("dws:ratelimit:*"):
            get_redis().delete(key)
        print(f"load before measuring: {os.getloadavg()[0]:.1f} (1 min average)")
        with gunicorn(workers=3, env={"DWS_TRUSTED_PROXIES": "127.0.0.1/32"}) as base:
            print(f"the proof's pages built into the cache by one walk through them: {warm(base):.1f} s")
            visitors(base, 3)  # warm-up
            idle = visitors(base, SECONDS)
            print(summary("idle     /donation/data", idle))
            # The attackers run in a process of their own, niced: in a real attack they are on other machines.
            attackers = subprocess.Popen(
                ["nice", "-n", "19", sys.executable, __file__, "attack", base],
                stdout=subprocess.PIPE,
                text=True,
            )
            attacked = visitors(base, SECONDS)
            said, _ = attackers.communicate(timeout=SECONDS + 180)
            print(summary("attacked /donation/data", attacked))
            print(said.rstrip())
            keys, size = redis_proof_bytes()
            print(f"proof cache in Redis afterwards: {keys} keys, {size / 2**20:.1f} MiB")
            ratio = (
                statistics.quantiles(attacked.latencies, n=100)[98] / statistics.quantiles(idle.latencies, n=100)[98]
            )
            print(f"p99 attacked / idle: {ratio:.2f} (target <= 2)")
        print(f"load after measuring: {os.getloadavg()[0]:.1f} (1 min average)")
    finally:
        teardown_databases(old_config, verbosity=0)


if __name__ == "__main__":
    main()
