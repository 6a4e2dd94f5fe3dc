"""DWS_CHAIN_ID pinned against the node: a provider that serves another chain holds every crawler.

The "wrong" node is a real anvil started on chain id 1 (what a mis-pointed ETH_RPC_URL looks like from
here: a healthy node, answering everything, on another network). Nothing it says may be recorded.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta

import pytest

from crawlers.chain.rpc import RpcClient
from crawlers.models import CHAIN, FINALIZED, LATEST
from crawlers.record.cursors import cursor_get
from crawlers.runs.crawl import crawl, crawl_single_block
from crawlers.runs.jobs import run_crawler
from crawlers.runs.old_unconfirmed import crawl_old_unconfirmed
from crawlers.runs.reconcile import ReconcileError, reconcile
from donations.models import Donation
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER, Anvil
from tests.configs import configured

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

MISMATCH = "serves chain id 1, DWS_CHAIN_ID is 31337"


@pytest.fixture
def other_chain() -> Iterator[Anvil]:
    with Anvil(extra_args=["--chain-id", "1"]) as anvil:
        yield anvil


def critical_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.CRITICAL]


def test_the_configured_chain_id_is_the_tests_dev_chain(settings):
    assert settings.CONFIG.first_chain.chain_id == 31337


def test_every_crawler_holds_with_a_critical_line_on_a_node_of_another_chain(node, other_chain, settings, caplog):
    tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    assert crawl(LATEST).inserted == 1  # recorded from the right chain: the judge has a row to look at
    cursor = cursor_get(chain=CHAIN, label=LATEST)
    assert cursor is not None
    before = cursor.value
    other_chain.send_eth(ACCOUNTS[1], DONATION_ADDRESS, 5 * ETHER)
    other_chain.mine(3)
    settings.CONFIG = configured(settings.CONFIG, rpc_url=other_chain.url)

    with caplog.at_level(logging.INFO):
        latest = crawl(LATEST)
        finalized = crawl(FINALIZED)
        single = crawl_single_block(FINALIZED, other_chain.head())
        judged = crawl_old_unconfirmed(now=Donation.objects.get().block_time + timedelta(minutes=31))
        with pytest.raises(ReconcileError, match=MISMATCH):
            reconcile(0, other_chain.head())

    for result in (latest, finalized, single, judged):
        assert result.held is not None
        assert MISMATCH in result.held
    assert len([line for line in critical_lines(caplog) if MISMATCH in line]) >= 5
    assert cursor_get(chain=CHAIN, label=LATEST).value == before  # not moved by the other chain's blocks
    assert cursor_get(chain=CHAIN, label=FINALIZED) is None
    assert [(d.tx_hash, d.status) for d in Donation.objects.all()] == [(tx, "unconfirmed")]


def test_the_chain_id_is_checked_again_at_every_run_of_a_long_lived_client(node, proxy, caplog):
    client = RpcClient(proxy.url("/rpc"))  # the `crawl` command's loop keeps one client for its lifetime
    node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    assert run_crawler(LATEST, client=client).inserted == 1

    proxy.arm("eth_chainId", "rewrite", count=None, rewrite=lambda _result, _params: "0x1")  # re-pointed
    node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)
    with caplog.at_level(logging.INFO):
        held = run_crawler(LATEST, client=client)

    assert held is not None
    assert MISMATCH in (held.held or "")
    assert any(MISMATCH in line for line in critical_lines(caplog))
    assert Donation.objects.count() == 1


def test_the_check_costs_no_extra_round_trip(node, proxy):
    client = RpcClient(proxy.url("/rpc"))
    crawl(LATEST, client=client)
    first = proxy.seen[0]
    assert sorted(first.methods) == ["eth_blockNumber", "eth_chainId"]  # asked together with the tip


@pytest.mark.django_db(transaction=True)
def test_a_crawler_worker_says_so_at_its_start_when_the_provider_serves_another_chain(other_chain, tmp_path):
    from donations.models import DonationStats
    from tests.ops.processes import process_environment, worker

    DonationStats.objects.get_or_create()  # an earlier transactional test's flush removes the migration's row
    env = process_environment(ETH_RPC_URL=other_chain.url, DWS_HEARTBEAT_DIR=str(tmp_path / "heartbeat"))
    running = worker("wrong-chain", "crawlers,celery", env, tmp_path)
    try:
        running.wait_log(MISMATCH, timeout=30)
    finally:
        running.stop()

    line = next(line for line in running.text().splitlines() if MISMATCH in line)
    assert "CRITICAL" in line
    assert "celery worker:" in line
