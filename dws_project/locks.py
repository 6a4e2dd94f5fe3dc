"""The non-overlap guard: one run of a periodic job at a time, across every worker on every machine.

A Redis lock (SET NX PX with a random token; release and extension compare the token) held for the
length of the run. A background thread extends it while the job works, so a long run keeps it; a
holder that dies stops extending and the lock frees itself after its TTL. A second run that finds the
lock held skips and says so.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from redis.exceptions import LockError, LockNotOwnedError, RedisError

from dws_project.redis_client import get_redis

logger = logging.getLogger("dws.locks")

P = ParamSpec("P")
R = TypeVar("R")

DEFAULT_TTL = 60.0


def _lock_key(job: str) -> str:
    return f"dws:job-lock:{job}"


@contextmanager
def exclusive_run(job: str, *, ttl: float = DEFAULT_TTL) -> Iterator[bool]:
    """Yield True when this process holds `job`'s lock for the block, False when another run does."""
    lock = get_redis().lock(_lock_key(job), timeout=ttl, thread_local=False)
    if not lock.acquire(blocking=False):
        logger.info("job %s skipped: another run holds its lock", job)
        yield False
        return
    stop = threading.Event()

    def keep_alive() -> None:
        while not stop.wait(ttl / 3):
            try:
                lock.reacquire()  # reset the TTL to its full length
            except LockNotOwnedError:
                logger.error("job %s lost its lock while running (expired); another run may start", job)
                return
            except RedisError as exc:
                logger.warning("job %s could not extend its lock: %s", job, exc)

    extender = threading.Thread(target=keep_alive, name=f"lock-{job}", daemon=True)
    extender.start()
    try:
        yield True
    finally:
        stop.set()
        extender.join()
        try:
            lock.release()
        except (LockError, RedisError) as exc:
            logger.warning("job %s: lock release failed (%s); it frees itself after its TTL", job, exc)


def non_overlapping(job: str, *, ttl: float = DEFAULT_TTL) -> Callable[[Callable[P, R]], Callable[P, R | None]]:
    """Decorate a job so a run that finds the previous one still going returns None instead."""

    def decorate(func: Callable[P, R]) -> Callable[P, R | None]:
        @functools.wraps(func)
        def guarded(*args: P.args, **kwargs: P.kwargs) -> R | None:
            with exclusive_run(job, ttl=ttl) as acquired:
                if not acquired:
                    return None
                return func(*args, **kwargs)

        return guarded

    return decorate


def is_running(job: str) -> bool:
    """Whether some process currently holds `job`'s lock (for health pages)."""
    return bool(get_redis().exists(_lock_key(job)))
