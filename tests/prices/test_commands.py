"""The thin shells: management commands, Celery tasks and beat entries, the admin pages."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection

from dws_project.locks import exclusive_run
from prices.models import ETH, Price, PriceRequest
from prices.tasks import FETCH_PRICES_JOB, SERVE_PRICE_REQUESTS_JOB
from tests.prices import recorded
from tests.prices.conftest import Reply

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_serve_price_requests_once_reports_one_poll():
    assert run("serve_price_requests", "--once") == (
        "serve_price_requests: 0 claimed, 0 succeeded, 0 failed, 0 overdue\n"
    )


@pytest.mark.parametrize(
    ("command", "job"),
    [("fetch_prices", FETCH_PRICES_JOB), ("serve_price_requests", SERVE_PRICE_REQUESTS_JOB)],
)
def test_a_command_skips_while_another_run_holds_the_job_lock(command, job):
    PriceRequest.objects.create(asset=ETH, requested_at=recorded.now_utc() - timedelta(minutes=30))

    with exclusive_run(job, ttl=10) as acquired:
        assert acquired
        output = run(command, "--once")

    assert output == f"{command}: skipped, another run holds the lock\n"
    assert PriceRequest.objects.get().attempts == 0


def test_beat_runs_the_cycle_every_minute_and_the_request_poll_every_ten_seconds():
    from dws_project.celery import app

    app.loader.import_default_modules()
    cycle = settings.CELERY_BEAT_SCHEDULE["every-1m-fetch-prices"]
    poll = settings.CELERY_BEAT_SCHEDULE["every-10s-serve-price-requests"]

    assert {cycle["task"], poll["task"]} <= set(app.tasks)
    assert cycle["schedule"].remaining_estimate(recorded.now_utc()).total_seconds() <= 60
    assert poll["schedule"] == 10.0
    assert poll["options"]["expires"] <= 10
    assert cycle["options"]["expires"] <= 60


def test_the_admin_shows_a_price_with_its_audit_trail_read_only(client):
    admin = User.objects.create_superuser("ops", "ops@example.org", "pw-for-tests-only")
    client.force_login(admin)
    price = Price.objects.create(
        asset=ETH,
        price=Decimal("2002.85"),
        created_at=recorded.now_utc().replace(second=0, microsecond=0),
        sources={
            "used": [{"venue": "kraken", "quote": "2002.30"}],
            "dropped": [{"venue": "cexio", "quote": "1700", "reason": "deviates 15.05% from the median 2001.20"}],
        },
    )

    listing = client.get("/admin/prices/price/")
    detail = client.get(f"/admin/prices/price/{price.pk}/change/")

    assert listing.status_code == 200
    assert "kraken 2002.30" in listing.content.decode()
    assert "deviates 15.05% from the median 2001.20" in detail.content.decode()
    assert client.get("/admin/prices/price/add/").status_code == 403


@pytest.mark.django_db(transaction=True)
def test_fetch_prices_reads_the_venue_urls_from_the_environment(venue_server):
    """The whole path an operator uses: DWS_VENUE_<NAME>_URL, the command, one row in `price`."""
    now = recorded.now_utc()
    venue_server.route(recorded.BINANCE_TICKER, Reply(recorded.binance_ticker("2000.10")))
    venue_server.route(recorded.COINBASE_SPOT, Reply(recorded.coinbase_spot("2001.20")))
    venue_server.route(recorded.KRAKEN_TICKER, Reply(recorded.kraken_ticker("2002.30")))
    venue_server.route(recorded.KUCOIN_TICKER, Reply(recorded.kucoin_level1("2003.40", now)))
    venue_server.route(recorded.BITFINEX_TICKER, Reply(recorded.bitfinex_ticker("2004.50")))
    venue_server.route(recorded.CEXIO_TICKER, Reply(recorded.cexio_ticker("2005.60", now)))
    db = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}",
        "DWS_VENUE_TIMEOUT": "2",
        **{f"DWS_VENUE_{name.upper()}_URL": venue_server.url for name in venue_server.urls()},
    }

    finished = subprocess.run(
        [sys.executable, "manage.py", "fetch_prices", "--once"],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.endswith(" eth 2002.85\n")
    assert Price.objects.get(asset=ETH).price == Decimal("2002.85")
    assert len(venue_server.hits) == 6
