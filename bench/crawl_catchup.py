"""Catch-up speed of the latest and finalized crawlers against a busy local chain.

Builds an anvil chain of --blocks blocks with --txs transactions each (ETH and ERC-20 transfers between
other accounts, plus a donation every --donation-every blocks), then lets each crawler catch up from
the first block and reports blocks per second and JSON-RPC round trips (HTTP posts) per block.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dws_crawlers REDIS_URL=redis://127.0.0.1:6379/14 \
        .venv/bin/python bench/crawl_catchup.py --blocks 2000 --txs 150

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

from crawlers.models import CHAIN  # noqa: E402
from crawlers.runs.crawl import crawl  # noqa: E402
from tests.chain import ACCOUNTS, DONATION_ADDRESS, Anvil, deploy_stable_coins  # noqa: E402
from tests.configs import configured  # noqa: E402
from tests.rpc_proxy import REPLAYABLE, RpcProxy  # noqa: E402

SENDERS = ACCOUNTS[1:9]


def build_chain(anvil: Anvil, blocks: int, txs: int, donation_every: int) -> int:
    """Mine `blocks` blocks of `txs` transactions each; returns the number of donations sent."""
    coins = anvil.coins
    for sender in SENDERS:
        anvil.mint(coins["usdt"], sender, 10**15)
    anvil.set_automine(False)
    # Explicit nonces: anvil would hand out the same pending nonce twice within one batch.
    nonces = {s: int(anvil.rpc("eth_getTransactionCount", s, "pending"), 16) for s in SENDERS}

    def signed_by(tx: dict) -> tuple[str, list]:
        tx = {**tx, "nonce": hex(nonces[tx["from"]])}
        nonces[tx["from"]] += 1
        return ("eth_sendTransaction", [tx])

    donations = 0
    started = time.monotonic()
    for n in range(blocks):
        calls = []
        for i in range(txs):
            sender = SENDERS[i % len(SENDERS)]
            other = SENDERS[(i + 1) % len(SENDERS)]
            if i % 3 == 0:  # an ERC-20 transfer elsewhere: a Transfer log that is not ours
                tx = anvil.token_tx(
                    coins["usdt"], sender, "transfer(address,uint256)", ["address", "uint256"], [other, 1000 + i]
                )
            else:
                tx = {"from": sender, "to": other, "value": hex(10**12 + i), "gas": hex(21000)}
            calls.append(tx)
        if n % donation_every == 0:
            donor = SENDERS[n % len(SENDERS)]
            calls[-1] = {"from": donor, "to": DONATION_ADDRESS, "value": hex(10**17), "gas": hex(21000)}
            calls[-2] = anvil.token_tx(
                coins["usdt"],
                calls[-2]["from"],
                "transfer(address,uint256)",
                ["address", "uint256"],
                [DONATION_ADDRESS, 25 * 10**6],
            )
            donations += 2
        anvil.rpc_batch([signed_by(tx) for tx in calls])
        anvil.mine(1)
        if n and n % 250 == 0:
            print(f"  built {n} blocks ({time.monotonic() - started:.0f} s)", flush=True)
    anvil.set_automine(True)
    anvil.mine(2)  # so the last built block is finalized
    return donations


def reset_ledger() -> None:
    """Back to an empty campaign in the benchmark's own database, so the next pass does the same work."""
    from crawlers.models import LastBlock
    from donations.models import Donation, DonationStats, UserData
    from prices.models import TOKEN, Price

    Donation.objects.all().delete()
    UserData.objects.all().delete()
    LastBlock.objects.all().delete()
    Price.objects.filter(asset=TOKEN).delete()
    DonationStats.objects.update(total=0, tokens=0, status="open")


def run(label: str, client_factory, start: int, check=None) -> tuple[float, int, int]:
    from crawlers.models import FINALIZED
    from crawlers.record.cursors import cursor_write

    client = client_factory()
    cursor_write(chain=CHAIN, label=label, value=start - 1)
    began = time.monotonic()
    result = crawl(label, client=client, check=check)
    elapsed = time.monotonic() - began
    if result.held:
        raise SystemExit(f"{label} held: {result.held}")
    blocks = result.blocks
    print(
        f"{label:9} {blocks} blocks in {elapsed:.1f} s = {blocks / elapsed:.0f} blocks/s; "
        f"{client.round_trips} round trips = {client.round_trips / blocks:.3f} per block; "
        f"{result.inserted} inserted, {result.confirmed} confirmed" + (" (finalized)" if label == FINALIZED else "")
    )
    return elapsed, blocks, client.round_trips


def check_provider(proxy: RpcProxy, anvil: Anvil, start: int) -> None:
    """The finalized crawler against the fast provider again, with a check provider (DWS_RPC_CHECK_URL,
    anvil behind a counting proxy of its own): what the check costs it, per block."""
    from crawlers.chain.rpc import RpcClient
    from crawlers.models import FINALIZED

    with RpcProxy(anvil.url) as second:
        settings.CONFIG = configured(settings.CONFIG, rpc_check_url=second.url("/check"))
        reset_ledger()
        print("against the fast provider, with a check provider (anvil behind a counting proxy):")
        _, blocks, _ = run(FINALIZED, lambda: RpcClient(proxy.url()), start, check=RpcClient(second.url("/check")))
        calls = sum(len(seen.methods) for seen in second.seen)
        print(
            f"check provider: {len(second.seen)} round trips, {calls} calls = {calls / blocks:.3f} calls "
            f"and {len(second.seen) / blocks:.4f} round trips per block"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=2000)
    parser.add_argument("--txs", type=int, default=150)
    parser.add_argument("--donation-every", type=int, default=100)
    parser.add_argument(
        "--check",
        action="store_true",
        help="the finalized crawler again with a check provider, counted apart",
    )
    args = parser.parse_args()

    old_config = setup_databases(verbosity=0, interactive=False)
    try:
        with Anvil(extra_args=["--gas-limit", "60000000"]) as anvil:
            anvil.coins = deploy_stable_coins(anvil)
            start = anvil.head() + 1
            print(f"building {args.blocks} blocks x {args.txs} txs ...", flush=True)
            t0 = time.monotonic()
            donations = build_chain(anvil, args.blocks, args.txs, args.donation_every)
            print(f"built in {time.monotonic() - t0:.0f} s; {donations} donations", flush=True)

            from crawlers.chain.rpc import RpcClient
            from crawlers.models import FINALIZED, LATEST
            from prices.models import ETH, Price

            now = timezone.now().replace(second=0, microsecond=0)
            minutes = int((time.monotonic() - t0) // 60) + 5
            Price.objects.bulk_create(
                Price(asset=ETH, price=Decimal("2000"), created_at=now - timedelta(minutes=m)) for m in range(minutes)
            )
            settings.CONFIG = configured(settings.CONFIG, rpc_url=anvil.url, start_block=start)
            print("against anvil directly (anvil's own full-block serving is the bottleneck):")
            for label in (LATEST, FINALIZED):
                run(label, lambda: RpcClient(anvil.url), start)
            with RpcProxy(anvil.url, memoize=REPLAYABLE) as proxy:
                reset_ledger()
                for label in (LATEST, FINALIZED):  # warm the proxy's memory
                    crawl(label, client=RpcClient(proxy.url()))
                print("against a fast provider (a local HTTP server replaying anvil's answers from memory):")
                reset_ledger()
                for label in (LATEST, FINALIZED):
                    run(label, lambda: RpcClient(proxy.url()), start)
                if args.check:
                    check_provider(proxy, anvil, start)
    finally:
        teardown_databases(old_config, verbosity=0)


if __name__ == "__main__":
    main()
