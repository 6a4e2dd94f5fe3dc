"""The delphi jobs are on the beat schedule, each under a registered task with an expiry within its cadence."""

from __future__ import annotations

import pytest
from django.conf import settings

from dws_project.celery import app

DELPHI_JOBS = {
    "every-5m-complete-unstakes": "donations.tasks.complete_unstakes",
    "every-60s-resolve-affiliate-donations": "affiliates.tasks.resolve_affiliate_donations",
    "every-30s-deliver-webhooks": "donations.deliver_webhooks",
}


@pytest.mark.parametrize(("entry", "task"), DELPHI_JOBS.items())
def test_the_job_is_scheduled_and_registered(entry, task):
    app.loader.import_default_modules()
    scheduled = settings.CELERY_BEAT_SCHEDULE[entry]

    assert scheduled["task"] == task
    assert task in app.tasks
    assert scheduled["options"]["expires"] <= scheduled["schedule"]
