"""Run dws processes the way an operator does, with an environment the test controls."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable

# Values a leak check greps for: they must never appear in any output.
DB_PASSWORD = "Pw-sEcReT-4711 host=elsewhere.invalid"
RPC_KEY = "rpcKEY-9f8e7d6c5b4a"
TT_KEY = "0x" + "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"


def base_environment() -> dict[str, str]:
    """A valid production-like configuration: passwords and keys that are easy to grep for."""
    from urllib.parse import quote

    env = {k: v for k, v in os.environ.items() if not k.startswith(("DWS_", "DJANGO_", "ETH_", "DATABASE_", "REDIS_"))}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "dws_project.settings",
            # trust auth ignores the password, so a real connection still works with it
            "DATABASE_URL": f"postgres://postgres:{quote(DB_PASSWORD, safe='')}@127.0.0.1:5432/postgres",
            "DWS_DB_SSLMODE": "disable",
            # This test run's Redis db (tests/settings.py: one per xdist worker).
            "REDIS_URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/15"),
            "DWS_DONATION_ADDRESS": "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720",
            "DWS_STABLE_COINS": "usdt:0xdAC17F958D2ee523a2206206994597C13D831ec7:6,"
            "usdc:0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48:6",
            "DWS_SALE_PARAMS": "100000000:0.001,250000000:0.0015",
            "ETH_RPC_URL": f"https://node.example.org/v3/{RPC_KEY}?apikey={RPC_KEY}",
            "DJANGO_SECRET_KEY": "test-secret-key-0123456789-abcdefghijklmnop",
            "DWS_TT_PRIVATE_KEY": TT_KEY,
            "DWS_CHAIN_ID": "1",  # mainnet: production-like (DEBUG and the dev price refused)
        }
    )
    return env


def run_manage(*args: str, env: Mapping[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, str(ROOT / "manage.py"), *args],
        env=dict(env),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def leaked_secrets(output: str) -> list[str]:
    """Which of the grep-able secrets (or recognisable parts of them) appear in `output`."""
    needles = [DB_PASSWORD, "Pw-sEcReT", "elsewhere.invalid", RPC_KEY, TT_KEY[2:], TT_KEY[2:18]]
    return [n for n in needles if n in output]
