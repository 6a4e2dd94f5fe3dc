"""Per-client rate limit for delphi: a token bucket in Redis, shared by every web process.

The bucket holds up to `burst` requests and refills at `rate` per second. The whole check-and-take
is one Lua script using Redis's own clock, so all processes on all machines see one bucket per client
and no two of them can race past the limit. The client is the direct peer address; X-Forwarded-For
counts only when the peer is a configured trusted proxy (DWS_TRUSTED_PROXIES), because anyone can
write that header and a rotating identifier would leave nothing to limit. IPv6 clients are grouped
by /64 (dws_project/ip.py). Signed endpoints draw on a second, smaller budget as well (see SignedApi).

The limit never fails open. When Redis does not answer, each process decides alone with buckets of its
own at the same per-client rate and burst (`LocalBuckets`: n web processes then admit n times the rate,
never an unlimited one), says so once at WARNING, counts each such decision
(`dws_ratelimit_local_decisions_total`), and asks Redis again after `REDIS_RETRY_SECONDS`: a Redis that
hangs costs one request per process its time-out, not every request.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from redis.exceptions import RedisError

from dws_project import api_errors, metrics
from dws_project.ip import IPNetwork, bucket_id, in_networks, normalize_ip
from dws_project.redis_client import get_redis

logger = logging.getLogger("dws.ratelimit")

# Probes must never be refused: a 429 on /ready would take a healthy node out of service (and /health
# is what an operator looks at when something is wrong).
EXEMPT_PATHS = frozenset({"/live", "/ready", "/version", "/health"})

# KEYS[1] bucket; ARGV rate/s, burst. Returns {allowed (1/0), milliseconds until one token is back}.
_BUCKET_LUA = """
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1])
local ts = tonumber(state[2])
if tokens == nil then
  tokens = burst
  ts = now
end
tokens = math.min(burst, tokens + math.max(0, now - ts) * rate / 1000)
local allowed = 0
local wait_ms = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
else
  wait_ms = math.ceil((1 - tokens) * 1000 / rate)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return {allowed, wait_ms}
"""

_script = None

# Redis away: how long a process decides alone before it asks Redis again, and how many clients' buckets
# it keeps (the least recently seen are forgotten first: such a client starts again with a full burst).
REDIS_RETRY_SECONDS = 5.0
LOCAL_MAX_CLIENTS = 100_000


class LocalBuckets:
    """Token buckets in this process's memory: the same arithmetic as the Redis script's, for one process."""

    def __init__(self, max_clients: int = LOCAL_MAX_CLIENTS) -> None:
        self._max_clients = max_clients
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (tokens, at)
        self._lock = threading.Lock()

    def take(self, key: str, *, rate: float, burst: int, now: float | None = None) -> tuple[bool, float]:
        """(allowed, seconds until the next request would be allowed), as `take_token`."""
        now = time.monotonic() if now is None else now
        with self._lock:
            tokens, at = self._buckets.pop(key, (float(burst), now))
            tokens = min(float(burst), tokens + max(0.0, now - at) * rate)
            allowed = tokens >= 1
            tokens = tokens - 1 if allowed else tokens
            self._buckets[key] = (tokens, now)
            while len(self._buckets) > self._max_clients:
                self._buckets.popitem(last=False)
        return allowed, 0.0 if allowed else (1 - tokens) / rate


class _Fallback:
    """This process's view of Redis for the limit: when to ask it again, and whether the outage was said."""

    def __init__(self) -> None:
        self.buckets = LocalBuckets()
        self.retry_at = 0.0
        self.warned = False


_fallback = _Fallback()


def client_address(request: HttpRequest, trusted_proxies: Sequence[IPNetwork]) -> str:
    """The address to limit: the direct peer, or behind trusted proxies the first untrusted hop.

    Every address is compared through `dws_project.ip` (an IPv4-mapped peer is its IPv4 address), the
    same reading the admin allow-list and the operator surfaces use."""
    peer = request.META.get("REMOTE_ADDR", "")
    if not trusted_proxies or not in_networks(peer, trusted_proxies):
        return peer
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    hops = [h.strip() for h in forwarded.split(",") if h.strip()]
    # Walk from the nearest hop outwards; the first address we do not trust is the client.
    for hop in reversed(hops):
        if normalize_ip(hop) is None:
            return peer  # a garbled header: fall back to what we know for certain
        if not in_networks(hop, trusted_proxies):
            return hop
    return hops[0] if hops else peer


def client_bucket(request: HttpRequest) -> str:
    """The bucket id of this request's client (trusted proxies honoured, IPv6 by /64)."""
    return bucket_id(client_address(request, settings.CONFIG.trusted_proxies))


def take_token(client: str, *, rate: float, burst: int, scope: str = "") -> tuple[bool, float]:
    """(allowed, seconds until the next request would be allowed) for one request from `client`.

    `scope` names a separate budget (e.g. "signed:") drawn on in addition to the site-wide one.
    """
    global _script
    if _script is None:
        _script = get_redis().register_script(_BUCKET_LUA)
    allowed, wait_ms = _script(keys=[f"dws:ratelimit:{scope}{client}"], args=[rate, burst])
    return bool(allowed), int(wait_ms) / 1000


def retry_after_header(seconds: float) -> str:
    return str(max(1, math.ceil(seconds)))


def check_budget(request: HttpRequest, *, rate: float, burst: int, scope: str = "") -> float | None:
    """None when the client may go on, else the seconds until it may retry. Redis down: this process's own
    buckets decide, at the same rate."""
    allowed, retry_after = _take(client_bucket(request), rate=rate, burst=burst, scope=scope)
    if allowed:
        return None
    metrics.rate_limit_refused()
    return retry_after


def take_local(key: str, *, rate: float, burst: int) -> tuple[bool, float]:
    """One request from `key` against this process's own bucket (for a limit whose shared store failed)."""
    metrics.rate_limit_local()
    return _fallback.buckets.take(key, rate=rate, burst=burst)


def _take(client: str, *, rate: float, burst: int, scope: str) -> tuple[bool, float]:
    if time.monotonic() >= _fallback.retry_at:
        try:
            taken = take_token(client, rate=rate, burst=burst, scope=scope)
        except RedisError as exc:
            _fallback.retry_at = time.monotonic() + REDIS_RETRY_SECONDS
            if not _fallback.warned:
                _fallback.warned = True
                logger.warning(
                    "rate limit: Redis unavailable (%s); this process limits each client on its own at the same "
                    "rate until Redis answers again",
                    type(exc).__name__,
                )
        else:
            if _fallback.warned:
                _fallback.warned = False
                logger.info("rate limit: Redis answers again; the shared buckets decide")
            return taken
    return take_local(f"{scope}{client}", rate=rate, burst=burst)


class RateLimitMiddleware:
    """Answers 429 (with Retry-After and the numbered error) when the client's bucket is empty."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info not in EXEMPT_PATHS:
            retry_after = check_budget(
                request, rate=settings.DWS_RATE_LIMIT_PER_SECOND, burst=settings.DWS_RATE_LIMIT_BURST
            )
            if retry_after is not None:
                return api_errors.json_error(
                    api_errors.RATE_LIMITED, **{"Retry-After": retry_after_header(retry_after)}
                )
        return self.get_response(request)
