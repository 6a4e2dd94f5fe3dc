"""`manage.py reconcile` on anvil: a clean chain reports no drift; a tampered record is named and exits 1."""

from __future__ import annotations

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from crawlers.models import FINALIZED, LATEST, ReconcileRun
from crawlers.runs.crawl import crawl
from crawlers.runs.reconcile_day import reconcile_last_day
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
    assert (
        output.strip() == f"reconcile eth blocks {donated['from']}..{donated['to']}: 2 transfer(s) on chain, no drift"
    )
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
    report = reconcile_last_day().report
    assert report is not None
    assert report.ok
    assert report.to_block == donated["to"]
    assert ReconcileRun.objects.get().trigger == "daily"


@pytest.fixture
def two_frames(node) -> dict:
    """One transaction of a smart wallet paying the donation address in two internal calls (1 and 2 ETH),
    crawled and finalized: two donations of one transaction, told apart only by their trace address."""
    owner = ACCOUNTS[3]
    wallet = node.deploy("EthForwarder", sender=owner)
    node.send_eth(owner, wallet, 4 * ETHER)
    first = node.head() + 1
    values = [ETHER, 2 * ETHER]
    data = node.call_data("forwardMany(address,uint256[])", ["address", "uint256[]"], [DONATION_ADDRESS, values])
    tx = node.send({"from": owner, "to": wallet, "data": data, "gas": hex(500_000)})
    node.mine(3)
    crawl(LATEST)
    crawl(FINALIZED)
    return {"tx": tx, "wallet": wallet, "from": first, "to": node.finalized()}


def test_two_internal_frames_of_one_transaction_are_each_checked(two_frames):
    tx = two_frames["tx"]
    recorded = sorted(Donation.objects.filter(tx_hash=tx).values_list("trace_address", "amount", "status"))
    assert recorded == [("0", Decimal("1"), "confirmed"), ("1", Decimal("2"), "confirmed")]

    output, status = run(two_frames)

    assert status == 0, output
    assert "2 transfer(s) on chain, no drift" in output


def test_a_lost_second_frame_is_reported_even_though_the_first_is_recorded(two_frames):
    tx = two_frames["tx"]
    Donation.objects.filter(tx_hash=tx, trace_address="1").delete()  # by hand, the way an accident would

    output, status = run(two_frames)

    assert status == 1
    assert f"eth transfer {tx} frame 1 of 2.00000000 from {two_frames['wallet']} is not recorded" in output
    assert f"eth transfer {tx} frame 0 " not in output


def test_a_frame_corrupted_to_half_an_ether_is_drift_on_every_run(two_frames):
    """Both frames of the transaction share its hash: only the full identity (with the frame's path)
    pairs each with its row, so the corrupted one is named, and named the same way every time."""
    tx = two_frames["tx"]
    Donation.objects.filter(tx_hash=tx, trace_address="1").update(amount=Decimal("0.5"))

    outputs = [run(two_frames) for _ in range(3)]

    assert {status for _, status in outputs} == {1}
    first = outputs[0][0]
    assert f"eth transfer {tx} frame 1 of 2.00000000 from {two_frames['wallet']} is recorded as eth 0.5" in first
    assert "frame 0 of 1.00000000" not in first
    assert all(output == first for output, _ in outputs)
    assert DonationStats.objects.get().status == "paused"  # drift: the sale froze on it
