"""Catch-up of the finalized crawler over a sparse chain, run as an operator runs it.

Builds (seeded) an anvil chain of --blocks blocks holding --donations ETH and as many 6-decimal coin
donations, and an unrelated ETH transfer every 10 blocks, then lets the finalized crawler catch up from
the first block, once per way:

* once:   `manage.py crawl finalized --once`, run again until the cursor reaches the finalized block
* loop:   `manage.py crawl finalized` (the deployed loop), stopped once it is there
* worker: a Celery worker (`-Q crawlers,prices,celery`) and one `crawl_finalized.delay()`

Each reports the wall time (process start-up included), JSON-RPC round trips (HTTP posts through a
counting proxy), bytes of answers received, and the crawler processes' CPU time.

--replay: every way runs twice, first against anvil through the proxy, which keeps every answer about a
fixed block, then again answered from the proxy's memory (a provider that answers at once: the
crawler's own cost). --latency MS[,MS...] delays every post by MS (a provider across the internet; the
delay sleeps in the post's own proxy thread, so concurrent posts wait side by side, as at a real
provider): with a list, every way (and Ponder) runs at each latency in turn, anvil asked only once.
--in-flight N sets DWS_RPC_MAX_IN_FLIGHT for the crawler (1: one post at a time, for comparison).
BENCH_PROFILE_DIR=DIR runs each `--once` run under cProfile (DIR/run-N.prof), for where the CPU goes.
--history off: the provider keeps no state older than 128 blocks (balances, nonces, balanceOf and code
at an older block are refused with "missing trie node"): the balance proof's fallback, every block read
with its call traces. `--history on,off` runs the archive passes, then the same chain without history
(at the first latency only; its traces asked of anvil once, then replayed).
--safe makes the donation address a real Safe 1.4.1 first (tests/safe_wallet.py: its proxy and singleton code
from @safe-global/safe-contracts), which the donations reach the same ways: the cost of a Safe read by its
events (crawlers/scan/safe.py).
--ponder blocks,logs then lets Ponder (bench/ponder/, bench/ponder_way.py) index the same chain through
the same proxy: "blocks" reads every block to see ETH, "logs" reads only the coin's Transfer logs.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dws_x REDIS_URL=redis://127.0.0.1:6379/14 \\
        .venv/bin/python bench/crawl_sparse.py --blocks 20000 --donations 100 --ways once,loop,worker

Runs against a throw-away test database (test_<name>), created and dropped by the script.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

from django.test.utils import setup_databases, teardown_databases  # noqa: E402

from crawlers.models import CHAIN  # noqa: E402
from tests.chain import ACCOUNTS, DONATION_ADDRESS, Anvil, deploy_stable_coins  # noqa: E402
from tests.ops.processes import process_environment  # noqa: E402
from tests.rpc_proxy import REPLAYABLE, RpcProxy  # noqa: E402
from tests.safe_wallet import install_safe  # noqa: E402

DONORS = ACCOUNTS[1:9]
USDT = 10**6


class CountingProxy(RpcProxy):
    """The test proxy, also adding up the bytes of the answers it passes on (JSON of each reply)."""

    bytes_out = 0
    check: RpcProxy | None = None  # the check provider's proxy (--check), counted apart

    def _forward(self, batch: list[dict]) -> dict:
        by_id = super()._forward(batch)
        self.bytes_out += sum(len(json.dumps(reply)) for reply in by_id.values())
        return by_id


def build_chain(anvil: Anvil, blocks: int, donations: int, seed: int) -> int:
    """`blocks` blocks from the next one on; returns the number of donations sent."""
    rng = random.Random(seed)
    usdt = anvil.coins["usdt"]
    for donor in DONORS:
        anvil.mint(usdt, donor, 10**15)
    first = anvil.head() + 1
    events: dict[int, str] = {n: "unrelated" for n in range(first, first + blocks, 10)}
    spots = rng.sample([n for n in range(first + 1, first + blocks) if n not in events], 2 * donations)
    events.update({n: "eth" for n in spots[:donations]})
    events.update({n: "usdt" for n in spots[donations:]})
    started = time.monotonic()
    for i, number in enumerate(sorted(events)):
        gap = number - anvil.head() - 1
        if gap > 0:
            anvil.mine(gap)
        donor, other = rng.choice(DONORS), ACCOUNTS[0]
        kind = events[number]
        if kind == "eth":
            anvil.send_eth(donor, DONATION_ADDRESS, rng.randrange(10**16, 10**18))
        elif kind == "usdt":
            anvil.transfer_token(usdt, donor, DONATION_ADDRESS, rng.randrange(1, 500) * USDT)
        else:
            anvil.send_eth(donor, other, 10**12)
        if i and i % 500 == 0:
            print(f"  built up to block {number} ({time.monotonic() - started:.0f} s)", flush=True)
    tail = first + blocks - 1 - anvil.head()
    if tail > 0:
        anvil.mine(tail)
    anvil.mine(2)  # so the last built block is finalized
    return 2 * donations


def add_prices(anvil: Anvil, first: int) -> None:
    """An ETH price for every minute the chain's blocks span (anvil stamps bulk-mined blocks 1 s apart)."""
    from prices.models import ETH, Price

    stamp = lambda n: datetime.fromtimestamp(int(anvil.block(n)["timestamp"], 16), tz=UTC)  # noqa: E731
    begin = stamp(first).replace(second=0, microsecond=0) - timedelta(minutes=3)
    minutes = int((stamp(anvil.head()) - begin).total_seconds() // 60) + 4
    Price.objects.bulk_create(
        Price(asset=ETH, price=Decimal("2000"), created_at=begin + timedelta(minutes=m), sources={"bench": True})
        for m in range(minutes)
    )


def reset_ledger() -> None:
    from crawlers.models import Completeness, LastBlock, UnexplainedInflow
    from donations.models import Donation, DonationStats, UserData
    from prices.models import TOKEN, Price

    Donation.objects.all().delete()
    UserData.objects.all().delete()
    LastBlock.objects.all().delete()
    Completeness.objects.all().delete()
    UnexplainedInflow.objects.all().delete()
    Price.objects.filter(asset=TOKEN).delete()
    DonationStats.objects.update(total=0, tokens=0, status="open")


def environment(proxy_url: str, start: int) -> dict[str, str]:
    """The crawler processes' environment: this script's throw-away database and Redis db."""
    return process_environment(ETH_RPC_URL=proxy_url, DWS_START_BLOCK=str(start))


def cursor() -> int:
    from crawlers.record.cursors import cursor_get

    row = cursor_get(chain=CHAIN, label="finalized")
    return row.value if row else -1


def wait_for(tip: int, process: subprocess.Popen, limit: float) -> None:
    deadline = time.monotonic() + limit
    while cursor() < tip:
        if process.poll() is not None and cursor() < tip:
            raise SystemExit(f"the crawler exited at cursor {cursor()} of {tip}")
        if time.monotonic() > deadline:
            raise SystemExit(f"not caught up after {limit:.0f} s (cursor {cursor()} of {tip})")
        time.sleep(0.05)


def stop(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def run_way(way: str, env: dict[str, str], tip: int, log: Path) -> float:
    """Catch up one way; returns the wall time. Child CPU is read by the caller (RUSAGE_CHILDREN)."""
    manage = [sys.executable, "manage.py"]
    if os.environ.get("BENCH_PROFILE_DIR"):  # each --once run under cProfile, a file per run
        manage = [sys.executable, "-m", "cProfile", "-o", f"{os.environ['BENCH_PROFILE_DIR']}/run-%d.prof", "manage.py"]
    began = time.monotonic()
    with log.open("ab") as out:
        if way == "once":
            runs = 0
            while cursor() < tip:
                command = [part.replace("%d", str(runs)) for part in manage]
                subprocess.run([*command, "crawl", "finalized", "--once"], cwd=ROOT, env=env, stdout=out, stderr=out)
                runs += 1
                if runs > 500:
                    raise SystemExit("more than 500 runs of --once")
            return time.monotonic() - began
        if way == "loop":
            command = [*manage, "crawl", "finalized"]
        else:
            command = [
                sys.executable, "-m", "celery", "-A", "dws_project", "worker", "--pool=solo",
                "-Q", "crawlers,prices,celery", "--without-mingle", "--without-gossip", "--without-heartbeat",
                "-l", "INFO",
            ]  # fmt: skip
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=out, start_new_session=True)
        try:
            if way == "worker":
                while b" ready." not in log.read_bytes():
                    if process.poll() is not None:
                        raise SystemExit("the worker exited")
                    time.sleep(0.05)
                from crawlers.tasks import crawl_finalized

                crawl_finalized.delay()
            wait_for(tip, process, 1800)
            return time.monotonic() - began
        finally:
            stop(process)


def idle_run(env: dict[str, str]) -> None:
    """`crawl finalized --once` with nothing to do (the cursor at the finalized block), under /usr/bin/time."""
    command = ["/usr/bin/time", "-f", "%e s wall, %U s user, %S s sys, %M KB max RSS"]
    for _ in range(3):
        done = subprocess.run(
            [*command, sys.executable, "manage.py", "crawl", "finalized", "--once"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        print(f"idle   crawl finalized --once: {done.stderr.strip().splitlines()[-1]}", flush=True)


def run_ponder_way(
    proxy: CountingProxy, anvil: Anvil, mode: str, start: int, tip: int, donations: int, copies: int, log: Path
) -> None:
    from bench.ponder_way import run_ponder

    proxy.forget_answers()  # Ponder asks anvil, as our crawler's first pass did
    posts, received = len(proxy.seen), proxy.bytes_out
    expected = 2 * donations if mode == "blocks" else donations  # "logs" cannot see the ETH donations
    found = run_ponder(
        mode, proxy.url("/rpc"), start, DONATION_ADDRESS, anvil.coins["usdt"], expected, tip=tip,
        rpc_copies=copies, log=log,
    )  # fmt: skip
    trips, size = len(proxy.seen) - posts, proxy.bytes_out - received
    print(
        f"ponder {mode:6} {tip - start + 1} blocks: wall {found['wall']:.2f} s (ready {found['ready']:.2f} s), "
        f"{trips} round trips, {size / 1e6:.2f} MB received, CPU {found['cpu']:.2f} s; "
        f"{found['rows']}/{expected} donations indexed ({copies} RPC URL copies)",
        flush=True,
    )


def arm_provider(proxy: CountingProxy, anvil: Anvil, latency: float, *, history: bool) -> None:
    """The proxy as the provider of this pass: `latency` ms a post, and (history off) no old state."""
    proxy.disarm()
    if not history:
        head = anvil.head()

        def old(params: list) -> bool:
            at = params[1] if len(params) > 1 else None
            return isinstance(at, dict) or (isinstance(at, str) and at.startswith("0x") and int(at, 16) < head - 128)

        for method in ("eth_getBalance", "eth_getTransactionCount", "eth_call", "eth_getCode"):
            proxy.arm(method, "error", count=None, message="missing trie node", when=old)
    if latency:
        proxy.arm("*", "hang", count=None, seconds=latency / 1000)


def measure_way(
    proxy: CountingProxy,
    way: str,
    provider: str,
    latency: float,
    env: dict[str, str],
    start: int,
    tip: int,
    expected: int,
    log: Path,
) -> None:
    """Catch up one way from the first block and print what it cost."""
    from donations.models import Donation
    from dws_project.redis_client import get_redis

    reset_ledger()
    for key in get_redis().scan_iter("dws:*"):
        get_redis().delete(key)
    posts, received = len(proxy.seen), proxy.bytes_out
    calls = sum(len(seen.methods) for seen in proxy.seen)
    check = proxy.check
    checked = (len(check.seen), sum(len(seen.methods) for seen in check.seen)) if check else (0, 0)
    proxy.most_in_flight = 0
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = run_way(way, env, tip, log)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime - cpu.ru_utime) + (after.ru_stime - cpu.ru_stime)
    trips, size = len(proxy.seen) - posts, proxy.bytes_out - received
    calls = sum(len(seen.methods) for seen in proxy.seen) - calls
    confirmed = Donation.objects.filter(status="confirmed").count()
    blocks = tip - start + 1
    print(
        f"{way:6} {provider:6} {latency:3.0f} ms {blocks} blocks: wall {wall:.2f} s, {trips} round trips "
        f"({trips / blocks:.4f}/block, {calls} calls, at most {proxy.most_in_flight} at once), "
        f"{size / 1e6:.2f} MB received, CPU {cpu_s:.2f} s; {confirmed}/{expected} donations confirmed",
        flush=True,
    )
    if check is not None:
        trips_c = len(check.seen) - checked[0]
        calls_c = sum(len(seen.methods) for seen in check.seen) - checked[1]
        print(
            f"       check provider: {trips_c} round trips ({trips_c / blocks:.4f}/block), {calls_c} calls "
            f"({calls_c / blocks:.4f}/block)",
            flush=True,
        )
    if confirmed != expected:
        raise SystemExit(f"expected {expected} confirmed donations, see {log}")


def compile_tree() -> None:
    """Compile the project's modules as the image does (deploy/Dockerfile): with PYTHONDONTWRITEBYTECODE
    set, as here and in the image, every crawler process would otherwise compile them again."""
    import compileall

    for package in ("dws_project", "crawlers", "donations", "prices", "affiliates", "web", "tests"):
        compileall.compile_dir(str(ROOT / package), quiet=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=20_000)
    parser.add_argument("--donations", type=int, default=100, help="ETH donations, and as many coin donations")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--ways", default="once,loop,worker")
    parser.add_argument("--replay", action="store_true", help="each way again, answered from the proxy's memory")
    parser.add_argument("--latency", default="0", help="milliseconds added to every post; a comma list runs each")
    parser.add_argument("--in-flight", type=int, default=None, help="DWS_RPC_MAX_IN_FLIGHT for the crawler")
    parser.add_argument(
        "--history", default="on", help="on, off (a provider without history, at the first latency only) or on,off"
    )
    parser.add_argument("--safe", action="store_true", help="the donation address is a real Safe 1.4.1")
    parser.add_argument("--ponder", default="", help="Ponder modes to run after ours: blocks,logs")
    parser.add_argument("--ponder-copies", type=int, default=64, help="RPC URL copies (Ponder's rate allowance)")
    parser.add_argument(
        "--check", action="store_true", help="with a check provider (DWS_RPC_CHECK_URL), its calls counted apart"
    )
    args = parser.parse_args()

    compile_tree()
    old_config = setup_databases(verbosity=0, interactive=False)
    log = Path(tempfile.mkdtemp(prefix="crawl_sparse_")) / "crawler.log"
    try:
        # anvil keeps the state of only its recent blocks unless told to keep them all (on disk): the
        # balance proof asks balances across the whole chain, as of an archive node.
        with Anvil(extra_args=["--max-persisted-states", str(args.blocks + 1000)]) as anvil:
            anvil.coins = deploy_stable_coins(anvil)
            if args.safe:
                install_safe(anvil, DONATION_ADDRESS, [ACCOUNTS[1]])
            print(f"building {args.blocks} blocks, {2 * args.donations} donations (seed {args.seed}) ...", flush=True)
            t0 = time.monotonic()
            start = anvil.head() + 1
            expected = build_chain(anvil, args.blocks, args.donations, args.seed)
            tip = anvil.finalized()
            print(f"built in {time.monotonic() - t0:.0f} s; blocks {start}..{tip}", flush=True)
            add_prices(anvil, start)

            with (
                CountingProxy(anvil.url, memoize=REPLAYABLE if args.replay else frozenset()) as proxy,
                CountingProxy(anvil.url) as second,
            ):
                env = environment(proxy.url("/rpc"), start)
                if args.check:
                    env["DWS_RPC_CHECK_URL"] = second.url("/check")
                    proxy.check = second
                if args.in_flight is not None:
                    env["DWS_RPC_MAX_IN_FLIGHT"] = str(args.in_flight)
                latencies = [float(ms) for ms in args.latency.split(",")]
                for history in args.history.split(","):
                    asked_anvil = False  # a provider without history: its traces are asked of anvil once too
                    for latency in latencies if history == "on" else latencies[:1]:
                        arm_provider(proxy, anvil, latency, history=history == "on")
                        for way in args.ways.split(","):
                            providers = ("replay",) if asked_anvil else ("anvil", "replay") if args.replay else ("",)
                            for provider in providers:
                                if provider == "anvil" and history == "on":
                                    proxy.forget_answers()  # this pass asks anvil; the replays answer from memory
                                shown = provider if history == "on" else f"{provider}, no history"
                                measure_way(proxy, way, shown, latency, env, start, tip, expected, log)
                            asked_anvil = args.replay
                idle_run(env)
                for latency in latencies:
                    arm_provider(proxy, anvil, latency, history=True)
                    for mode in filter(None, args.ponder.split(",")):
                        run_ponder_way(proxy, anvil, mode, start, tip, args.donations, args.ponder_copies, log)
    finally:
        teardown_databases(old_config, verbosity=0)


if __name__ == "__main__":
    main()
