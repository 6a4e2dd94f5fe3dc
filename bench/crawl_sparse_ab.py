"""bench/crawl_sparse.py's catch-up, two checkouts side by side on one chain (issue 37).

Builds one sparse chain (crawl_sparse's `build_chain`: --blocks blocks, --donations ETH and as many USDT
donations, an unrelated transfer every 10 blocks), asks anvil once, then runs `crawl finalized --once` until
caught up, answered from the proxy's memory with --latency ms a post, alternately with the code of --before
(another checkout, e.g. a worktree of main) and of this one, --rounds times; with --ponder, Ponder's logs-only
mode twice after the rounds, at the same latency. Each pass on an emptied ledger. One build instead of one per
checkout, and the two interleaved, so a shared machine's load falls on both alike.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dws_sparse_ab REDIS_URL=redis://127.0.0.1:6379/9 \\
        .venv/bin/python bench/crawl_sparse_ab.py --before /tmp/main-worktree --latency 20 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench.crawl_sparse as sparse  # sets Django up; its passes run `manage.py` in `sparse.ROOT`
from tests.chain import Anvil, deploy_stable_coins
from tests.rpc_proxy import REPLAYABLE


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--blocks", type=int, default=20_000)
    parser.add_argument("--donations", type=int, default=100)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--latency", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ponder", action="store_true", help="Ponder logs-only twice after the rounds")
    args = parser.parse_args()
    from django.test.utils import setup_databases, teardown_databases

    trees = [("before", args.before.resolve()), ("after", sparse.ROOT)]
    for _, tree in trees:
        sparse.ROOT = tree
        sparse.compile_tree()
    old_config = setup_databases(verbosity=0, interactive=False)
    log = Path(tempfile.mkdtemp(prefix="crawl_sparse_ab_")) / "crawler.log"
    try:
        with Anvil(extra_args=["--max-persisted-states", str(args.blocks + 1000)]) as anvil:
            anvil.coins = deploy_stable_coins(anvil)
            start = anvil.head() + 1
            t0 = time.monotonic()
            expected = sparse.build_chain(anvil, args.blocks, args.donations, args.seed)
            tip = anvil.finalized()
            print(f"built in {time.monotonic() - t0:.0f} s; blocks {start}..{tip}", flush=True)
            sparse.add_prices(anvil, start)
            with sparse.CountingProxy(anvil.url, memoize=REPLAYABLE) as proxy:
                env = sparse.environment(proxy.url("/rpc"), start)
                sparse.measure_way(proxy, "once", "anvil", 0, env, start, tip, expected, log)  # fills the memory
                sparse.arm_provider(proxy, anvil, args.latency, history=True)
                for round_ in range(args.rounds):
                    for name, tree in trees:
                        sparse.ROOT = tree
                        print(f"round {round_ + 1} {name:6} load {os.getloadavg()[0]:.2f}: ", end="", flush=True)
                        sparse.measure_way(proxy, "once", "replay", args.latency, env, start, tip, expected, log)
                for _ in range(2 if args.ponder else 0):  # last: Ponder asks anvil (its pass empties the memory)
                    sparse.run_ponder_way(proxy, anvil, "logs", start, tip, args.donations, 64, log)
    finally:
        teardown_databases(old_config, verbosity=0)


if __name__ == "__main__":
    main()
