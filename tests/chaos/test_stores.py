"""PostgreSQL and Redis faults on the real stack: the database made unreachable by a TCP proxy in front of
it (the shared server is never stopped), and this run's Redis db flushed. The API answers a numbered 503
while the database is gone, the crawlers hold and resume, and every invariant holds afterwards."""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest
import requests
from django.conf import settings as django_settings
from django.db import transaction
from django.utils import timezone

from donations.models import Donation
from donations.tasks import deliver_webhooks
from donations.webhooks import webhook_event_record
from dws_project.redis_client import get_redis
from prices.models import PriceRequest, PriceRequestStatus
from prices.tasks import serve_price_requests
from tests.chain import ACCOUNTS, ETHER
from tests.ops.processes import process_environment, worker
from tests.tcp_proxy import postgres_proxy
from tests.web_server import gunicorn
from tests.webhook_receiver import registered_endpoint, webhook_receiver

pytestmark = [pytest.mark.django_db(transaction=True)]

USDT = 10**6


def proxied_database_url(port: int) -> str:
    db = django_settings.DATABASES["default"]
    return f"postgres://{db['USER']}@127.0.0.1:{port}/{db['NAME']}"


def until(condition, timeout: float = 30.0, describe: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {describe}"
        time.sleep(0.2)


@pytest.mark.usefixtures("campaign_row")
def test_the_api_answers_a_numbered_503_while_the_database_is_gone():
    with (
        postgres_proxy() as database,
        gunicorn(workers=1, env={"DATABASE_URL": proxied_database_url(database.port)}) as base,
    ):
        assert requests.get(f"{base}/donation/data", timeout=10).status_code == 200

        database.cut()
        for path in ("/donation/data", f"/user/data/{ACCOUNTS[1]}", "/price/token"):
            answer = requests.get(f"{base}{path}", timeout=20)
            assert answer.status_code == 503, (path, answer.status_code, answer.text[:300])
            assert answer.json() == {"code": 1012, "message": "service temporarily unavailable; try again"}
        assert requests.get(f"{base}/ready", timeout=20).status_code == 503
        assert requests.get(f"{base}/live", timeout=20).status_code == 200

        database.restore()
        until(lambda: requests.get(f"{base}/donation/data", timeout=10).status_code == 200, describe="the API back")


def test_the_crawlers_hold_while_the_database_is_gone_and_resume(stack_factory):
    with postgres_proxy() as database:
        stack = stack_factory(workers=0)
        stack.env["DATABASE_URL"] = proxied_database_url(database.port)
        stack.start_workers(2)
        first = stack.donate_eth(ACCOUNTS[1])
        stack.drive(lambda: Donation.objects.filter(tx_hash=first).exists())

        database.cut()  # mid-crawl: the workers' sessions are reset, new ones refused
        stack.donate_eth(ACCOUNTS[2], 2 * ETHER)
        stack.donate_token("usdt", ACCOUNTS[3], 40 * USDT)
        stack.beat(rounds=15)
        assert "held: database unavailable" in stack.worker_logs()

        database.restore()
        stack.verify()  # every donation confirmed once, invariants, reconcile clean, no traceback


def test_the_crawlers_resume_after_redis_is_flushed(stack_factory):
    stack = stack_factory(workers=2)
    stack.donate_eth(ACCOUNTS[1])
    stack.beat(rounds=4)
    get_redis().flushdb()  # this run's own Redis db only: locks, queue, back-off windows gone at once
    stack.donate_token("usdc", ACCOUNTS[2], 15 * USDT)
    stack.beat(rounds=4)
    get_redis().flushdb()
    stack.donate_eth(ACCOUNTS[3], ETHER // 2)
    stack.verify()


@pytest.mark.usefixtures("campaign_row")
def test_webhooks_and_price_requests_resume_when_the_database_is_back(tmp_path):
    get_redis().flushdb()
    minute = timezone.now().replace(second=0, microsecond=0) - timedelta(minutes=30)
    request = PriceRequest.objects.create(requested_at=minute)
    with postgres_proxy() as database, webhook_receiver() as receiver:
        registered_endpoint(receiver.url, ["donation.seen"], secret="whsec-stores-0123456789")
        with transaction.atomic():
            webhook_event_record(event="donation.seen", idempotency_key="k-1", order_key="o-1", data={"n": 1})
        get_redis().flushdb()  # the commit's own kick: this test sends the runs
        env = process_environment(
            DATABASE_URL=proxied_database_url(database.port),
            DWS_CHAIN_ID="31337",
            DWS_DEV_ETH_PRICE="2000",
            DWS_HEARTBEAT_DIR=str(tmp_path / "hb"),
        )
        running = worker("outbox", "webhooks,prices", env, tmp_path)
        try:
            database.cut()
            deliver_webhooks.delay()
            serve_price_requests.delay()
            running.wait_log("deliver-webhooks: held: database unavailable")
            running.wait_log("serve-price-requests: held: database unavailable")
            assert receiver.requests == []

            database.restore()
            deadline = time.monotonic() + 60
            while not (receiver.accepted() and PriceRequest.objects.get(pk=request.pk).status == "succeeded"):
                assert time.monotonic() < deadline, running.text()[-3000:]
                deliver_webhooks.delay()
                serve_price_requests.delay()
                time.sleep(1)
        finally:
            running.stop()
    assert [json.loads(r.body)["id"] for r in receiver.accepted()] == ["k-1"]
    request.refresh_from_db()
    assert (request.status, request.claimed_at) == (PriceRequestStatus.SUCCEEDED, None)
    assert "Traceback" not in running.text()
    get_redis().flushdb()
