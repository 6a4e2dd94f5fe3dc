"""Shared helpers for the delphi API tests: real PostgreSQL and Redis, wallets from eth-account."""

from __future__ import annotations

import pytest
from django.test import Client
from eth_account import Account

from dws_project.redis_client import get_redis


@pytest.fixture(autouse=True)
def _fresh_redis():
    """Every test starts with empty rate-limit buckets and replay cache (this checkout's own Redis db)."""
    get_redis().flushdb()


@pytest.fixture
def api() -> Client:
    return Client()


@pytest.fixture
def wallet():
    return Account.create()


@pytest.fixture
def other_wallet():
    return Account.create()
