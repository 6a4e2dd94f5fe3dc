"""Seed 000's timings for the old-unconfirmed judge: sustained absence fails a row within three runs of
the 24 h grace whatever the back-off, and goes on while paused however large the pause's backlog; the
README's SQL resume and the admin's Resume free that backlog alike.

The judge runs every 15 minutes (the beat schedule); each run here is given its clock (`now`)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from crawlers.models import FINALIZED, LATEST
from crawlers.runs.crawl import crawl
from crawlers.runs.old_unconfirmed import ABSENCE_GRACE, BATCH_LIMIT, crawl_old_unconfirmed
from donations.models import Donation, DonationStats
from donations.services import campaign_pause, campaign_resume
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.crawlers.runs.test_old_unconfirmed import LATER, status, vanished_donation

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

CADENCE = timedelta(minutes=15)  # every-15m-crawl-old-unconfirmed
WINDOW = timedelta(minutes=45)  # "absent on 3 consecutive runs (~45 min)" once the grace is over


def test_sustained_absence_fails_a_row_within_45_minutes_of_the_grace(node):
    row, _ = vanished_donation(node)
    start = timezone.now() + LATER
    failed_at = None
    for n in range(int((ABSENCE_GRACE + 2 * WINDOW) / CADENCE)):
        now = start + n * CADENCE
        if crawl_old_unconfirmed(now=now).failed:
            failed_at = now
            break

    assert status(row)[0] == "failed"
    assert failed_at is not None
    assert failed_at - row.block_time <= ABSENCE_GRACE + WINDOW


def held_rows(count: int) -> None:
    """`count` rows of the pause's backlog: proven in a finalized block and held by the pause."""
    now = timezone.now()
    Donation.objects.bulk_create(
        Donation(
            tx_hash=f"0x{n:064x}",
            address=ACCOUNTS[4],
            asset="eth",
            amount=Decimal("0.01"),
            usd_amount=Decimal("20"),
            price=Decimal("0.001"),
            tokens=20_000,
            block_number=1,
            block_hash="0x" + "ab" * 32,
            block_time=now - timedelta(days=2, seconds=n),  # older than anything else: first in any batch
            held_at=now - timedelta(days=2),
        )
        for n in range(count)
    )


def test_sustained_absence_goes_on_failing_rows_while_paused_behind_a_large_backlog(node):
    row, _ = vanished_donation(node)
    campaign_pause(operator="tester")
    held_rows(BATCH_LIMIT + 1)
    later = timezone.now() + ABSENCE_GRACE + timedelta(hours=1)

    results = [crawl_old_unconfirmed(now=later + n * CADENCE) for n in range(3)]

    assert [r.examined for r in results] == [1, 1, 1]  # the backlog waits for the resume
    assert status(row) == ("failed", 3)
    assert Donation.objects.filter(held_at__isnull=False, status="unconfirmed").count() == BATCH_LIMIT + 1


def resume_by_sql() -> None:
    """The README's SQL resume (docs/operating.md, "Pausing the sale")."""
    limit = settings.CONFIG.sale_tiers[-1].token_limit
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE donation_stats SET status = (CASE WHEN tokens >= %s THEN 'closed' ELSE 'open' END)"
            "::donation_stats_status_enum WHERE status='paused'",
            [limit],
        )


def resume_in_the_admin() -> None:
    campaign_resume(operator="tester", tiers=settings.CONFIG.sale_tiers)


@pytest.mark.parametrize("resume", [resume_by_sql, resume_in_the_admin], ids=["sql", "admin"])
def test_the_sql_resume_and_the_admins_free_the_pause_backlog_alike(node, resume):
    campaign_pause(operator="tester")
    tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    crawl(LATEST)
    # looked at while its block is not final yet: pushed back by the back-off
    judged = crawl_old_unconfirmed(now=timezone.now() + LATER)
    assert judged.untouched == {"block not finalized yet": 1}, judged.held
    node.mine(3)
    crawl(FINALIZED)  # proven final, held by the pause
    row = Donation.objects.get(tx_hash=tx)
    assert (row.status, row.held_at is not None) == ("unconfirmed", True)

    resume()
    assert DonationStats.objects.get().status == "open"

    assert crawl_old_unconfirmed(now=timezone.now()).confirmed == 1  # the next run, whatever its back-off
    row.refresh_from_db()
    assert (row.status, row.held_at) == ("confirmed", None)
    assert DonationStats.objects.get().tokens == row.tokens


def test_a_held_row_that_cannot_resolve_after_the_resume_backs_off_like_any_other(node, proxy):
    campaign_pause(operator="tester")
    tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    node.mine(3)
    crawl(LATEST)
    crawl(FINALIZED)  # held by the pause
    resume_in_the_admin()
    proxy.arm("eth_getTransactionReceipt", "null", count=None)  # the provider will not prove it for now
    now = timezone.now()

    first = crawl_old_unconfirmed(now=now)
    again = crawl_old_unconfirmed(now=now + timedelta(minutes=1))

    assert (first.examined, first.untouched) == (1, {"no usable receipt": 1})
    assert again.examined == 0  # not first in every batch for ever: it waits its back-off now
    row = Donation.objects.get(tx_hash=tx)
    assert (row.status, row.next_look_at is not None, row.held_at is not None) == ("unconfirmed", True, True)
