"""Several chains caught up at once by the deployed worker (issue 24), against one chain alone.

Builds --chains sparse anvil chains of --blocks blocks each (bench/crawl_sparse.py's builder: --donations
ETH and as many USDT donations at random blocks, an unrelated transfer every 10 blocks), one anvil per
chain on its own chain id (eth 31337, rollup 1337, then 31338, ...: the configuration refuses two chains
with one id), each behind its own counting proxy. Then the finalized crawlers catch up from each chain's
first block, each pass on an emptied ledger:

* alone: only chain `eth` configured, a Celery worker with one process, one `crawl_finalized.delay()`
* all:   every chain configured (DWS_CHAINS), a Celery worker with a process per chain (`-Q crawlers,celery
         --concurrency N`, as deploy/run-local.sh starts it), one `crawl_finalized.delay(chain=...)` per chain

It reports each pass's wall time (worker start-up excluded: from the first task sent to the last chain's
cursor at its tip), each chain's own time and round trips per block (HTTP posts through its proxy), and,
sampled from pg_stat_activity every 10 ms during the pass, the crawler connections seen waiting on a
lock (the campaign's donation_stats row lock is the one every chain's confirmations share).

--replay: both passes again, answered from the proxies' memory (a provider that answers at once: the
crawlers' own cost, where anvil's is left out).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dws_chains_bench REDIS_URL=redis://127.0.0.1:6379/9 \\
        .venv/bin/python bench/crawl_chains.py --chains 3 --blocks 6000 --donations 30 --replay

Disk: an anvil keeping every block's state writes ~1.6 MB a block of this chain to disk (under this run's
own HOME, removed at the end): three chains of 20,000 blocks need ~100 GB. The script refuses to start
when the disk would keep less than 15 GB free.

Runs against a throw-away test database (test_<name>), created and dropped by the script.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.test.utils import setup_databases, teardown_databases  # noqa: E402

from bench.crawl_sparse import CountingProxy, build_chain, reset_ledger, stop  # noqa: E402
from tests.chain import Anvil, deploy_stable_coins  # noqa: E402
from tests.ops.processes import celery_worker_command, process_environment  # noqa: E402
from tests.rpc_proxy import REPLAYABLE  # noqa: E402

STATE_BYTES_PER_BLOCK = 2 * 10**6  # what anvil persists per block of these chains (measured ~1.6 MB)
DISK_RESERVE = 15 * 10**9
# name, chain id: eth and the local rollup of `make run`, then ids no real chain uses.
CHAINS = [("eth", 31337), ("rollup", 1337), ("side", 31338), ("fourth", 31339)]


@dataclass
class Chain:
    name: str
    chain_id: int
    anvil: Anvil
    start: int = 0
    tip: int = 0
    expected: int = 0
    proxy: CountingProxy | None = None

    def variables(self) -> dict[str, str]:
        """This chain's part of the worker's environment (DESIGN "Chains": chain eth by today's names)."""
        assert self.proxy is not None
        coins = ",".join(f"{asset}:{address}:6" for asset, address in self.anvil.coins.items())
        if self.name == "eth":
            return {
                "ETH_RPC_URL": self.proxy.url("/rpc"),
                "DWS_CHAIN_ID": str(self.chain_id),
                "DWS_START_BLOCK": str(self.start),
                "DWS_STABLE_COINS": coins,
            }
        prefix = f"DWS_{self.name.upper()}_"
        return {
            prefix + "RPC_URL": self.proxy.url("/rpc"),
            prefix + "CHAIN_ID": str(self.chain_id),
            prefix + "START_BLOCK": str(self.start),
            prefix + "STABLE_COINS": coins,
        }


@dataclass
class LockSampler:
    """Polls pg_stat_activity for backends of the bench database waiting on a lock, from its own connection."""

    dbname: str
    interval: float = 0.01
    samples: int = 0
    waiting_samples: int = 0
    stats_waits: list[float] = field(default_factory=list)  # seconds waited so far, per sighting on donation_stats
    longest_other: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> LockSampler:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()

    def _run(self) -> None:
        from django.db import connection as own  # this thread's own connection (Django keeps one per thread)

        try:
            while not self._stop.is_set():
                with own.cursor() as cursor:
                    cursor.execute(
                        "SELECT extract(epoch FROM now() - state_change), query FROM pg_stat_activity "
                        "WHERE datname = %s AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()",
                        [self.dbname],
                    )
                    rows = cursor.fetchall()
                self.samples += 1
                if rows:
                    self.waiting_samples += 1
                for waited, query in rows:
                    if "donation_stats" in query:
                        self.stats_waits.append(float(waited))
                    else:
                        self.longest_other = max(self.longest_other, float(waited))
                time.sleep(self.interval)
        finally:
            own.close()

    def summary(self) -> str:
        if not self.waiting_samples:
            return f"lock waits: none seen in {self.samples} samples"
        waits = sorted(self.stats_waits)
        stats = (
            f"{len(waits)} sightings of a wait on donation_stats, the longest {1000 * waits[-1]:.0f} ms"
            if waits
            else "none on donation_stats"
        )
        return (
            f"lock waits: {self.waiting_samples} of {self.samples} samples saw a backend waiting; {stats}; "
            f"longest other wait seen {1000 * self.longest_other:.0f} ms"
        )


def add_prices(anvils: list[Anvil], first: int) -> None:
    """An ETH price for every minute any chain's blocks span (anvil stamps bulk-mined blocks 1 s apart)."""
    from prices.models import ETH, Price

    def stamp(anvil: Anvil, n: int | str) -> datetime:
        return datetime.fromtimestamp(int(anvil.block(n)["timestamp"], 16), tz=UTC)

    begin = min(stamp(a, first) for a in anvils).replace(second=0, microsecond=0) - timedelta(minutes=3)
    end = max(stamp(a, "latest") for a in anvils)
    minutes = int((end - begin).total_seconds() // 60) + 4
    Price.objects.bulk_create(
        Price(asset=ETH, price=Decimal("2000"), created_at=begin + timedelta(minutes=m), sources={"bench": True})
        for m in range(minutes)
    )


def cursors() -> dict[str, int]:
    from crawlers.models import FINALIZED, LastBlock

    return dict(LastBlock.objects.filter(label=FINALIZED).values_list("chain", "value"))


def clear_redis() -> None:
    from dws_project.redis_client import get_redis

    redis = get_redis()
    for key in redis.scan_iter("dws:*"):
        redis.delete(key)
    redis.delete("crawlers", "celery")


def run_pass(chains: list[Chain], log: Path, dbname: str, tree: Path = ROOT) -> dict:
    """Catch every chain of `chains` up with one worker of a process per chain, the worker running the code of
    `tree` (this checkout, or --before's); returns the measurements."""
    from crawlers.tasks import crawl_finalized
    from donations.models import Donation

    reset_ledger()
    clear_redis()
    env = process_environment(DWS_CHAINS=",".join(c.name for c in chains), DWS_HTTPS="off")
    for chain in chains:
        env.update(chain.variables())
    command = celery_worker_command("crawlers@bench", "crawlers,celery", concurrency=len(chains))
    with log.open("ab") as out:
        mark = log.stat().st_size
        worker = subprocess.Popen(command, cwd=tree, env=env, stdout=out, stderr=out, start_new_session=True)
        try:
            while b" ready." not in log.read_bytes()[mark:]:
                if worker.poll() is not None:
                    raise SystemExit(f"the worker exited, see {log}")
                time.sleep(0.05)
            time.sleep(1.0)  # the start-up checks and reconcile (threads beside the pool) have their go first
            before = {c.name: len(c.proxy.seen) for c in chains if c.proxy}
            cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
            sampler = LockSampler(dbname).start()
            began = time.monotonic()
            for chain in chains:
                crawl_finalized.delay(chain=chain.name)
            done: dict[str, float] = {}
            while len(done) < len(chains):
                at = cursors()
                for chain in chains:
                    if chain.name not in done and at.get(chain.name, -1) >= chain.tip:
                        done[chain.name] = time.monotonic() - began
                if worker.poll() is not None:
                    raise SystemExit(f"the worker exited, see {log}")
                if time.monotonic() - began > 1800:
                    raise SystemExit(f"not caught up after 30 min: {at}")
                time.sleep(0.05)
            wall = time.monotonic() - began
            sampler.stop()
        finally:
            stop(worker)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the worker's CPU once it has exited (start-up included)
    confirmed = dict(
        (name, Donation.objects.filter(chain=name, status="confirmed").count()) for name in (c.name for c in chains)
    )
    for chain in chains:
        if confirmed[chain.name] != chain.expected:
            raise SystemExit(f"{chain.name}: {confirmed[chain.name]} of {chain.expected} confirmed, see {log}")
    return {
        "wall": wall,
        "cpu": (after.ru_utime - cpu.ru_utime) + (after.ru_stime - cpu.ru_stime),
        "chains": {
            c.name: {"wall": done[c.name], "trips": len(c.proxy.seen) - before[c.name], "blocks": c.tip - c.start + 1}
            for c in chains
            if c.proxy
        },
        "locks": sampler.summary(),
    }


def report(title: str, result: dict) -> None:
    parts = ", ".join(
        f"{name} {c['wall']:.2f} s / {c['trips']} round trips ({c['trips'] / c['blocks']:.4f}/block)"
        for name, c in result["chains"].items()
    )
    print(f"{title}: wall {result['wall']:.2f} s, worker CPU {result['cpu']:.2f} s; {parts}", flush=True)
    print(f"    {result['locks']}", flush=True)


@contextmanager
def private_home(home: Path) -> Iterator[None]:
    """HOME for the processes started inside: an anvil keeps its persisted states under $HOME/.foundry."""
    home.mkdir(exist_ok=True)
    before = os.environ.get("HOME")
    os.environ["HOME"] = str(home)
    try:
        yield
    finally:
        if before is None:
            del os.environ["HOME"]
        else:
            os.environ["HOME"] = before


def forget(proxies: list[CountingProxy], provider: str) -> None:
    """Before a pass against anvil: every answer asked again (a replay pass answers from the last one's)."""
    if provider == "anvil":
        for proxy in proxies:
            proxy.forget_answers()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, default=3, choices=range(2, len(CHAINS) + 1))
    parser.add_argument("--blocks", type=int, default=6000)
    parser.add_argument("--donations", type=int, default=30, help="ETH donations per chain, and as many USDT ones")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--replay", action="store_true", help="both passes again, answered from the proxies' memory")
    parser.add_argument("--rounds", type=int, default=1, help="how many times to run each pass")
    parser.add_argument(
        "--before",
        type=Path,
        default=None,
        help="another checkout (e.g. a worktree of main): each round runs both passes with its code first, then "
        "with this one's, on the same chains (the database schema is this checkout's: same migrations needed)",
    )
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))  # the clean-up below runs (anvils, database)
    needed, free = args.chains * args.blocks * STATE_BYTES_PER_BLOCK, shutil.disk_usage(tempfile.gettempdir()).free
    if free - needed < DISK_RESERVE:
        raise SystemExit(f"the anvils' states need ~{needed / 1e9:.0f} GB; {free / 1e9:.0f} GB free leaves too little")

    old_config = setup_databases(verbosity=0, interactive=False)
    dbname = connection.settings_dict["NAME"]
    scratch = Path(tempfile.mkdtemp(prefix="crawl_chains_"))
    log, home = scratch / "worker.log", scratch / "home"
    print(f"worker log: {log}", flush=True)
    anvils: list[Anvil] = []
    proxies: list[CountingProxy] = []
    try:
        chains: list[Chain] = []
        for name, chain_id in CHAINS[: args.chains]:
            # Every block's state kept, as an archive provider (the balance proof reads old blocks): on disk,
            # under this run's own HOME (anvil writes them to ~/.foundry/anvil/tmp, which another run's
            # clean-up may empty under a running anvil).
            anvil = Anvil(extra_args=["--chain-id", str(chain_id), "--max-persisted-states", str(args.blocks + 1000)])
            with private_home(home):
                anvils.append(anvil.start())
            anvil.coins = deploy_stable_coins(anvil)
            chains.append(Chain(name, chain_id, anvil, start=anvil.head() + 1))
        t0 = time.monotonic()
        print(f"building {args.blocks} blocks ({2 * args.donations} donations) on each chain at once ...", flush=True)
        with ThreadPoolExecutor(len(chains)) as pool:
            built = pool.map(lambda nc: build_chain(nc[1].anvil, args.blocks, args.donations, args.seed + nc[0]),
                             enumerate(chains))  # fmt: skip
            for chain, expected in zip(chains, built, strict=True):
                chain.expected = expected
                chain.tip = chain.anvil.finalized()
                print(f"{chain.name}: blocks {chain.start}..{chain.tip}", flush=True)
        print(f"built in {time.monotonic() - t0:.0f} s", flush=True)
        for chain in chains:
            chain.proxy = CountingProxy(chain.anvil.url, memoize=REPLAYABLE if args.replay else frozenset()).start()
            proxies.append(chain.proxy)
        add_prices(anvils, min(c.start for c in chains))

        providers = ("anvil", "replay") if args.replay else ("anvil",)
        trees = [("before ", args.before.resolve()), ("after  ", ROOT)] if args.before else [("", ROOT)]
        for provider in providers:
            for rounds in range(args.rounds):
                for which, tree in trees:
                    forget(proxies, provider)
                    alone = run_pass(chains[:1], log, dbname, tree)
                    report(f"{which}alone {provider:6} round {rounds + 1}", alone)
                    forget(proxies, provider)
                    together = run_pass(chains, log, dbname, tree)
                    report(f"{which}all {len(chains)}  {provider:6} round {rounds + 1}", together)
                    print(
                        f"    {len(chains)} chains / one alone: {together['wall'] / alone['wall']:.2f}x wall "
                        f"(target <= 1.5x); uptime: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}",
                        flush=True,
                    )
    finally:
        for proxy in proxies:
            proxy.stop()
        for anvil in anvils:
            anvil.stop()
        shutil.rmtree(home, ignore_errors=True)  # what the anvils persisted, should one not have removed it
        teardown_databases(old_config, verbosity=0)


if __name__ == "__main__":
    main()
