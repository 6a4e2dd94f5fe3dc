"""The public verifier (deploy/verify_proof.py) on the sparse chain of bench/crawl_sparse.py, run as a donor runs it.

Builds the same seeded anvil chain (--blocks blocks, --donations ETH and as many 6-decimal coin donations, an
unrelated ETH transfer every 10 blocks), lets the finalized crawler catch up once (`crawl finalized --once`
until the cursor is at the finalized block, so the sale publishes its proof), serves the site with gunicorn,
then runs the verifier against it twice, its node a counting proxy in front of anvil:

* archive: the node keeps every block's state (anvil --max-persisted-states), as an archive node;
* no history: the proxy refuses balances, nonces, eth_call and code older than 128 blocks ("missing trie
  node"), as a full node asked far behind its head.

Each reports the verifier's exit status and last line, its wall time (process start-up included), the calls
and round trips (posts) it made to the node, and the bytes of the node's answers.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dws_x REDIS_URL=redis://127.0.0.1:6379/14 \\
        .venv/bin/python bench/verify_sparse.py --blocks 20000 --donations 100

Runs against a throw-away test database (test_<name>), created and dropped by the script.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

from django.test.utils import setup_databases, teardown_databases  # noqa: E402

from bench.crawl_sparse import (  # noqa: E402
    CountingProxy,
    add_prices,
    arm_provider,
    build_chain,
    compile_tree,
    environment,
    run_way,
)
from tests.chain import Anvil, deploy_stable_coins  # noqa: E402
from tests.web_server import gunicorn  # noqa: E402

VERIFIER = ROOT / "deploy" / "verify_proof.py"


def verify(site: str, node: CountingProxy, label: str) -> None:
    posts, calls, received = len(node.seen), sum(len(s.methods) for s in node.seen), node.bytes_out
    began = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-I", "-S", str(VERIFIER), "--site", site, "--rpc", node.url("/rpc")],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    wall = time.monotonic() - began
    lines = (run.stdout + run.stderr).strip().splitlines()
    calls = sum(len(s.methods) for s in node.seen) - calls
    methods: dict[str, int] = {}
    for seen in node.seen[posts:]:
        for method in seen.methods:
            methods[method] = methods.get(method, 0) + 1
    shown = ", ".join(f"{m} {n}" for m, n in sorted(methods.items(), key=lambda kv: -kv[1]))
    print(
        f"{label:10} exit {run.returncode}: wall {wall:.2f} s, {calls} calls in {len(node.seen) - posts} posts, "
        f"{(node.bytes_out - received) / 1e6:.2f} MB received ({shown})\n           {lines[-1] if lines else ''}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=20_000)
    parser.add_argument("--donations", type=int, default=100, help="ETH donations, and as many coin donations")
    parser.add_argument("--seed", type=int, default=12)
    args = parser.parse_args()

    compile_tree()
    old_config = setup_databases(verbosity=0, interactive=False)
    log = Path(tempfile.mkdtemp(prefix="verify_sparse_")) / "crawler.log"
    try:
        with Anvil(extra_args=["--max-persisted-states", str(args.blocks + 1000)]) as anvil:
            anvil.coins = deploy_stable_coins(anvil)
            print(f"building {args.blocks} blocks, {2 * args.donations} donations (seed {args.seed}) ...", flush=True)
            t0 = time.monotonic()
            start = anvil.head() + 1
            build_chain(anvil, args.blocks, args.donations, args.seed)
            tip = anvil.finalized()
            print(f"built in {time.monotonic() - t0:.0f} s; blocks {start}..{tip}", flush=True)
            add_prices(anvil, start)
            with CountingProxy(anvil.url) as provider:
                env = environment(provider.url("/rpc"), start)
                crawled = run_way("once", env, tip, log)
                print(f"crawled (the sale's proof published) in {crawled:.1f} s", flush=True)
                with gunicorn(workers=2, env=env) as site:
                    with CountingProxy(anvil.url) as node:
                        verify(site, node, "archive")
                    with CountingProxy(anvil.url) as node:
                        arm_provider(node, anvil, 0, history=False)
                        verify(site, node, "no history")
    finally:
        teardown_databases(old_config, verbosity=0)


if __name__ == "__main__":
    main()
