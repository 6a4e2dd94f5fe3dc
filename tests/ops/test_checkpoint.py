"""Checkpoints (#22, seed 004): a finalized run that confirmed anything checks the ledger invariants for
what it changed -- the campaign row and the donors it touched -- and drift found there freezes the sale
as `reconcile`'s does. A clean run leaves no trace; a donor it did not touch waits for the daily reconcile."""

from __future__ import annotations

import logging

import pytest
from django.db import connection

from crawlers.models import FINALIZED, LATEST, ReconcileRun
from crawlers.runs.crawl import crawl
from donations.models import DonationStats
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]


def donate_and_crawl(node, sender: str) -> None:
    node.send_eth(sender, DONATION_ADDRESS, ETHER)
    node.mine(3)
    crawl(LATEST)
    crawl(FINALIZED)


def test_a_clean_finalized_run_checks_and_records_nothing(node):
    donate_and_crawl(node, ACCOUNTS[1])

    assert DonationStats.objects.get().status == "open"
    assert not ReconcileRun.objects.exists()


def test_drift_of_a_donor_the_run_credits_freezes_the_sale(node, caplog):
    donate_and_crawl(node, ACCOUNTS[1])
    with connection.cursor() as cursor:  # what only hand-written SQL can do
        cursor.execute("UPDATE user_data SET tokens = tokens + 1 WHERE address = %s", [ACCOUNTS[1]])

    with caplog.at_level(logging.ERROR, logger="dws.crawlers"):
        donate_and_crawl(node, ACCOUNTS[1])

    stats = DonationStats.objects.get()
    assert (stats.status, stats.paused_by) == ("paused", "reconcile (freeze on drift)")
    assert f"donor {ACCOUNTS[1]}: user_data says 4000.00 USD / 4000001 tokens" in stats.paused_reason
    run = ReconcileRun.objects.get()
    assert (run.trigger, run.ok) == ("checkpoint", False)
    assert any("drift found, campaign paused" in r.getMessage() for r in caplog.records)


def test_drift_of_the_campaign_row_is_caught_by_the_next_run_that_confirms(node):
    donate_and_crawl(node, ACCOUNTS[1])
    with connection.cursor() as cursor:
        cursor.execute("UPDATE donation_stats SET total = total + 5")

    donate_and_crawl(node, ACCOUNTS[2])

    stats = DonationStats.objects.get()
    assert stats.status == "paused"
    assert "campaign: donation_stats says 4005.00 USD" in stats.paused_reason


def test_a_donor_the_run_does_not_touch_is_left_to_the_daily_reconcile(node):
    donate_and_crawl(node, ACCOUNTS[1])
    with connection.cursor() as cursor:
        cursor.execute("UPDATE user_data SET tokens = tokens + 1 WHERE address = %s", [ACCOUNTS[1]])

    donate_and_crawl(node, ACCOUNTS[2])

    assert DonationStats.objects.get().status == "open"  # checked in O(change): ACCOUNTS[1] was not in this run
