"""One Redis client per process for locks, back-off windows and replay caches."""

from __future__ import annotations

import functools

import redis
from django.conf import settings


@functools.cache
def get_redis() -> redis.Redis:
    return redis.Redis.from_url(
        settings.CONFIG.redis_url, socket_timeout=5, socket_connect_timeout=5, health_check_interval=30
    )
