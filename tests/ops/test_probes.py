"""Liveness probes for the worker and beat: `manage.py probe worker|beat` against real processes."""

from __future__ import annotations

import signal
import time

import pytest

from tests.ops.processes import beat, probe, process_environment, worker

pytestmark = [pytest.mark.django_db(transaction=True)]

MAX_AGE = "12"  # the tests' limit: a few missed renewals (worker every 5 s, beat at least every 10 s)


def until_probe(kind: str, env: dict[str, str], returncode: int, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        result = probe(kind, env, "--max-age", MAX_AGE)
        if result.returncode == returncode:
            return result.stdout + result.stderr
        assert time.monotonic() < deadline, f"probe {kind} never exited {returncode}: {result.stderr}"
        time.sleep(1)


def test_the_worker_probe_fails_while_the_worker_is_stopped_and_recovers(tmp_path):
    """About 20 s: the heartbeat must go stale under SIGSTOP (its age is what the probe judges) and come back
    after SIGCONT, with a real worker's start-up before it."""
    env = process_environment(DWS_HEARTBEAT_DIR=str(tmp_path / "heartbeat"))
    assert probe("worker", env).returncode == 1  # no worker yet: no heartbeat
    running = worker("probed", "celery", env, tmp_path)
    try:
        assert "worker: alive" in until_probe("worker", env, 0)

        running.signal_group(signal.SIGSTOP)  # wedged: the process is there but does nothing
        assert "worker: heartbeat stale" in until_probe("worker", env, 1)

        running.signal_group(signal.SIGCONT)
        assert "worker: alive" in until_probe("worker", env, 0)
    finally:
        running.stop()


def test_the_beat_probe_follows_beat_ticks(tmp_path):
    env = process_environment(DWS_HEARTBEAT_DIR=str(tmp_path / "heartbeat"))
    running = beat(env, tmp_path)
    try:
        assert "beat: alive" in until_probe("beat", env, 0)

        running.signal_group(signal.SIGSTOP)
        assert "beat: heartbeat stale" in until_probe("beat", env, 1)
    finally:
        running.stop()


def test_the_probe_needs_no_database(tmp_path):
    env = process_environment(
        DWS_HEARTBEAT_DIR=str(tmp_path / "heartbeat"), DATABASE_URL="postgres://nobody@127.0.0.1:1/none"
    )

    result = probe("worker", env)

    assert result.returncode == 1
    assert "worker: no heartbeat at" in result.stderr
