"""The non-overlap guard, with real concurrent processes against the real Redis."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit

import psycopg2
import pytest
from django.conf import settings as django_settings
from django.db import connection

from dws_project.locks import exclusive_run, is_running
from tests.ops.processes import process_environment
from tests.processes import PYTHON, ROOT
from tests.tcp_proxy import TcpProxy

UNTIL_RELEASED = -1  # the holder works until `release` (tests/lock_holder.py)


def start_job(job: str, hold: float, ttl: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PYTHON, "-m", "tests.lock_holder", job, str(hold), str(ttl)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def release(process: subprocess.Popen[str]) -> None:
    assert process.stdin is not None
    process.stdin.write("done\n")
    process.stdin.close()


def first_line(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    return process.stdout.readline().strip()


@pytest.fixture
def job() -> str:
    return f"test-job-{uuid.uuid4().hex[:8]}"


def test_a_second_run_skips_while_the_first_holds_the_lock(job: str) -> None:
    first = start_job(job, hold=UNTIL_RELEASED, ttl=10)
    assert first_line(first) == "acquired"

    second = start_job(job, hold=0, ttl=10)
    assert first_line(second) == "skipped"
    assert second.wait(timeout=30) == 0

    release(first)
    assert first.wait(timeout=30) == 0
    third = start_job(job, hold=0, ttl=10)
    assert first_line(third) == "acquired"
    assert third.wait(timeout=30) == 0
    assert not is_running(job)


def test_a_long_run_keeps_its_lock_past_the_ttl(job: str) -> None:
    first = start_job(job, hold=UNTIL_RELEASED, ttl=1.5)
    assert first_line(first) == "acquired"
    time.sleep(3.5)  # more than twice the TTL: only the extension keeps the lock

    second = start_job(job, hold=0, ttl=1.5)
    assert first_line(second) == "skipped"
    second.wait(timeout=30)
    release(first)
    assert first.wait(timeout=30) == 0


@pytest.mark.alone
def test_a_killed_holder_frees_the_lock_after_its_ttl(job: str) -> None:
    holder = start_job(job, hold=600, ttl=5)
    assert first_line(holder) == "acquired"
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=10)
    killed_at = time.monotonic()

    assert is_running(job)  # the dead holder's lock is still there: nobody else may start yet

    while is_running(job) and time.monotonic() - killed_at < 15:
        time.sleep(0.2)
    assert not is_running(job)
    assert time.monotonic() - killed_at <= 7  # it went away with its TTL, not later
    later = start_job(job, hold=0, ttl=5)
    assert first_line(later) == "acquired"
    assert later.wait(timeout=30) == 0


@pytest.mark.django_db(transaction=True)
def test_a_killed_holders_lock_is_taken_over_at_once_not_after_its_ttl(job: str) -> None:
    """Issue 36: a worker SIGKILLed mid-run must not keep its crawlers from running again for the lock's TTL.
    The holder's PostgreSQL session dies with it; a contender that finds it gone takes the lock over."""
    holder = subprocess.Popen(
        [PYTHON, "-m", "tests.lock_holder", job, "600", "120"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env=process_environment(),
    )
    assert first_line(holder) == "acquired"
    with exclusive_run(job, ttl=120) as acquired:
        assert not acquired  # a live holder keeps its lock
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=10)
    killed_at = time.monotonic()

    while True:
        with exclusive_run(job, ttl=120) as acquired:
            if acquired:
                break
        assert time.monotonic() - killed_at < 10, "the dead holder's lock still blocks (its TTL is 120 s)"
        time.sleep(0.2)
    assert not is_running(job)


@pytest.fixture
def other_role(db) -> Iterator[str]:
    """A database URL of this run's test database under a login role of its own, without the right to read
    other roles' sessions in pg_stat_activity (a worker or an operator's shell under another database user).
    Made and dropped on a connection of its own: the test's is inside a transaction the processes cannot see."""
    name, password = f"dws_lock_{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    db = connection.settings_dict
    admin = psycopg2.connect(
        dbname=db["NAME"], user=db["USER"], password=db["PASSWORD"], host=db["HOST"], port=db["PORT"] or 5432
    )
    admin.autocommit = True
    try:
        with admin.cursor() as cursor:
            cursor.execute(f"CREATE ROLE {name} LOGIN PASSWORD '{password}'")
        yield f"postgres://{name}:{password}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"
        with admin.cursor() as cursor:
            cursor.execute(f"DROP ROLE {name}")
    finally:
        admin.close()


def test_a_live_holders_lock_is_not_taken_over_by_a_contender_that_cannot_see_its_session(
    job: str, other_role: str
) -> None:
    """pg_stat_activity shows another role's sessions without their start time: a contender under another
    database user finds no session matching the holder's token, which is no evidence that the holder died."""
    holder = subprocess.Popen(
        [PYTHON, "-m", "tests.lock_holder", job, str(UNTIL_RELEASED), "120"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=process_environment(),
    )
    try:
        assert first_line(holder) == "acquired"
        contender = subprocess.run(
            [PYTHON, "-m", "tests.lock_holder", job, "0", "120"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env=process_environment(DATABASE_URL=other_role),
            timeout=60,
        )
        assert contender.stdout.splitlines()[:1] == ["skipped"], contender.stdout + contender.stderr
    finally:
        release(holder)
        holder.wait(timeout=30)


def test_a_holder_cut_off_from_redis_for_its_whole_ttl_loses_its_lease(job: str) -> None:
    """A holder that cannot reach Redis cannot extend its lock: after a TTL without an extension the lock has
    expired, and another worker (one that reaches Redis) may take it. The lease is lost then, so a long loop
    under it (the head follower) ends instead of running beside its successor until its own lease is over."""
    redis_url = urlsplit(django_settings.CONFIG.redis_url)
    with TcpProxy(redis_url.hostname or "127.0.0.1", redis_url.port or 6379) as redis_proxy:
        holder = subprocess.Popen(
            [PYTHON, "-m", "tests.lock_holder", job, "20", "1.5", "watch"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "REDIS_URL": f"redis://127.0.0.1:{redis_proxy.port}{redis_url.path}"},
        )
        try:
            assert first_line(holder) == "acquired"
            redis_proxy.cut()  # a partition between this worker and Redis
            assert first_line(holder) == "lost"  # not "kept" at the end of its 20 s of work
        finally:
            holder.kill()
            holder.wait(timeout=10)
    assert not is_running(job)  # the lock expired meanwhile: another run may start
