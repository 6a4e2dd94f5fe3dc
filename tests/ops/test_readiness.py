"""Readiness of the worker and beat (`manage.py probe worker|beat --ready`) and the overdue crawler alert:
a worker whose heartbeat is fresh but that crawls nothing is alive and not ready, and the
`dws_crawler_overdue` gauge says so; the database, Redis and the provider are checked too."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.cache import cache
from django.utils import timezone
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from crawlers.models import FINALIZED, LATEST, CrawlerRun
from crawlers.runs.jobs import run_crawler, run_old_unconfirmed
from donations.models import DonationStats
from dws_project.metrics_collectors import DATABASE_CACHE_KEY, scrape_registry
from dws_project.redis_client import get_redis
from tests.ops.processes import beat, os_port, probe, process_environment, worker

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def clean_broker():
    DonationStats.objects.get_or_create()  # an earlier transactional test's flush removes the migration's row
    get_redis().flushdb()
    yield
    get_redis().flushdb()


def overdue_gauge() -> dict[str, float]:
    cache.delete(DATABASE_CACHE_KEY)  # the scrape's shared cache of the database gauges (10 s)
    text = generate_latest(scrape_registry()).decode()
    return {
        sample.labels["crawler"]: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "dws_crawler_overdue"
    }


def heartbeats(tmp_path: Path) -> Path:
    directory = tmp_path / "heartbeat"
    directory.mkdir(exist_ok=True)
    for kind in ("worker", "beat"):  # what a live process keeps touching
        (directory / kind).touch()
    return directory


@pytest.mark.usefixtures("clean_broker")
def test_a_worker_that_crawls_nothing_is_alive_but_not_ready(node, crawl_config, eth_prices, tmp_path):
    env = process_environment(ETH_RPC_URL=node.url, DWS_HEARTBEAT_DIR=str(tmp_path / "heartbeat"))
    scheduler = beat(env, tmp_path)  # beat expects every crawler to run from its start
    idle = worker("idle", "celery", env, tmp_path)  # consumes no crawler queue: the crawl tasks wait
    try:
        scheduler.wait_log("beat: Starting")
        idle.wait_for(lambda: CrawlerRun.objects.count() == 3, 30, "beat's expected crawler runs")
        assert probe("worker", env, "--ready").returncode == 0  # just started: nothing is overdue yet
        assert set(overdue_gauge().values()) == {0}

        # ten minutes on (beat started then), and still no crawler run
        CrawlerRun.objects.update(expected_since=timezone.now() - timedelta(minutes=10))

        alive = probe("worker", env)
        assert alive.returncode == 0, alive.stderr  # the heartbeat is fresh
        ready = probe("worker", env, "--ready")
        assert ready.returncode == 1
        # ten minutes and the seconds this machine took since: 600 s and a little more
        assert re.search(r"^worker: not ready: crawler latest \(eth\): no run finished for 6\d\d s", ready.stderr, re.M)
        assert "crawler finalized (eth)" in ready.stderr
        assert "old-unconfirmed" not in ready.stderr  # its cadence is 15 minutes: not overdue yet
        assert probe("beat", env, "--ready").returncode == 1
        assert overdue_gauge() == {LATEST: 1, FINALIZED: 1, "old-unconfirmed": 0}
        # a worker dedicated to prices does not answer for the crawlers
        prices_only = probe("worker", {**env, "DWS_WORKER_QUEUES": "prices"}, "--ready")
        assert prices_only.returncode == 0, prices_only.stderr

        run_crawler(LATEST)
        run_crawler(FINALIZED)
        run_old_unconfirmed()

        ready = probe("worker", env, "--ready")
        assert ready.returncode == 0, ready.stderr
        assert "worker: ready" in ready.stdout
        assert set(overdue_gauge().values()) == {0}
    finally:
        idle.stop()
        scheduler.stop()


def test_readiness_needs_the_database_redis_and_the_provider(node, tmp_path):
    env = process_environment(ETH_RPC_URL=node.url, DWS_HEARTBEAT_DIR=str(heartbeats(tmp_path)))
    assert probe("beat", env, "--ready").returncode == 0

    no_database = probe("worker", {**env, "DATABASE_URL": "postgres://postgres@127.0.0.1:1/none"}, "--ready")
    assert no_database.returncode == 1
    assert "worker: not ready: database unavailable" in no_database.stderr

    no_redis = probe("beat", {**env, "REDIS_URL": "redis://127.0.0.1:1/4"}, "--ready")
    assert no_redis.returncode == 1
    assert "beat: not ready: redis unavailable" in no_redis.stderr

    no_provider = probe("worker", {**env, "ETH_RPC_URL": f"http://127.0.0.1:{os_port()}/rpc"}, "--ready")
    assert no_provider.returncode == 1
    assert "gave no answer: connection" in no_provider.stderr
    # a prices worker does not need the provider
    dead = f"http://127.0.0.1:{os_port()}/rpc"
    prices_only = probe("worker", {**env, "ETH_RPC_URL": dead, "DWS_WORKER_QUEUES": "prices"}, "--ready")
    assert prices_only.returncode == 0, prices_only.stderr
