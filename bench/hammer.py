"""One client hammering the expensive endpoints at its rate limit (bench/hardening_load.sh).

Sends, as one client address (X-Forwarded-For: 203.0.113.66 through the trusted local proxy), up to
the site-wide budget of requests per second, alternating between an admin login with a wrong password
(a real login form: CSRF cookie and token) and a signed endpoint with a signature that does not check
out. Prints what it got back, by status, when it is stopped (SIGTERM) or after --seconds.
"""

from __future__ import annotations

import argparse
import collections
import re
import secrets
import signal
import threading
import time
from datetime import UTC, datetime

import requests

ATTACKER = "203.0.113.66"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("--rate", type=float, default=50.0, help="requests per second in total")
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args()

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    counts: collections.Counter[str] = collections.Counter()
    lock = threading.Lock()
    interval = args.threads / args.rate
    deadline = time.monotonic() + args.seconds

    def worker(index: int) -> None:
        session = requests.Session()
        session.headers["X-Forwarded-For"] = ATTACKER
        page = session.get(f"{args.base}/admin/login/", timeout=30)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        n = index
        next_at = time.monotonic() + index * interval / args.threads
        while not stop.is_set() and time.monotonic() < deadline:
            time.sleep(max(0.0, next_at - time.monotonic()))
            next_at += interval
            n += 1
            try:
                if n % 2 and token:
                    body = {
                        "csrfmiddlewaretoken": token.group(1),
                        "username": "admin",
                        "password": secrets.token_hex(8),
                    }
                    response = session.post(f"{args.base}/admin/login/", data=body, timeout=30)
                    kind = "admin login"
                else:
                    ts = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S+00:00")
                    headers = {
                        "delphi-key": "0x" + secrets.token_hex(20),
                        "delphi-ts": ts,
                        "delphi-signature": "0x" + secrets.token_hex(64) + "1b",
                    }
                    response = session.post(f"{args.base}/affiliate/code", headers=headers, timeout=30)
                    kind = "signed"
                outcome = f"{kind} {response.status_code}"
            except requests.RequestException as exc:
                outcome = f"error {type(exc).__name__}"
            with lock:
                counts[outcome] += 1

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(args.threads)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    total = sum(counts.values())
    print(f"attacker: {total} requests in {elapsed:.0f} s ({total / elapsed:.1f}/s)")
    for outcome, count in sorted(counts.items()):
        print(f"  {outcome}: {count}")


if __name__ == "__main__":
    main()
