"""The cache's serializer (JSON, never pickle), and a cache that outlives Redis's absence.

Django's RedisCache pickles every value but an integer, and unpickling runs whatever the bytes say: a
value planted under a key the web process reads (/health's report, public and not rate limited) ran a
command in it. Everything dws caches is plain data (the health report, the metrics' database
gauges, django-ratelimit's counters), so JSON carries it. Integers come out as their digits, the form
Redis's INCR counts with. Bytes that are not JSON are a miss (logged), not an exception.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict
from typing import Any

from django.core.cache import cache
from redis.exceptions import RedisError

logger = logging.getLogger("dws.cache")


class JSONSerializer:
    """The `serializer` OPTION of django.core.cache.backends.redis.RedisCache."""

    def dumps(self, obj: Any) -> bytes | int:
        if type(obj) is int:
            return obj  # as Django's own serializer does: Redis stores it as an integer INCR can move
        return json.dumps(obj, separators=(",", ":")).encode()

    def loads(self, data: bytes) -> Any:
        try:
            return json.loads(data)
        except (ValueError, UnicodeDecodeError):
            logger.warning("cache: a value that is not JSON was ignored (%d bytes)", len(data))
            return None


class CacheOrLocal:
    """The shared cache (Redis) or, while it fails, this process's own, at most `max_entries` (the least
    recently stored leave first). For values a caller checks itself (e.g. by a version stored beside them): a
    process then builds each one once, not once per request, and a Redis that hangs costs one time-out per
    process every `retry_seconds`, not one per request. The local entries are forgotten once Redis answers."""

    def __init__(self, *, max_entries: int, retry_seconds: float = 5.0) -> None:
        self._max_entries = max_entries
        self._retry_seconds = retry_seconds
        self._local: OrderedDict[str, Any] = OrderedDict()
        self._retry_at = 0.0
        self._lock = threading.Lock()

    def get(self, key: str) -> Any:
        if time.monotonic() >= self._retry_at:
            try:
                entry = cache.get(key)
            except RedisError:
                self._retry_at = time.monotonic() + self._retry_seconds
            else:
                if self._local:
                    with self._lock:
                        self._local.clear()
                return entry
        with self._lock:
            return self._local.get(key)

    def set(self, key: str, entry: Any, seconds: int) -> None:
        if time.monotonic() >= self._retry_at:
            try:
                cache.set(key, entry, seconds)
                return
            except RedisError:
                self._retry_at = time.monotonic() + self._retry_seconds
        with self._lock:
            self._local[key] = entry
            self._local.move_to_end(key)
            while len(self._local) > self._max_entries:
                self._local.popitem(last=False)
