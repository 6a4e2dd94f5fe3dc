"""The chaos stack: anvil behind the fault proxy, PostgreSQL, Redis and REAL Celery worker processes.

Each scenario gets a fresh anvil whose clock runs two hours behind (so every donation is already old
enough for the old-unconfirmed judge) and whose finalized block trails the head by 8 (so re-orgs of
depth 1..5 never touch a finalized block). Workers are `celery -A dws_project worker` subprocesses on
this test run's Redis db and test database; the test plays beat, sending the crawler tasks with
`.delay()` while it mines, re-orgs and injects faults.

`stack_factory(chains=2)` adds a second chain, `rollup` (chain id 1337), on an anvil of its own (the same clock
and finality) with its own USDC and fault proxy; each worker then has a process per chain, as `make run` starts
it, and the test plays beat for both chains.

After every scenario `Stack.verify()` checks, on every chain, what the matrix exists for: every donation transfer on
its final history is confirmed exactly once, nothing else is, its balances are accounted for and
`reconcile` over the scenario's blocks reports no drift; then the campaign's ledger invariants hold.
"""

from __future__ import annotations

import dataclasses
import os
import random
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.utils import timezone

from crawlers.models import FINALIZED, InflowStatus, UnexplainedInflow
from crawlers.record.cursors import cursor_get
from crawlers.runs.reconcile import reconcile
from crawlers.tasks import crawl_finalized, crawl_latest, crawl_old_unconfirmed_task
from donations.models import Donation, DonationStats, DonationStatus
from dws_project.chain_settings import FIRST_CHAIN, ChainSettings, chain_variable
from dws_project.config_values import StableCoin, parse_sale_params
from dws_project.redis_client import get_redis
from prices.models import ETH, Price
from tests.chain import (
    ACCOUNTS,
    DONATION_ADDRESS,
    ETHER,
    ROLLUP,
    ROLLUP_CHAIN_ID,
    ROOT,
    Anvil,
    deploy_rollup_coins,
    deploy_stable_coins,
)
from tests.configs import configured, with_chains
from tests.detection_oracle import chain_donations
from tests.invariants import assert_ledger_invariants
from tests.ops.processes import celery_worker_command, process_environment
from tests.rpc_proxy import RpcProxy

CHAIN_LAG = timedelta(hours=2)
SLOTS_IN_AN_EPOCH = 4  # finalized = head - 8
ALL_TASKS = (crawl_latest, crawl_finalized, crawl_old_unconfirmed_task)
# 1 ETH = 2000 USD = 2,000,000 tokens in tier 1; tier 2 from 3M tokens; the cap at 5M.
SMALL_SALE = "3000000:0.001,5000000:0.002"
LARGE_SALE = "100000000:0.001,250000000:0.0015"
USDT = 10**6
DEV_CHAIN_ID = 31337  # anvil's own, deploy/env.local's DWS_CHAIN_ID


@pytest.fixture(scope="session")
def chaos_seed() -> int:
    seed = int(os.environ.get("CHAOS_SEED") or random.SystemRandom().randrange(2**32))
    print(f"\nchaos seed: {seed} (re-run with CHAOS_SEED={seed})")
    return seed


class Worker:
    def __init__(self, name: str, env: dict[str, str], log: Path, *, concurrency: int = 1) -> None:
        self.name = name
        self.log = log
        self._out = log.open("ab")
        self.process = subprocess.Popen(
            celery_worker_command(f"{name}@chaos", "crawlers,prices,celery", concurrency=concurrency),
            cwd=ROOT,
            env=env,
            stdout=self._out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: SIGKILL reaches the pool child too
        )

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"worker {self.name} exited:\n{self.log.read_text()[-3000:]}")
            if " ready." in self.log.read_text(errors="replace"):
                return
            time.sleep(0.2)
        raise RuntimeError(f"worker {self.name} not ready:\n{self.log.read_text()[-3000:]}")

    def kill(self) -> None:
        """SIGKILL the worker and its pool child: no shutdown, no ack, no lock release."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)
        self._out.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self._out.close()


class ChainUnderTest:
    """One chain of the stack: its anvil, the fault proxy the workers reach it through, the scenario's first
    block on it and every donation the scenario sent there."""

    def __init__(self, name: str, chain_id: int, anvil: Anvil, proxy: RpcProxy) -> None:
        self.name = name
        self.chain_id = chain_id
        self.anvil = anvil
        self.proxy = proxy
        self.start_block = anvil.head() + 1
        self.sent: dict[str, str] = {}  # tx hash -> asset, every donation this scenario sent on this chain

    def variables(self) -> dict[str, str]:
        """This chain's part of the workers' environment (DESIGN "Chains": chain eth by today's names)."""
        coins = ",".join(f"{asset}:{address}:6" for asset, address in self.anvil.coins.items())
        return {
            chain_variable(self.name, "RPC_URL"): self.proxy.url("/rpc"),
            chain_variable(self.name, "CHAIN_ID"): str(self.chain_id),
            chain_variable(self.name, "START_BLOCK"): str(self.start_block),
            chain_variable(self.name, "STABLE_COINS"): coins,
        }

    def settings(self, first: ChainSettings) -> ChainSettings:
        """This chain as this process (reconcile, the operator's commands) reads it: anvil itself, no proxy."""
        return dataclasses.replace(
            first,
            name=self.name,
            chain_id=self.chain_id,
            rpc_url=self.anvil.url,
            start_block=self.start_block,
            stable_coins=tuple(StableCoin(asset, address, 6) for asset, address in self.anvil.coins.items()),
            rpc_check_url=None,
        )

    def donate_eth(self, donor: str, wei: int = ETHER) -> str:
        tx = self.anvil.send_eth(donor, DONATION_ADDRESS, wei)
        self.sent[tx] = "eth"
        return tx

    def donate_token(self, asset: str, donor: str, units: int) -> str:
        token = self.anvil.coins[asset]
        self.anvil.mint(token, donor, units)
        tx = self.anvil.transfer_token(token, donor, DONATION_ADDRESS, units)
        self.sent[tx] = asset
        return tx

    def cursor(self) -> int | None:
        row = cursor_get(chain=self.name, label=FINALIZED)
        return row.value if row else None

    def expected(self, up_to: int) -> dict[tuple[str, int | None], str]:
        """The donation transfers on this chain's current history in the scenario's blocks, read from anvil."""
        return chain_donations(self.anvil, self.start_block, up_to)

    def confirmed(self) -> dict[tuple[str, int | None], int]:
        keys: dict[tuple[str, int | None], int] = {}
        rows = Donation.objects.filter(chain=self.name, status=DonationStatus.CONFIRMED)
        for tx, index in rows.values_list("tx_hash", "log_index"):
            keys[(tx, index)] = keys.get((tx, index), 0) + 1
        return keys

    def last_donation_block(self) -> int:
        blocks = [self.anvil.receipt(tx) for tx in self.sent]
        return max((int(r["blockNumber"], 16) for r in blocks if r), default=self.start_block)

    def settled(self) -> bool:
        cursor = self.cursor()
        if cursor is None or cursor < self.last_donation_block():
            return False
        return set(self.confirmed()) == set(self.expected(cursor))

    def describe(self) -> str:
        rows = list(
            Donation.objects.filter(chain=self.name).values_list("tx_hash", "log_index", "status", "block_number")
        )
        return (
            f"{self.name}: head {self.anvil.head()}, finalized {self.anvil.finalized()}, "
            f"finalized cursor {self.cursor()}, rows {rows}"
        )

    def verify(self) -> None:
        """Invariants 3 and 5 on this chain, and `reconcile` of its blocks."""
        cursor = self.cursor()
        assert cursor is not None, f"{self.name}: no finalized cursor"
        expected = self.expected(cursor)
        confirmed = self.confirmed()
        assert set(confirmed) == set(expected), f"{self.name}: lost or extra confirmations"
        assert all(n == 1 for n in confirmed.values()), f"{self.name}: a donation confirmed twice"
        assert all(tx in self.sent or self._remined(tx) for tx, _ in expected), f"{self.name}: a donation nobody sent"
        for tx in self.sent:  # every donation we sent: confirmed if it is on the final chain, else not
            on_chain = any(key[0] == tx for key in expected)
            assert on_chain == any(key[0] == tx for key in confirmed), f"{self.name}: donation {tx} on chain {on_chain}"
        self.assert_balances_accounted_for(cursor)
        report = reconcile(self.start_block, cursor, chain=self.name)
        assert report.ok, "\n".join(report.discrepancies)

    def assert_balances_accounted_for(self, cursor: int) -> None:
        """The chain's own balances: what the donation address gained over the scenario's blocks is what
        was confirmed plus the unexplained inflows not credited (ETH to within the column's rounding)."""
        before, after = hex(self.start_block - 1), hex(cursor)
        gained = {"eth": int(self.anvil.rpc("eth_getBalance", DONATION_ADDRESS, after), 16)}
        gained["eth"] -= int(self.anvil.rpc("eth_getBalance", DONATION_ADDRESS, before), 16)
        data = self.anvil.call_data("balanceOf(address)", ["address"], [DONATION_ADDRESS])
        for asset, token in self.anvil.coins.items():
            at = [self._coin_balance(token, data, n) for n in (before, after)]
            gained[asset] = at[1] - at[0]
        units = {"eth": 10**18, "usdt": USDT, "usdc": USDT}
        recorded = dict.fromkeys(gained, 0)
        rows = dict.fromkeys(gained, 0)
        confirmed = Donation.objects.filter(chain=self.name, status=DonationStatus.CONFIRMED)
        for asset, amount in confirmed.values_list("asset", "amount"):
            recorded[asset] += int(amount * units[asset])
            rows[asset] += 1
        for inflow in UnexplainedInflow.objects.filter(chain=self.name).exclude(status=InflowStatus.CREDITED):
            recorded[inflow.asset] += int(inflow.amount_raw)
        for asset, raw in gained.items():
            rounding = 10**10 * (rows[asset] + 1) if asset == "eth" else 1  # ETH is recorded rounded down
            assert 0 <= raw - recorded[asset] < rounding, (
                f"{self.name} {asset}: the donation address gained {raw} raw units, "
                f"the records account for {recorded[asset]}"
            )

    def _coin_balance(self, token: str, data: str, block: str) -> int:
        """balanceOf at a block; "0x" only where the coin has no code there (a re-org deep enough to drop
        its deployment, as the crawlers read it too), never a deployed coin answering nothing."""
        answer = self.anvil.rpc("eth_call", {"to": token, "data": data}, block)
        if answer == "0x":
            assert self.anvil.rpc("eth_getCode", token, block) == "0x", f"{token} answered nothing at {block}"
            return 0
        return int(answer, 16)

    def _remined(self, tx: str) -> bool:
        """A donation re-mined by a re-org (a new transaction from one of our donors)."""
        sender = self.anvil.rpc("eth_getTransactionByHash", tx)["from"].lower()
        return sender in ACCOUNTS


class Stack:
    """The workers and the chains they crawl (the first is `eth`; a second is `rollup`, chain id 1337, on an
    anvil of its own). `anvil`, `proxy`, `sent` and the donation helpers are the first chain's."""

    def __init__(self, chains: list[ChainUnderTest], settings, tmp_path: Path, sale: str) -> None:
        self.chains = chains
        self.tmp_path = tmp_path
        self.workers: list[Worker] = []
        self.settings = settings
        variables: dict[str, str] = {}
        for chain in chains:
            variables.update(chain.variables())
        if len(chains) > 1:
            variables["DWS_CHAINS"] = ",".join(c.name for c in chains)
        self.env = process_environment(
            **variables,
            DWS_SALE_PARAMS=sale,
            TEST_RPC_READ_TIMEOUT="1",
            TEST_CRAWLER_LOCK_TTL="6",
        )
        self.use_sale(sale)

    # --- the first chain ------------------------------------------------------------------------
    @property
    def anvil(self) -> Anvil:
        return self.chains[0].anvil

    @property
    def proxy(self) -> RpcProxy:
        return self.chains[0].proxy

    @property
    def start_block(self) -> int:
        return self.chains[0].start_block

    @property
    def sent(self) -> dict[str, str]:
        return self.chains[0].sent

    def chain(self, name: str) -> ChainUnderTest:
        (found,) = [c for c in self.chains if c.name == name]
        return found

    # --- processes ------------------------------------------------------------------------------
    def start_workers(self, count: int, *, concurrency: int = 1) -> list[Worker]:
        new = [
            Worker(
                f"w{len(self.workers) + i}",
                self.env,
                self.tmp_path / f"worker-{len(self.workers) + i}.log",
                concurrency=concurrency,
            )
            for i in range(count)
        ]
        for worker in new:
            worker.wait_ready()
        self.workers += new
        return new

    def worker_logs(self) -> str:
        return "".join(w.log.read_text(errors="replace") for w in self.workers)

    def use_sale(self, sale: str) -> None:
        """The same tiers and chains for this process (the operator's commands, reconcile) as for the workers."""
        self.env["DWS_SALE_PARAMS"] = sale
        config = configured(
            django_settings.CONFIG,
            rpc_url=self.anvil.url,
            start_block=self.start_block,
            sale_tiers=parse_sale_params(sale),
        )
        if len(self.chains) > 1:
            first = config.first_chain
            config = with_chains(config, first, *(c.settings(first) for c in self.chains[1:]))
        self.settings.CONFIG = config

    # --- donations (on the first chain) -----------------------------------------------------------
    def donate_eth(self, donor: str, wei: int = ETHER) -> str:
        return self.chains[0].donate_eth(donor, wei)

    def donate_token(self, asset: str, donor: str, units: int) -> str:
        return self.chains[0].donate_token(asset, donor, units)

    # --- beat ------------------------------------------------------------------------------------
    def drive(
        self,
        until: Callable[[], bool],
        *,
        timeout: float = 60.0,
        tasks=ALL_TASKS,
        mine: bool = True,
        copies: int = 1,
    ) -> None:
        """Play beat: send the tasks of every chain (and mine a block on each) every few hundred ms until
        `until()` holds."""
        deadline = time.monotonic() + timeout
        redis = get_redis()
        while not until():
            if time.monotonic() > deadline:
                raise AssertionError(f"the stack did not converge in {timeout:.0f} s; {self.describe()}")
            if redis.llen("crawlers") < 2 * len(tasks) * copies * len(self.chains):
                for task in tasks:
                    for chain in self.chains:
                        for _ in range(copies):
                            task.delay(chain=chain.name)
            if mine:
                for chain in self.chains:
                    chain.anvil.mine(1)
            time.sleep(0.3)

    def beat(self, rounds: int = 1, *, copies: int = 1, mine: bool = True) -> None:
        """`rounds` rounds of beat, whatever the state."""
        count = iter(range(rounds))
        self.drive(lambda: next(count, None) is None, timeout=30 + rounds, copies=copies, mine=mine)

    def describe(self) -> str:
        chains = "\n".join(c.describe() for c in self.chains)
        return f"{chains}\nworker log tail:\n{self.worker_logs()[-4000:]}"

    def expected(self, up_to: int) -> dict[tuple[str, int | None], str]:
        return self.chains[0].expected(up_to)

    def confirmed(self) -> dict[tuple[str, int | None], int]:
        return self.chains[0].confirmed()

    def settled(self) -> bool:
        return all(chain.settled() for chain in self.chains)

    def last_donation_block(self) -> int:
        return self.chains[0].last_donation_block()

    def settle(self, timeout: float = 90.0) -> None:
        for chain in self.chains:
            chain.proxy.disarm()
            chain.anvil.mine(2 * SLOTS_IN_AN_EPOCH + 1)
        self.drive(self.settled, timeout=timeout)

    # --- the checks after every scenario ----------------------------------------------------------
    def verify(self) -> None:
        """On every chain: every donation transfer on its final history confirmed exactly once, nothing
        else, its balances accounted for, `reconcile` clean; then the campaign's ledger invariants."""
        self.settle()
        for chain in self.chains:
            chain.verify()
        assert_ledger_invariants()
        assert "Traceback" not in self.worker_logs()


def chaos_node(*extra_args: str) -> Anvil:
    """An anvil whose clock runs CHAIN_LAG behind and whose finalized block trails its head by 8."""
    clock = int(time.time() - CHAIN_LAG.total_seconds())
    return Anvil(slots_in_an_epoch=SLOTS_IN_AN_EPOCH, extra_args=["--timestamp", str(clock), *extra_args])


@pytest.fixture
def chaos_anvil() -> Iterator[Anvil]:
    with chaos_node() as anvil:
        anvil.coins = deploy_stable_coins(anvil)
        yield anvil


@pytest.fixture
def chaos_rollup() -> Iterator[Anvil]:
    """The second chain of the two-chain scenarios: a local rollup (chain id 1337) with its own USDC."""
    with chaos_node("--chain-id", str(ROLLUP_CHAIN_ID)) as anvil:
        anvil.coins = deploy_rollup_coins(anvil)
        yield anvil


@pytest.fixture
def chain_prices() -> None:
    """An ETH price for every minute the chain's (two hours behind) blocks can carry."""
    now = timezone.now().replace(second=0, microsecond=0)
    Price.objects.bulk_create(
        Price(asset=ETH, price=Decimal("2000"), created_at=now - timedelta(minutes=m), sources={"test": True})
        for m in range(-10, 200)
    )


@pytest.fixture
def campaign_row() -> None:
    """The campaign row a migration creates; an earlier transactional test's flush may have removed it."""
    DonationStats.objects.get_or_create()


@pytest.fixture
def stack_factory(
    request, chaos_anvil, settings, tmp_path, chain_prices, campaign_row
) -> Iterator[Callable[..., Stack]]:
    get_redis().flushdb()  # this run's own Redis db: locks, back-off windows and the task queue
    stacks: list[Stack] = []
    proxies: list[RpcProxy] = []

    def make(*, sale: str = LARGE_SALE, workers: int = 2, chains: int = 1) -> Stack:
        """A stack of `workers` workers on `chains` chains; with two chains one worker has a process per
        chain, as `make run` starts it (deploy/run-local.sh)."""
        nodes = [(FIRST_CHAIN, DEV_CHAIN_ID, chaos_anvil)]
        if chains == 2:
            nodes.append((ROLLUP, ROLLUP_CHAIN_ID, request.getfixturevalue("chaos_rollup")))
        under_test = []
        for name, chain_id, anvil in nodes:
            proxy = RpcProxy(anvil.url).start()
            proxies.append(proxy)
            under_test.append(ChainUnderTest(name, chain_id, anvil, proxy))
        stack = Stack(under_test, settings, tmp_path, sale)
        stacks.append(stack)
        stack.start_workers(workers, concurrency=chains)
        return stack

    yield make
    for stack in stacks:
        for worker in stack.workers:
            worker.stop()
    for proxy in proxies:
        proxy.stop()
    get_redis().flushdb()
    connection.close()
