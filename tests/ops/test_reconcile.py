"""`manage.py reconcile` on anvil: a clean chain reports no drift; a tampered record is named and exits 1."""

from __future__ import annotations

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from crawlers.models import FINALIZED, LATEST, ReconcileRun
from crawlers.runs.crawl import crawl
from crawlers.runs.reconcile import reconcile_last_day
from donations.models import Donation, DonationStats, UserData
from donations.services import campaign_pause
from donations.totals import user_data_refresh
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]


@pytest.fixture
def donated(node) -> dict:
    """An ETH and a USDT donation, crawled and finalized."""
    first = node.head() + 1
    eth = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    node.mint(node.coins["usdt"], ACCOUNTS[2], 25 * 10**6)
    usdt = node.transfer_token(node.coins["usdt"], ACCOUNTS[2], DONATION_ADDRESS, 25 * 10**6)
    node.mine(3)
    crawl(LATEST)
    crawl(FINALIZED)
    return {"eth": eth, "usdt": usdt, "from": first, "to": node.finalized()}


def run(donated) -> tuple[str, int]:
    """The command's output and exit status (CommandError is what makes manage.py exit 1)."""
    out = StringIO()
    try:
        call_command("reconcile", "--from-block", str(donated["from"]), "--to-block", str(donated["to"]), stdout=out)
    except CommandError as exc:
        return out.getvalue() + str(exc), 1
    return out.getvalue(), 0


def test_a_clean_chain_reports_no_drift_and_stores_the_result(donated):
    output, status = run(donated)

    assert status == 0
    assert output.strip() == f"reconcile blocks {donated['from']}..{donated['to']}: 2 transfer(s) on chain, no drift"
    last = ReconcileRun.objects.get()
    assert (last.ok, last.transfers, last.discrepancies, last.trigger) == (True, 2, [], "command")


def test_a_deleted_donation_is_reported_as_not_recorded(donated):
    Donation.objects.filter(tx_hash=donated["usdt"]).delete()  # by hand, the way an accident would

    output, status = run(donated)

    assert status == 1
    assert f"usdt transfer {donated['usdt']} log 0 of 25.0000000000 from {ACCOUNTS[2]} is not recorded" in output
    assert "campaign: donation_stats says 2025.00 USD" in output
    assert "3 discrepancy(ies)" in output  # the missing row, and the campaign and donor totals it leaves
    assert ReconcileRun.objects.get().ok is False


def test_an_altered_amount_and_a_stale_donor_total_are_reported(donated):
    Donation.objects.filter(tx_hash=donated["eth"]).update(amount=Decimal("2"))
    UserData.objects.filter(address=ACCOUNTS[2]).update(tokens=1)

    output, status = run(donated)

    assert status == 1
    assert f"is recorded as eth 2.0000000000 from {ACCOUNTS[1]}" in output
    assert f"donor {ACCOUNTS[2]}: user_data says 25.00 USD / 1 tokens" in output


def test_a_confirmed_donation_absent_from_its_block_is_reported(donated):
    row = Donation.objects.get(tx_hash=donated["eth"])
    Donation.objects.filter(id=row.id).update(tx_hash="0x" + "ee" * 32)

    output, status = run(donated)

    assert status == 1
    assert f"block {row.block_number}: confirmed donation id {row.id}" in output
    assert "is not in its block" in output
    assert f"eth transfer {donated['eth']} of 1.00000000 from {ACCOUNTS[1]} is not recorded" in output


def test_an_unconfirmed_transfer_is_drift_unless_the_campaign_is_paused(donated):
    # the finalized crawler held the ETH donation while paused; totals follow the confirmed rows only
    Donation.objects.filter(tx_hash=donated["eth"]).update(status="unconfirmed")
    DonationStats.objects.update(total=Decimal("25.00"), tokens=25_000)
    user_data_refresh(addresses=[ACCOUNTS[1]])

    output, status = run(donated)
    assert status == 1
    assert "is unconfirmed, not confirmed" in output

    campaign_pause(operator="tester")
    output, status = run(donated)
    assert status == 0, output


def test_the_daily_run_checks_the_last_day_of_finalized_blocks(donated):
    report = reconcile_last_day()
    assert report.ok
    assert report.to_block == donated["to"]
    assert ReconcileRun.objects.get().trigger == "daily"
