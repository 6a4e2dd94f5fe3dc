"""What a second provider (DWS_RPC_CHECK_URL) costs: its requests per finalized block, counted apart.

--blocks blocks are mined (default 1000), --donating of them (default 50) carrying one ETH and one USDT
donation each; the finalized crawler then catches up once without a check provider and once (on a fresh
database) with one. Each provider sits behind its own counting proxy, so the check provider's HTTP
requests and JSON-RPC calls are counted apart from the crawler's own.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dws_bench REDIS_URL=redis://127.0.0.1:6379/10 \\
        .venv/bin/python bench/second_provider.py

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

from crawlers.models import FINALIZED  # noqa: E402
from crawlers.runs.crawl import crawl  # noqa: E402
from prices.models import ETH, Price  # noqa: E402
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER, Anvil, deploy_stable_coins  # noqa: E402
from tests.configs import configured  # noqa: E402
from tests.rpc_proxy import RpcProxy  # noqa: E402

USDT = 10**6


def calls(proxy: RpcProxy) -> int:
    return sum(len(seen.methods) for seen in proxy.seen)


def run(anvil: Anvil, start: int, check: bool) -> dict[str, float]:
    old_config = setup_databases(verbosity=0, interactive=False)  # a fresh database per configuration
    try:
        return _run(anvil, start, check)
    finally:
        teardown_databases(old_config, verbosity=0)


def _run(anvil: Anvil, start: int, check: bool) -> dict[str, float]:
    now = timezone.now().replace(second=0, microsecond=0)
    Price.objects.bulk_create(
        Price(asset=ETH, price=Decimal("2000"), created_at=now + timedelta(minutes=m), sources={"bench": True})
        for m in range(-60, 60)
    )
    with RpcProxy(anvil.url) as primary, RpcProxy(anvil.url) as second:
        settings.CONFIG = configured(
            settings.CONFIG,
            rpc_url=primary.url("/rpc"),
            rpc_check_url=second.url("/check") if check else None,
            start_block=start,
        )
        began = time.monotonic()
        blocks = confirmed = 0
        while True:
            result = crawl(FINALIZED)
            blocks += result.blocks
            confirmed += result.confirmed
            if result.held or not result.more_to_do:
                break
        took = time.monotonic() - began
        assert result.held is None, result.held
        return {
            "blocks": anvil.finalized() - start + 1,
            "confirmed": confirmed,
            "seconds": took,
            "primary_requests": len(primary.seen),
            "primary_calls": calls(primary),
            "check_requests": len(second.seen),
            "check_calls": calls(second),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=1000)
    parser.add_argument("--donating", type=int, default=50)
    args = parser.parse_args()
    with Anvil() as anvil:
        anvil.coins = deploy_stable_coins(anvil)
        anvil.mint(anvil.coins["usdt"], ACCOUNTS[2], 10**6 * USDT)
        start = anvil.head() + 1
        every = max(args.blocks // max(args.donating, 1), 1)
        for n in range(args.blocks):
            if n % every == 0:
                with anvil.one_block():
                    anvil.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER // 100)
                    anvil.transfer_token(anvil.coins["usdt"], ACCOUNTS[2], DONATION_ADDRESS, 5 * USDT)
            else:
                anvil.mine(1)
        anvil.mine(2)
        for check in (False, True):
            figures = run(anvil, start, check)
            label = "with a check provider" if check else "one provider"
            per_block = figures["check_calls"] / figures["blocks"]
            print(
                f"{label}: {figures['blocks']} blocks, {figures['confirmed']} confirmed in "
                f"{figures['seconds']:.1f} s; provider {figures['primary_requests']} requests / "
                f"{figures['primary_calls']} calls; check provider {figures['check_requests']} requests / "
                f"{figures['check_calls']} calls ({per_block:.3f} calls per block)"
            )


if __name__ == "__main__":
    main()
