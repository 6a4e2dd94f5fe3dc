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

logger = logging.getLogger("dws.shutdown")

_requested = threading.Event()


def requested() -> bool:
    """True once this process was asked to stop: long loops end at their next safe point."""
    return _requested.is_set()


def _note(signum: int, frame: object) -> None:
    if not _requested.is_set():
        _requested.set()
        logger.warning("pool process %d: SIGTERM received; stopping after the block in hand", os.getpid())


def install_pool_handler() -> None:
    """In a pool process: SIGTERM asks for a stop instead of killing the process mid-task."""
    signal.signal(signal.SIGTERM, _note)


def signal_pool_processes() -> None:
    """In the worker's main process, when its warm shutdown starts: pass SIGTERM to the pool."""
    from billiard.process import active_children

    for child in active_children():
        if child.pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child.pid, signal.SIGTERM)
