"""SIGTERM in a worker's pool process: finish the block in hand, then stop (never half a block).

Celery's warm shutdown waits for running tasks; a crawl catching up could outlast the grace period.
The pool processes therefore note SIGTERM instead of dying, and the crawl loop asks `requested()`
between blocks. The main process passes SIGTERM on to its pool when its warm shutdown begins
(`docker stop` and Kubernetes signal only the container's first process).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

logger = logging.getLogger("dws.shutdown")

_requested = threading.Event()


@dataclass
class _ProcessState:
    pool_process: bool = False
    busy: bool = False
    # The SIGTERM handler ours replaced, as `signal.getsignal` reports it.
    previous: Callable[[int, FrameType | None], Any] | int | None = None


_state = _ProcessState()


def requested() -> bool:
    """True once this process was asked to stop: long loops end at their next safe point."""
    return _requested.is_set()


def _note(signum: int, frame: FrameType | None) -> None:
    if not _state.busy:  # idle: stop the way the pool always did
        previous = _state.previous
        if callable(previous):
            previous(signum, frame)
            return
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    if not _requested.is_set():
        _requested.set()
        logger.warning("pool process %d: SIGTERM received; stopping after the block in hand", os.getpid())


def task_started() -> None:
    """In a pool process, as a task starts: from now on SIGTERM asks the task to stop at a safe point.

    Installed here, not at process start: the pool sets its own SIGTERM handler after the process
    initializer has run; ours keeps it for when no task is running.
    """
    if not _state.pool_process:  # solo pool / eager: the main process keeps Celery's own handler
        return
    if signal.getsignal(signal.SIGTERM) is not _note:
        _state.previous = signal.getsignal(signal.SIGTERM)
        signal.signal(signal.SIGTERM, _note)
    _state.busy = True


def pool_process_started() -> None:
    _state.pool_process = True


def task_finished() -> None:
    _state.busy = False


def signal_pool_processes() -> None:
    """In the worker's main process, when its warm shutdown starts: pass SIGTERM to the pool."""
    from billiard.process import active_children

    for child in active_children():
        if child.pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child.pid, signal.SIGTERM)


def stop_on_sigterm() -> None:
    """In a foreground command (`manage.py crawl latest --follow`): SIGTERM asks its loops to stop between
    blocks, as it asks a worker's pool process."""
    signal.signal(signal.SIGTERM, lambda signum, frame: _requested.set())
