"""The thin shells: management commands, Celery tasks and beat entries, the admin pages."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command

from dws_project.locks import exclusive_run
from prices.models import ETH, Price, PriceRequest
from prices.tasks import FETCH_PRICES_JOB, SERVE_PRICE_REQUESTS_JOB
from tests.prices import recorded

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
