"""Cost of one finalized block's crediting write with a million donations on record (issue #12).

`bench/load_donations.sql` fills a throw-away test database with 1,000,000 donations (user_data and
donation_stats consistent with them). Then --blocks blocks, each with one new USDT donation from a
donor already on record, go through `finalized_block_record` (insert, price, confirm, move the
campaign and the donor's totals, all under the campaign lock in one transaction), and the same is
timed for the full recomputation the crawler used to run on every block (`stats_recompute` +
`user_data_refresh`), for comparison. No chain is involved: reading a block from the provider costs
the same whatever is on record.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dws_credit REDIS_URL=redis://127.0.0.1:6379/2 \\
        .venv/bin/python bench/finalized_block_cost.py --blocks 200

Runs against a throw-away test database (test_<name>), created and dropped by the script.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

from django.db import connection, transaction  # noqa: E402
from django.test.utils import setup_databases, teardown_databases  # noqa: E402
from django.utils import timezone  # noqa: E402

from donations.finalized import finalized_block_record  # noqa: E402
from donations.ledger import ledger_discrepancies  # noqa: E402
from donations.models import Donation, DonationStats  # noqa: E402
from donations.services import stats_lock  # noqa: E402
from donations.sightings import Sighting, Transfer  # noqa: E402
from donations.totals import stats_recompute, user_data_refresh  # noqa: E402
from dws_project.config_values import SaleTier  # noqa: E402

DONOR = "0x00000000000000000000000000000000000b0b50"  # a donor of load_donations.sql


def load(dsn: str) -> None:
    subprocess.run(
        ["psql", dsn, "-q", "-f", str(ROOT / "bench" / "load_donations.sql")], check=True, stdout=subprocess.DEVNULL
    )


def dsn_of(db: dict) -> str:
    host, port, user, name = db["HOST"] or "127.0.0.1", db["PORT"] or "5432", db["USER"], db["NAME"]
    return f"postgresql://{user}@{host}:{port}/{name}"


def sighting(n: int) -> Sighting:
    transfer = Transfer(
        tx_hash="0x" + f"{0xBE7C_0000 + n:064x}",
        log_index=0,
        donor=DONOR,
        asset="usdt",
        amount=Decimal("12.345678"),
        block_number=30_000_000 + n,
        block_hash="0x" + f"{30_000_000 + n:064x}",
    )
    return Sighting(chain="eth", transfer=transfer, block_time=timezone.now(), eth_price=None)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=200, help="finalized blocks to time (one donation each)")
    parser.add_argument("--recomputes", type=int, default=5, help="full recomputations to time for comparison")
    args = parser.parse_args()
    # A sale still open with the million donations' tokens confirmed, so every block credits tokens.
    tiers = (SaleTier(10**15, Decimal("0.001")),)
    old_config = setup_databases(verbosity=0, interactive=False)
    try:
        started = time.perf_counter()
        load(dsn_of(connection.settings_dict))
        print(f"loaded {Donation.objects.count():,} donations in {time.perf_counter() - started:.0f} s")

        for n in range(5):  # warm the caches and the connection
            finalized_block_record(chain="eth", sightings=[sighting(10_000 + n)], reverted_tx_hashes=[], tiers=tiers)
        block_ms = []
        for n in range(args.blocks):
            started = time.perf_counter()
            result = finalized_block_record(chain="eth", sightings=[sighting(n)], reverted_tx_hashes=[], tiers=tiers)
            block_ms.append((time.perf_counter() - started) * 1000)
            assert (result.inserted, result.confirmed) == (1, 1)

        recompute_ms = []
        for _ in range(args.recomputes):
            started = time.perf_counter()
            with transaction.atomic():
                stats_recompute(stats=stats_lock(), tiers=tiers)
                user_data_refresh(addresses=[DONOR])
            recompute_ms.append((time.perf_counter() - started) * 1000)

        drift = ledger_discrepancies()
        print(f"donations on record: {Donation.objects.count():,}; campaign: {DonationStats.objects.get()}")
        print(
            f"finalized block, one donation, deltas: median {statistics.median(block_ms):.1f} ms, "
            f"p95 {percentile(block_ms, 0.95):.1f} ms, max {max(block_ms):.1f} ms over {len(block_ms)} blocks"
        )
        print(
            f"full recomputation (the old per-block path): median {statistics.median(recompute_ms):.0f} ms "
            f"over {len(recompute_ms)}"
        )
        print("ledger invariants after the run:", "hold" if not drift else drift[:5])
    finally:
        teardown_databases(old_config, verbosity=0)


if __name__ == "__main__":
    main()
