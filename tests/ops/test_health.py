"""GET /health: per crawler cursor, tip, lag and stuckness; price feed; reconcile; answers when the provider hangs."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone

from crawlers.models import FINALIZED, LATEST, LastBlock, ReconcileRun
from crawlers.runs.crawl import crawl
from prices.models import PriceRequest
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]


def test_health_reports_each_crawler_against_the_chain(client, node):
    node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    crawl(LATEST)
    crawl(FINALIZED)
    node.mine(5)
    PriceRequest.objects.create(asset="eth", requested_at=timezone.now().replace(second=0, microsecond=0))
    ReconcileRun.objects.create(
        trigger="daily", from_block=1, to_block=2, started_at=timezone.now(), ok=True, transfers=0, summary="fine"
    )

    body = client.get("/health").json()

    latest = body["crawlers"]["latest"]
    assert body["chain"] == {"head": node.head(), "finalized": node.finalized(), "provider": node.url}
    assert (latest["cursor"], latest["tip"], latest["lag_blocks"]) == (node.head() - 5, node.head(), 5)
    assert latest["lag_seconds"] >= 0
    assert latest["stuck"] is False  # behind, but it advanced moments ago
    finalized_cursor = LastBlock.objects.get(label=FINALIZED).value
    assert body["crawlers"]["finalized"]["lag_blocks"] == node.finalized() - finalized_cursor > 0
    assert body["eth_price"]["age_seconds"] is not None
    assert body["price_requests"]["open"] == 1
    assert body["reconcile"]["ok"] is True
    assert body["status"] == "ok"


def test_a_crawler_behind_that_has_not_advanced_for_minutes_looks_stuck(client, node):
    crawl(LATEST)
    node.mine(3)
    LastBlock.objects.filter(label=LATEST).update(modified_at=timezone.now() - timedelta(minutes=10))

    body = client.get("/health").json()

    assert body["crawlers"]["latest"]["stuck"] is True
    assert body["crawlers"]["latest"]["seconds_since_advanced"] >= 600
    assert body["status"] == "degraded"


def test_health_answers_with_unknown_when_the_provider_hangs(client, node, proxy):
    crawl(LATEST)
    proxy.arm("*", "hang", count=None, seconds=10)

    started = time.monotonic()
    body = client.get("/health").json()
    waited = time.monotonic() - started

    assert waited < 10  # answered before the provider did: the time-out is bounded
    assert body["chain"]["head"] == "unknown"
    assert body["crawlers"]["latest"]["cursor"] is not None
    assert body["crawlers"]["latest"]["lag_blocks"] == "unknown"
    assert body["crawlers"]["latest"]["stuck"] == "unknown"
    proxy.disarm()


def test_ready_stays_database_only_while_the_provider_hangs(client, proxy):
    proxy.arm("*", "hang", count=None, seconds=10)
    assert client.get("/ready").json() == {"status": "ok"}
    assert proxy.seen == []


def test_health_is_answered_after_the_rate_limit_refused_the_client(client, node, settings):
    # A bucket that refills once in 100 s stays empty however slowly a loaded machine sends the requests
    # (at 50 a second a token was back before the next request whenever one took over 20 ms).
    settings.DWS_RATE_LIMIT_PER_SECOND = 0.01
    for _ in range(5000):  # exhaust this client's bucket
        if client.get("/no-such-page").status_code == 429:
            break
    assert client.get("/no-such-page").status_code == 429

    assert client.get("/health").status_code == 200


def test_a_client_polling_health_hard_asks_the_provider_once_per_cache_window(client, proxy, settings):
    settings.HEALTH_CACHE_SECONDS = 30
    cache.delete("dws:health-report")
    try:
        reports = [client.get("/health") for _ in range(20)]
    finally:
        cache.delete("dws:health-report")

    assert {r.status_code for r in reports} == {200}
    assert len({r.content for r in reports}) == 1
    assert len(proxy.seen) == 1  # one batched provider request for twenty reports


def test_the_public_gets_the_bare_status_and_operators_the_detail(client, node):
    crawl(LATEST)

    public = client.get("/health", REMOTE_ADDR="203.0.113.9")
    operator = client.get("/health", REMOTE_ADDR="127.0.0.1")

    assert public.status_code == 200
    assert public.json() == {"status": operator.json()["status"]}
    assert operator.json()["chain"]["provider"] == node.url
    assert "crawlers" in operator.json()


def test_concurrent_cache_misses_on_several_workers_ask_the_provider_once(proxy, django_db_blocker):
    from concurrent.futures import ThreadPoolExecutor

    import requests

    from tests.web_server import gunicorn

    proxy.arm("*", "hang", count=None, seconds=1.0)  # a slow provider: every caller misses the cache
    with (
        django_db_blocker.unblock(),
        gunicorn(workers=3, env={"ETH_RPC_URL": proxy.url("/rpc"), "TEST_HEALTH_CACHE_SECONDS": "30"}) as base,
    ):
        proxy.seen.clear()
        with ThreadPoolExecutor(6) as pool:
            answers = list(pool.map(lambda _: requests.get(f"{base}/health", timeout=20), range(6)))

    assert {a.status_code for a in answers} == {200}
    assert len({a.content for a in answers}) == 1
    assert answers[0].json()["chain"]["provider"] == proxy.url("/rpc").rsplit("/", 1)[0]
    assert len(proxy.seen) == 1
