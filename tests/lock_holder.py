"""A stand-in periodic job for the non-overlap guard tests: `python -m tests.lock_holder JOB HOLD TTL [watch]`.

Prints `acquired` or `skipped` (flushed at once) and, when it holds the lock, works for HOLD seconds; a
negative HOLD works until a line arrives on its standard input (the test says when, whatever the machine's load).
With `watch` it works as the head follower does, until its lease is lost or HOLD is over, and prints `lost`
or `kept`.
"""

import os
import sys
import time

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
django.setup()

from dws_project.locks import leased_run  # noqa: E402


def main() -> None:
    job, hold, ttl = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    watch = sys.argv[4:] == ["watch"]
    with leased_run(job, ttl=ttl) as lease:
        acquired = lease is not None
        print("acquired" if acquired else "skipped", flush=True)
        if lease is not None and watch:
            print("lost" if lease.lost.wait(hold) else "kept", flush=True)
        elif acquired and hold < 0:
            sys.stdin.readline()
        elif acquired:
            time.sleep(hold)
    print("done", flush=True)


if __name__ == "__main__":
    main()
