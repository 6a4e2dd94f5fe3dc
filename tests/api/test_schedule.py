"""The delphi jobs are on the beat schedule, each under a registered task with an expiry within its cadence."""

from __future__ import annotations

import json

import pytest
from django.conf import settings

from dws_project.celery import app

DELPHI_JOBS = {
    "every-5m-complete-unstakes": "donations.tasks.complete_unstakes",
    "every-60s-resolve-affiliate-donations": "affiliates.tasks.resolve_affiliate_donations",
    "every-30s-deliver-webhooks": "donations.deliver_webhooks",
    "every-10m-purge-used-signatures": "affiliates.purge_used_signatures",
    "every-10s-refresh-proof-csv": "donations.refresh_proof_csv",
}


@pytest.mark.parametrize(("entry", "task"), DELPHI_JOBS.items())
def test_the_job_is_scheduled_and_registered(entry, task):
    app.loader.import_default_modules()
    scheduled = settings.CELERY_BEAT_SCHEDULE[entry]

    assert scheduled["task"] == task
    assert task in app.tasks
    assert scheduled["options"]["expires"] <= scheduled["schedule"]


# Seconds between runs of each entry: crontab entries by their cadence.
CADENCE = {"every-1m-fetch-prices": 60, "every-1d-reconcile-eth": 24 * 3600}


def test_every_periodic_task_expires_within_its_cadence():
    for entry, scheduled in settings.CELERY_BEAT_SCHEDULE.items():
        cadence = CADENCE.get(entry, scheduled["schedule"])
        assert isinstance(cadence, int | float), f"{entry}: add its crontab cadence to CADENCE"
        assert 0 < scheduled["options"]["expires"] <= cadence, entry


@pytest.mark.parametrize(
    ("task", "queue"),
    [
        ("prices.fetch_prices", "prices"),
        ("prices.serve_price_requests", "prices"),
        ("crawlers.crawl_latest", "crawlers"),
        ("crawlers.crawl_finalized", "crawlers"),
        ("crawlers.crawl_old_unconfirmed", "crawlers"),
        ("crawlers.reconcile_last_day", "crawlers"),
        ("donations.tasks.complete_unstakes", "celery"),
        ("donations.deliver_webhooks", "webhooks"),
        ("affiliates.purge_used_signatures", "celery"),
        ("donations.refresh_proof_csv", "celery"),
    ],
)
def test_each_task_goes_to_its_own_queue(task, queue):
    app.loader.import_default_modules()
    route = app.amqp.router.route({}, task)

    assert route["queue"].name == queue


def test_beat_has_one_entry_per_chain_and_crawler_job_named_with_the_chain():
    from tests.foundation.test_chain_configuration import three_chains
    from tests.processes import run_manage

    script = (
        "from django.conf import settings; import json; "
        "print(json.dumps({k: [v['task'], v.get('kwargs')] for k, v in settings.CELERY_BEAT_SCHEDULE.items()}))"
    )
    result = run_manage("shell", "-c", script, env=three_chains())

    assert result.returncode == 0, result.stderr
    schedule = json.loads(result.stdout.strip().splitlines()[-1])
    for chain in ("eth", "base", "arb"):
        assert schedule[f"every-5s-follow-head-{chain}"] == ["crawlers.follow_head", {"chain": chain}]
        assert schedule[f"every-12s-crawl-latest-{chain}"] == ["crawlers.crawl_latest", {"chain": chain}]
        assert schedule[f"every-60s-crawl-finalized-{chain}"] == ["crawlers.crawl_finalized", {"chain": chain}]
        assert schedule[f"every-15m-crawl-old-unconfirmed-{chain}"] == [
            "crawlers.crawl_old_unconfirmed",
            {"chain": chain},
        ]
        assert schedule[f"every-1d-reconcile-{chain}"] == ["crawlers.reconcile_last_day", {"chain": chain}]
    # the campaign's jobs stay one each
    assert schedule["every-1m-fetch-prices"][0] == "prices.fetch_prices"
    assert "every-5s-follow-head" not in schedule  # no entry without its chain
    assert "every-12s-crawl-latest" not in schedule
