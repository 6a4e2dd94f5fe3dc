"""The cache's serializer: JSON, never pickle.

Django's RedisCache pickles every value but an integer, and unpickling runs whatever the bytes say: a
value planted under a key the web process reads (/health's report, public and not rate limited) ran a
command in it. Everything dws caches is plain data (the health report, the metrics' database
gauges, django-ratelimit's counters), so JSON carries it. Integers come out as their digits, the form
Redis's INCR counts with. Bytes that are not JSON are a miss (logged), not an exception.
"""

from __future__ import annotations

import json
import logging
from typing import Any

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
