"""Read-ahead (pipelining): batches asked in the background for a later `RpcClient.batch` of the same calls.

A crawler asks for the next range's first requests while it writes the current one. The thread posts
through the client's own path (the same back-off window), and an answer short of evidence is never
taken from it: that batch is simply asked again by the caller.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence

from crawlers.chain.outcomes import Call, NoEvidence, RpcOutcome

Post = Callable[[Sequence[Call]], list[RpcOutcome]]


def _calls_key(calls: Sequence[Call]) -> str:
    return json.dumps([[method, list(params)] for method, params in calls], sort_keys=True)


class ReadAhead:
    """Batches posted one after another by a daemon thread (a run that ends never waits for it)."""

    def __init__(self, post: Post, batches: tuple[Sequence[Call], ...]) -> None:
        self._keys = [_calls_key(calls) for calls in batches]
        self._answers: dict[str, list[RpcOutcome]] = {}
        self._ready = {key: threading.Event() for key in self._keys}
        self._taken: set[str] = set()
        self.dropped = False  # nothing is taken from it any more
        self._thread = threading.Thread(target=self._run, args=(post, batches), name="rpc-read-ahead", daemon=True)
        self._thread.start()

    def _run(self, post: Post, batches: tuple[Sequence[Call], ...]) -> None:
        try:
            for key, calls in zip(self._keys, batches, strict=True):
                self._answers[key] = post(calls)
                self._ready[key].set()
        finally:
            for event in self._ready.values():
                event.set()  # a failure leaves the rest unanswered: the caller asks them itself

    def running(self) -> bool:
        return self._thread.is_alive()

    def take(self, calls: Sequence[Call]) -> list[RpcOutcome] | None:
        """The answers read ahead for exactly these calls, once; None when there are none or any of them
        is short of evidence (the caller asks again: a read-ahead never decides anything)."""
        key = _calls_key(calls)
        ready = self._ready.get(key)
        if ready is None or key in self._taken:
            return None
        self._taken.add(key)
        ready.wait()
        answers = self._answers.get(key)
        if answers is None or any(isinstance(a, NoEvidence) for a in answers):
            return None
        return answers
