"""The public proof's costs with a large sale on record (issue #23).

`bench/load_donations.sql` fills a throw-away test database with 1,000,000 donations over 250,000 blocks;
10,000 proof ranges of 25 blocks each are published over them (three assets each). Then, in-process
through Django's test client (no network, the server-side cache off): a /proof.json page of 100 and of
500 ranges, the whole /proof/donations.csv built by its task and then served (time, size, the Python
heap's peak while serving), and what publishing costs the finalized crawler per block (statements and
time of `proof_range_record` extending a range, and starting one).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dws_proofbench REDIS_URL=redis://127.0.0.1:6379/2 \\
        .venv/bin/python bench/proof_bench.py

Runs against a throw-away test database (test_<name>), created and dropped by the script.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
os.environ.setdefault("TEST_PROOF_CACHE_SECONDS", "0")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext, setup_databases, teardown_databases  # noqa: E402

from bench.finalized_block_cost import dsn_of, load  # noqa: E402
from crawlers.record.proof_ranges import proof_range_record  # noqa: E402
from crawlers.scan.ledger import SpanLedger  # noqa: E402
from donations.export import proof_csv_refresh  # noqa: E402

FIRST, RANGES, SPAN = 18_000_000, 10_000, 25

_RANGES_SQL = [
    """
    INSERT INTO proof_range (chain, first_block, last_block, last_block_hash, status, reason, nonce_opening,
                             nonce_closing, checked_at, created_at, ordinal)
    SELECT 'eth', %(first)s + i * %(span)s, %(first)s + i * %(span)s + %(span)s - 1,
           '0x' || lpad(to_hex(%(first)s + i * %(span)s + %(span)s - 1), 64, '0'), 'proven', '', 7, 7, now(), now(), i
    FROM generate_series(0, %(ranges)s - 1) AS i
    """,
    """
    INSERT INTO proof_range_asset (proof_range_id, asset, opening, closing, "left")
    SELECT r.id, a.asset, 10^24, 10^24, 0
    FROM proof_range r CROSS JOIN (VALUES ('eth'), ('usdt'), ('usdc')) AS a(asset)
    """,
    "ANALYZE proof_range",
    "ANALYZE proof_range_asset",
]


def timed(fn, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return times


def main() -> None:
    settings.ALLOWED_HOSTS = ["*"]
    settings.DWS_RATE_LIMIT_BURST = settings.DWS_RATE_LIMIT_PER_SECOND = 10**9
    settings.PROOF_CSV_RATE_BURST = settings.PROOF_CSV_RATE_PER_SECOND = 10**9
    old_config = setup_databases(verbosity=0, interactive=False)
    try:
        load(dsn_of(connection.settings_dict))
        with connection.cursor() as cursor:
            for statement in _RANGES_SQL:
                cursor.execute(statement, {"first": FIRST, "span": SPAN, "ranges": RANGES})
        client = Client()
        for limit in (100, 500):
            path = f"/proof.json?limit={limit}&from_block={FIRST + RANGES * SPAN // 2}"
            assert len(client.get(path).json()["chains"][0]["ranges"]) == limit
            page = timed(lambda path=path: client.get(path), 10)
            size = len(client.get(path).content)
            print(
                f"/proof.json, {limit} ranges of {RANGES:,} (~{limit * SPAN * 4} donations in them): "
                f"median {statistics.median(page):.0f} ms, {size / 1024:.0f} KiB"
            )

        def stream() -> int:
            return sum(len(chunk) for chunk in client.get("/proof/donations.csv"))  # a response iterates its stream

        started = time.perf_counter()
        parts = proof_csv_refresh()  # what the task does once per change, never a request
        print(f"/proof/donations.csv built by the task: {parts} parts in {time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        size = stream()
        seconds = time.perf_counter() - started
        tracemalloc.start()
        stream()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM donation WHERE status = 'confirmed'")
            (rows,) = cursor.fetchone()
        print(
            f"/proof/donations.csv: {rows:,} rows, {size / 2**20:.0f} MiB in {seconds:.1f} s "
            f"({rows / seconds:,.0f} rows/s); Python heap peak while streaming {peak / 2**20:.1f} MiB"
        )

        ledger = SpanLedger(30_000_000, {"eth": 10**24, "nonce": 7, "usdt": 0, "usdc": 0})
        extend: list[tuple[float, int]] = []  # (milliseconds, statements) per block published
        start: list[tuple[float, int]] = []
        for n in range(200):
            ledger.changes[30_000_000 + n] = {"eth": 10**16}
            with transaction.atomic(), CaptureQueriesContext(connection) as queries:
                began = time.perf_counter()
                proof_range_record(chain="eth", span=ledger, through=30_000_000 + n, through_hash="0x" + "ab" * 32)
                (start if n == 0 else extend).append(((time.perf_counter() - began) * 1000, len(queries)))
        print(
            f"publishing, a block with donations extending its range: {extend[0][1]} statements, "
            f"median {statistics.median(t for t, _ in extend):.2f} ms; starting a range: {start[0][1]} statements"
        )
    finally:
        teardown_databases(old_config, verbosity=0)


if __name__ == "__main__":
    main()
