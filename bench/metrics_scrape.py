"""Cost of one metrics scrape's database part (`DatabaseCollector`) with a million donations on record.

Loads bench/load_donations.sql (1,000,000 donations, 200,000 donors) into a throw-away test database,
then times --scrapes scrapes of the database gauges (what a Prometheus target answers every 15 s):
computed every time, and shared through the cache for DATABASE_CACHE_SECONDS as deployed.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dws_ops REDIS_URL=redis://127.0.0.1:6379/10 \\
        .venv/bin/python bench/metrics_scrape.py
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

from django.core.cache import cache  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import setup_databases, teardown_databases  # noqa: E402
from prometheus_client import generate_latest  # noqa: E402

from dws_project.metrics_collectors import DATABASE_CACHE_KEY, scrape_registry  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scrapes", type=int, default=20)
    args = parser.parse_args()

    old_config = setup_databases(verbosity=0, interactive=False)
    try:
        db = connection.settings_dict
        started = time.monotonic()
        subprocess.run(
            [
                "psql",
                "-h",
                db["HOST"],
                "-U",
                db["USER"],
                "-d",
                db["NAME"],
                "-q",
                "-f",
                str(ROOT / "bench" / "load_donations.sql"),
            ],
            check=True,
            capture_output=True,
        )
        print(f"loaded 1,000,000 donations in {time.monotonic() - started:.1f} s")
        registry = scrape_registry()
        for label, shared in (("computed", False), ("shared (cached)", True)):
            times = []
            for _ in range(args.scrapes):
                if not shared:
                    cache.delete(DATABASE_CACHE_KEY)
                started = time.monotonic()
                body = generate_latest(registry)
                times.append(time.monotonic() - started)
            assert b"dws_donations{" in body
            print(
                f"scrape, database gauges {label}, 1M donations: median {statistics.median(times) * 1000:.0f} ms, "
                f"max {max(times) * 1000:.0f} ms over {args.scrapes} scrapes"
            )
    finally:
        connection.close()
        teardown_databases(old_config, verbosity=0)


if __name__ == "__main__":
    main()
