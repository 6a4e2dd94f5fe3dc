"""Shared helpers for the delphi API tests: real PostgreSQL and Redis, wallets from eth-account."""

from __future__ import annotations

import pytest
from django.test import Client
from eth_account import Account

from dws_project.redis_client import get_redis
from tests.api.support import forget_used_timestamps


@pytest.fixture(autouse=True)
def _fresh_redis():
    """Every test starts with empty rate-limit buckets and an empty replay cache (and nothing else is
    touched, so other parts of the suite may share the Redis db)."""
    redis = get_redis()
    for pattern in ("dws:ratelimit:*", "dws:signed-message:*"):
        keys = list(redis.scan_iter(match=pattern, count=1000))
        if keys:
            redis.delete(*keys)
    forget_used_timestamps()


@pytest.fixture
def api() -> Client:
    return Client()


@pytest.fixture
def wallet():
    return Account.create()


@pytest.fixture
def other_wallet():
    return Account.create()
