"""`reconcile` freezes the sale only on records that contradict evidence: what it cannot see (traces
refused or off) is "not checked", an open inflow waits for an operator, and a row held by a pause is
"pending" until the old-unconfirmed crawler has judged it after the resume."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from crawlers.models import FINALIZED, LATEST, UnexplainedInflow
from crawlers.runs.crawl import crawl
from crawlers.runs.old_unconfirmed import crawl_old_unconfirmed
from donations.models import Donation, DonationStats
from donations.services import campaign_pause, campaign_resume
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.configs import configured
from tests.ops.test_reconcile import two_frames

__all__ = ["two_frames"]

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]


def reconcile(first: int, last: int) -> tuple[str, int]:
    out = StringIO()
    try:
        call_command("reconcile", "--from-block", str(first), "--to-block", str(last), stdout=out)
    except CommandError as exc:
        return out.getvalue() + str(exc), 1
    return out.getvalue(), 0


def campaign() -> str:
    return DonationStats.objects.get().status


def test_traces_refused_while_crawling_then_served_leave_the_open_inflow_to_the_operator(node, proxy):
    first = node.head() + 1
    relay = node.deploy("EthRelay")
    data = node.call_data("relay(address)", ["address"], [DONATION_ADDRESS])
    tx = node.send({"from": ACCOUNTS[4], "to": relay, "value": hex(3 * ETHER), "data": data})
    node.mine(2)
    proxy.refuse_traces()
    crawl(LATEST)
    crawl(FINALIZED)
    proxy.disarm()  # reconcile's traces are served: it sees the 3 ETH the crawl could not
    inflow = UnexplainedInflow.objects.get()

    output, status = reconcile(first, node.finalized())

    assert status == 1  # the open inflow still waits for an operator
    assert f"eth transfer {tx} frame 0 of 3.00000000 from {relay} is not recorded" in output
    assert f"(held by open unexplained inflow {inflow.pk})" in output
    assert campaign() == "open"  # not drift: the records say "unexplained", the chain says "arrived"


def test_reconcile_with_traces_off_does_not_check_a_credited_internal_donation(two_frames, settings):
    assert Donation.objects.filter(tx_hash=two_frames["tx"], status="confirmed").count() == 2
    settings.CONFIG = configured(settings.CONFIG, trace_mode="off")

    output, status = reconcile(two_frames["from"], two_frames["to"])

    assert status == 1  # an incomplete check is never a clean one
    assert "not checked" in output
    assert "internal ETH" in output
    assert "is not in its block" not in output
    assert "no unexplained inflow is recorded" not in output
    assert campaign() == "open"


def test_traces_off_still_catch_ether_that_no_record_accounts_for(two_frames, settings, node):
    """Without traces reconcile cannot name the frames, but the balance still counts: money beyond what
    the rows record is drift."""
    Donation.objects.filter(tx_hash=two_frames["tx"], trace_address="1").update(amount=1)
    settings.CONFIG = configured(settings.CONFIG, trace_mode="off")

    output, status = reconcile(two_frames["from"], two_frames["to"])

    assert status == 1
    assert "no unexplained inflow is recorded" in output
    assert campaign() == "paused"


def test_reconcile_right_after_resume_reports_the_pause_backlog_pending_not_drift(node, settings):
    first = node.head() + 1
    campaign_pause(operator="tester")
    tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    node.mine(3)
    crawl(LATEST)
    crawl(FINALIZED)
    assert Donation.objects.get(tx_hash=tx).status == "unconfirmed"  # held by the pause
    campaign_resume(operator="tester", tiers=settings.CONFIG.sale_tiers)

    output, status = reconcile(first, node.finalized())

    assert status == 0, output
    assert "pending" in output
    assert campaign() == "open"

    assert crawl_old_unconfirmed().confirmed == 1  # the backlog's judge: at once, a held row is proven
    output, status = reconcile(first, node.finalized())
    assert (status, "pending" in output) == (0, False)
