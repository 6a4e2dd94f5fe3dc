"""The operators' admin, driven with Django's test client as a logged-in staff user."""

from __future__ import annotations

import dataclasses
import logging
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.urls import reverse
from django.utils import timezone

from crawlers.models import CHAIN, FINALIZED, LATEST, LastBlock, ReconcileRun
from crawlers.record.cursors import cursor_get
from crawlers.runs.crawl import crawl
from donations.models import Donation, DonationStats
from donations.totals import stats_recompute
from dws_project.config_values import SaleTier
from prices.models import PriceRequest
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def operator(client):
    user = User.objects.create_superuser("alice", "alice@example.org", "pw-not-used")
    client.force_login(user)
    return client


def donation(tx_hash: str, *, status: str = "confirmed", tokens: int = 1000, asset: str = "eth") -> Donation:
    return Donation.objects.create(
        tx_hash=tx_hash,
        log_index=None if asset == "eth" else 0,
        address=ACCOUNTS[1],
        asset=asset,
        amount=Decimal("0.5"),
        usd_amount=Decimal("1000.00"),
        price=Decimal("0.001"),
        tokens=tokens,
        status=status,
        block_number=10,
        block_hash="0x" + "cd" * 32,
        block_time=timezone.now() - timedelta(hours=1),
    )


def changelist(model: str) -> str:
    return reverse(f"admin:{model}_changelist")


def test_donations_are_found_by_tx_hash_and_address_and_filtered_by_status_and_asset(operator):
    wanted = donation("0x" + "ab" * 32)
    donation("0x" + "12" * 32, status="unconfirmed", asset="usdt")

    by_hash = operator.get(changelist("donations_donation"), {"q": wanted.tx_hash.upper().replace("0X", "0x")})
    assert by_hash.status_code == 200
    assert list(by_hash.context["cl"].queryset) == [wanted]
    by_address = operator.get(changelist("donations_donation"), {"q": "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"})
    assert by_address.context["cl"].result_count == 2
    filtered = operator.get(changelist("donations_donation"), {"status__exact": "unconfirmed", "asset": "usdt"})
    assert filtered.context["cl"].result_count == 1


def test_a_donation_cannot_be_edited_or_deleted_from_the_admin(operator):
    row = donation("0x" + "ab" * 32)
    page = operator.get(reverse("admin:donations_donation_change", args=[row.pk]))
    assert page.status_code == 200
    assert b'name="tokens"' not in page.content  # shown, not editable
    assert b"1000" in page.content

    assert operator.post(reverse("admin:donations_donation_change", args=[row.pk]), {"tokens": "5"}).status_code == 403
    assert operator.post(reverse("admin:donations_donation_delete", args=[row.pk]), {"post": "yes"}).status_code == 403
    row.refresh_from_db()
    assert row.tokens == 1000


def test_pause_and_resume_are_logged_with_the_operator_and_resume_re_derives_closed(operator, settings, caplog):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, sale_tiers=(SaleTier(1000, Decimal("0.001")),))
    donation("0x" + "ab" * 32, tokens=1000)  # the whole sale cap is confirmed
    stats_recompute(stats=DonationStats.objects.get(), tiers=settings.CONFIG.sale_tiers)
    assert DonationStats.objects.get().status == "closed"
    stats = DonationStats.objects.get()

    with caplog.at_level(logging.INFO):
        operator.post(changelist("donations_donationstats"), {"action": "pause", "_selected_action": [stats.pk]})
    assert DonationStats.objects.get().status == "paused"
    with caplog.at_level(logging.INFO):
        page = operator.post(
            changelist("donations_donationstats"), {"action": "resume", "_selected_action": [stats.pk]}, follow=True
        )

    assert DonationStats.objects.get().status == "closed"  # sold out when paused: closed again, not open
    assert b"Campaign resumed: closed" in page.content
    assert "admin: alice paused the campaign" in caplog.text
    assert "admin: alice resumed the campaign: now closed" in caplog.text
    assert [e.change_message for e in LogEntry.objects.order_by("id")] == [
        "paused the campaign",
        "resumed the campaign: now closed",
    ]
    assert {e.user.username for e in LogEntry.objects.all()} == {"alice"}


def test_resume_opens_a_campaign_below_the_cap(operator):
    stats = DonationStats.objects.get()
    operator.post(changelist("donations_donationstats"), {"action": "pause", "_selected_action": [stats.pk]})
    operator.post(changelist("donations_donationstats"), {"action": "resume", "_selected_action": [stats.pk]})
    assert DonationStats.objects.get().status == "open"


@pytest.mark.usefixtures("crawl_config", "eth_prices")
def test_the_set_cursor_form_shows_the_chain_and_refuses_a_block_beyond_the_head(operator, node, caplog):
    node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    node.mine(3)
    crawl(LATEST)
    cursor = LastBlock.objects.get(label=LATEST)
    url = reverse("admin:crawlers_lastblock_set_cursor", args=[cursor.pk])

    page = operator.get(url)
    assert page.status_code == 200
    assert f'<td id="head">{node.head()}</td>'.encode() in page.content
    assert f'<td id="finalized">{node.finalized()}</td>'.encode() in page.content
    assert url.encode() in operator.get(changelist("crawlers_lastblock")).content

    refused = operator.post(url, {"block": node.head() + 1})
    assert f"block {node.head() + 1} is beyond the chain head {node.head()}".encode() in refused.content
    assert cursor_get(chain=CHAIN, label=LATEST).value == cursor.value

    with caplog.at_level(logging.INFO):
        moved = operator.post(url, {"block": 2}, follow=True)
    assert cursor_get(chain=CHAIN, label=LATEST).value == 2
    assert b"the next run starts at block 3" in moved.content
    assert "cursor latest of eth moved by alice (admin)" in caplog.text
    assert LogEntry.objects.get().user.username == "alice"
    assert cursor_get(chain=CHAIN, label=FINALIZED) is None  # only the named crawler moved


def test_the_last_reconcile_result_and_the_price_requests_are_shown(operator):
    ReconcileRun.objects.create(
        trigger="daily",
        from_block=1,
        to_block=7200,
        started_at=timezone.now(),
        ok=False,
        transfers=3,
        discrepancies=["block 5: eth transfer 0xab.. is not recorded"],
        summary="reconcile blocks 1..7200: 3 transfer(s) on chain, 1 discrepancy(ies)",
    )
    PriceRequest.objects.create(asset="eth", requested_at=timezone.now().replace(second=0, microsecond=0))

    runs = operator.get(changelist("crawlers_reconcilerun"))
    assert runs.context["cl"].result_count == 1
    detail = operator.get(reverse("admin:crawlers_reconcilerun_change", args=[ReconcileRun.objects.get().pk]))
    assert b"block 5: eth transfer 0xab.. is not recorded" in detail.content
    requests_page = operator.get(changelist("prices_pricerequest"))
    assert requests_page.status_code == 200
    assert b"new" in requests_page.content


def test_the_admin_is_closed_to_anonymous_visitors(client):
    assert client.get(changelist("donations_donation")).status_code == 302
