"""The non-overlap guard: one run of a periodic job at a time, across every worker on every machine.

A Redis lock (SET NX PX with a random token; release and extension compare the token) held for the
length of the run. A background thread extends it while the job works, so a long run keeps it. A
second run that finds the lock held skips and says so, unless its holder is dead: the token names the
holder's PostgreSQL session (its backend pid and start time), which the server ends with the process, so
a contender that finds no such session takes the lock over at once instead of waiting out the TTL (a worker
killed mid-run crawls again as soon as it is back, issue 36). A holder whose session cannot be named
(the database did not answer), or whose session the contender may not read (another database role's),
is judged by the TTL alone, as before.

The Redis lock is the cheap first guard. A chain's rows are also guarded in PostgreSQL, where a Redis
flush, restart or fail-over cannot take the guard away (`chain_writer`): a session advisory lock per
(chain, job) on the connection the writes go through, held for the run; each write transaction checks
it again (`chain_writer_check`), so a writer whose session was lost (and whose lock went with it) never
writes beside the run that took the lock since.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from django.db import DatabaseError, InterfaceError, OperationalError, connection
from redis.exceptions import LockError, LockNotOwnedError, RedisError

from dws_project.redis_client import get_redis

logger = logging.getLogger("dws.locks")

P = ParamSpec("P")
R = TypeVar("R")

DEFAULT_TTL = 60.0


def _lock_key(job: str) -> str:
    return f"dws:job-lock:{job}"


class Lease:
    """A held lock, as its holder sees it: `lost` is set once the lock is found to be someone else's (it
    expired while this process could not extend it, or a contender judged this holder dead), or once it
    went a whole TTL without an extension (Redis out of reach: it has expired there), so a long loop under
    it (the head follower) ends at its next safe point."""

    def __init__(self) -> None:
        self.lost = threading.Event()


@contextmanager
def exclusive_run(job: str, *, ttl: float = DEFAULT_TTL) -> Iterator[bool]:
    """Yield True when this process holds `job`'s lock for the block, False when another run does."""
    with leased_run(job, ttl=ttl) as lease:
        yield lease is not None


@contextmanager
def leased_run(job: str, *, ttl: float = DEFAULT_TTL) -> Iterator[Lease | None]:
    """Yield a Lease while this process holds `job`'s lock for the block, None when another live run does."""
    lock = get_redis().lock(_lock_key(job), timeout=ttl, thread_local=False)
    token = f"{uuid.uuid4().hex}{_HOLDER}{_session_identity()}"
    acquired = lock.acquire(blocking=False, token=token) or (
        _take_over_from_dead_holder(job) and lock.acquire(blocking=False, token=token)
    )
    if not acquired:
        logger.info("job %s skipped: another run holds its lock", job)
        yield None
        return
    stop = threading.Event()
    lease = Lease()

    def keep_alive() -> None:
        extended_at = time.monotonic()  # the lock expires no later than a TTL after this
        while not stop.wait(ttl / 3):
            try:
                lock.reacquire()  # reset the TTL to its full length
                extended_at = time.monotonic()
            except LockNotOwnedError:
                logger.error("job %s lost its lock while running; another run may start", job)
                lease.lost.set()
                return
            except RedisError as exc:
                if time.monotonic() - extended_at >= ttl:
                    # Not extended for a whole TTL: the lock has expired in Redis, whoever can reach it may take it.
                    logger.error("job %s could not extend its lock for its TTL (%s); another run may start", job, exc)
                    lease.lost.set()
                    return
                logger.warning("job %s could not extend its lock: %s", job, exc)

    extender = threading.Thread(target=keep_alive, name=f"lock-{job}", daemon=True)
    extender.start()
    try:
        yield lease
    finally:
        stop.set()
        extender.join()
        try:
            lock.release()
        except (LockError, RedisError) as exc:
            logger.warning("job %s: lock release failed (%s); it frees itself after its TTL", job, exc)


# --- a dead holder's lock -------------------------------------------------------------------------------

_HOLDER = "|pg:"  # separates a token's random part from the holder's PostgreSQL session
_DELETE_IF_HELD_BY = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
_SESSION = "(extract(epoch FROM backend_start) * 1000000)::bigint"


def _session_identity() -> str:
    """This thread's PostgreSQL session as `pid:start` (microseconds), or "" when the database will not say."""
    try:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT pid, {_SESSION} FROM pg_stat_activity WHERE pid = pg_backend_pid()")  # noqa: S608 - a constant
            row = cursor.fetchone()
    except Exception:  # noqa: BLE001 - no database (or none allowed here): the lock is judged by its TTL alone
        return ""
    return f"{row[0]}:{row[1]}" if row else ""


def _session_alive(identity: str) -> bool:
    """Whether the PostgreSQL session `pid:start` may still exist: False only on evidence that it does not (no
    session with that pid, or one that started at another time: the pid was reused). True when unknown: no
    answer, or a session whose start this role may not read (another role's, without pg_read_all_stats)."""
    pid, _, started = identity.partition(":")
    if not (pid.isdigit() and started.lstrip("-").isdigit()):
        return True
    try:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT {_SESSION} FROM pg_stat_activity WHERE pid = %s", [int(pid)])  # noqa: S608 - a constant
            rows = cursor.fetchall()
    except Exception:  # noqa: BLE001 - no answer is no evidence that the holder died
        return True
    return any(start is None or start == int(started) for (start,) in rows)


def _take_over_from_dead_holder(job: str) -> bool:
    """Free `job`'s lock when the session its token names is gone (its process died); True when freed."""
    redis = get_redis()
    try:
        held = redis.get(_lock_key(job))
    except RedisError:
        return False
    if held is None:
        return True  # freed meanwhile
    text = held.decode(errors="replace") if isinstance(held, bytes) else str(held)
    _, _, identity = text.partition(_HOLDER)
    if not identity or _session_alive(identity):
        return False
    try:
        freed = redis.eval(_DELETE_IF_HELD_BY, 1, _lock_key(job), held)
    except RedisError:
        return False
    if freed:
        pid = identity.partition(":")[0]
        logger.warning("job %s: its lock's holder (PostgreSQL session %s) is gone; taking the lock over", job, pid)
    return bool(freed)


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


# --- a database that went away is a hold, not a crash --------------------------------------------------

# The connection failed (PostgreSQL restarting, failing over, unreachable), not a query.
DATABASE_GONE = (OperationalError, InterfaceError)


def database_gone(job: str, exc: BaseException) -> None:
    """A run of `job` lost its database: one WARNING line (no traceback), and the connection is closed so
    the next run opens a new one. What the run wrote is whole (every write is its own transaction)."""
    from dws_project.startup import describe_database_error

    logger.warning(
        "%s: held: database unavailable (%s: %s); the next run continues where this one stopped",
        job,
        type(exc).__name__,
        describe_database_error(exc),
    )
    with contextlib.suppress(Exception):
        connection.close()


def held_while_database_gone(job: str) -> Callable[[Callable[P, R]], Callable[P, R | None]]:
    """Decorate a periodic job so a lost database makes the run return None (a hold) instead of raising."""

    def decorate(func: Callable[P, R]) -> Callable[P, R | None]:
        @functools.wraps(func)
        def guarded(*args: P.args, **kwargs: P.kwargs) -> R | None:
            try:
                return func(*args, **kwargs)
            except DATABASE_GONE as exc:
                database_gone(job, exc)
                return None

        return guarded

    return decorate


def is_running(job: str) -> bool:
    """Whether some process currently holds `job`'s lock (for health pages)."""
    return bool(get_redis().exists(_lock_key(job)))


# --- the chain's writers, exclusive in PostgreSQL ------------------------------------------------------

ADVISORY_NAMESPACE = 0x647773  # "dws": the first key of pg_advisory_lock(int, int), keeping clear of others'


class ChainWriterBusy(Exception):
    """Another session holds the (chain, job) lock: this writer must not write now."""


def _advisory_key(chain: str, job: str) -> int:
    """A stable 32-bit signed key for (chain, job) (the second key of the two-int advisory lock)."""
    value = zlib.crc32(f"{chain}:{job}".encode())
    return value - (1 << 32) if value >= 1 << 31 else value


def _advisory(function: str, chain: str, job: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {function}(%s, %s)", [ADVISORY_NAMESPACE, _advisory_key(chain, job)])
        row = cursor.fetchone()
    return bool(row and row[0])


@contextmanager
def chain_writer(chain: str, job: str) -> Iterator[bool]:
    """Yield True while this process's database session holds (chain, job)'s advisory lock, False (at
    once, never waiting) when another session holds it. Re-entrant within one session."""
    if not _advisory("pg_try_advisory_lock", chain, job):
        logger.warning("job %s (%s): another session holds its PostgreSQL lock; not writing", job, chain)
        yield False
        return
    try:
        yield True
    finally:
        try:
            _advisory("pg_advisory_unlock", chain, job)
        except DatabaseError as exc:  # the session is gone, and its lock went with it
            logger.warning("job %s (%s): PostgreSQL lock not released (%s)", job, chain, type(exc).__name__)


def chain_writer_check(chain: str, job: str) -> None:
    """Inside a write transaction: raise ChainWriterBusy unless this session may write (chain, job)'s rows.

    A transaction-level try-lock: granted to the session holding the run's lock (re-entrant) and to no one
    while another session does; held to the transaction's end, so no run takes the lock mid-write."""
    if not _advisory("pg_try_advisory_xact_lock", chain, job):
        raise ChainWriterBusy(f"another session holds the PostgreSQL lock of {job} ({chain})")


def chain_donations_lock(*chains: str) -> None:
    """Inside a write transaction: wait for, and hold to its end, the lock on the donation rows of `chains`
    (taken in name order), before any of those rows or the campaign row is locked.

    The finalized crawler's block write locks its chain's rows first and the campaign row last
    (donations/finalized.py); the old-unconfirmed judge locks the campaign row, then rows of the same chain
    (donations/judging.py). Both take this lock first, so the two orders never meet: one waits here for the
    other's whole transaction instead of each holding what the other waits for (a deadlock). The latest
    crawler, which never takes the campaign row, does not need it."""
    with connection.cursor() as cursor:
        for chain in sorted(set(chains)):
            cursor.execute(
                "SELECT pg_advisory_xact_lock(%s, %s)", [ADVISORY_NAMESPACE, _advisory_key(chain, "donation-rows")]
            )
