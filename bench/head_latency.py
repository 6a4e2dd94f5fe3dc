"""Head latency as an operator runs dws (issue 36): a Celery worker and beat follow an anvil chain that mines
a block every --block-time seconds (2 s by default) with a donation in most blocks, for --seconds (180).

Measured like the peers' reliability suite:
* block to `unconfirmed` row: from the moment the block appeared at the node (polled every 50 ms) to the
  row's created_at; median and p99;
* the most blocks the latest crawler stayed behind the head for more than 15 s (the largest lag held for a
  whole 15 s window);
* a re-org of depth 2 two thirds in: the time until the latest cursor is at the head of the new chain again;
* block to `confirmed` row after the finalized tag covered the block (the tag polled every 50 ms); median;
* the worker SIGKILLed and started again at once: the time from its restart until the latest crawler
  records a block again, and until the finalized crawler moves again;
* the provider calls the follower and the crawlers made, per block, and so per chain per day.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dws_bench REDIS_URL=redis://127.0.0.1:6379/10 \\
        .venv/bin/python bench/head_latency.py [--block-time 2] [--seconds 180]

Runs against a throw-away test database (test_<name>), created and dropped by the script, and the Redis db
of REDIS_URL (flushed). The worker and beat are real processes (tests/ops/processes.py), as `make run`
starts them: `-Q crawlers,celery --concurrency 3` (one chain's follower and two beside) and beat.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.test.utils import setup_databases, teardown_databases  # noqa: E402
from django.utils import timezone  # noqa: E402

from crawlers.models import FINALIZED, LATEST, LastBlock  # noqa: E402
from donations.models import Donation, DonationStats  # noqa: E402
from dws_project.redis_client import get_redis  # noqa: E402
from prices.models import ETH, Price  # noqa: E402
from tests.chain import ACCOUNTS, DONATION_ADDRESS, Anvil, deploy_stable_coins  # noqa: E402
from tests.ops.processes import Process, beat, celery_worker_command, process_environment  # noqa: E402
from tests.rpc_proxy import RpcProxy  # noqa: E402

SENDERS = ACCOUNTS[1:9]
# Anvil's finalized tag trails the head by two blocks here: a deeper re-org would replace a finalized block,
# which no real chain does (the finalized crawler then rightly holds).
REORG_DEPTH = 2


class Watch:
    """Polls the node every 50 ms: when each block number first appeared, when the finalized tag first
    covered it, and (every 250 ms) how far the latest cursor is behind the head."""

    def __init__(self, anvil: Anvil) -> None:
        self.anvil = anvil
        self.head_seen: dict[int, float] = {}
        self.final_seen: dict[int, float] = {}
        self.lag: list[tuple[float, int]] = []
        self.stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        last_lag = 0.0
        while not self.stop.is_set():
            now = time.time()
            try:
                head = self.anvil.head()
                final = self.anvil.finalized()
            except Exception:  # noqa: BLE001 - a busy node: next poll
                time.sleep(0.05)
                continue
            for n in range(max(self.head_seen, default=head - 1) + 1, head + 1):
                self.head_seen.setdefault(n, now)
            for n in range(max(self.final_seen, default=final - 1) + 1, final + 1):
                self.final_seen.setdefault(n, now)
            if now - last_lag >= 0.25:
                last_lag = now
                cursor = cursor_of(LATEST)
                if cursor is not None:
                    self.lag.append((now, max(head - cursor, 0)))
            time.sleep(0.05)


def cursor_of(label: str) -> int | None:
    value = LastBlock.objects.filter(chain="eth", label=label).values_list("value", flat=True).first()
    connection.close()  # a thread of its own: never keep the connection between polls
    return value


def most_behind_for(lag: list[tuple[float, int]], seconds: float) -> int:
    """The largest lag held for a whole window of `seconds` (the peers' "blocks behind for more than 15 s")."""
    best = 0
    for i, (start, _) in enumerate(lag):
        window = [value for at, value in lag[i:] if at <= start + seconds]
        if lag[-1][0] >= start + seconds and window:
            best = max(best, min(window))
    return best


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def donate(anvil: Anvil, stop: threading.Event, block_time: float, sent: list[str]) -> None:
    """About one donation a block (nine blocks in ten), from rotating donors."""
    i = 0
    while not stop.wait(block_time * 1.1):
        sender = SENDERS[i % len(SENDERS)]
        try:
            sent.append(anvil.send_eth(sender, DONATION_ADDRESS, 10**16 + i))
        except Exception as exc:  # noqa: BLE001 - a re-org in progress: the next one
            print(f"  (a donation was not sent: {exc})")
        i += 1


def start_worker(env: dict[str, str], log_dir: Path, name: str = "worker") -> Process:
    command = celery_worker_command("bench@head", "crawlers,celery", concurrency=3)
    started = Process(name, command, env, log_dir / f"{name}.log")
    started.wait_log(" ready.", timeout=120)
    return started


def run(block_time: float, seconds: float) -> None:
    get_redis().flushdb()
    DonationStats.objects.get_or_create()
    log_dir = Path(tempfile.mkdtemp(prefix="dws-head-bench-"))
    with Anvil() as anvil, RpcProxy(anvil.url) as proxy:
        anvil.coins = deploy_stable_coins(anvil)
        anvil.set_automine(False)  # a send returns at once; the block comes on the interval
        anvil.rpc("evm_setIntervalMining", int(block_time))
        now = timezone.now().replace(second=0, microsecond=0)
        Price.objects.bulk_create(
            Price(asset=ETH, price=Decimal("2000"), created_at=now + timedelta(minutes=m)) for m in range(-5, 40)
        )
        env = process_environment(
            ETH_RPC_URL=proxy.url("/rpc"), DWS_START_BLOCK=str(anvil.head() + 1), DWS_RPC_MAX_IN_FLIGHT="4"
        )
        watch = Watch(anvil)
        watch.start()
        worker = start_worker(env, log_dir)
        scheduler = beat(env, log_dir)
        sent: list[str] = []
        stop = threading.Event()
        donor = threading.Thread(target=donate, args=(anvil, stop, block_time, sent), daemon=True)
        started = time.time()
        calls_before = len(proxy.seen)
        head_before = anvil.head()
        donor.start()
        reorg_at = reorg_done = None
        try:
            while time.time() - started < seconds:
                if reorg_at is None and time.time() - started > seconds * 2 / 3:
                    anvil.reorg(REORG_DEPTH, [])
                    reorg_at = time.time()
                if reorg_at is not None and reorg_done is None:
                    head = anvil.head()
                    row = LastBlock.objects.filter(chain="eth", label=LATEST).first()
                    if row and row.value >= head - 1 and row.block_hash == anvil.block(row.value)["hash"]:
                        reorg_done = time.time()
                time.sleep(0.1)
            stop.set()
            donor.join()
            calls = [m for s in proxy.seen[calls_before:] for m in s.methods]
            posts = len(proxy.seen) - calls_before
            blocks = anvil.head() - head_before
            time.sleep(block_time * 4 + 8)  # the last donations finalized and confirmed

            rows = list(Donation.objects.filter(tx_hash__in=sent).values("block_number", "created_at", "confirmed_at"))
            seen = [
                r["created_at"].timestamp() - watch.head_seen[r["block_number"]]
                for r in rows
                if r["block_number"] in watch.head_seen
            ]
            confirmed = [
                r["confirmed_at"].timestamp() - watch.final_seen[r["block_number"]]
                for r in rows
                if r["confirmed_at"] is not None and r["block_number"] in watch.final_seen
            ]
            print(f"\n== {block_time:g} s blocks, {seconds:.0f} s, {len(sent)} donations sent, {len(rows)} recorded")
            median, p99 = statistics.median(seen), percentile(seen, 0.99)
            print(f"block -> unconfirmed row: median {median:.2f} s, p99 {p99:.2f} s, max {max(seen):.2f} s")
            print(f"most blocks behind for more than 15 s: {most_behind_for(watch.lag, 15.0)}")
            if reorg_at is not None:
                back = f"{reorg_done - reorg_at:.1f} s" if reorg_done else "not within the run"
                print(f"re-org of depth {REORG_DEPTH}: latest crawler at the new head again after {back}")
            if confirmed:
                print(
                    f"finalized tag covers the block -> confirmed row: median {statistics.median(confirmed):.2f} s, "
                    f"p99 {percentile(confirmed, 0.99):.2f} s ({len(confirmed)} rows)"
                )
            per_block = Counter(calls)
            print(
                f"provider: {posts} HTTP posts, {len(calls)} calls over {blocks} blocks: "
                f"{posts / blocks:.2f} posts and {len(calls) / blocks:.2f} calls a block; "
                f"{posts / blocks * 86400 / block_time:,.0f} posts and {len(calls) / blocks * 86400 / block_time:,.0f} "
                "calls a day at this block time"
            )
            print(
                "  calls by method a block: " + ", ".join(f"{m} {c / blocks:.2f}" for m, c in per_block.most_common())
            )

            # SIGKILL the worker mid-follow and start it again at once
            latest_before = cursor_of(LATEST) or 0
            final_before = cursor_of(FINALIZED) or 0
            worker.signal_group(signal.SIGKILL)
            worker.process.wait()
            restarted = time.time()
            worker = start_worker(env, log_dir, "worker-restarted")
            ready = time.time()
            latest_back = final_back = None
            while time.time() - restarted < 120 and (latest_back is None or final_back is None):
                if latest_back is None and (cursor_of(LATEST) or 0) > latest_before + 1:
                    latest_back = time.time() - restarted
                if final_back is None and (cursor_of(FINALIZED) or 0) > final_before + 1:
                    final_back = time.time() - restarted
                time.sleep(0.1)
            latest_text = f"{latest_back:.1f} s" if latest_back is not None else "not within 120 s"
            final_text = f"{final_back:.1f} s" if final_back is not None else "not within 120 s"
            print(
                f"SIGKILLed worker restarted (ready after {ready - restarted:.1f} s): latest crawler recording again "
                f"{latest_text} after the restart, finalized crawler {final_text}"
            )
        finally:
            stop.set()
            watch.stop.set()
            scheduler.stop()
            worker.stop()
            print(f"(logs: {log_dir})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--block-time", type=float, default=2.0)
    parser.add_argument("--seconds", type=float, default=180.0)
    args = parser.parse_args()
    old_config = setup_databases(verbosity=0, interactive=False)
    try:
        run(args.block_time, args.seconds)
    finally:
        connection.close()
        teardown_databases(old_config, verbosity=0)


if __name__ == "__main__":
    main()
