"""The crawlers' JSON-RPC client: batches, bounded time-outs, typed "no evidence", a shared back-off.

Every answer is either an `Answer` (the provider said something definite) or a `NoEvidence` (an error
object, a null, a 429, a time-out, a dropped connection, a malformed reply, or a back-off window still
open). A caller can never read a `NoEvidence` as "the transaction/block does not exist": it is not a
value, and `require()` turns it into `NoEvidenceError`, which every crawler treats as "hold the cursor".

Only `redact_url(url)` (scheme, host, port) of the provider URL ever appears in a log line or an
exception: providers put the API key in the path or the query string.

Answers are bounded (crawlers/chain/transport.py): connecting ends within the connect time-out, and the
request with its whole answer within the read time-out, however the provider paces its bytes; the body
is read up to DWS_RPC_MAX_ANSWER_MB; a redirect is never followed (a 307 would re-POST, key and all,
elsewhere); JSON nested deeper than MAX_ANSWER_DEPTH (or than the decoder's recursion limit) is
malformed. Each is `NoEvidence`, like a time-out. A batch refused for its size alone is asked again in
halves, down to one call a post (`batch`), and `get_logs` halves its span: the cap guards against a
hostile provider and must never be a lever for a stranger on chain, who can make answers large.

A 429 or a rate-limit error object opens a back-off window in Redis (keyed by the provider's origin and
the client's `backoff_scope`), and every worker on every machine asks nothing of that provider until it
has passed. The crawlers share the default scope; the web tier's signature checks have their own
("web"), so a rate limit they meet never pauses crawling.

Concurrency: a process keeps at most DWS_RPC_MAX_IN_FLIGHT posts in flight to one provider endpoint
(a semaphore per endpoint, shared by every client of it in the process: the crawl's threads proving
ranges side by side, crawlers/scan/pipeline.py). Each post waits for its turn first and only then
looks at the shared back-off window, so a 429 met by one post stops every post queued behind it.
A provider that lets a post time out while others were in flight (one that answers them one after the
another, slowly: the queue, not the post, took the time) is asked one post at a time by every worker
for NARROW_SECONDS (`in_flight_allowed`), shared in Redis like the back-off: side by side would only
time out again and hold the crawler on every run.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import re
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from redis.exceptions import RedisError

from crawlers.chain.outcomes import (
    TOO_LARGE,
    Answer,
    Call,
    NoEvidence,
    NoEvidenceError,
    RpcOutcome,
    outcome_label,
    require,
)
from crawlers.chain.transport import BoundedPoster, TransportError
from dws_project import metrics
from dws_project.digits import whole_number
from dws_project.json_limits import nested_deeper_than
from dws_project.redaction import redact, redact_url, register_secrets
from dws_project.redis_client import get_redis

logger = logging.getLogger("dws.crawlers.chain.rpc")

CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 15.0
DEFAULT_BACKOFF_SECONDS = 30.0
MAX_BACKOFF_SECONDS = 600.0
MAX_ANSWER_BYTES = 32 * 1024 * 1024  # DWS_RPC_MAX_ANSWER_MB's default: a busy block's traces fit
# Deeper than any real answer (a call trace 1024 frames deep nests ~2050), shallow enough for C's stack.
MAX_ANSWER_DEPTH = 2100
# json.loads recurses once per level, and Python's default limit (1000) is below what a real answer nests:
# a call tree ~500 frames deep (anyone can send one) never decoded, and held its block for good.
JSON_RECURSION_LIMIT = MAX_ANSWER_DEPTH + 1000
MAX_BATCH = 200  # providers cap batch sizes; bigger batches are split into several posts
LOG_SPAN_MAX = 2000
LOG_SPAN_MIN = 1
LOG_SPAN_PROBE_AFTER = 10  # accepted ranges before we try a span the provider refused earlier
MAX_IN_FLIGHT = 4  # DWS_RPC_MAX_IN_FLIGHT's default
NARROW_SECONDS = 600.0  # one post at a time for this long after a time-out with several in flight
WEB_BACKOFF_SCOPE = "web"  # the web tier's clients (signature checks, /health): a back-off of their own

_RATE_LIMIT_TEXT = re.compile(
    r"rate.?limit|too many requests|request limit|requests? per|exceeded .*(capacity|quota|compute units)|"
    r"daily request count|throughput",
    re.IGNORECASE,
)
_RANGE_TEXT = re.compile(
    r"block range|range (is )?too (large|wide|big)|exceed(s|ed)? (the )?(max(imum)?|allowed) (block )?range|"
    r"too many (results|logs)|more than \d+ (results|logs)|response size|query returned more than|"
    r"limited to a \d+ block range|up to a \d+ block range|log response size",
    re.IGNORECASE,
)


_turns: dict[tuple[str, int], threading.BoundedSemaphore] = {}
_turns_lock = threading.Lock()


def _in_flight_turns(endpoint: str, bound: int) -> threading.BoundedSemaphore:
    """The process's one semaphore for posts to `endpoint` (every client of it shares it)."""
    with _turns_lock:
        return _turns.setdefault((endpoint, bound), threading.BoundedSemaphore(bound))


def _decoded(body: bytes) -> Any:
    """The JSON of an answer no deeper than MAX_ANSWER_DEPTH, whatever the interpreter's recursion limit
    was (raised once for the process, never lowered: other libraries may need theirs)."""
    if sys.getrecursionlimit() < JSON_RECURSION_LIMIT:
        sys.setrecursionlimit(JSON_RECURSION_LIMIT)
    return json.loads(body)


def _retry_after_seconds(header: str | None) -> float:
    seconds = whole_number(header)
    return DEFAULT_BACKOFF_SECONDS if seconds is None else min(float(seconds), MAX_BACKOFF_SECONDS)


def _error_text(error: Any) -> str:
    """The provider's message, bounded and with any registered secret masked (a provider may echo it)."""
    if isinstance(error, dict):
        return redact(f"code {error.get('code')}: {str(error.get('message', ''))[:200]}")
    return redact(str(error)[:200])


def is_range_refusal(error: Any) -> bool:
    return bool(_RANGE_TEXT.search(_error_text(error)))


def is_rate_limit(error: Any) -> bool:
    text = _error_text(error)
    return bool(_RATE_LIMIT_TEXT.search(text)) or (isinstance(error, dict) and error.get("code") == 429)


class RpcClient:
    """One provider. Safe to keep for a process's lifetime; holds a pooled HTTP session."""

    def __init__(
        self,
        url: str,
        *,
        connect_timeout: float = CONNECT_TIMEOUT,
        read_timeout: float = READ_TIMEOUT,
        max_batch: int = MAX_BATCH,
        log_span: int = LOG_SPAN_MAX,
        backoff_scope: str | None = None,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
        max_in_flight: int = MAX_IN_FLIGHT,
    ) -> None:
        self._backoff_scope = backoff_scope
        self.origin = redact_url(url)
        # What the provider endpoint is to the shared memories of how it behaves (which trace method it
        # serves, whether it keeps old state): two chains' endpoints on one host differ only in their path,
        # which may hold a key, so the path is never shown, only a digest of the whole URL beside the origin.
        self.endpoint = f"{self.origin}#{hashlib.sha256(url.encode()).hexdigest()[:16]}"
        parts = urlsplit(url)
        # Belt and braces: should any library log the URL, the formatter masks the key parts.
        register_secrets(parts.path if parts.path not in ("", "/") else None, parts.query, parts.password)
        # Connecting ends within the connect time-out; the request and its whole answer, however the
        # provider paces its bytes, within the read time-out.
        self._poster = BoundedPoster(
            url, connect_timeout=connect_timeout, deadline=read_timeout, max_bytes=max_answer_bytes
        )
        self._max_batch = max_batch
        self._ids = itertools.count(1)  # request ids, unique across threads
        self.max_in_flight = max_in_flight
        self._turns = _in_flight_turns(self.endpoint, max_in_flight)
        self._counting = threading.Lock()
        self._posting = 0  # posts of this client under way
        self._posted = 0  # posts of this client started, ever: one started during another overlapped it
        self.log_span_max = log_span
        self.log_span = log_span
        self._log_span_ceiling = log_span  # lowered by refusals, lifted again after a run of successes
        self._log_successes = 0
        self.round_trips = 0  # HTTP posts made, for benchmarks and tests

    # --- back-off window, shared by every worker --------------------------------------------
    @property
    def _backoff_key(self) -> str:
        scope = f"{self._backoff_scope}:" if self._backoff_scope else ""
        return f"dws:rpc-backoff:{scope}{self.origin}"

    def backoff_remaining(self) -> float:
        try:
            ttl_ms = get_redis().pttl(self._backoff_key)
        except RedisError:
            return 0.0  # Redis down: we cannot share the window, but asking is still allowed
        return max(ttl_ms, 0) / 1000.0

    @property
    def _narrow_key(self) -> str:
        scope = f"{self._backoff_scope}:" if self._backoff_scope else ""
        return f"dws:rpc-narrow:{scope}{self.origin}"

    def in_flight_allowed(self) -> int:
        """How many posts to keep in flight now: DWS_RPC_MAX_IN_FLIGHT, or 1 for a while after a post
        timed out beside others."""
        try:
            narrowed = bool(get_redis().exists(self._narrow_key))
        except RedisError:
            narrowed = False
        return 1 if narrowed else self.max_in_flight

    def _narrow(self, beside: int) -> None:
        try:
            get_redis().set(self._narrow_key, str(beside), px=int(NARROW_SECONDS * 1000))
        except RedisError as exc:
            logger.warning("provider %s: could not share the narrowing: %s", self.origin, type(exc).__name__)
        logger.warning(
            "provider %s let a post time out with %d in flight; every worker asks it one post at a time for %.0f s",
            self.origin,
            beside,
            NARROW_SECONDS,
        )

    def _open_backoff(self, seconds: float, why: str) -> None:
        seconds = max(1.0, min(seconds, MAX_BACKOFF_SECONDS))
        try:
            get_redis().set(self._backoff_key, why, px=int(seconds * 1000))
        except RedisError as exc:
            logger.warning("provider %s: could not share the back-off window: %s", self.origin, type(exc).__name__)
        logger.warning("provider %s rate-limited us (%s); every worker backs off for %.0f s", self.origin, why, seconds)

    # --- transport ---------------------------------------------------------------------------
    def _post(self, payload: Any, label: str) -> tuple[Any, NoEvidence | None]:
        """One HTTP round trip, in its turn (DWS_RPC_MAX_IN_FLIGHT); returns (decoded body, None) or
        (None, why not)."""
        data = json.dumps(payload).encode()
        with self._turns:
            remaining = self.backoff_remaining()  # after waiting our turn: a 429 just met holds us too
            if remaining > 0:
                return None, NoEvidence(label, "backoff", f"{self.origin} backing off for {remaining:.0f} s more")
            with self._counting:
                self.round_trips += 1
                self._posting += 1
                self._posted += 1
                beside, posted_before = self._posting, self._posted
            started = time.monotonic()
            try:
                reply = self._poster.post(data)
            except TransportError as exc:
                # Others in flight at any moment of this post: there when it started, or started since.
                overlapped = beside - 1 + self._posted - posted_before
                if exc.kind == "timeout" and overlapped > 0:
                    self._narrow(overlapped + 1)
                return None, NoEvidence(label, exc.kind, f"{self.origin}: {exc}")
            finally:
                with self._counting:
                    self._posting -= 1
                metrics.rpc_timed("batch" if isinstance(payload, list) else label, time.monotonic() - started)
            if reply.status == 429:  # the window opens before the next post in line looks at it
                self._open_backoff(_retry_after_seconds(reply.retry_after), "HTTP 429")
                return None, NoEvidence(label, "rate-limited", f"{self.origin}: HTTP 429")
        if 300 <= reply.status < 400:
            return None, NoEvidence(label, "http", f"{self.origin}: HTTP {reply.status}, a redirect, not followed")
        if reply.status != 200:
            return None, NoEvidence(label, "http", f"{self.origin}: HTTP {reply.status}")
        if nested_deeper_than(reply.body, MAX_ANSWER_DEPTH):
            # Some libraries raise the recursion limit (py_ecc: 100000): json would overflow the C stack.
            return None, NoEvidence(label, "malformed", f"{self.origin}: reply nested deeper than {MAX_ANSWER_DEPTH}")
        try:
            return _decoded(reply.body), None
        except RecursionError:
            return None, NoEvidence(label, "malformed", f"{self.origin}: reply nested deeper than JSON decodes")
        except ValueError:  # UnicodeDecodeError included
            return None, NoEvidence(label, "malformed", f"{self.origin}: reply is not JSON")

    def _request(self, method: str, params: Sequence[Any]) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": list(params)}

    def _interpret(self, method: str, reply: Any, *, null_is_answer: bool) -> RpcOutcome:
        if not isinstance(reply, dict):
            return NoEvidence(method, "malformed", f"{self.origin}: reply is not a JSON-RPC object")
        if "error" in reply and reply["error"] is not None:
            error = reply["error"]
            if is_rate_limit(error):
                self._open_backoff(DEFAULT_BACKOFF_SECONDS, _error_text(error))
                return NoEvidence(method, "rate-limited", _error_text(error))
            return NoEvidence(method, "error", _error_text(error))
        if "result" not in reply:
            return NoEvidence(method, "malformed", f"{self.origin}: reply has neither result nor error")
        if reply["result"] is None and not null_is_answer:
            return NoEvidence(method, "null", f"{self.origin} returned null")
        return Answer(reply["result"])

    # --- public calls ------------------------------------------------------------------------
    def call(self, method: str, params: Sequence[Any] = (), *, null_is_answer: bool = False) -> RpcOutcome:
        """One request. A null result is `NoEvidence` unless the caller says null means something."""
        request = self._request(method, params)
        body, failure = self._post(request, method)
        outcome = failure or self._interpret(method, body, null_is_answer=null_is_answer)
        metrics.rpc_observed([method], [outcome_label(outcome)])
        return outcome

    def batch(self, calls: Sequence[Call], *, null_is_answer: bool = False) -> list[RpcOutcome]:
        """Many requests in as few round trips as the batch limit allows; outcomes in call order. A post
        whose answer is past DWS_RPC_MAX_ANSWER_MB is asked again in halves, down to one call a post: a
        batch of answers that each fit is never refused for their sum."""
        outcomes: list[RpcOutcome] = []
        for start in range(0, len(calls), self._max_batch):
            outcomes += self._batch_part(calls[start : start + self._max_batch], null_is_answer)
        metrics.rpc_observed([method for method, _ in calls], [outcome_label(o) for o in outcomes])
        return outcomes

    def _batch_part(self, chunk: Sequence[Call], null_is_answer: bool) -> list[RpcOutcome]:
        requests_ = [self._request(method, params) for method, params in chunk]
        body, failure = self._post(requests_, f"batch of {len(chunk)}")
        if failure and failure.kind == TOO_LARGE and len(chunk) > 1:
            half = len(chunk) // 2
            logger.info(
                "provider %s: the answer to %d calls is past the answer cap; asking again in two parts",
                self.origin,
                len(chunk),
            )
            return self._batch_part(chunk[:half], null_is_answer) + self._batch_part(chunk[half:], null_is_answer)
        if failure:
            return [NoEvidence(m, failure.kind, failure.detail) for m, _ in chunk]
        if isinstance(body, dict):  # some providers answer a whole batch with one error object
            return [self._interpret(m, body, null_is_answer=null_is_answer) for m, _ in chunk]
        by_id = {r.get("id"): r for r in body if isinstance(r, dict)} if isinstance(body, list) else {}
        outcomes: list[RpcOutcome] = []
        for request, (method, _) in zip(requests_, chunk, strict=True):
            reply = by_id.get(request["id"])
            if reply is None:
                outcomes.append(NoEvidence(method, "malformed", f"{self.origin}: batch reply lacks an answer"))
            else:
                outcomes.append(self._interpret(method, reply, null_is_answer=null_is_answer))
        return outcomes

    # --- typed helpers -----------------------------------------------------------------------
    def block_number(self) -> int:
        return int(require(self.call("eth_blockNumber")), 16)

    def chain_id(self) -> int:
        return int(require(self.call("eth_chainId")), 16)

    def get_logs(
        self, *, addresses: Sequence[str] | None, topics: Sequence[Any], from_block: int, to_block: int
    ) -> list[dict]:
        """eth_getLogs over [from_block, to_block] of `addresses` (None: every contract), in sub-ranges the
        provider accepts.

        A refusal for size halves the span (and caps it there) and retries; accepted ranges let it grow
        back to the cap, and after a run of them the cap is lifted to probe larger ranges again. Any
        other failure raises `NoEvidenceError`: a partial log list would read as "no donation in the
        rest", which we cannot know.
        """
        logs: list[dict] = []
        start = from_block
        while start <= to_block:
            end = min(to_block, start + self.log_span - 1)
            span: dict[str, Any] = {"topics": list(topics), "fromBlock": hex(start), "toBlock": hex(end)}
            params = [{"address": list(addresses), **span} if addresses is not None else span]  # None: every contract
            outcome = self.call("eth_getLogs", params)
            refused = isinstance(outcome, NoEvidence) and (
                (outcome.kind == "error" and is_range_refusal(outcome.detail)) or outcome.kind == TOO_LARGE
            )
            if isinstance(outcome, NoEvidence) and refused:
                if end == start:
                    raise NoEvidenceError(outcome)
                self.log_span = self._log_span_ceiling = max(LOG_SPAN_MIN, (end - start + 1) // 2)
                self._log_successes = 0
                logger.info(
                    "provider %s refused %d blocks of logs; retrying with %d",
                    self.origin,
                    end - start + 1,
                    self.log_span,
                )
                continue
            found = require(outcome)
            if not isinstance(found, list):
                raise NoEvidenceError(NoEvidence("eth_getLogs", "malformed", f"{self.origin}: logs are not a list"))
            logs += found
            start = end + 1
            self._log_successes += 1
            if self._log_successes >= LOG_SPAN_PROBE_AFTER:
                self._log_span_ceiling, self._log_successes = self.log_span_max, 0
            self.log_span = min(self.log_span_max, self._log_span_ceiling, self.log_span * 2)
        return logs


def wait_for_backoff(client: RpcClient, limit: float) -> None:
    """Sleep out a short back-off window (used by the looping command between runs)."""
    remaining = client.backoff_remaining()
    if 0 < remaining <= limit:
        time.sleep(remaining)
