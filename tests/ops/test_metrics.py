"""Prometheus metrics scraped from a real worker (two pool processes) and a real web server (two gunicorn
workers) after a crawl on anvil: the values match the database and the work done."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from crawlers.models import FINALIZED, LATEST, LastBlock
from crawlers.tasks import crawl_finalized, crawl_latest
from donations.models import Donation, DonationStats
from dws_project.redis_client import get_redis
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER, ROOT
from tests.ops.processes import Process, os_port, probe, process_environment, worker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("eth_prices")]


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = requests.get(url, timeout=10)
    assert response.status_code == 200, response.text[:500]
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(samples, name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


@pytest.fixture
def clean_broker() -> Iterator[None]:
    DonationStats.objects.get_or_create()  # an earlier transactional test's flush removes the migration's row
    get_redis().flushdb()
    yield
    get_redis().flushdb()


def wait_until(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def cursor(label: str) -> int | None:
    return LastBlock.objects.filter(label=label).values_list("value", flat=True).first()


@pytest.mark.usefixtures("clean_broker")
def test_a_workers_metrics_match_the_database_after_a_crawl(node, tmp_path):
    start = node.head() + 1
    eth = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    node.mint(node.coins["usdt"], ACCOUNTS[2], 25 * 10**6)
    node.transfer_token(node.coins["usdt"], ACCOUNTS[2], DONATION_ADDRESS, 25 * 10**6)
    node.mine(4)
    port = os_port()
    (tmp_path / "metrics").mkdir()
    env = process_environment(
        ETH_RPC_URL=node.url,
        DWS_START_BLOCK=str(start),
        PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "metrics"),
        DWS_METRICS_PORT=str(port),
        DWS_HEARTBEAT_DIR=str(tmp_path / "heartbeat"),
    )
    running = worker("metrics", "crawlers,prices,celery", env, tmp_path, concurrency=2)
    try:
        for _ in range(3):  # several runs, on whichever pool process takes them
            crawl_latest.delay()
            crawl_finalized.delay()
        wait_until(lambda: cursor(LATEST) == node.head() and cursor(FINALIZED) == node.finalized())
        wait_until(lambda: get_redis().llen("crawlers") == 0 and "crawlers.crawl_finalized" in running.text())
        time.sleep(1)  # the last run's hook writes its values just after the cursor moves

        samples = scrape(f"http://127.0.0.1:{port}/metrics")
    finally:
        running.stop()

    head, finalized = node.head(), node.finalized()
    assert value(samples, "dws_crawler_cursor_block", chain="eth", crawler="latest") == head
    assert value(samples, "dws_crawler_cursor_block", chain="eth", crawler="finalized") == finalized
    assert value(samples, "dws_crawler_blocks_total", chain="eth", crawler="latest") == head - start + 1
    assert value(samples, "dws_crawler_blocks_total", chain="eth", crawler="finalized") == finalized - start + 1
    assert value(samples, "dws_crawler_tip_block", chain="eth", crawler="latest") == head
    assert value(samples, "dws_crawler_lag_blocks", chain="eth", crawler="latest") == 0
    assert value(samples, "dws_crawler_round_trips_total", chain="eth", crawler="latest") > 0
    assert value(samples, "dws_rpc_requests_total", method="eth_getBlockByNumber", outcome="answer") > 0
    assert value(samples, "dws_rpc_request_seconds_count", call="batch") > 0
    for (asset, status), count in {("eth", "confirmed"): 1, ("usdt", "confirmed"): 1}.items():
        assert Donation.objects.filter(asset=asset, status=status).count() == count
        assert value(samples, "dws_donations", chain="eth", status=status, asset=asset) == count
    assert Donation.objects.get(tx_hash=eth).status == "confirmed"
    assert value(samples, "dws_campaign_status", status="open") == 1
    assert value(samples, "dws_unexplained_inflows_open", chain="eth") == 0
    assert value(samples, "dws_price_requests_open") == 0
    assert value(samples, "dws_metrics_database_up") == 1


@pytest.mark.usefixtures("clean_broker")
def test_the_web_metrics_count_refusals_across_gunicorn_workers(tmp_path):
    port = os_port()
    (tmp_path / "metrics").mkdir()
    env = process_environment(
        PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "metrics"),
        DWS_WEB_PORT=str(port),
        DWS_WEB_WORKERS="2",
        DJANGO_SETTINGS_MODULE="tests.settings",
    )
    command = [sys.executable, "-m", "gunicorn", "-c", str(ROOT / "deploy" / "gunicorn.conf.py"), "dws_project.wsgi"]
    web = Process("web", command, env, tmp_path / "web.log")
    base = f"http://127.0.0.1:{port}"
    try:
        web.wait_for(lambda: _answers(f"{base}/live"), 60, "an answer on /live")
        with ThreadPoolExecutor(max_workers=16) as pool:  # a bounded burst, well past 100 at 50 per second
            statuses = list(pool.map(lambda _: requests.get(f"{base}/nowhere", timeout=10).status_code, range(400)))
        refused = statuses.count(429)
        assert refused > 0

        # the scrape is a client like any other: it waits for its own bucket to refill
        def scrape_allowed() -> bool:
            statuses.append(requests.get(f"{base}/metrics", timeout=10).status_code)
            return statuses[-1] == 200

        web.wait_for(scrape_allowed, 30, "a refilled bucket")

        samples = scrape(f"{base}/metrics")
        alive = probe("web", env)
    finally:
        web.stop()

    assert (alive.returncode, alive.stdout.strip()) == (0, "web: alive")  # the compose health check
    assert probe("web", env).returncode == 1

    assert value(samples, "dws_ratelimit_refusals_total") == statuses.count(429)
    assert value(samples, "dws_campaign_status", status="open") == 1
    assert value(samples, "dws_metrics_database_up") == 1


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=2).status_code == 200
    except requests.RequestException:
        return False


def test_metrics_are_not_served_outside_the_operator_networks(client):
    DonationStats.objects.get_or_create()
    refused = client.get("/metrics", REMOTE_ADDR="203.0.113.9")
    assert refused.status_code == 404
    assert refused.json() == {"code": 1003, "message": "not found"}

    allowed = client.get("/metrics", REMOTE_ADDR="127.0.0.1")
    assert allowed.status_code == 200
    assert "dws_campaign_status" in allowed.content.decode()
