"""Liveness for the worker and beat: a file each process must keep touching, checked by `manage.py probe`.

* worker: a bootstep puts the touch on the worker's own timer, which runs in the main process's event
  loop; a stopped (SIGSTOP), dead or wedged worker stops renewing it.
* beat: the scheduler touches it on every tick (beat ticks at least every BEAT_MAX_LOOP_INTERVAL).

A file, not a Redis key: the probe runs inside the process's own container (compose healthcheck,
Kubernetes exec probe), needs nothing else to be up, and two workers never share one.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, cast

from celery import bootsteps
from celery.beat import PersistentScheduler
from celery.worker import WorkController
from django.conf import settings
from kombu.asynchronous.timer import Entry, Timer

logger = logging.getLogger("dws.heartbeat")

WORKER = "worker"
BEAT = "beat"
KINDS = (WORKER, BEAT)
WORKER_INTERVAL = 5.0  # seconds between a worker's touches
# A heartbeat older than this is stale: several missed renewals, not one slow tick.
STALE_AFTER = {WORKER: 30.0, BEAT: 60.0}


def heartbeat_path(kind: str) -> Path:
    return Path(settings.CONFIG.heartbeat_dir) / kind


def touch(kind: str) -> None:
    path = heartbeat_path(kind)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    except OSError as exc:  # the probe will say so; the process itself keeps working
        logger.warning("heartbeat %s could not be written: %s", path, exc)


def age(kind: str, *, now: float | None = None) -> float | None:
    """Seconds since the last renewal, or None when there has been none."""
    try:
        modified = heartbeat_path(kind).stat().st_mtime
    except FileNotFoundError:
        return None
    return max((now or time.time()) - modified, 0.0)


class WorkerHeartbeat(bootsteps.StartStopStep):
    """Renews the worker's heartbeat from the worker's timer (the main process's event loop)."""

    requires = ("celery.worker.components:Timer",)

    def __init__(self, worker: WorkController, **kwargs: Any) -> None:
        super().__init__(worker, **kwargs)
        self.tref: Entry | None = None

    def start(self, worker: WorkController) -> None:
        touch(WORKER)
        # celery-types 0.26 type `worker.timer` as the Timer bootstep; it holds the timer that step built
        # (kombu's, under the worker's event loop), and `requires` runs that step before this one.
        timer = cast(Timer, worker.timer)
        self.tref = timer.call_repeatedly(WORKER_INTERVAL, touch, (WORKER,), priority=10)

    def stop(self, worker: WorkController) -> None:
        if self.tref is not None:
            self.tref.cancel()
            self.tref = None


class HeartbeatScheduler(PersistentScheduler):
    """celery beat's scheduler, touching beat's heartbeat on every tick."""

    def tick(self, *args: Any, **kwargs: Any) -> float:  # passed through unchanged
        touch(BEAT)
        return super().tick(*args, **kwargs)
