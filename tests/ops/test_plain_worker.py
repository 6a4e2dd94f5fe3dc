"""The worker as DESIGN.md names it, `celery -A dws_project worker` with no `-Q`, does all the work: it
consumes every queue the project routes tasks to (crawlers, prices, webhooks and Celery's default), so a
deployment that starts it plainly crawls and prices; `-Q` only narrows."""

from __future__ import annotations

import sys
import time

import pytest
from django.conf import settings

from crawlers.models import LATEST, LastBlock
from crawlers.tasks import crawl_latest
from dws_project.celery import app
from dws_project.redis_client import get_redis
from prices.models import ETH, Price
from prices.tasks import fetch_prices
from tests.ops.processes import Process, process_environment

pytestmark = [pytest.mark.django_db(transaction=True)]


def routed_queues() -> set[str]:
    return {route["queue"] for route in settings.CELERY_TASK_ROUTES.values()} | {app.conf.task_default_queue}


def test_every_routed_queue_is_declared():
    assert routed_queues() <= set(app.amqp.queues), "a worker without -Q consumes only the declared queues"


def wait_until(condition, process: Process, timeout: float, describe: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if process.process.poll() is not None:
            raise AssertionError(f"the worker exited while waiting for {describe}:\n{process.text()[-3000:]}")
        assert time.monotonic() < deadline, f"no {describe} within {timeout:.0f} s:\n{process.text()[-3000:]}"
        time.sleep(0.2)


def test_a_worker_started_without_queues_crawls_and_prices(node, tmp_path):
    get_redis().flushdb()  # this run's own Redis db: no task left queued by an earlier test
    start = node.head() + 1
    node.mine(5)
    env = process_environment(
        ETH_RPC_URL=node.url,
        DWS_START_BLOCK=str(start),
        DWS_CHAIN_ID="31337",
        DWS_DEV_ETH_PRICE="2000",
        DWS_HEARTBEAT_DIR=str(tmp_path / "heartbeat"),
    )
    plain = Process("plain", [sys.executable, "-m", "celery", "-A", "dws_project", "worker"], env, tmp_path / "w.log")
    try:
        crawl_latest.delay()
        fetch_prices.delay()

        def cursor() -> int:
            return LastBlock.objects.filter(label=LATEST).values_list("value", flat=True).first() or 0

        wait_until(lambda: cursor() >= node.head(), plain, 90, "crawl run (the latest cursor at the head)")
        wait_until(lambda: Price.objects.filter(asset=ETH).exists(), plain, 60, "price from the minute cycle")
    finally:
        plain.stop()
        get_redis().flushdb()
