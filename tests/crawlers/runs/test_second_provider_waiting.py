"""A dead or lagging check provider (DWS_RPC_CHECK_URL) never wedges the crawlers and never waves anything
through: it is waited for, with WARNING lines and /health saying so, and crediting resumes by itself, at
once, when it answers again.

The check provider is the fault proxy in front of the test node: down is every request's connection
dropped; lagging is its `finalized` block answered three blocks behind the node's."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest

from crawlers.models import CHAIN, FINALIZED, LATEST
from crawlers.record.cursors import cursor_get
from crawlers.runs.crawl import crawl
from crawlers.runs.old_unconfirmed import crawl_old_unconfirmed
from crawlers.selectors import health_report
from donations.models import Donation
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.configs import configured
from tests.crawlers.runs.test_second_provider import critical, recorded_and_skipped_by_the_finalized_crawler
from tests.rpc_proxy import RpcProxy

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

DOWN_SECONDS = 2.0  # "a minute" of the check provider being down, made short: the code waits for nothing longer


@pytest.fixture
def check(node, settings) -> Iterator[RpcProxy]:
    with RpcProxy(node.url) as proxy:
        settings.CONFIG = configured(settings.CONFIG, rpc_url=node.url, rpc_check_url=proxy.url("/check"))
        yield proxy


def check_health() -> dict:
    return health_report()["chains"]["eth"]["check_provider"]


def warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_a_check_provider_lagging_three_blocks_is_waited_for_and_health_says_so(node, check, caplog):
    lag = check.arm(
        "eth_getBlockByNumber",
        "rewrite",
        count=None,
        when=lambda params: params[:1] == ["finalized"],
        rewrite=lambda _result, _params: node.block(node.finalized() - 3),
    )
    node.mine(4)
    tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    block = int(node.receipt(tx)["blockNumber"], 16)
    node.mine(2)  # our finalized block is the donation's, theirs three before it
    crawl(LATEST)

    with caplog.at_level(logging.INFO):
        first, second = crawl(FINALIZED), crawl(FINALIZED)

    assert (first.confirmed, second.confirmed) == (0, 0)
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == block - 3
    assert Donation.objects.get().status == "unconfirmed"
    assert critical(caplog) == []
    assert any("waiting for the check provider" in line and "trails ours" in line for line in warnings(caplog))
    health = check_health()
    assert (health["state"], health["lag_blocks"], health["finalized"]) == ("lagging", 3, block - 3)
    assert lag.used >= 2

    node.mine(3)  # theirs reaches the donation's block
    caught_up = crawl(FINALIZED)

    assert caught_up.confirmed == 1
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized() - 3
    health = check_health()
    assert (health["state"], health["lag_blocks"]) == ("agreeing", 3)


def test_a_check_provider_down_for_a_while_costs_only_that_while(node, check, caplog):
    """Down for DOWN_SECONDS while the crawlers run as beat would run them: nothing confirmed or failed,
    WARNING lines and /health say it is waited for; the first runs once it answers again confirm both the
    finalized crawler's donation and the judge's (whose row was not pushed back for it)."""
    judged = recorded_and_skipped_by_the_finalized_crawler(node)
    later = judged.block_time + timedelta(minutes=31)
    tx = node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, 2 * ETHER)
    node.mine(2)
    crawl(LATEST)
    check.arm("*", "drop", count=None)

    with caplog.at_level(logging.INFO):
        went_down = time.monotonic()
        runs = []
        while time.monotonic() - went_down < DOWN_SECONDS:
            runs.append((crawl(FINALIZED), crawl_old_unconfirmed(now=later)))
            assert check_health()["state"] == "waiting"
        check.disarm()
        back = crawl(FINALIZED), crawl_old_unconfirmed(now=later)

    assert all(finalized.held and judge.confirmed == 0 and judge.failed == 0 for finalized, judge in runs)
    assert all(finalized.confirmed == 0 for finalized, _ in runs)
    assert all(f"check provider {check.url()[:-1]} gave no evidence" in finalized.held for finalized, _ in runs)
    assert any("waiting: nothing is confirmed until it answers" in line for line in warnings(caplog))
    judged.refresh_from_db()
    assert judged.status == "confirmed"  # judged at once: its next look was not pushed back
    assert (back[0].confirmed, back[1].confirmed) == (1, 1)
    assert Donation.objects.get(tx_hash=tx).status == "confirmed"
    assert critical(caplog) == []
    health = check_health()
    assert (health["state"], health["checked_through"]) == ("agreeing", node.finalized())
