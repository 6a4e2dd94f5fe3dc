"""A session anvil with the stable coins deployed at deploy/env.local's addresses; each test runs on a
snapshot of it (reverted afterwards), with the crawlers pointed at it through settings.CONFIG."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from dws_project.config_values import StableCoin
from dws_project.redis_client import get_redis
from prices.models import ETH, Price
from tests.chain import ROLLUP, ROLLUP_CHAIN_ID, Anvil, deploy_rollup_coins, deploy_stable_coins
from tests.configs import configured, with_chains
from tests.rpc_proxy import RpcProxy

ETH_USD = Decimal("2000")


def _with_stable_coins(anvil: Anvil) -> None:
    anvil.coins = deploy_stable_coins(anvil)


def _with_rollup_coins(anvil: Anvil) -> None:
    anvil.coins = deploy_rollup_coins(anvil)


@pytest.fixture(scope="session")
def chain() -> Iterator[Anvil]:
    with Anvil() as anvil:
        anvil.coins = deploy_stable_coins(anvil)
        yield anvil


@pytest.fixture
def node(chain: Anvil, request) -> Iterator[Anvil]:
    with chain.test_snapshot(request.node.nodeid, _with_stable_coins):
        yield chain


@pytest.fixture
def proxy(node: Anvil, settings) -> Iterator[RpcProxy]:
    """The crawlers' provider is the fault proxy in front of the test node."""
    with RpcProxy(node.url) as running:
        settings.CONFIG = configured(settings.CONFIG, rpc_url=running.url("/rpc"))
        yield running


@pytest.fixture(autouse=True)
def _clean_redis() -> None:
    redis = get_redis()
    for key in redis.scan_iter("dws:*"):
        redis.delete(key)


@pytest.fixture(autouse=True)
def _fresh_worker_warnings() -> None:
    """Each test runs as a freshly started worker would: the warnings logged once per process (a provider
    without historical state) are logged again, whichever test met them first."""
    from crawlers.record import completeness
    from crawlers.scan import safe, with_code

    completeness._warned_unproven.clear()
    with_code._logged.clear()  # the donation address's mode is logged once per process
    safe._believed.clear()  # and a Safe found there is remembered by the process
    safe._singletons.clear()


@pytest.fixture
def crawl_config(settings, node: Anvil):
    """The crawlers' configuration for this test: this node, starting after its current head."""
    config = settings.CONFIG
    coins = {c.asset: c.contract for c in config.first_chain.stable_coins}
    assert coins == node.coins, "deploy/env.local's DWS_STABLE_COINS must match the deployed test coins"
    settings.CONFIG = configured(config, rpc_url=node.url, start_block=node.head() + 1)
    return settings


# The second chain of the multi-chain tests (tests/chain.py): a local "rollup", chain id 1337, its own USDC.
@pytest.fixture(scope="session")
def second_chain() -> Iterator[Anvil]:
    with Anvil(extra_args=["--chain-id", str(ROLLUP_CHAIN_ID)]) as anvil:
        anvil.coins = deploy_rollup_coins(anvil)
        yield anvil


@pytest.fixture
def rollup(second_chain: Anvil, request) -> Iterator[Anvil]:
    with second_chain.test_snapshot(request.node.nodeid, _with_rollup_coins):
        yield second_chain


@pytest.fixture
def two_chains(crawl_config, rollup: Anvil):
    """Two chains, one campaign: `eth` on the test node and `rollup` (chain id 1337, its own USDC) on the
    second node, both crawled from after their current heads, to the same donation address."""
    eth = crawl_config.CONFIG.first_chain
    second = dataclasses.replace(
        eth,
        name=ROLLUP,
        chain_id=ROLLUP_CHAIN_ID,
        rpc_url=rollup.url,
        start_block=rollup.head() + 1,
        stable_coins=(StableCoin("usdc", rollup.coins["usdc"], 6),),
        label="Local rollup",
        rpc_check_url=None,
    )
    crawl_config.CONFIG = with_chains(crawl_config.CONFIG, eth, second)
    return crawl_config


@pytest.fixture
def eth_prices(db) -> Decimal:
    """An ETH price for every minute of the hour around now (anvil stamps blocks with the wall clock)."""
    now = timezone.now().replace(second=0, microsecond=0)
    Price.objects.bulk_create(
        Price(asset=ETH, price=ETH_USD, created_at=now + timedelta(minutes=m), sources={"test": True})
        for m in range(-30, 31)
    )
    return ETH_USD


@pytest.fixture(autouse=True)
def _ledger_invariants_hold_afterwards(request) -> Iterator[None]:
    """DESIGN.md invariants 1 and 2 after every database test here, on top of each test's own checks."""
    yield
    if request.node.get_closest_marker("django_db"):
        from tests.invariants import assert_ledger_invariants

        assert_ledger_invariants()


# An OP-stack chain (tests/op_stack.py): anvil executing deposits and charging L1 and operator fees, with the
# test coins at deploy/env.local's addresses like the session node, on anvil's chain id like it.
@pytest.fixture(scope="session")
def op_chain() -> Iterator[Anvil]:
    with Anvil(extra_args=["--network", "optimism"]) as anvil:
        anvil.coins = deploy_stable_coins(anvil)
        yield anvil


@pytest.fixture
def op_node(op_chain: Anvil, request) -> Iterator[Anvil]:
    with op_chain.test_snapshot(request.node.nodeid, _with_stable_coins):
        yield op_chain


@pytest.fixture
def op_proxy(op_node: Anvil, settings) -> Iterator[RpcProxy]:
    """The crawlers read the OP-stack node through the proxy (which writes what op-geth would in its
    receipts), starting after its current head."""
    coins = {c.asset: c.contract for c in settings.CONFIG.first_chain.stable_coins}
    assert coins == op_node.coins, "deploy/env.local's DWS_STABLE_COINS must match the deployed test coins"
    with RpcProxy(op_node.url) as running:
        settings.CONFIG = configured(settings.CONFIG, rpc_url=running.url("/rpc"), start_block=op_node.head() + 1)
        yield running
