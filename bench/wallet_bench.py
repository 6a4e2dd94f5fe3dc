"""Cost of issue #15's additions: the webhook outbox on the crediting path, delivery throughput, and
the time a contract-wallet signature adds to a signed request.

1. --events donations are recorded unconfirmed, each in its own transaction as the latest crawler does,
   with no endpoint and then with one subscribed endpoint (the outbox write is the difference).
2. Those events are delivered to a local HTTP receiver by runs of `webhooks_drain`, chained as the
   deliver_webhooks task chains them (deliveries per second).
3. --signatures signed-request verifications each for a key, an ERC-1271 wallet and an ERC-6492
   counterfactual wallet, against anvil directly (median milliseconds).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dws_wallet REDIS_URL=redis://127.0.0.1:6379/5 \\
        .venv/bin/python bench/wallet_bench.py

Runs against a throw-away test database (test_<name>), created and dropped by the script.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import time
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.test.utils import setup_databases, teardown_databases  # noqa: E402
from eth_account import Account  # noqa: E402

from affiliates import signing  # noqa: E402
from affiliates.contract_signatures import CONTRACT_CHECKS_PER_SECOND  # noqa: E402
from donations.services import donation_record_unconfirmed  # noqa: E402
from donations.sightings import Sighting, Transfer  # noqa: E402
from donations.webhook_delivery import DrainResult, more_due, webhooks_drain  # noqa: E402
from tests.api.contract_wallets import contract_headers, counterfactual_wallet, deploy_wallet  # noqa: E402
from tests.api.support import wallet_headers  # noqa: E402
from tests.chain import ACCOUNTS, Anvil  # noqa: E402
from tests.configs import configured  # noqa: E402
from tests.webhook_receiver import registered_endpoint, webhook_receiver  # noqa: E402


def record(count: int, offset: int) -> float:
    began = time.monotonic()
    for i in range(offset, offset + count):
        transfer = Transfer(
            tx_hash=f"0x{i:064x}",
            log_index=None,
            donor=ACCOUNTS[1],
            asset="eth",
            amount=Decimal("0.01"),
            block_number=100 + i,
            block_hash=f"0x{i + 1:064x}",
        )
        # 20.00 USD
        sighting = Sighting(chain="eth", transfer=transfer, block_time=datetime.now(UTC), eth_price=Decimal("2000"))
        donation_record_unconfirmed(sighting=sighting, tiers=settings.CONFIG.sale_tiers)
    return time.monotonic() - began


def drain_all() -> DrainResult:
    """Runs of webhooks_drain until nothing is due, as deliver_webhooks queues the next run at once while
    the last one delivered something and more is due (each run starts attempts for one deadline)."""
    total = DrainResult()
    while True:
        run = webhooks_drain()
        total.delivered += run.delivered
        total.failed_attempts += run.failed_attempts
        total.gave_up += run.gave_up
        if not (run.delivered and more_due()):
            return total


def verify_ms(headers_for, path: str, rounds: int, rpc_url: str) -> float:
    times = []
    for _ in range(rounds):
        h = headers_for()
        began = time.monotonic()
        signing.verify(
            path=path,
            key=h["HTTP_DELPHI_KEY"],
            ts=h["HTTP_DELPHI_TS"],
            signature=h["HTTP_DELPHI_SIGNATURE"],
            max_age=300,
            rpc_urls=[rpc_url],
        )
        times.append((time.monotonic() - began) * 1000)
        # Paced to the deployment-wide contract-check budget (faster, a check is refused, not measured);
        # the pause is outside the measured time.
        time.sleep(1 / CONTRACT_CHECKS_PER_SECOND)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=500)
    parser.add_argument("--signatures", type=int, default=30)
    args = parser.parse_args()

    old_config = setup_databases(verbosity=0, interactive=False)
    try:
        bare = record(args.events, 0)
        with webhook_receiver() as receiver:
            registered_endpoint(receiver.url, ["donation.seen"], secret=secrets.token_hex(16))
            with_outbox = record(args.events, args.events)
            began = time.monotonic()
            result = drain_all()
            drain = time.monotonic() - began
        per_event = (with_outbox - bare) / args.events * 1000
        print(
            f"record {args.events} donations: {bare:.2f} s without endpoints, {with_outbox:.2f} s with one "
            f"({per_event:+.2f} ms per donation for the outbox)"
        )
        print(f"drain: {result.delivered} delivered in {drain:.2f} s ({result.delivered / drain:.0f} per second)")

        with Anvil() as anvil:
            settings.CONFIG = configured(settings.CONFIG, rpc_url=anvil.url)
            owner, key = Account.create(), Account.create()
            wallet = deploy_wallet(anvil, owner)
            counterfactual = counterfactual_wallet(anvil, owner)
            path = "/affiliate/code"
            cases = {
                "key (ecrecover)": lambda: wallet_headers(key, "affiliate code"),
                "ERC-1271 wallet": lambda: contract_headers(wallet, owner, "affiliate code"),
                "ERC-6492 counterfactual": lambda: contract_headers(
                    counterfactual.address, owner, "affiliate code", wrap=counterfactual.wrap
                ),
            }
            for name, headers_for in cases.items():
                print(f"verify {name}: median {verify_ms(headers_for, path, args.signatures, anvil.url):.1f} ms")
    finally:
        teardown_databases(old_config, verbosity=0)


if __name__ == "__main__":
    main()
