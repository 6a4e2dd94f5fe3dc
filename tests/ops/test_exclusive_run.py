"""A crawler run of a chain is exclusive in PostgreSQL too: with its Redis lock flushed mid-run, a second
run does not write beside the first; every other writer of the chain's rows (the single-block re-crawl,
set_cursor, crediting an inflow, the old-unconfirmed judge) waits its turn while a run holds the lock."""

from __future__ import annotations

import time
from collections.abc import Iterator

import psycopg2
import pytest
from django.conf import settings as django_settings

from crawlers.models import FINALIZED, LATEST, LastBlock, UnexplainedInflow
from crawlers.record.inflows import InflowRefused
from crawlers.runs.crawl import crawl, crawl_single_block
from crawlers.runs.jobs import run_crawler
from crawlers.runs.old_unconfirmed import OLD_UNCONFIRMED, crawl_old_unconfirmed
from crawlers.runs.operator import CursorRefused, inflow_credit, set_cursor
from crawlers.tasks import crawl_latest
from donations.models import Donation, DonationStats
from dws_project.locks import ADVISORY_NAMESPACE, _advisory_key, is_running
from dws_project.redis_client import get_redis
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.ops.processes import ONE_POST_AT_A_TIME, process_environment, worker
from tests.rpc_proxy import RpcProxy

pytestmark = [pytest.mark.django_db(transaction=True)]

SLOW = 0.4  # seconds per batch of blocks the provider takes: the first run lasts ~10 s or more


def cursor() -> int:
    return LastBlock.objects.filter(label=LATEST).values_list("value", flat=True).first() or 0


def wait_until(condition, timeout: float = 60.0, describe: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {describe}"
        time.sleep(0.1)


@pytest.fixture
def slow_provider(node) -> Iterator[RpcProxy]:
    DonationStats.objects.get_or_create()
    get_redis().flushdb()
    with RpcProxy(node.url) as proxy:
        proxy.arm("eth_getBlockByNumber", "hang", count=None, seconds=SLOW)
        yield proxy
    get_redis().flushdb()


def test_a_flushed_redis_lock_does_not_let_a_second_run_write_beside_the_first(
    node, slow_provider, tmp_path, eth_prices, crawl_config
):
    """About 18 s: two real crawler processes, the first paced by a slow provider so that the second starts
    while it writes."""
    start = node.head() + 1
    early = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    node.mine(1000)
    late = node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)
    env = process_environment(
        ETH_RPC_URL=slow_provider.url("/rpc"),
        **ONE_POST_AT_A_TIME,
        DWS_START_BLOCK=str(start),
        DWS_HEARTBEAT_DIR=str(tmp_path / "hb"),
    )
    first = worker("first", "crawlers", env, tmp_path)
    try:
        crawl_latest.delay()
        wait_until(lambda: cursor() > start + 50, describe="the first run to be under way")
        get_redis().flushdb()  # Redis restarted empty: the first run's lock is gone
        assert not is_running("crawl-latest")

        before = cursor()
        second = run_crawler(LATEST)  # takes the Redis lock anew; PostgreSQL still says no

        assert second is not None
        assert second.blocks == 0
        assert second.inserted == 0
        assert "holds its PostgreSQL lock" in second.held
        wait_until(lambda: cursor() == node.head(), 120, "the first run (and its follow-ups) to reach the head")
        assert cursor() >= before
    finally:
        first.stop()
    assert Donation.objects.filter(tx_hash=early).count() == 1
    assert Donation.objects.filter(tx_hash=late).count() == 1


@pytest.fixture
def other_session():
    """Another PostgreSQL session (another worker's), which can take the crawlers' advisory locks."""
    db = django_settings.DATABASES["default"]
    session = psycopg2.connect(
        host=db["HOST"], port=db["PORT"] or 5432, user=db["USER"], password=db["PASSWORD"] or None, dbname=db["NAME"]
    )
    session.autocommit = True
    try:
        yield session.cursor()
    finally:
        session.close()


def hold(session, job: str) -> None:
    session.execute("SELECT pg_advisory_lock(%s, %s)", [ADVISORY_NAMESPACE, _advisory_key("eth", job)])


def test_every_writer_waits_while_another_session_holds_the_chain_lock(node, crawl_config, eth_prices, other_session):
    DonationStats.objects.get_or_create()  # an earlier transactional test's flush removes the migration's row
    donation = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    block = int(node.receipt(donation)["blockNumber"], 16)
    node.mine(3)
    hold(other_session, LATEST)
    hold(other_session, FINALIZED)
    hold(other_session, OLD_UNCONFIRMED)

    assert "holds its PostgreSQL lock" in (crawl(LATEST).held or "")
    assert "holds its PostgreSQL lock" in (crawl(FINALIZED).held or "")
    assert "holds its PostgreSQL lock" in (crawl_single_block(FINALIZED, block).held or "")
    assert "holds its PostgreSQL lock" in (crawl_old_unconfirmed().held or "")
    with pytest.raises(CursorRefused, match="is running"):
        set_cursor(LATEST, block, operator="ops")
    inflow = UnexplainedInflow.objects.create(
        block_number=block, block_hash="0x" + "ab" * 32, asset="eth", amount_raw=1, amount=1
    )
    with pytest.raises(InflowRefused, match="finalized crawler is writing"):
        inflow_credit(inflow_id=inflow.pk, tx_hash=donation, operator="ops")
    assert not Donation.objects.exists()
    assert not LastBlock.objects.exists()

    other_session.execute("SELECT pg_advisory_unlock_all()")
    assert crawl(LATEST).held is None
    assert Donation.objects.filter(tx_hash=donation).count() == 1
