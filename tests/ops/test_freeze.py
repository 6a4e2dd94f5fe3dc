"""Freeze on drift: a reconcile that finds drift pauses the campaign (the operators' own pause), says why
in an ERROR line, the admin and /health; resuming stays with a human; DWS_FREEZE_ON_DRIFT=off only alerts."""

from __future__ import annotations

import dataclasses
import logging
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.urls import reverse

from crawlers.runs.reconcile import reconcile
from donations.models import Donation, DonationStats
from tests.chain import ACCOUNTS
from tests.ops.test_reconcile import donated, run

__all__ = ["donated"]

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]


def tamper_by_sql(tx_hash: str) -> None:
    """What an accident or an intruder would do: a confirmed row's amount changed behind the code's back."""
    with connection.cursor() as cursor:
        cursor.execute("UPDATE donation SET amount = 3 WHERE tx_hash = %s", [tx_hash])


def test_drift_pauses_the_campaign_with_the_reason_shown_in_health_and_admin(donated, client, caplog):
    tamper_by_sql(donated["eth"])

    with caplog.at_level(logging.ERROR, logger="dws.crawlers"):
        output, status = run(donated)

    assert status == 1
    assert f"is recorded as eth 3.0000000000 from {ACCOUNTS[1]}" in output
    stats = DonationStats.objects.get()
    assert stats.status == "paused"
    assert stats.paused_by == "reconcile (freeze on drift)"
    assert f"reconcile found drift in blocks {donated['from']}..{donated['to']}" in stats.paused_reason
    assert "is recorded as eth 3.0000000000" in stats.paused_reason
    assert any(
        r.levelno == logging.ERROR
        and "drift found, campaign paused" in r.getMessage()
        and donated["eth"] in r.getMessage()
        for r in caplog.records
    )

    health = client.get("/health").json()["campaign"]
    assert health["status"] == "paused"
    assert health["paused_by"] == "reconcile (freeze on drift)"
    assert "is recorded as eth 3.0000000000" in health["paused_reason"]

    client.force_login(User.objects.create_superuser("alice", "alice@example.org", "pw-not-used"))
    page = client.get(reverse("admin:donations_donationstats_changelist")).content.decode()
    assert "reconcile (freeze on drift)" in page
    assert "is recorded as eth 3.0000000000" in page


def test_the_campaign_stays_paused_until_an_operator_resumes_it(donated, client):
    tamper_by_sql(donated["eth"])
    run(donated)
    Donation.objects.filter(tx_hash=donated["eth"]).update(amount=Decimal("1"))  # repaired

    output, status = run(donated)  # a clean run does not lift the pause

    assert status == 0, output
    assert DonationStats.objects.get().status == "paused"
    client.force_login(User.objects.create_superuser("alice", "alice@example.org", "pw-not-used"))
    client.post(
        reverse("admin:donations_donationstats_changelist"),
        {"action": "resume", "_selected_action": [DonationStats.objects.get().pk]},
    )
    stats = DonationStats.objects.get()
    assert (stats.status, stats.paused_reason, stats.paused_by) == ("open", "", "")
    assert client.get("/health").json()["campaign"]["paused_reason"] is None


def test_with_the_freeze_off_drift_is_reported_but_the_campaign_runs_on(donated, settings, caplog):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, freeze_on_drift=False)
    tamper_by_sql(donated["eth"])

    with caplog.at_level(logging.ERROR, logger="dws.crawlers"):
        _output, status = run(donated)

    assert status == 1
    assert DonationStats.objects.get().status == "open"
    assert any("campaign left running (DWS_FREEZE_ON_DRIFT=off)" in r.getMessage() for r in caplog.records)


def test_blocks_the_provider_would_not_give_are_not_drift(donated, proxy, settings):
    proxy.arm("eth_getBlockByNumber", "null", count=None, when=lambda params: params[0] != "finalized")

    report = reconcile(donated["from"], donated["to"])

    assert not report.ok
    assert all("not checked" in line for line in report.discrepancies)
    assert DonationStats.objects.get().status == "open"
