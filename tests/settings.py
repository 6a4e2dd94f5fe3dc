"""Settings for the test suite: the development defaults, with the tests' own Redis db.

Values already in the environment win, so parallel checkouts can point at their own database
(DATABASE_URL) and Redis db (REDIS_URL). Under pytest-xdist each worker (`gw0`, `gw1`, ...) takes the
Redis db below the previous one's (15, 14, 13, ...) and pytest-django gives it a test database of its own
(`test_dws_gw1`), so the workers never share a key or a row.
"""

import dataclasses
import os
from pathlib import Path

_TEST_ENV = {
    "REDIS_URL": "redis://127.0.0.1:6379/15",
    "DJANGO_DEBUG": "false",
    # The test servers (live_server, gunicorn) speak plain HTTP.
    "DWS_HTTPS": "off",
    # The suite starts its own anvil nodes; this default only has to pass validation.
    "ETH_RPC_URL": "http://127.0.0.1:8545",
    # Webhook secrets are stored encrypted; this key is the tests' own (never a deployment's).
    "DWS_SECRETS_KEY": "CglKLesre-9og46v_kMsXlhVQCeM58u_j7ZwhTbuYzw=",
}

_defaults = {}
for line in (Path(__file__).resolve().parent.parent / "deploy" / "env.local").read_text().splitlines():
    if line.strip() and not line.lstrip().startswith("#"):
        key, _, value = line.partition("=")
        _defaults[key.strip()] = value.strip()
_defaults.update(_TEST_ENV)
for key, value in _defaults.items():
    os.environ.setdefault(key, value)


def _worker_redis_url(url: str, worker: str) -> str:
    """The base Redis URL moved down by the xdist worker's number: db 15 for gw0, 14 for gw1, ..."""
    base, _, db = url.rpartition("/")
    number = int(worker.removeprefix("gw"))
    if not db.isdigit() or int(db) < number:
        raise RuntimeError(f"REDIS_URL must end in a db number of at least {number} for xdist worker {worker}")
    return f"{base}/{int(db) - number}"


# Once per worker: the processes a test starts inherit both variables and keep the worker's db as it is.
_worker = os.environ.get("PYTEST_XDIST_WORKER")
if _worker and os.environ.get("TEST_REDIS_WORKER") != _worker:
    os.environ["REDIS_URL"] = _worker_redis_url(os.environ["REDIS_URL"], _worker)
    os.environ["TEST_REDIS_WORKER"] = _worker

from dws_project.settings import *

# The chaos tests' worker processes shorten these through their environment (production: 15 s, 120 s).
CRAWLER_RPC_READ_TIMEOUT = float(os.environ.get("TEST_RPC_READ_TIMEOUT", "15"))
CRAWLER_LOCK_TTL = float(os.environ.get("TEST_CRAWLER_LOCK_TTL", "120"))
# Blocks per crawler run (production: 1000); the catch-up test makes runs small so it needs several.
CRAWLER_RUN_MAX_BLOCKS = int(os.environ.get("TEST_CRAWL_RUN_MAX_BLOCKS", "1000"))
# The sparse path (crawlers/scan/sparse.py) is on; a test (or a test worker, through its environment) can force
# the full scan of every block.
CRAWLER_SPARSE = os.environ.get("TEST_CRAWLER_SPARSE", "1") != "0"
# Tests look at /health right after changing the chain; the cache has a test of its own.
HEALTH_CACHE_SECONDS = int(os.environ.get("TEST_HEALTH_CACHE_SECONDS", "0"))
# Likewise the public proof's shared cache (crawlers/proof_report.py); a test of its own turns it on.
PROOF_CACHE_SECONDS = int(os.environ.get("TEST_PROOF_CACHE_SECONDS", "0"))
# The tests' webhook receivers listen on this machine (production refuses loopback; DWS_WEBHOOK_ALLOW_LOOPBACK
# is accepted on a development chain only). The SSRF tests turn it off again.
CONFIG = dataclasses.replace(CONFIG, webhook_allow_loopback=True)  # noqa: F405
# The webhook worker test gives an attempt more time than the task's soft time limit it imposes.
DWS_WEBHOOK_TIMEOUT = float(os.environ.get("TEST_WEBHOOK_TIMEOUT", "10"))
