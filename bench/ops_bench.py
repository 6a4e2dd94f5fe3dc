"""Cost of the operations jobs: one old-unconfirmed run over a full batch, and the daily reconcile.

1. --donations ETH donations (default 500, one run's limit) are mined, recorded by the latest crawler,
   and skipped by the finalized crawler (its cursor is moved past them); one old-unconfirmed run then
   confirms them all. Reports the run's time and JSON-RPC round trips.
2. --blocks more blocks are mined (default 7200, a day) and `reconcile` checks every block from the
   first donation to the finalized block. Reports time and round trips.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dws_ops REDIS_URL=redis://127.0.0.1:6379/10 \\
        .venv/bin/python bench/ops_bench.py

Runs against a throw-away test database (test_<name>), created and dropped by the script.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.test.utils import setup_databases, teardown_databases  # noqa: E402
from django.utils import timezone  # noqa: E402

from crawlers.chain.rpc import RpcClient  # noqa: E402
from crawlers.models import CHAIN, FINALIZED, LATEST  # noqa: E402
from crawlers.record.cursors import cursor_write  # noqa: E402
from crawlers.runs.crawl import crawl  # noqa: E402
from crawlers.runs.old_unconfirmed import crawl_old_unconfirmed  # noqa: E402
from crawlers.runs.reconcile import reconcile  # noqa: E402
from donations.models import Donation  # noqa: E402
from prices.models import ETH, Price  # noqa: E402
from tests.chain import ACCOUNTS, DONATION_ADDRESS, Anvil, deploy_stable_coins  # noqa: E402
from tests.configs import configured  # noqa: E402

SENDERS = ACCOUNTS[1:9]


def mine_donations(anvil: Anvil, count: int, per_block: int = 50) -> None:
    anvil.set_automine(False)
    nonces = {s: int(anvil.rpc("eth_getTransactionCount", s, "pending"), 16) for s in SENDERS}
    for first in range(0, count, per_block):
        calls = []
        for i in range(first, min(count, first + per_block)):
            sender = SENDERS[i % len(SENDERS)]
            tx = {"from": sender, "to": DONATION_ADDRESS, "value": hex(10**16 + i), "gas": hex(21000)}
            tx["nonce"] = hex(nonces[sender])
            nonces[sender] += 1
            calls.append(("eth_sendTransaction", [tx]))
        anvil.rpc_batch(calls)
        anvil.mine(1)
    anvil.set_automine(True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--donations", type=int, default=500)
    parser.add_argument("--blocks", type=int, default=7200)
    args = parser.parse_args()

    old_config = setup_databases(verbosity=0, interactive=False)
    try:
        with Anvil() as anvil:
            anvil.coins = deploy_stable_coins(anvil)
            start = anvil.head() + 1
            now = timezone.now().replace(second=0, microsecond=0)
            Price.objects.bulk_create(
                Price(asset=ETH, price=Decimal("2000"), created_at=now + timedelta(minutes=m)) for m in range(-5, 30)
            )
            settings.CONFIG = configured(settings.CONFIG, rpc_url=anvil.url, start_block=start)
            mine_donations(anvil, args.donations)
            anvil.mine(3)
            crawl(LATEST)
            cursor_write(
                chain=CHAIN, label=FINALIZED, value=anvil.finalized()
            )  # the finalized crawler skipped them all

            client = RpcClient(anvil.url)
            began = time.monotonic()
            result = crawl_old_unconfirmed(client=client, now=timezone.now() + timedelta(minutes=31))
            elapsed = time.monotonic() - began
            confirmed = Donation.objects.filter(status="confirmed").count()
            print(
                f"old-unconfirmed: {result.examined} examined, {result.confirmed} confirmed "
                f"({confirmed} in the database) in {elapsed:.2f} s, {client.round_trips} round trips"
            )

            for _ in range(0, args.blocks, 400):  # anvil_mine of thousands at once outlasts the RPC time-out
                anvil.mine(400)
            cursor_write(chain=CHAIN, label=FINALIZED, value=anvil.finalized())
            client = RpcClient(anvil.url)
            began = time.monotonic()
            report = reconcile(start, anvil.finalized(), client=client)
            elapsed = time.monotonic() - began
            print(f"{report.summary()} in {elapsed:.1f} s, {client.round_trips} round trips")
    finally:
        teardown_databases(old_config, verbosity=0)


if __name__ == "__main__":
    main()
