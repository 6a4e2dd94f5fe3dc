"""Shared helpers for the delphi API tests: real PostgreSQL and Redis, wallets from eth-account."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest
from django.test import Client
from eth_account import Account

from dws_project.redis_client import get_redis
from tests.api.support import forget_used_timestamps
from tests.chain import ROLLUP, ROLLUP_CHAIN_ID, Anvil
from tests.configs import configured, with_chains


@pytest.fixture(autouse=True)
def _fresh_redis():
    """Every test starts with empty rate-limit buckets (the contract-check budget's among them), no
    remembered code-less addresses and no provider back-off (and nothing else is touched, so other parts
    of the suite may share the Redis db). Used messages live in PostgreSQL, rolled back with the test."""
    redis = get_redis()
    for pattern in ("dws:ratelimit:*", "dws:no-code:*", "dws:rpc-backoff:*"):
        keys = list(redis.scan_iter(match=pattern, count=1000))
        if keys:
            redis.delete(*keys)
    forget_used_timestamps()


@pytest.fixture(scope="session")
def api_chain() -> Iterator[Anvil]:
    """A node for the API's provider: a signature that does not recover to delphi-key makes the API ask
    whether delphi-key is a contract wallet (ERC-1271), so every API test needs a provider that answers."""
    with Anvil() as anvil:
        yield anvil


@pytest.fixture
def node(api_chain: Anvil) -> Iterator[Anvil]:
    """The API's node for one test: what the test deploys or sends is reverted afterwards."""
    snapshot = api_chain.snapshot()
    try:
        yield api_chain
    finally:
        api_chain.revert(snapshot)


@pytest.fixture(scope="session")
def api_rollup_chain() -> Iterator[Anvil]:
    """A second chain for the tests of contract wallets on several chains (chain id 1337, started only by
    the tests that use it)."""
    with Anvil(extra_args=["--chain-id", str(ROLLUP_CHAIN_ID)]) as anvil:
        yield anvil


@pytest.fixture
def rollup(api_rollup_chain: Anvil, node: Anvil, settings) -> Iterator[Anvil]:
    """The API on two chains: `eth` on the API's node and `rollup` on the second, for one test (what it
    deploys or sends there is reverted afterwards)."""
    eth = settings.CONFIG.first_chain
    second = dataclasses.replace(
        eth, name=ROLLUP, chain_id=ROLLUP_CHAIN_ID, rpc_url=api_rollup_chain.url, stable_coins=(), rpc_check_url=None
    )
    settings.CONFIG = with_chains(settings.CONFIG, eth, second)
    snapshot = api_rollup_chain.snapshot()
    try:
        yield api_rollup_chain
    finally:
        api_rollup_chain.revert(snapshot)


@pytest.fixture(autouse=True)
def _api_provider(api_chain: Anvil, settings) -> Anvil:
    settings.CONFIG = configured(settings.CONFIG, rpc_url=api_chain.url)
    return api_chain


@pytest.fixture
def api() -> Client:
    return Client()


@pytest.fixture
def wallet():
    return Account.create()


@pytest.fixture
def other_wallet():
    return Account.create()
