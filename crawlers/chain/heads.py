"""Where the head is, as it moves: the chain's block time learned from its own blocks, the polling pace that
follows from it, and a `newHeads` subscription over WebSocket (DWS_WS_URL, DWS_NAME_WS_URL) for a provider
that pushes its heads. The head follower (crawlers/runs/follow.py) reads heads from here; nothing here
decides what a block holds.

Polling is the default and the fallback: one batched request (the head's number and the finalized block)
every `poll_interval` seconds, a third of the block time, never faster than MIN_POLL_SECONDS (a few
requests a second at most) nor slower than MAX_POLL_SECONDS. A subscription that fails (refused, dropped,
silent while the head moves) falls back to polling; only the WebSocket URL's scheme and host are ever logged.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol
from urllib.parse import urlsplit

from crawlers.chain.calls import header_call
from crawlers.chain.outcomes import Answer
from crawlers.chain.quantities import hex_quantity
from crawlers.chain.rpc import RpcClient
from crawlers.chain.tips import ChainTips, chain_tips
from dws_project.redaction import redact_url, register_secrets

logger = logging.getLogger("dws.crawlers.heads")

MIN_POLL_SECONDS = 0.4  # at most 2.5 polls a second per chain, whatever the chain's block time
MAX_POLL_SECONDS = 4.0  # a 12 s chain is asked every 4 s: a new block is seen 2 s after it on average
MAX_BACKOFF_SECONDS = 30.0  # polls that give no evidence back off up to this
BLOCK_TIME_SAMPLE = 20  # blocks the block time is averaged over
DEFAULT_BLOCK_TIME = 12.0  # when the chain will not say (too young, or the provider did not answer)
SUBSCRIPTION_SILENCE = 60.0  # the longest a subscription may stay silent before the HTTP head is asked
SILENT_BLOCKS = 3  # ... and the usual: this many block times without a new head pushed
MIN_SILENCE_SECONDS = 2.0  # ... but never asked more often than this while silent
SUBSCRIBE = {"jsonrpc": "2.0", "id": 1, "method": "eth_subscribe", "params": ["newHeads"]}


def _timestamp(outcome: object) -> tuple[int, int] | None:
    """(number, timestamp) of a header answer, or None."""
    if not isinstance(outcome, Answer) or not isinstance(outcome.value, dict):
        return None
    number, stamp = hex_quantity(outcome.value.get("number")), hex_quantity(outcome.value.get("timestamp"))
    return None if number is None or stamp is None else (number, stamp)


def learn_block_time(client: RpcClient) -> float:
    """Seconds between blocks, averaged over the last BLOCK_TIME_SAMPLE blocks (DEFAULT_BLOCK_TIME when the
    chain or the provider will not say): two round trips, once per follower lease."""
    head = _timestamp(client.call(*header_call("latest")))
    if head is None or head[0] < 1:
        return DEFAULT_BLOCK_TIME
    span = min(BLOCK_TIME_SAMPLE, head[0])
    before = _timestamp(client.call(*header_call(head[0] - span)))
    if before is None or head[1] <= before[1]:
        return DEFAULT_BLOCK_TIME if before is None else MIN_POLL_SECONDS  # many blocks a second
    return (head[1] - before[1]) / span


def poll_interval(block_time: float) -> float:
    return min(max(block_time / 3, MIN_POLL_SECONDS), MAX_POLL_SECONDS)


class HeadSource(Protocol):
    kind: str  # "poll" or "websocket"

    def next_tips(self, stop: Callable[[], bool]) -> ChainTips | None:
        """The chain's tips once there may be something new (None when the provider gave no evidence, or
        when `stop` became true while waiting)."""

    def close(self) -> None: ...


def _wait(seconds: float, stop: Callable[[], bool]) -> bool:
    """Sleep `seconds` in short steps; False as soon as `stop()` is true."""
    deadline = time.monotonic() + seconds
    while not stop():
        left = deadline - time.monotonic()
        if left <= 0:
            return True
        time.sleep(min(left, 0.2))
    return False


class PolledHeads:
    """One batched request per `interval`; polls without evidence back off, doubling up to MAX_BACKOFF_SECONDS."""

    kind = "poll"

    def __init__(self, client: RpcClient, interval: float) -> None:
        self._client = client
        self.interval = interval
        self._failures = 0
        self._next_at = time.monotonic()

    def next_tips(self, stop: Callable[[], bool]) -> ChainTips | None:
        if not _wait(self._next_at - time.monotonic(), stop):
            return None
        tips = chain_tips(self._client)
        self._failures = 0 if tips.head is not None else self._failures + 1
        pause = min(self.interval * 2**self._failures, MAX_BACKOFF_SECONDS) if self._failures else self.interval
        self._next_at = time.monotonic() + pause
        return tips if tips.head is not None else None

    def close(self) -> None:
        return None


class SubscriptionFailed(Exception):
    """The WebSocket subscription could not be made or was lost: the caller polls instead."""


class SubscribedHeads:
    """`eth_subscribe("newHeads")` over WebSocket: the provider pushes each head; the finalized block (and the
    head as the HTTP provider sees it) is still asked over HTTP, at most once per MIN_POLL_SECONDS however
    fast or often heads are pushed (a repeated or stale head asks nothing; a head the HTTP provider has not
    reached yet is asked about again at the polling pace, not when the next head comes; asks that get no
    answer back off as the polls do). A subscription silent for a few block times is checked over HTTP: a
    head that moved without a push means it is dead (SubscriptionFailed), so a socket left open after the
    provider dropped the subscription costs seconds."""

    kind = "websocket"

    def __init__(self, url: str, client: RpcClient, *, block_time: float, open_timeout: float = 10.0) -> None:
        from websockets.sync.client import connect  # the follower's only use of the package

        self.origin = redact_url(url)
        parts = urlsplit(url)  # already masked by the configuration's secrets; belt and braces
        register_secrets(parts.path if parts.path not in ("", "/") else None, parts.query, parts.password)
        self._client = client
        self._first = True  # the head as it stands when subscribing, without waiting for the next one
        self._silence = min(max(SILENT_BLOCKS * block_time, MIN_SILENCE_SECONDS), SUBSCRIPTION_SILENCE)
        self._known = -1  # the highest head pushed or asked: a push at or below it is nothing new
        self._asked_at = float("-inf")
        self._pace = poll_interval(block_time)
        self._ahead: int | None = None  # a head pushed that the HTTP provider had not reached when asked
        self._failures = 0  # asks in a row without an answer: the next waits as a poll's would (backing off)
        self._held = contextlib.ExitStack()
        try:
            # proxy=None: like the HTTP provider, never through a proxy named by the environment
            self._socket = self._held.enter_context(
                connect(url, open_timeout=open_timeout, max_size=2**20, close_timeout=2, proxy=None)
            )
            self._socket.send(json.dumps(SUBSCRIBE))
            reply = json.loads(self._socket.recv(timeout=open_timeout))
        except Exception as exc:  # noqa: BLE001 - whatever the socket raised, the answer is: poll instead
            raise SubscriptionFailed(f"{self.origin}: {type(exc).__name__}") from None
        if not isinstance(reply, dict) or not isinstance(reply.get("result"), str):
            self.close()
            raise SubscriptionFailed(f"{self.origin}: eth_subscribe refused")
        self._subscription = reply["result"]

    def _head(self, message: Any) -> int | None:
        params = message.get("params") if isinstance(message, dict) else None
        if not isinstance(params, dict) or params.get("subscription") != self._subscription:
            return None
        found = _timestamp(Answer(params.get("result")))
        return found[0] if found else None

    def _ask(self) -> ChainTips:
        """The tips over HTTP (one batched request)."""
        self._asked_at = time.monotonic()
        tips = chain_tips(self._client)
        if tips.head is not None:
            self._known = max(self._known, tips.head)
        self._failures = 0 if tips.head is not None else self._failures + 1
        return tips

    def _due(self, pause: float) -> bool:
        """Whether the HTTP provider may be asked again, `pause` after the last ask (longer after failures)."""
        if self._failures:
            pause = max(pause, min(self._pace * 2**self._failures, MAX_BACKOFF_SECONDS))
        return time.monotonic() - self._asked_at >= pause

    def next_tips(self, stop: Callable[[], bool]) -> ChainTips | None:
        if self._first:
            self._first = False
            tips = self._ask()
            return tips if tips.head is not None else None
        # The newest head pushed and not yet asked about; or one pushed that the HTTP provider (a node of its
        # load balancer a moment behind) had not reached, asked about again at the polling pace.
        pushed, pause = self._ahead, self._pace
        silent_since = time.monotonic()
        while not stop():
            now = time.monotonic()
            if pushed is not None and self._due(pause):
                tips = self._ask()
                self._ahead = pushed if tips.head is not None and tips.head < pushed else None
                # The head the crawl will find (the HTTP provider's); the pushed one when that provider did not say.
                return ChainTips(pushed if tips.head is None else tips.head, tips.finalized)
            if pushed is None and now - silent_since >= self._silence and self._due(self._silence):
                before = self._known
                tips = self._ask()
                if tips.head is not None and tips.head > before:
                    raise SubscriptionFailed(f"{self.origin}: the head moved to {tips.head} without a push")
                silent_since = time.monotonic()
                continue
            try:
                raw = self._socket.recv(timeout=0.2)
            except TimeoutError:
                continue
            except Exception as exc:  # noqa: BLE001 - closed, reset, malformed frame: poll instead
                raise SubscriptionFailed(f"{self.origin}: {type(exc).__name__}") from None
            try:
                head = self._head(json.loads(raw))
            except ValueError:
                head = None
            if head is not None and head > self._known:
                self._known = head
                pushed, pause = head, MIN_POLL_SECONDS
        return None

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing a socket that is already gone
            self._held.close()
